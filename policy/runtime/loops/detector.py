"""The loop detector: the four layers of a policy, and the order their findings are decided in.

Ordering (DESIGN.md, "Events and decisions"): on a turn, ``repeat`` counts
the batch and ``frequency`` counts each call in the model's order.  A stop
from either ends the scan at once (it rejects the whole batch); a warning
candidate never does, so every call of an admitted batch is counted.  A stop
outranks any warning; when nothing stops, a ``repeat`` warning precedes a
``frequency`` one, and among frequency warnings the first crossing in call
order wins.  Only the selected warning is marked (so it is not repeated) and
logged; the others can warn in a later batch.  On a result, an
``error_streak`` finding outranks an ``oscillation`` one of equal severity.

A turn's warning may be decided without its text (``render=False``): the
guard renders it with ``render`` when it is delivered, so a warning that is
superseded by a stop or dropped at the end of a run costs no rendering.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from policy.model.compiled import CompiledPolicy
from policy.model.decision import ALLOW, SEVERITY, Decision
from policy.model.events import ToolCall, ToolResult
from policy.model.fingerprint import fingerprint
from policy.model.variables import call_summary, common_variables
from policy.runtime.loops.finding import Finding
from policy.runtime.loops.frequency import FrequencyLayer
from policy.runtime.loops.keys import CallKeys
from policy.runtime.loops.oscillation import OscillationLayer
from policy.runtime.loops.repeat import RepeatLayer
from policy.runtime.loops.state import MAX_OPEN_CALLS, ScopeState, drop_oldest
from policy.runtime.loops.streak import ErrorKey, ErrorStreakLayer
from policy.runtime.output import Output, output_reader

log = logging.getLogger("policy.loops")


class LoopDetector:
    """The loop layers of one compiled policy.  It holds no state: that is the ``ScopeState`` passed in."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.policy = policy
        self.keys = CallKeys(policy)
        self._outputs = output_reader(policy)
        repeat, frequency, streak, oscillation = (
            policy.repeat, policy.frequency, policy.error_streak, policy.oscillation
        )
        self._repeat = RepeatLayer(repeat) if repeat else None
        self._frequency = FrequencyLayer(frequency) if frequency else None
        self._streak = ErrorStreakLayer(streak, policy.signatures) if streak else None
        self._oscillation = OscillationLayer(oscillation) if oscillation else None
        self._templates = {rule.ref.name: rule.hint for rule in (repeat, frequency, streak, oscillation)
                           if rule is not None}

    def on_turn(self, state: ScopeState, calls: Sequence[ToolCall], *, render: bool = True) -> Decision:
        """``repeat`` and ``frequency`` over one batch of calls.  ``render=False``: a warning comes
        without its hint (None), for ``render`` to fill in when it is delivered."""
        if not calls:
            return ALLOW
        keys = [self.keys.call_key(call) for call in calls]
        _remember_keys(state.open_calls, calls, keys)
        selected = self._repeat.on_turn(state.repeat, calls, keys) if self._repeat else None
        if selected is not None and selected.action == "stop":
            return self._decide(selected)
        if self._frequency is not None:
            frequency = self._frequency
            window = state.frequency
            for call in calls:
                finding = frequency.on_call(window, call)
                if finding is None:
                    continue
                if finding.action == "stop":
                    return self._decide(finding)
                if selected is None:
                    selected = finding
        return ALLOW if selected is None else self._decide(selected, render=render)

    def on_result(
        self,
        state: ScopeState,
        call: ToolCall,
        result: ToolResult,
        *,
        failed: bool,
        error_key: ErrorKey | None,
        state_changed: bool,
        output: Output | None = None,
    ) -> Decision:
        """Progress bookkeeping for ``repeat``, then ``error_streak`` and ``oscillation``.

        ``output`` is the result's content as ``policy.runtime.output`` read it (read here when None).
        """
        if output is None:
            output = self._outputs.read(result.content)
        key_text = state.open_calls.pop(call.id, None) or self.keys.call_key(call)
        call_key = fingerprint(key_text)
        result_key = self._outputs.fingerprint(output)
        if self._repeat is not None:
            self._repeat.on_result(state.repeat, call.id, call_key, result_key, output.text, state_changed)
        selected: Finding | None = None
        if self._streak is not None:
            key = error_key if error_key else ("text", result_key.hex())
            selected = self._streak.on_result(state.streak, call, result, failed, key)
        if self._oscillation is not None:
            cycle = self._oscillation.on_result(state.oscillation, call, call_key, key_text, result_key,
                                                state_changed)
            if cycle is not None and (selected is None or SEVERITY[cycle.action] > SEVERITY[selected.action]):
                selected = cycle
        return ALLOW if selected is None else self._decide(selected)

    def render(self, decision: Decision, call: ToolCall) -> Decision:
        """A loop decision made with ``render=False``, with its hint (for ``call``, the call it concerns)."""
        rule = decision.rule
        template = self._templates.get(rule.name) if rule is not None else None
        if decision.hint is not None or template is None or rule is None:
            return decision
        summary = decision.metadata.get("call")
        if not isinstance(summary, str):  # decided without it: made now, for the hint and the metadata
            summary = call_summary(call)
            decision = decision._replace(metadata={**decision.metadata, "call": summary})
        variables = common_variables(self.policy.name, rule, decision.action, call, summary)
        variables.update(decision.metadata)
        checked = template.render_checked(variables)
        return decision._replace(hint=checked.text, metadata={**decision.metadata, **checked.facts()})

    def _decide(self, finding: Finding, *, render: bool = True) -> Decision:
        """Mark, log and (unless ``render`` is False and it has a template) render the selected finding."""
        if finding.mark is not None:
            finding.mark()
        if log.isEnabledFor(logging.INFO):
            log.info("loop %s %s on call %s: %s", finding.ref.name, finding.action, finding.call.id, finding)
        if finding.hint is not None and not render:  # the call's summary is made with the hint
            metadata: dict[str, Any] = {"layer": finding.kind, **finding.facts, **finding.metadata}
            return Decision(action=finding.action, rule=finding.ref, call_id=finding.call.id,
                            metadata=metadata)
        summary = call_summary(finding.call)
        rendered: dict[str, Any] = {}
        if finding.hint is None:
            hint = f"[policy] loop {finding.ref.name} {finding.action}: {finding}."
        else:
            variables = common_variables(self.policy.name, finding.ref, finding.action, finding.call, summary)
            variables.update(finding.facts)
            checked = finding.hint.render_checked(variables)
            hint, rendered = checked.text, checked.facts()
        metadata = {"layer": finding.kind, "call": summary, **finding.facts, **finding.metadata, **rendered}
        return Decision(action=finding.action, rule=finding.ref, hint=hint, call_id=finding.call.id,
                        metadata=metadata)


def _remember_keys(open_calls: dict[str, str], calls: Sequence[ToolCall], keys: list[str]) -> None:
    """Keep each call's key until its result arrives (a result that never comes ages out)."""
    for call, key in zip(calls, keys, strict=True):
        open_calls[call.id] = key
    drop_oldest(open_calls, MAX_OPEN_CALLS)
