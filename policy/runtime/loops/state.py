"""What loop detection remembers for one scope (one run of one thread).

Each layer keeps its own state type (``policy.runtime.loops.layers``); the
scope's state holds one of each, plus the calls awaiting their results.
Everything is bounded by the policy's windows and kept compact: call and
result fingerprints are 8-byte digests packed into ``bytes`` (20 turns of
repeat history take 160 bytes, and counting a key is one C-level search), a
tool's calls are one character each in a string.  A scope at the default
windows takes under 4 KB (``bench/bench_memory.py``).  ``to_json`` and
``from_json`` carry the state between the workers of a gateway (Redis).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from policy.runtime.loops.layer import Fields, LayerState, checked_str
from policy.runtime.loops.layers import LAYERS
from policy.runtime.workspace.state import WorkspaceState

_T = TypeVar("_T", list[Any], dict[str, Any])

FORMAT_VERSION = 2
MAX_OPEN_CALLS = 64
"""Calls awaiting their results that a scope keeps anything for (keys, pending decisions); the
oldest go first."""

_SLOTS = {layer.state_name: index for index, layer in enumerate(LAYERS)}


def drop_oldest(entries: dict[str, Any], limit: int) -> None:
    """Keep the ``limit`` newest entries of an insertion-ordered dict."""
    while len(entries) > limit:
        del entries[next(iter(entries))]


def _new_layer_states() -> list[Any]:
    return [layer.state_type() for layer in LAYERS]


@dataclass(slots=True)
class ScopeState:
    """Everything loop detection remembers for one scope, plus the guard's pending decisions.

    ``layers`` holds each layer's state in the order of ``LAYERS``; each is also an attribute
    named by its layer's ``state_name`` (``state.repeat``).
    """

    layers: list[Any] = field(default_factory=_new_layer_states)
    open_calls: dict[str, str] = field(default_factory=dict)
    """Call id → its key, from its turn until its result arrives (at most ``MAX_OPEN_CALLS``)."""
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Call id → what waits for that call's result (owned by the guard; JSON values only, a
    decision in its stored form, ``Decision.to_state``)."""
    queued: list[dict[str, Any]] = field(default_factory=list)
    """Warnings waiting for the next model request (``deliver_warnings next_request``; owned by
    the guard; JSON values only)."""
    files: WorkspaceState = field(default_factory=WorkspaceState)
    """What the guard knows about the workspace's files (``policy.runtime.workspace.state``)."""
    written: dict[str, str] = field(default_factory=dict)
    """Path → digest of the content the last write no gate checked left in it (owned by the guard;
    at most ``MAX_OPEN_CALLS`` paths)."""
    restarted: str | None = field(default=None, compare=False)
    """Why the store started this state (or its ``files``) afresh during this access: what it held
    was unreadable, or too large to keep.  Never saved; the event's decision says so."""

    def __getattr__(self, name: str) -> Any:
        index = _SLOTS.get(name)
        if index is None:
            raise AttributeError(name)
        return self.layers[index]

    def to_json(self) -> str:
        data: dict[str, Any] = {"v": FORMAT_VERSION}
        for layer, state in zip(LAYERS, self.layers, strict=True):
            data[layer.state_name] = state.to_json()
        data["open_calls"] = self.open_calls
        data["pending"] = self.pending
        data["queued"] = self.queued
        data["files"] = self.files.to_json()
        data["written"] = self.written
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ScopeState:
        """Parse ``to_json`` output; anything else raises ``ValueError`` naming the bad field."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"scope state is not JSON: {err}") from None
        root = Fields(data, "")
        if root.get("v", int) != FORMAT_VERSION:
            raise ValueError(f"scope state has format {data.get('v')!r}, expected {FORMAT_VERSION}")
        sections = [root.section(layer.state_name) for layer in LAYERS]
        layers: list[LayerState] = [
            layer.state_type.from_json(section) for layer, section in zip(LAYERS, sections, strict=True)
        ]
        return cls(
            layers=layers,
            open_calls={str(key): checked_str(value, "open_calls")
                        for key, value in root.get("open_calls", dict).items()},
            pending={str(k): v for k, v in root.get("pending", dict).items() if isinstance(v, dict)},
            queued=[v for v in _field(root, "queued", list) if isinstance(v, dict)],
            files=WorkspaceState.from_json(data.get("files")),
            written={str(k): v for k, v in _field(root, "written", dict).items() if isinstance(v, str)},
        )


def _field(root: Fields, name: str, kind: type[_T]) -> _T:
    """A list or object field that older states may lack (then empty)."""
    value = root.data.get(name)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise ValueError(f"scope state: {name} must be {kind.__name__}")
    return value
