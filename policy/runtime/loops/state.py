"""What loop detection remembers for one scope (one run of one thread).

Everything is bounded by the policy's windows and kept compact: call and
result fingerprints are 8-byte digests packed into ``bytes`` (20 turns of
repeat history take 160 bytes, and counting a key is one C-level search), a
tool's calls are one character each in a string.  A scope at the default
windows takes under 4 KB (``bench/bench_memory.py``).  ``to_json`` and
``from_json`` carry the state between the workers of a gateway (Redis).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

DIGEST = 8
"""Bytes per fingerprint."""
EXCERPTS = 3
"""Result excerpts kept per scope, for the most recently completed distinct batches that would
warn if made once more (only their hints show an excerpt)."""
TOMBSTONE = bytes(DIGEST)
"""A repeat entry that no longer counts (progress was made since)."""

FORMAT_VERSION = 2
MAX_OPEN_CALLS = 64
"""Calls awaiting their results that a scope keeps anything for (keys, pending decisions); the
oldest go first."""

_T = TypeVar("_T")


def drop_oldest(entries: dict[str, Any], limit: int) -> None:
    """Keep the ``limit`` newest entries of an insertion-ordered dict."""
    while len(entries) > limit:
        del entries[next(iter(entries))]


@dataclass(slots=True)
class RepeatState:
    keys: bytes = b""
    """Batch fingerprints of the last ``window`` turns, oldest first; TOMBSTONE: no longer counts."""
    results: bytes = b""
    """Per turn, the fingerprint of its results once all arrived (TOMBSTONE until then)."""
    turns: int = 0
    """Turns seen in this scope; the newest entry is turn number ``turns``."""
    warned: list[bytes] = field(default_factory=list)
    """Batch fingerprints warned about; a mark lasts while the batch still counts in the window."""
    inflight: dict[str, int] = field(default_factory=dict)
    """Call id → its turn number, until the call's result arrives."""
    partial: dict[int, int] = field(default_factory=dict)
    """Turn number → its calls' results combined so far (turns of several calls)."""
    excerpt_keys: bytes = b""
    """The batches of the last few completed results that would warn if made once more, newest
    first (``EXCERPTS`` at most)."""
    excerpts: list[str] = field(default_factory=list)
    """Their results, shortened."""


@dataclass(slots=True)
class FrequencyState:
    tools: list[str | None] = field(default_factory=list)
    """Slot → tool name; None is a free slot (its tool left the window)."""
    window: str = ""
    """One character per call, oldest first: ``chr(slot)`` of its tool."""
    warned: str = ""
    """Slot characters of the tools warned about, kept while their count stays at or above ``warn``."""


@dataclass(slots=True)
class StreakState:
    key: bytes = b""
    """Fingerprint of the error of the current streak (empty: no streak)."""
    count: int = 0
    warned: bool = False


@dataclass(slots=True)
class OscillationState:
    items: bytes = b""
    """Per result, oldest first: fingerprint of the (call, result) pair, or of the call alone."""
    keys: bytes = b""
    """Per result: fingerprint of the call."""
    calls: list[str] = field(default_factory=list)
    """Short summaries of the newest calls (as many as the longest period)."""
    warned: bytes = b""
    """Fingerprint of the cycle warned about, while it goes on."""


