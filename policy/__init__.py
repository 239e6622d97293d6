"""policyctl's engine, one package per pipeline stage (see ``docs/design.md``):

    language/  .policy text → parse → check → compose → compile → CompiledPolicy
    runtime/   CompiledPolicy + events → evaluate → Decision
    hooks/     Decision → deliver into a harness (LangChain, Claude Code)

``model/`` is the vocabulary they share, ``stores/`` keeps loop state,
``replay/`` and ``testing/`` run recorded sessions and policy tests.

    from policy import load_policy, Guard, ToolCall, ToolResult, Scope

Names are imported on first use, so ``import policy`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policy.hooks.langchain import HarnessGuardMiddleware
    from policy.language.loader import check_policy, load_policy
    from policy.model.compiled import CompiledPolicy
    from policy.model.decision import Decision, RuleRef
    from policy.model.diagnostics import Diagnostic, PolicyError
    from policy.model.events import Scope, ToolCall, ToolResult
    from policy.runtime.guard import Guard
    from policy.stores.file import FileStore
    from policy.stores.memory import MemoryStore, Store
    from policy.stores.redis import RedisStore

logging.getLogger("policy").addHandler(logging.NullHandler())

_EXPORTS = {
    "CompiledPolicy": "policy.model.compiled",
    "Decision": "policy.model.decision",
    "RuleRef": "policy.model.decision",
    "Diagnostic": "policy.model.diagnostics",
    "PolicyError": "policy.model.diagnostics",
    "Scope": "policy.model.events",
    "ToolCall": "policy.model.events",
    "ToolResult": "policy.model.events",
    "Guard": "policy.runtime.guard",
    "Store": "policy.stores.memory",
    "MemoryStore": "policy.stores.memory",
    "FileStore": "policy.stores.file",
    "RedisStore": "policy.stores.redis",
    "HarnessGuardMiddleware": "policy.hooks.langchain",
    "check_policy": "policy.language.loader",
    "load_policy": "policy.language.loader",
}

__all__ = [
    "CompiledPolicy",
    "Decision",
    "Diagnostic",
    "FileStore",
    "Guard",
    "HarnessGuardMiddleware",
    "MemoryStore",
    "PolicyError",
    "RedisStore",
    "RuleRef",
    "Scope",
    "Store",
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
