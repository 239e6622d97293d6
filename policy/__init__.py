"""policyctl's engine: parse → check → compile → evaluate → render.

    from policy import load_policy, Guard, ToolCall, ToolResult, Scope

Names are imported on first use, so ``import policy`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policy.compiled import CompiledPolicy
    from policy.decision import Decision, RuleRef
    from policy.diagnostics import Diagnostic, PolicyError
    from policy.events import Scope, ToolCall, ToolResult
    from policy.guard import Guard
    from policy.loader import check_policy, load_policy

logging.getLogger("policy").addHandler(logging.NullHandler())

_EXPORTS = {
    "CompiledPolicy": "policy.compiled",
    "Decision": "policy.decision",
    "RuleRef": "policy.decision",
    "Diagnostic": "policy.diagnostics",
    "PolicyError": "policy.diagnostics",
    "Scope": "policy.events",
    "ToolCall": "policy.events",
    "ToolResult": "policy.events",
    "Guard": "policy.guard",
    "check_policy": "policy.loader",
    "load_policy": "policy.loader",
}

__all__ = [
    "CompiledPolicy",
    "Decision",
    "Diagnostic",
    "Guard",
    "PolicyError",
    "RuleRef",
    "Scope",
    "ToolCall",
    "ToolResult",
    "check_policy",
    "load_policy",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'policy' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
