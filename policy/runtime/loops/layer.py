"""The one interface every loop layer implements, and what the layers share.

A layer is built from a compiled policy (``from_policy``: None when the
policy has no such rule), keeps what it remembers for one scope in its own
state type (``state_type``, serialised by that type's ``to_json`` and
``from_json``), and sees two events: ``on_turn`` (a batch of calls and
their keys) and ``on_result`` (one call's result, as an ``Observed``).
Either returns a ``Finding`` (a stop, or a warning candidate the detector
may select) or None.  ``policy.runtime.loops.layers`` lists the layers, in
the order their findings are decided in (docs/design.md, "Decision ordering").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall, ToolResult
from policy.runtime.loops.finding import Finding

DIGEST = 8
"""Bytes per fingerprint."""



@dataclass(frozen=True, slots=True)
class ErrorKey:
    """What makes two failed results "the same error" for ``loop error_streak``: the same
    ``signature`` with the same ``captures``, or, for an error no signature names, the same
    normalised end of the output."""

    signature: str
    """The signature's name; ``gate`` for a blocked call; ``text`` for an error no signature names."""
    captures: tuple[tuple[str, str], ...] = ()
    """(name, value) pairs that must match too: the signature's key captures in its key's order,
    a block's gate, path and message, or the normalised output as ``text``."""

    @classmethod
    def of_signature(cls, name: str, key: Sequence[str], captures: Mapping[str, str]) -> ErrorKey:
        """A signature's match: its key captures (``""`` for one that took no part)."""
        return cls(name, tuple((capture, captures.get(capture, "")) for capture in key))

    @classmethod
    def of_text(cls, text: str) -> ErrorKey:
        """An error no signature names, by its normalised text."""
        return cls("text", (("text", text),))

    @classmethod
    def of_block(cls, gate: str, path: str, message: str) -> ErrorKey:
        """A call a gate blocked."""
        return cls("gate", (("gate", gate), ("path", path), ("message", message)))

    def named(self) -> dict[str, str]:
        """The captures a hint shows: those with a value, by name (a text key has none)."""
        if self.signature == "text":
            return {}
        return {name: value for name, value in self.captures if value}

    def to_text(self, *, same_captures: bool = True) -> str:
        """The key as one line (the streak keeps its fingerprint); without ``same_captures``, the
        signature alone."""
        if not same_captures:
            return self.signature
        return "\x1f".join([self.signature, *(value for _, value in self.captures)])

_T = TypeVar("_T")
S = TypeVar("S", bound="LayerState")


class LayerState(Protocol):
    """What one layer remembers for one scope, and its JSON form (one object of the scope's state)."""

    def to_json(self) -> dict[str, Any]: ...

    @classmethod
    def from_json(cls: type[_T], fields: Fields) -> _T: ...


@dataclass(slots=True)
class Observed:
    """One call's result as every layer sees it."""

    call: ToolCall
    result: ToolResult
    failed: bool
    error_key: ErrorKey | None
    """What identifies the error (``policy.runtime.loops.streak``); None: the result text decides."""
    state_changed: bool
    """The call made progress (a write that changed a file, a succeeded ``pip install``)."""
    call_key: bytes
    """Fingerprint of the call's key (``policy.runtime.loops.keys``)."""
    key_text: str
    """The call's key."""
    result_key: bytes
    """Fingerprint of the result's normalised tail (``policy.runtime.output``)."""
    text: str
    """The result's whole text."""


class Layer(Generic[S]):
    """Base of every loop layer: a layer overrides the events it takes part in."""

    kind: ClassVar[str]
    """The rule kind (``loop repeat`` → ``repeat``): the finding's ``layer`` and its hint variables."""
    state_name: ClassVar[str]
    """The scope state's attribute and JSON object holding this layer's state."""
    state_type: ClassVar[type[LayerState]]
    rule: Any
    """The compiled rule the layer applies (every rule has a ``ref`` and a ``hint``)."""

    @classmethod
    def from_policy(cls, policy: CompiledPolicy) -> Layer[S] | None:
        """The layer for the policy's rule of this kind, or None when the policy has none."""
        raise NotImplementedError

    def on_turn(self, state: S, calls: Sequence[ToolCall], keys: Sequence[str]) -> Finding | None:
        """Count one batch of calls (``keys``: their call keys, in the same order)."""
        return None

    def on_result(self, state: S, observed: Observed) -> Finding | None:
        """Record one call's result."""
        return None

    @classmethod
    def takes_turns(cls) -> bool:
        return cls.on_turn is not Layer.on_turn

    @classmethod
    def takes_results(cls) -> bool:
        return cls.on_result is not Layer.on_result


class Fields:
    """Typed access to one JSON object of a serialised state, with errors that name the field."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise ValueError(f"scope state: {path or 'the state'} must be an object")
        self.data = data
        self.path = path

    def section(self, name: str) -> Fields:
        return Fields(self.data.get(name), self.name(name))

    def get(self, name: str, kind: type[_T]) -> _T:
        value = self.data.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"scope state: {self.name(name)} must be {kind.__name__}")
        return value

    def digests(self, name: str) -> bytes:
        """Whole fingerprints, written as hex."""
        return _digests(self.get(name, str), self.name(name))

    def digest_list(self, name: str) -> list[bytes]:
        """A list of single fingerprints, each written as hex."""
        path = self.name(name)
        return [_digest(item, path) for item in self.get(name, list)]

    def strings(self, name: str) -> list[str]:
        path = self.name(name)
        return [checked_str(item, path) for item in self.get(name, list)]

    def name(self, field: str) -> str:
        """The dotted name of one of this object's fields, for messages."""
        return f"{self.path}.{field}" if self.path else field


def _digests(text: str, path: str) -> bytes:
    try:
        value = bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"scope state: {path} must be hex") from None
    if len(value) % DIGEST:
        raise ValueError(f"scope state: {path} must be whole {DIGEST}-byte fingerprints")
    return value


def _digest(item: Any, path: str) -> bytes:
    value = _digests(checked_str(item, path), path)
    if len(value) != DIGEST:
        raise ValueError(f"scope state: {path} must hold single fingerprints")
    return value


def _checked(kind: type[_T]) -> Callable[[Any, str], _T]:
    def check(value: Any, path: str) -> _T:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"scope state: {path} must hold {kind.__name__} values")
        return value

    return check


checked_int = _checked(int)
checked_str = _checked(str)
