"""Put ``HarnessGuardMiddleware`` where it belongs in each of DeerFlow's entry points.

DeerFlow (bytedance/deer-flow) has no public way to place a middleware where
its ``ReadBeforeWriteMiddleware`` sits, outside the middleware that turns tool
exceptions into messages: ``custom_middlewares`` and ``DeerFlowClient(middlewares=…)``
append near the end of the chain, inside the error handler, and subagents build
their own chain.  Each helper here places the guard in one line and removes
DeerFlow's ``LoopDetectionMiddleware`` from that chain, so the model is never
warned twice:

- ``guard_chain(middlewares, guard)``: any chain DeerFlow built (the lead agent's
  ``build_middlewares``, the subagents' ``build_subagent_runtime_middlewares``);
- ``sdk_options(guard)``: the keyword arguments for the SDK's ``create_deerflow_agent``
  (``loop_detection`` off, the guard anchored with ``@Prev(ToolErrorHandlingMiddleware)``);
- ``guard_lead_agent(…)`` and ``guard_subagents(…)``: wrap DeerFlow's chain builders
  (``build_middlewares``, ``build_subagent_runtime_middlewares``) so every chain they
  build gets a guard of its own, as DeerFlow builds a LoopDetectionMiddleware for
  each.  They return a function that undoes the wrapping.

The guard goes just outside the first of ``ReadBeforeWriteMiddleware``,
``ToolProgressMiddleware`` and ``ToolErrorHandlingMiddleware``: it sees every
tool failure as a message (with the ``deerflow_tool_meta`` DeerFlow stamped), a
write it blocks never reaches the sandbox, and its ``after_model`` runs after
DeerFlow's ``SafetyFinishReasonMiddleware`` has dropped unsafe tool calls
(LangChain runs ``after_model`` hooks last-registered first).  DeerFlow is
imported only when a helper runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Sequence
from functools import cache, wraps
from typing import Any

from policy.hooks.langchain.middleware import HarnessGuardMiddleware, ReadFile
from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.stores.memory import Store

LOOP_DETECTION = "LoopDetectionMiddleware"
"""The DeerFlow middleware the guard replaces."""
TOOL_RESULT_MIDDLEWARES = (
    "ReadBeforeWriteMiddleware", "ToolProgressMiddleware", "ToolErrorHandlingMiddleware")
"""DeerFlow's tool-call middlewares, outermost first: the guard goes just outside the first one present."""

_LEAD_BUILDERS = (("deerflow.agents.lead_agent.agent", "build_middlewares"),
                  ("deerflow.client", "build_middlewares"))
"""Where the lead agent's chain is built: ``make_lead_agent`` and the embedded ``DeerFlowClient``
(which imports ``build_middlewares`` by name)."""
_SUBAGENT_BUILDERS = (("deerflow.agents.middlewares.tool_error_handling_middleware",
                       "build_subagent_runtime_middlewares"),)
"""Where each subagent's chain is built (``SubagentExecutor._create_agent`` imports it per task)."""
_WRAPPED = "__policyctl_guarded__"

Policy = CompiledPolicy | str | os.PathLike[str]
Middlewares = list[Any]


def guard_chain(middlewares: Sequence[Any], guard: HarnessGuardMiddleware) -> Middlewares:
    """``middlewares`` without DeerFlow's LoopDetectionMiddleware and with ``guard`` just outside
    its tool-call middlewares.  ``ValueError`` when the chain has none of them."""
    chain = [m for m in middlewares if not _is(m, LOOP_DETECTION)]
    for name in TOOL_RESULT_MIDDLEWARES:
        index = next((i for i, m in enumerate(chain) if _is(m, name)), None)
        if index is not None:
            chain.insert(index, guard)
            return chain
    raise ValueError("the middleware chain has none of DeerFlow's tool-call middlewares "
                     f"({', '.join(TOOL_RESULT_MIDDLEWARES)}); put the guard before the one that "
                     "turns tool exceptions into messages yourself")


def deerflow_guard(policy: Policy = "builtin:deerflow", *, read_file: ReadFile | None = None,
                   store: Store | None = None) -> HarnessGuardMiddleware:
    """A guard for ``sdk_options``: its class carries DeerFlow's ``@Prev(ToolErrorHandlingMiddleware)``.
    ``read_file`` defaults to DeerFlow's sandbox reader."""
    return _anchored_class()(policy, read_file=_sandbox_reader(read_file), store=store)


def sdk_options(guard: HarnessGuardMiddleware, features: Any = None) -> dict[str, Any]:
    """``create_deerflow_agent(model, tools, **sdk_options(guard))``: ``features`` (default
    ``RuntimeFeatures()``) with ``loop_detection`` off, and the guard as ``extra_middleware``."""
    if getattr(type(guard), "_prev_anchor", None) is None:
        raise TypeError("sdk_options needs a guard made by deerflow_guard(), whose class carries "
                        "DeerFlow's @Prev(ToolErrorHandlingMiddleware) anchor")
    if features is None:
        features = importlib.import_module("deerflow.agents.features").RuntimeFeatures()
    return {"features": dataclasses.replace(features, loop_detection=False), "extra_middleware": [guard]}


