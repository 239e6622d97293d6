"""What a decision says to the model and to the caller, whatever the harness."""

from __future__ import annotations

from policy.model.decision import Decision

LOOP_STOP_REASON = "loop_capped"
"""The stop reason of a run a loop rule stopped (DeerFlow's name for it)."""
POLICY_STOP_REASON = "policy_stopped"
"""The stop reason of a run any other rule stopped."""


def decision_text(decision: Decision) -> str:
    """The text the model reads for a decision: its rendered hint, or a plain fallback."""
    text = decision.hint.strip() if decision.hint else ""
    if text:
        return text
    rule = f" by {decision.rule}" if decision.rule else ""
    if decision.action == "stop":
        return f"[policy] Stopped{rule}: no further tool calls run. Give your final answer now."
    if decision.action == "block":
        return f"[policy] Blocked{rule}: the call was not executed."
    return f"[policy] {decision.action}{rule}."


def stop_reason(decision: Decision) -> str:
    """A short code for why a run was stopped, for the caller rather than the model."""
    by_loop = decision.rule is not None and decision.rule.kind == "loop"
    return LOOP_STOP_REASON if by_loop else POLICY_STOP_REASON
