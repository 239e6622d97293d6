"""``loop error_streak``: the same error again and again, with nothing in between.

"The same error" is the ``ErrorKey`` the signatures supply: a signature with
its key captures (the same module, file, port), a block by the same gate, or,
for an error no signature names, the normalised end of the output.  With
``same signature`` only the signature is compared.  A success, or a
different error, ends the streak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policy.model.compiled import CompiledPolicy, ErrorStreakRule
from policy.model.decision import Action
from policy.model.events import ToolCall, ToolResult
from policy.model.fingerprint import fingerprint
from policy.runtime.loops.finding import Finding, tail_excerpt
from policy.runtime.loops.layer import ErrorKey, Fields, Layer, Observed


@dataclass(slots=True)
class StreakState:
    """What ``loop error_streak`` remembers of one scope."""

    key: bytes = b""
    """Fingerprint of the error of the current streak (empty: no streak)."""
    count: int = 0
    warned: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key.hex(), "count": self.count, "warned": self.warned}

    @classmethod
    def from_json(cls, fields: Fields) -> StreakState:
        return cls(key=fields.digests("key"), count=fields.get("count", int),
                   warned=fields.get("warned", bool))


class ErrorStreakLayer(Layer[StreakState]):
    kind = "error_streak"
    state_name = "streak"
    state_type = StreakState

    def __init__(self, rule: ErrorStreakRule) -> None:
        self.rule = rule

    @classmethod
    def from_policy(cls, policy: CompiledPolicy) -> ErrorStreakLayer | None:
        rule = policy.loop(ErrorStreakRule)
        return cls(rule) if rule else None

    def on_result(self, state: StreakState, observed: Observed) -> Finding | None:
        """Extend or end the streak; a stop, an unmarked warning candidate, or None."""
        return self._extend(state, observed.call, observed.result, observed.failed,
                            observed.error_key or ErrorKey.of_text(observed.result_key.hex()))

    def _extend(
        self, state: StreakState, call: ToolCall, result: ToolResult, failed: bool, error_key: ErrorKey
    ) -> Finding | None:
        if not failed:
            state.key, state.count, state.warned = b"", 0, False
            return None
        key = fingerprint(error_key.to_text(same_captures=self.rule.same_captures))
        if key == state.key:
            state.count += 1
        else:
            state.key, state.count, state.warned = key, 1, False

        rule = self.rule
        if state.count >= rule.stop:
            return self._finding("stop", call, result, error_key, state.count)
        if state.count >= rule.warn and not state.warned:
            finding = self._finding("warn", call, result, error_key, state.count)
            finding.mark = lambda: setattr(state, "warned", True)
            return finding
        return None

    def _finding(self, action: Action, call: ToolCall, result: ToolResult, error_key: ErrorKey,
                 count: int) -> Finding:
        rule = self.rule
        facts = {
            "count": count,
            "warn": rule.warn,
            "stop": rule.stop,
            "signature": error_key.signature,
            "captures": error_key.named(),
            "excerpt": tail_excerpt(result.content),
            "same": "captures" if rule.same_captures else "signature",
        }
        return Finding("error_streak", action, rule.ref, rule.hint, call, facts, _describe)


def _describe(finding: Finding) -> str:
    facts = finding.facts
    captures = "".join(f" {name}={value}" for name, value in facts["captures"].items())
    return (
        f"the same error ({facts['signature']}{captures}) came back {facts['count']} times in a row "
        f"(warn at {facts['warn']}, stop at {facts['stop']}): {facts['excerpt']}"
    )
