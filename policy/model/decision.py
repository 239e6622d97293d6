"""Decisions: what the guard says about an event."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from policy.model.diagnostics import Span

Action = Literal["allow", "hint", "warn", "block", "stop"]

ACTIONS: tuple[Action, ...] = ("allow", "hint", "warn", "block", "stop")
"""Every action, least severe first."""
SEVERITY: dict[str, int] = {action: rank for rank, action in enumerate(ACTIONS)}


_SPAN_FIELDS = tuple(field.name for field in fields(Span))


@dataclass(frozen=True)
class RuleRef:
    """The policy rule that fired: its kind (gate, signature, loop), name and place in the policy."""

    kind: str
    name: str
    span: Span | None = None

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"

    def to_state(self) -> dict[str, Any]:
        """The rule as a store keeps it (JSON values), span included."""
        span = self.span
        return {"kind": self.kind, "name": self.name,
                "span": None if span is None else {name: getattr(span, name) for name in _SPAN_FIELDS}}


class _Empty(Mapping[str, Any]):
    """The shared default of ``captures`` and ``metadata``: empty, read-only, and copied or
    pickled as itself."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"

    def __reduce__(self) -> str:
        return "_NOTHING"


_NOTHING: Mapping[str, Any] = _Empty()


class Decision(NamedTuple):
    """The guard's answer for one event (immutable).

    ``call_id`` names the tool call the decision concerns (a turn's warning is
    delivered with that call's result).  ``metadata`` carries structured
    facts: counts and thresholds, syntax-error location, every matching
    signature.  A named tuple, because the guard makes one or more per
    event: it is built three times faster than a frozen dataclass.
    """

    action: Action = "allow"
    rule: RuleRef | None = None
    hint: str | None = None
    call_id: str | None = None
    signature: str | None = None
    captures: Mapping[str, str] = _NOTHING
    metadata: Mapping[str, Any] = _NOTHING

    @property
    def severity(self) -> int:
        return SEVERITY[self.action]

    @property
    def parts(self) -> tuple[Decision, ...]:
        """The decisions combined into this one, most severe first (``metadata["decisions"]``);
        the decision itself when it was not combined."""
        combined = self.metadata.get(COMBINED)
        return tuple(combined) if combined else (self,)

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON output shows it (the rule as ``"kind name"``)."""
        return {
            "action": self.action,
            "rule": str(self.rule) if self.rule else None,
            "call_id": self.call_id,
            "signature": self.signature,
            "captures": dict(self.captures),
            "hint": self.hint,
            "metadata": _metadata_dict(self.metadata, Decision.to_dict),
        }

    def to_state(self) -> dict[str, Any]:
        """The decision as a store keeps it between events: ``to_dict``, with the rule's kind,
        name and span (the store boundary and JSON output are the only places a decision becomes
        a dict)."""
        data = self.to_dict()
        data["metadata"] = _metadata_dict(self.metadata, Decision.to_state)
        if self.rule is not None:
            data["rule"] = self.rule.to_state()
        return data

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Decision:
        """A decision back from ``to_state`` (or from the ``to_dict`` form earlier versions stored)."""
        metadata = data.get("metadata") or {}
        if metadata.get(COMBINED):
            metadata = {**metadata, COMBINED: tuple(cls.from_state(part) for part in metadata[COMBINED])}
        return cls(action=data["action"], rule=_stored_rule(data.get("rule")), hint=data.get("hint"),
                   call_id=data.get("call_id"), signature=data.get("signature"),
                   captures=data.get("captures") or {}, metadata=metadata)


COMBINED = "decisions"
"""The metadata key of a combined decision's parts (``Decision`` values, most severe first)."""


def _metadata_dict(metadata: Mapping[str, Any], part: Callable[[Decision], dict[str, Any]]) -> dict[str, Any]:
    """``metadata`` as a plain dict, a combined decision's parts written by ``part``."""
    data = dict(metadata)
    if data.get(COMBINED):
        data[COMBINED] = [part(decision) for decision in data[COMBINED]]
    return data


ALLOW = Decision()


def _stored_rule(data: Any) -> RuleRef | None:
    if isinstance(data, Mapping):
        span = data.get("span")
        return RuleRef(str(data["kind"]), str(data["name"]), Span(**span) if span else None)
    kind, _, name = (data or "").partition(" ")  # ``to_dict``'s "kind name", stored by earlier versions
    return RuleRef(kind, name) if kind else None


class _Ranked(Protocol):
    @property
    def action(self) -> Action: ...


_R = TypeVar("_R", bound=_Ranked)


def most_severe(items: Iterable[_R], *, latest: bool = False) -> _R | None:
    """The item whose action is the most severe, ``allow`` never (None when nothing but allow).

    Ties go to the earlier item, or with ``latest`` to the later one.  Decisions and loop
    findings alike are ranked by this one function.
    """
    best: _R | None = None
    best_rank = 0
    for item in items:
        rank = SEVERITY[item.action]
        if rank > best_rank or (latest and rank == best_rank and rank > 0):
            best, best_rank = item, rank
    return best