def guard_lead_agent(policy: Policy = "builtin:deerflow", *, read_file: ReadFile | None = None,
                     store: Store | None = None) -> Callable[[], None]:
    """Give every lead-agent chain DeerFlow builds (``make_lead_agent``, ``DeerFlowClient``) a guard
    in place of its LoopDetectionMiddleware.  Returns the function that undoes it."""
    return _wrap_builders(_LEAD_BUILDERS, _guard_factory(policy, read_file, store))


def guard_subagents(policy: Policy = "builtin:deerflow", *,
                    read_file: ReadFile | None = None) -> Callable[[], None]:
    """Give every subagent chain DeerFlow builds a guard of its own, with its own in-memory state:
    subagents share their lead's thread and run ids, so a shared store would add their calls to
    the lead's loop budget.  The executor finds the guard's ``consume_stop_reason`` as it finds
    LoopDetectionMiddleware's.  Returns the undo function."""
    return _wrap_builders(_SUBAGENT_BUILDERS, _guard_factory(policy, read_file, None))


# --- helpers -------------------------------------------------------------------


def _is(middleware: Any, class_name: str) -> bool:
    """Is ``middleware`` (or the one a DeerFlow extension wrapper holds) of a class so named?"""
    inner = getattr(middleware, "inner", None)
    candidates = (middleware, inner) if inner is not None else (middleware,)
    return any(cls.__name__ == class_name for candidate in candidates for cls in type(candidate).__mro__)


def _anchored_class() -> type[HarnessGuardMiddleware]:
    """``HarnessGuardMiddleware`` under DeerFlow's ``@Prev(ToolErrorHandlingMiddleware)``."""
    features = importlib.import_module("deerflow.agents.features")
    handler = importlib.import_module("deerflow.agents.middlewares.tool_error_handling_middleware")
    return _anchored(features.Prev, handler.ToolErrorHandlingMiddleware)


@cache
def _anchored(prev: Callable[[type[Any]], Callable[[type[Any]], type[Any]]],
              anchor: type[Any]) -> type[HarnessGuardMiddleware]:
    """One subclass per anchor class (the SDK factory finds the anchor with ``isinstance``)."""
    anchored = type("HarnessGuardMiddleware", (HarnessGuardMiddleware,),
                    {"__doc__": HarnessGuardMiddleware.__doc__, "__module__": __name__})
    return prev(anchor)(anchored)


def _sandbox_reader(read_file: ReadFile | None) -> ReadFile | None:
    """``read_file``, else DeerFlow's ``read_current_file_content(runtime, path)`` when it is there."""
    if read_file is not None:
        return read_file
    try:
        reader: ReadFile = importlib.import_module("deerflow.sandbox.tools").read_current_file_content
    except (ImportError, AttributeError):
        return None
    return reader


def _guard_factory(policy: Policy, read_file: ReadFile | None,
                   store: Store | None) -> Callable[[], HarnessGuardMiddleware]:
    """Guards sharing one compiled policy (compiled once, here)."""
    compiled = policy if isinstance(policy, CompiledPolicy) else load_policy(policy)
    reader = _sandbox_reader(read_file)
    return lambda: HarnessGuardMiddleware(compiled, read_file=reader, store=store)


def _wrap_builders(builders: Sequence[tuple[str, str]],
                   new_guard: Callable[[], HarnessGuardMiddleware]) -> Callable[[], None]:
    undo: list[tuple[Any, str, Callable[..., Middlewares]]] = []
    for module_name, attribute in builders:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        original = getattr(module, attribute, None)
        if original is None:
            continue
        original = getattr(original, _WRAPPED, original)  # guarding again replaces the earlier guard
        setattr(module, attribute, _guarded_builder(original, new_guard))
        undo.append((module, attribute, original))
    if not undo:
        raise ImportError(f"none of DeerFlow's chain builders could be imported: "
                          f"{', '.join(f'{m}.{a}' for m, a in builders)}")

    def restore() -> None:
        for module, attribute, original in undo:
            setattr(module, attribute, original)

    return restore


def _guarded_builder(build: Callable[..., Middlewares],
                     new_guard: Callable[[], HarnessGuardMiddleware]) -> Callable[..., Middlewares]:
    @wraps(build)
    def guarded(*args: Any, **kwargs: Any) -> Middlewares:
        return guard_chain(build(*args, **kwargs), new_guard())

    setattr(guarded, _WRAPPED, build)
    return guarded
