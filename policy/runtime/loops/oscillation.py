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

from typing import Any

from policy.model.compiled import OscillationRule
from policy.model.events import ToolCall
from policy.model.fingerprint import digest, fingerprint
from policy.model.variables import call_summary
from policy.runtime.loops.finding import Finding
from policy.runtime.loops.state import DIGEST, OscillationState

CYCLE_CALL_LENGTH = 60
"""Characters of each call summary in a reported cycle."""


class OscillationLayer:
    def __init__(self, rule: OscillationRule) -> None:
        self.rule = rule
        self._width = rule.max_period * rule.repeats * DIGEST

    def on_result(
        self,
        state: OscillationState,
        call: ToolCall,
        call_key: bytes,
        key_text: str,
        result: bytes,
        state_changed: bool,
    ) -> Finding | None:
        """Append the call's item (``call_key``: the fingerprint of its key ``key_text``);
        a cycle found and not yet reported, or None."""
        rule = self.rule
        if rule.no_progress and state_changed:
            state.items, state.keys, state.calls, state.warned = b"", b"", [], b""
            return None
        item = digest(call_key + result) if rule.no_progress else call_key
        state.items = (state.items + item)[-self._width :]
        state.keys = (state.keys + call_key)[-self._width :]
        kept = state.calls[max(len(state.calls) + 1 - rule.max_period, 0) :]
        state.calls = [*kept, _step(call, key_text)]

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
        }
        finding = Finding("oscillation", rule.action, rule.ref, rule.hint, call, facts, _describe,
                          metadata={"no_progress": rule.no_progress})
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
    same = " with the same results" if finding.metadata["no_progress"] else ""
    return (
        f"the same {facts['period']} calls keep alternating{same}, {facts['count']} times over: "
        + " → ".join(facts["cycle"])
    )
