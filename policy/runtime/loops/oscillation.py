"""``loop oscillation``: a cycle of calls (A→B→A→B, A→B→C→A→B→C) repeated.

Each result appends one item: the fingerprint of the call with its normalised
result under ``no_progress`` (so a productive edit-test cycle, whose results
change, is no oscillation; a state change also breaks any cycle), else of the
call alone.  A cycle of period ``p`` in ``min_period..max_period`` is found
when the last ``p * repeats`` items repeat with period ``p`` and the cycle
holds at least two distinct calls (one call repeated is ``repeat``'s job).
It is reported once while it goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policy.model.compiled import CompiledPolicy, OscillationRule
from policy.model.events import ToolCall
from policy.model.fingerprint import digest, fingerprint
from policy.model.variables import call_summary
from policy.runtime.loops.finding import Finding
from policy.runtime.loops.layer import DIGEST, Fields, Layer, Observed

CYCLE_CALL_LENGTH = 60
"""Characters of each call summary in a reported cycle."""


@dataclass(slots=True)
class OscillationState:
    """What ``loop oscillation`` remembers of one scope."""

    items: bytes = b""
    """Per result, oldest first: fingerprint of the (call, result) pair, or of the call alone."""
    keys: bytes = b""
    """Per result: fingerprint of the call."""
    calls: list[str] = field(default_factory=list)
    """Short summaries of the newest calls (as many as the longest period)."""
    warned: bytes = b""
    """Fingerprint of the cycle warned about, while it goes on."""

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items.hex(), "keys": self.keys.hex(), "calls": self.calls,
                "warned": self.warned.hex()}

    @classmethod
    def from_json(cls, fields: Fields) -> OscillationState:
        state = cls(items=fields.digests("items"), keys=fields.digests("keys"), calls=fields.strings("calls"),
                    warned=fields.digests("warned"))
        if len(state.items) != len(state.keys):
            raise ValueError("scope state: parallel histories differ in length")
        return state


class OscillationLayer(Layer[OscillationState]):
    kind = "oscillation"
    state_name = "oscillation"
    state_type = OscillationState

    def __init__(self, rule: OscillationRule) -> None:
        self.rule = rule
        self._width = rule.max_period * rule.repeats * DIGEST

    @classmethod
    def from_policy(cls, policy: CompiledPolicy) -> OscillationLayer | None:
        rule = policy.loop(OscillationRule)
        return cls(rule) if rule else None

    def on_result(self, state: OscillationState, observed: Observed) -> Finding | None:
        """Append the call's item (the fingerprint of its key, with its result under
        ``no_progress``); a cycle found and not yet reported, or None."""
        call, call_key, result = observed.call, observed.call_key, observed.result_key
        rule = self.rule
        if rule.no_progress and observed.state_changed:
            state.items, state.keys, state.calls, state.warned = b"", b"", [], b""
            return None
        item = digest(call_key + result) if rule.no_progress else call_key
        state.items = (state.items + item)[-self._width :]
        state.keys = (state.keys + call_key)[-self._width :]
        kept = state.calls[max(len(state.calls) + 1 - rule.max_period, 0) :]
        state.calls = [*kept, _step(call, observed.key_text)]

        for period in range(rule.min_period, rule.max_period + 1):
            span = period * rule.repeats * DIGEST
            if len(state.items) < span:
                break
            if _repeats_with_period(state.items[-span:], period) and _distinct_calls(state.keys, period) >= 2:
                return self._report(state, call, period)
        state.warned = b""
        return None

    def _report(self, state: OscillationState, call: ToolCall, period: int) -> Finding | None:
        cycle = _canonical_cycle(state.items[-period * DIGEST :])
        if cycle == state.warned:
            return None
        rule = self.rule
        count = _periodic_suffix(state.items, period) // (period * DIGEST)
        facts: dict[str, Any] = {
            "count": count,
            "period": period,
            "repeats": rule.repeats,
            "cycle": state.calls[-period:],
            "no_progress": rule.no_progress,
        }
        finding = Finding("oscillation", rule.action, rule.ref, rule.hint, call, facts, _describe)
        finding.mark = lambda: setattr(state, "warned", cycle)
        return finding


def _step(call: ToolCall, key_text: str) -> str:
    """A call as a cycle shows it: its key (only the arguments that make it this call),
    or, when the key is a hash, the call itself."""
    if key_text.startswith("#", len(call.name) + 1):
        return call_summary(call, CYCLE_CALL_LENGTH)
    return key_text if len(key_text) <= CYCLE_CALL_LENGTH else key_text[: CYCLE_CALL_LENGTH - 1] + "…"


def _repeats_with_period(items: bytes, period: int) -> bool:
    shift = period * DIGEST
    return items[shift:] == items[:-shift]


def _periodic_suffix(items: bytes, period: int) -> int:
    """Length in bytes of the longest suffix of ``items`` that repeats with ``period``."""
    shift = period * DIGEST
    length = shift
    while length + DIGEST <= len(items):
        start = len(items) - length - DIGEST
        if items[start : start + DIGEST] != items[start + shift : start + shift + DIGEST]:
            break
        length += DIGEST
    return length


def _distinct_calls(keys: bytes, period: int) -> int:
    last = keys[-period * DIGEST :]
    return len({last[offset : offset + DIGEST] for offset in range(0, len(last), DIGEST)})


def _canonical_cycle(cycle: bytes) -> bytes:
    """The same fingerprint for every rotation of a cycle (A→B and B→A are one oscillation)."""
    rotations = (cycle[offset:] + cycle[:offset] for offset in range(0, len(cycle), DIGEST))
    return fingerprint(min(rotations).hex())


def _describe(finding: Finding) -> str:
    facts = finding.facts
    same = " with the same results" if facts["no_progress"] else ""
    return (
        f"the same {facts['period']} calls keep alternating{same}, {facts['count']} times over: "
        + " → ".join(facts["cycle"])
    )