@dataclass(slots=True)
class ScopeState:
    """Everything loop detection remembers for one scope, plus the guard's pending decisions."""

    repeat: RepeatState = field(default_factory=RepeatState)
    frequency: FrequencyState = field(default_factory=FrequencyState)
    streak: StreakState = field(default_factory=StreakState)
    oscillation: OscillationState = field(default_factory=OscillationState)
    open_calls: dict[str, str] = field(default_factory=dict)
    """Call id → its key, from its turn until its result arrives (at most ``MAX_OPEN_CALLS``)."""
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Call id → decisions waiting for that call's result (owned by the guard; JSON values only)."""
    queued: list[dict[str, Any]] = field(default_factory=list)
    """Warnings waiting for the next model request (``deliver_warnings next_request``; owned by
    the guard; JSON values only)."""

    def to_json(self) -> str:
        r, f, s, o = self.repeat, self.frequency, self.streak, self.oscillation
        return json.dumps(
            {
                "v": FORMAT_VERSION,
                "repeat": {
                    "keys": r.keys.hex(),
                    "results": r.results.hex(),
                    "turns": r.turns,
                    "warned": [key.hex() for key in r.warned],
                    "inflight": r.inflight,
                    "partial": [[turn, value] for turn, value in r.partial.items()],
                    "excerpt_keys": r.excerpt_keys.hex(),
                    "excerpts": r.excerpts,
                },
                "frequency": {"tools": f.tools, "window": f.window, "warned": f.warned},
                "streak": {"key": s.key.hex(), "count": s.count, "warned": s.warned},
                "oscillation": {"items": o.items.hex(), "keys": o.keys.hex(), "calls": o.calls,
                                "warned": o.warned.hex()},
                "open_calls": self.open_calls,
                "pending": self.pending,
                "queued": self.queued,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> ScopeState:
        """Parse ``to_json`` output; anything else raises ``ValueError`` naming the bad field."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"scope state is not JSON: {err}") from None
        root = _Fields(data, "")
        if root.get("v", int) != FORMAT_VERSION:
            raise ValueError(f"scope state has format {data.get('v')!r}, expected {FORMAT_VERSION}")
        r = root.section("repeat")
        f = root.section("frequency")
        s = root.section("streak")
        o = root.section("oscillation")
        state = cls(
            repeat=RepeatState(
                keys=r.digests("keys"),
                results=r.digests("results"),
                turns=r.get("turns", int),
                warned=[_digest(item, "repeat.warned") for item in r.get("warned", list)],
                inflight={str(k): _int(v, "repeat.inflight") for k, v in r.get("inflight", dict).items()},
                partial=_turn_values(r.get("partial", list), "repeat.partial"),
                excerpt_keys=r.digests("excerpt_keys"),
                excerpts=[_str(item, "repeat.excerpts") for item in r.get("excerpts", list)],
            ),
            frequency=FrequencyState(
                tools=[_optional_str(item, "frequency.tools") for item in f.get("tools", list)],
                window=f.get("window", str),
                warned=f.get("warned", str),
            ),
            streak=StreakState(key=s.digests("key"), count=s.get("count", int), warned=s.get("warned", bool)),
            oscillation=OscillationState(
                items=o.digests("items"),
                keys=o.digests("keys"),
                calls=[_str(item, "oscillation.calls") for item in o.get("calls", list)],
                warned=o.digests("warned"),
            ),
            open_calls={str(k): _str(v, "open_calls") for k, v in root.get("open_calls", dict).items()},
            pending={str(k): v for k, v in root.get("pending", dict).items() if isinstance(v, dict)},
            queued=[v for v in root.data.get("queued") or [] if isinstance(v, dict)],
        )
        repeat, oscillation = state.repeat, state.oscillation
        if (
            len(repeat.keys) != len(repeat.results)
            or len(repeat.excerpt_keys) != len(repeat.excerpts) * DIGEST
            or len(oscillation.items) != len(oscillation.keys)
        ):
            raise ValueError("scope state: parallel histories differ in length")
        if any(ord(ch) >= len(state.frequency.tools) for ch in state.frequency.window):
            raise ValueError("scope state: frequency.window names a tool slot that does not exist")
        return state


class _Fields:
    """Typed access to one JSON object of a serialised state, with errors that name the field."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise ValueError(f"scope state: {path or 'the state'} must be an object")
        self.data = data
        self.path = path

    def section(self, name: str) -> _Fields:
        return _Fields(self.data.get(name), self._path(name))

    def get(self, name: str, kind: type[_T]) -> _T:
        value = self.data.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"scope state: {self._path(name)} must be {kind.__name__}")
        return value

    def digests(self, name: str) -> bytes:
        return _digests(self.get(name, str), self._path(name))

    def _path(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name


def _digests(text: str, path: str) -> bytes:
    try:
        value = bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"scope state: {path} must be hex") from None
    if len(value) % DIGEST:
        raise ValueError(f"scope state: {path} must be whole {DIGEST}-byte fingerprints")
    return value


def _digest(item: Any, path: str) -> bytes:
    value = _digests(_str(item, path), path)
    if len(value) != DIGEST:
        raise ValueError(f"scope state: {path} must hold single fingerprints")
    return value


def _checked(kind: type[_T]) -> Callable[[Any, str], _T]:
    def check(value: Any, path: str) -> _T:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"scope state: {path} must hold {kind.__name__} values")
        return value

    return check


_int = _checked(int)
_str = _checked(str)


def _optional_str(value: Any, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _turn_values(items: list[Any], path: str) -> dict[int, int]:
    values: dict[int, int] = {}
    for item in items:
        if not isinstance(item, list) or len(item) != 2:
            raise ValueError(f"scope state: {path} must hold [turn, value] pairs")
        values[_int(item[0], path)] = _int(item[1], path)
    return values
