"""Hint variables every rule provides, whatever its kind."""

from __future__ import annotations

import json
from typing import Any

from policy.compiled import CompiledPolicy
from policy.decision import Action, RuleRef
from policy.events import ToolCall

CALL_SUMMARY_LIMIT = 160

_encode_args = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str).encode


def call_summary(call: ToolCall, limit: int = CALL_SUMMARY_LIMIT) -> str:
    """A short, readable ``tool {"arg": …}`` form of a call."""
    try:
        args = _encode_args(call.args)
    except (TypeError, ValueError):
        args = str(call.args)
    text = f"{call.name} {args}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def common_variables(policy: CompiledPolicy, rule: RuleRef, action: Action, call: ToolCall) -> dict[str, Any]:
    """``policy.hints.COMMON_VARIABLES`` for one rule firing on one call."""
    return {
        "rule": str(rule),
        "rule_kind": rule.kind,
        "rule_name": rule.name,
        "action": action,
        "tool": call.name,
        "args": dict(call.args),
        "call": call_summary(call),
        "call_id": call.id,
        "policy": policy.name,
    }
