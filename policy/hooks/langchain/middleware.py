"""``HarnessGuardMiddleware``: a policy guard for agents built with ``langchain.agents.create_agent``.

The middleware only translates: the model's tool calls become ``on_turn``, each
tool execution ``on_call`` then ``on_result``, and the decisions come back as
messages (see ``policy.hooks.langchain.messages``).  Every tool call gets exactly one
ToolMessage, so tool-call pairing is never broken.

Lifecycle of one agent invocation (DeerFlow's run-scope lifecycle):

- ``before_agent`` counts the invocation in; it deletes nothing.
- ``after_model`` runs the loop layers over the model's batch.  A ``stop``
  removes the batch's tool calls from the message and appends the stop text,
  so the run ends with a final answer.  A warning waits in the guard: with
  the policy's ``deliver_warnings tool_message`` it is appended to that call's
  result; with ``next_request`` ``wrap_model_call`` adds the scope's queued
  warnings to the next model request as one ``HumanMessage(name="loop_warning")``
  after every ToolMessage, so it never enters the run's state, history,
  checkpoints or memory (DeerFlow's delivery).
- ``wrap_tool_call`` gates the call, runs it, and appends hints and warnings
  to its ToolMessage.  A ``stop`` decided here (an error streak, say) refuses
  the remaining calls and ends the run at the next model turn.
- ``after_agent`` clears this scope's undelivered warnings (never its loop
  history, never another scope's) and releases the generated run id.

Place the middleware outside (before, in the ``middleware`` list) any
middleware that turns tool exceptions into error ToolMessages, so it sees
failures as messages.  A tool exception that reaches it unhandled is counted
as a failed result and re-raised unchanged: ``create_agent`` lets such
exceptions fail the run, and the guard does not change that.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Command

from policy.hooks.delivery import decision_text, stop_reason
from policy.hooks.langchain.messages import (
    annotated_tool_message,
    append_text,
    blocked_tool_message,
    message_text,
    stopped_ai_message,
)
from policy.hooks.langchain.scope import RunScopes
from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.gates.bounds import read_local_file
from policy.runtime.guard import Guard
from policy.runtime.workspace.base import Workspace
from policy.runtime.workspace.listed import ListedWorkspace
from policy.stores.lru import LruDict
from policy.stores.memory import MemoryStore, Store

log = logging.getLogger("policy.langchain")
ToolOutcome = ToolMessage | Command[Any]
WARNING_MESSAGE_NAME = "loop_warning"
"""The ``name`` of the HumanMessage that carries queued warnings into a model request (DeerFlow's)."""
ReadFile = Callable[[str], "str | None"] | Callable[[Any, str], "str | None"]
"""``read_file(path)``, or ``read_file(runtime, path)`` for readers that need the tool's runtime
(DeerFlow's sandbox reader).  ``None`` or ``FileNotFoundError``: the file does not exist."""

ListFiles = Callable[[], Iterable[Sequence[Any]]] | Callable[[Any], Iterable[Sequence[Any]]]
"""``list_files()``, or ``list_files(runtime)`` for a lister that needs the tool's runtime."""

_tool_runtime: contextvars.ContextVar[Any] = contextvars.ContextVar("policy_tool_runtime", default=None)


class HarnessGuardMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Write gates, error hints and loop detection from a ``.policy`` file, as agent middleware.

    ``policy``: a compiled policy, a ``.policy`` path or ``builtin:NAME``.
    ``read_file``: how a write gate reads the file a call would change (default:
    the local file system).  ``store``: where per-scope state lives (default: in
    memory, bounded by the policy's ``max_scopes``; pass a shared store when
    several workers serve one run).  ``workspace``: the folder the agent works
    in (the policy's ``workspace { … }`` says what is done with it: sweeps,
    progress); with ``list_files``, that folder is in a sandbox elsewhere and
    ``list_files()`` (or ``list_files(runtime)``) lists its files as
    ``(path, size, mtime_ns[, ctime_ns])`` (see ``policy.runtime.workspace.listed``).
    """

    def __init__(
        self,
        policy: CompiledPolicy | str | os.PathLike[str] = "builtin:default",
        read_file: ReadFile | None = None,
        store: Store | None = None,
        workspace: str | os.PathLike[str] | Workspace | None = None,
        list_files: ListFiles | None = None,
    ) -> None:
        super().__init__()
        reader_takes_runtime = read_file is not None and _required_positional_count(read_file) == 2
        lister_takes_runtime = list_files is not None and _required_positional_count(list_files) == 1
        self._binds_runtime = reader_takes_runtime or lister_takes_runtime
        """A reader or lister reads the tool's runtime (``_tool_runtime``): bind it around the gates."""
        reader = _reader_for(read_file, reader_takes_runtime) if read_file is not None else None
        self.guard = Guard(policy, read_file=reader, store=store,
                           workspace=_workspace_for(workspace, list_files, lister_takes_runtime, reader))
        limit = self.guard.policy.max_scopes
        self.scopes = RunScopes(limit)
        self._lock = threading.Lock()
        self._stops: LruDict[tuple[str, str], Decision] = LruDict(limit)
        """(thread id, run id) → the stop decided during a tool call, enforced at the next model turn."""
        self._stop_reasons: LruDict[str | None, str] = LruDict(limit)
        """The caller's run id (None for a run it gave none) → why the run was stopped, until consumed."""
        self._queues = self.guard.policy.deliver_warnings == "next_request"
        self._inline = isinstance(self.guard.store, MemoryStore)
        """Loop layers and queued warnings in memory are microseconds of pure computation: the async
        hooks run them in place instead of in a worker thread (gates, which may run a command
        checker, and result diagnosis, which reads up to ``scan_limit`` of output, still go to one)."""

    # --- for callers ---------------------------------------------------------

    def consume_stop_reason(self, run_id: str | None = None) -> str | None:
        """Why the guard stopped run ``run_id`` (``loop_capped``…), once; None if it did not.

        ``None`` asks about a run whose context gave no run id (or ``run_id: None``, as
        DeerFlow's subagent executor passes for an embedded client's subagent)."""
        with self._lock:
            return self._stop_reasons.pop(None if run_id is None else str(run_id))

    def reset(self, thread_id: str | None = None) -> None:
        """Forget every run scope of a thread: loop histories, pending warnings, stops; with no
        thread (None or ``""``, as DeerFlow's ``reset`` reads it), of every thread, and every stop
        reason not yet consumed."""
        thread_id = thread_id or None
        self.guard.reset(thread_id)
        with self._lock:
            if thread_id is None:
                self._stops.pop_where(lambda key: True)
                self._stop_reasons.pop_where(lambda key: True)
            else:
                self._stops.pop_where(lambda key: key[0] == thread_id)

    # --- agent lifecycle -----------------------------------------------------

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self.scopes.enter(self._node_scope(runtime))
        return None

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        scope = self._node_scope(runtime)
        if self.scopes.leave(scope, runtime.control):
            self.guard.clear_pending(scope)
            with self._lock:
                self._stops.pop(scope.key)
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        scope = self._node_scope(runtime)
        if self.scopes.leave(scope, runtime.control):
            if self._inline:
                self.guard.clear_pending(scope)
            else:
                await self.guard.aclear_pending(scope)
            with self._lock:
                self._stops.pop(scope.key)
        return None

    # --- model requests and turns ---------------------------------------------

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> ModelCallResult[Any]:
        if not self._queues:
            return handler(request)
        warnings = self.guard.take_warnings(self._node_scope(request.runtime))
        return handler(self._with_warnings(request, warnings))

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
                               ) -> ModelCallResult[Any]:
        if not self._queues:
            return await handler(request)
        scope = self._node_scope(request.runtime)
        warnings = self.guard.take_warnings(scope) if self._inline else await self.guard.atake_warnings(scope)
        return await handler(self._with_warnings(request, warnings))

    @staticmethod
    def _with_warnings(request: ModelRequest[Any], warnings: list[Decision]) -> ModelRequest[Any]:
        """The request with the queued warnings as one last HumanMessage (the request only, not the state)."""
        if not warnings:
            return request
        text = "\n\n".join(decision_text(warning) for warning in warnings)
        notice = HumanMessage(content=text, name=WARNING_MESSAGE_NAME)
        return request.override(messages=[*request.messages, notice])

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        turn = _model_turn(state)
        if turn is None:
            return None
        message, calls = turn
        scope = self._node_scope(runtime)
        stop = self._stops.peek(scope.key) and self._pending_stop(scope)  # a run not stopped: no call
        decision = stop or self.guard.on_turn(calls, scope)
        if decision.action != "stop":  # the common case: nothing to change in the state
            return None
        self._record_stop(scope, runtime.context, decision)
        return {"messages": [stopped_ai_message(message, decision)]}  # without its calls, with the stop text

    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        turn = _model_turn(state)
        if turn is None:
            return None
        message, calls = turn
        scope = self._node_scope(runtime)
        decision = self._pending_stop(scope) or (
            self.guard.on_turn(calls, scope) if self._inline else await self.guard.aon_turn(calls, scope))
        if decision.action != "stop":
            return None
        self._record_stop(scope, runtime.context, decision)
        return {"messages": [stopped_ai_message(message, decision)]}

    # --- tool calls ----------------------------------------------------------

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolOutcome]) -> ToolOutcome:
        call, scope = _tool_call(request), self._tool_scope(request)
        refusal = self._stopped_refusal(call, scope)
        if refusal is None:
            decision = self._bound(request.runtime, self.guard.on_call, call, scope)
            refusal = self._gate_refusal(call, decision, scope, request)
        if refusal is not None:
            return refusal
        try:
            outcome = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as err:
            self._bound(request.runtime, self.guard.on_result, call, _raised(err), scope)
            raise
        decision = self._bound(request.runtime, self.guard.on_result, call, _tool_result(outcome, call),
                               scope)
        return self._delivered(call, outcome, decision, scope, request)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[ToolOutcome]]) -> ToolOutcome:
        call, scope = _tool_call(request), self._tool_scope(request)
        refusal = self._stopped_refusal(call, scope)
        if refusal is None:
            decision = await self._abound(request.runtime, self.guard.aon_call, call, scope)
            refusal = self._gate_refusal(call, decision, scope, request)
        if refusal is not None:
            return refusal
        try:
            outcome = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as err:
            await self._abound(request.runtime, self.guard.aon_result, call, _raised(err), scope)
            raise
        decision = await self._abound(request.runtime, self.guard.aon_result, call,
                                      _tool_result(outcome, call), scope)
        return self._delivered(call, outcome, decision, scope, request)

    def _bound(self, runtime: Any, evaluate: Callable[..., Decision], *args: Any) -> Decision:
        """``evaluate(*args)``, the tool's runtime visible to a reader or lister that takes it."""
        if not self._binds_runtime:
            return evaluate(*args)
        token = _tool_runtime.set(runtime)
        try:
            return evaluate(*args)
        finally:
            _tool_runtime.reset(token)

    async def _abound(self, runtime: Any, evaluate: Callable[..., Awaitable[Decision]],
                      *args: Any) -> Decision:
        """``_bound`` for a coroutine (``asyncio.to_thread`` copies the bound runtime to its thread)."""
        if not self._binds_runtime:
            return await evaluate(*args)
        token = _tool_runtime.set(runtime)
        try:
            return await evaluate(*args)
        finally:
            _tool_runtime.reset(token)

    def _stopped_refusal(self, call: ToolCall, scope: Scope) -> ToolMessage | None:
        """A call of a run that a stop has ended is not executed."""
        stop = self._pending_stop(scope)
        return None if stop is None else blocked_tool_message(call, stop._replace(hint=_not_run_text(stop)))

    def _gate_refusal(self, call: ToolCall, decision: Decision, scope: Scope,
                      request: ToolCallRequest) -> ToolMessage | None:
        """The error ToolMessage for a blocked call, else None."""
        if decision.action == "stop":
            self._record_stop(scope, _context(request), decision)
        if decision.action in ("block", "stop"):
            return blocked_tool_message(call, decision)
        return None

    def _delivered(self, call: ToolCall, outcome: ToolOutcome, decision: Decision, scope: Scope,
                   request: ToolCallRequest) -> ToolOutcome:
        if decision.action == "stop":
            self._record_stop(scope, _context(request), decision)
        if decision.action == "allow":
            return outcome
        annotated: ToolOutcome = _annotated(outcome, call.id, decision)  # the handler's kind of outcome
        return annotated

    # --- scopes and stops ----------------------------------------------------

    def _node_scope(self, runtime: Runtime[Any]) -> Scope:
        context = runtime.context
        named = self.scopes.named(context)  # DeerFlow's shape, the common case: no config to read
        if named is not None:
            return named
        return self.scopes.resolve(context, runtime.execution_info, _configurable(None), runtime.control)

    def _tool_scope(self, request: ToolCallRequest) -> Scope:
        runtime = request.runtime
        context = getattr(runtime, "context", None)
        named = self.scopes.named(context)
        if named is not None:
            return named
        return self.scopes.resolve(context, getattr(runtime, "execution_info", None),
                                   _configurable(getattr(runtime, "config", None)), _invocation_control())

    def _pending_stop(self, scope: Scope) -> Decision | None:
        key = scope.key
        if self._stops.peek(key) is None:  # a lock-free look first: most turns belong to runs not stopped
            return None
        with self._lock:
            return self._stops.get(key)

    def _record_stop(self, scope: Scope, context: Any, decision: Decision) -> None:
        # No log record: the rule that stopped the run logged it (``policy.loops``, one record per
        # stop, as DeerFlow makes).
        reason = stop_reason(decision)
        run_id = scope.run_id if scope.run_id_given else None
        with self._lock:
            self._stops.put(scope.key, decision)
            self._stop_reasons.put(run_id, reason)
        if isinstance(context, dict):
            context["stop_reason"] = reason


# --- helpers -------------------------------------------------------------------


def _model_turn(state: Any) -> tuple[AIMessage, list[ToolCall]] | None:
    """The model's last message and its tool calls as the guard's ``ToolCall``s; None unless that
    message is an AI message with tool calls (one helper: this runs on every model turn)."""
    if type(state) is dict or isinstance(state, Mapping):
        messages = state.get("messages")
    else:
        messages = getattr(state, "messages", None)
    if not messages or not (type(messages) is list or isinstance(messages, Sequence)):
        return None
    message = messages[-1]
    if not (type(message) is AIMessage or isinstance(message, AIMessage)) or not message.tool_calls:
        return None
    calls = message.tool_calls
    if len(calls) == 1:  # the common batch, without a comprehension's frame
        call = calls[0]
        return message, [ToolCall(call.get("id") or "", call.get("name") or "", call.get("args") or {})]
    return message, [ToolCall(call.get("id") or "", call.get("name") or "", call.get("args") or {})
                     for call in calls]


def _tool_call(request: ToolCallRequest) -> ToolCall:
    call = request.tool_call
    return ToolCall(id=call.get("id") or "", name=call.get("name") or "", args=call.get("args") or {})


def _context(request: ToolCallRequest) -> Any:
    return getattr(request.runtime, "context", None)


def _configurable(config: Any) -> Mapping[str, Any]:
    """The ``configurable`` of ``config``, or of the current LangGraph node's config."""
    if config is None:
        try:
            config = get_config()
        except RuntimeError:  # outside a runnable context
            return {}
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    return configurable if isinstance(configurable, Mapping) else {}


def _invocation_control() -> object | None:
    """The ``RunControl`` the current graph invocation shares (tool runtimes do not carry it)."""
    try:
        runtime = get_runtime()
    except (RuntimeError, KeyError):  # outside a graph invocation
        return None
    return getattr(runtime, "control", None)


def _tool_result(outcome: object, call: ToolCall) -> ToolResult:
    """What the call returned, as the guard reads it: its ToolMessage (the outcome, or the one a
    Command's update holds for it), or a plain text an inner middleware returned.  Anything else
    is read as an empty result: a Command without one (a hand-off to a parent graph) silently,
    any other outcome with a log record."""
    if isinstance(outcome, str):
        return ToolResult(content=outcome)
    message = _own_message(outcome, call.id)
    if message is None:
        if not isinstance(outcome, Command):
            log.warning("tool call %s (%s) answered with %s, not a ToolMessage: its result is not read",
                        call.id, call.name, type(outcome).__name__)
        return ToolResult(content="")
    return ToolResult(content=message_text(message.content), status=message.status)


def _raised(err: Exception) -> ToolResult:
    try:
        text = str(err)
    except Exception:  # an exception that cannot say what it is is still the tool's failure
        text = "(its message could not be read)"
    return ToolResult(content=f"Error: {type(err).__name__}: {text}", status="error")


def _own_message(outcome: object, call_id: str) -> ToolMessage | None:
    """The ToolMessage answering ``call_id``: the outcome itself, or the one inside a Command's update
    (a message there may also be a dict, as LangGraph's message reducer takes it)."""
    if isinstance(outcome, ToolMessage):
        return outcome
    entry = _command_entry(outcome, call_id) if isinstance(outcome, Command) else None
    return None if entry is None else entry[1]


def _command_entry(command: Command[Any], call_id: str) -> tuple[int, ToolMessage] | None:
    """Where in a Command's update messages the one answering ``call_id`` is, and it as a
    ToolMessage; None when there is none."""
    for index, message in enumerate(_command_messages(command)):
        own = _as_tool_message(message)
        if own is not None and own.tool_call_id == call_id:
            return index, own
    return None


def _as_tool_message(message: Any) -> ToolMessage | None:
    """A Command update's message as a ToolMessage: the message, or a ``tool`` message dict made into
    one (None for anything else)."""
    if isinstance(message, ToolMessage):
        return message
    if not isinstance(message, Mapping) or "tool" not in (message.get("role"), message.get("type")):
        return None
    try:
        converted = convert_to_messages([dict(message)])[0]
    except Exception:  # not a message LangChain can read: not this call's answer either
        return None
    return converted if isinstance(converted, ToolMessage) else None


def _command_messages(command: Command[Any]) -> Sequence[Any]:
    update = command.update
    messages = update.get("messages") if isinstance(update, Mapping) else None
    return messages if isinstance(messages, list) else []


def _annotated(outcome: object, call_id: str, decision: Decision) -> Any:
    """The outcome with the decision's text: on its ToolMessage, after a plain text an inner
    middleware returned; any other outcome as it is."""
    if isinstance(outcome, ToolMessage):
        return annotated_tool_message(outcome, decision)
    if isinstance(outcome, str):
        return append_text(outcome, decision_text(decision))
    if not isinstance(outcome, Command):
        return outcome
    entry = _command_entry(outcome, call_id)
    if entry is None:
        return outcome
    index, own = entry
    messages = list(_command_messages(outcome))
    messages[index] = annotated_tool_message(own, decision)
    assert isinstance(outcome.update, Mapping)
    return replace(outcome, update={**outcome.update, "messages": messages})


def _not_run_text(stop: Decision) -> str:
    rule = f" ({stop.rule})" if stop.rule else ""
    return f"[policy] Not executed: this run was stopped{rule}. Give your final answer now."


def _workspace_for(workspace: str | os.PathLike[str] | Workspace | None, list_files: ListFiles | None,
                   takes_runtime: bool, reader: Callable[[str], str | None] | None,
                   ) -> str | os.PathLike[str] | Workspace | None:
    """The guard's workspace: a local folder, or, with a lister, a folder of a remote sandbox
    (``takes_runtime``: the lister is ``list_files(runtime)``)."""
    if list_files is None:
        return workspace
    if not isinstance(workspace, str | os.PathLike):
        raise TypeError("list_files= needs workspace= to name the sandbox folder it lists")
    lister = list_files

    def listed() -> Iterable[Sequence[Any]]:
        if takes_runtime:
            return lister(_tool_runtime.get())  # type: ignore[call-arg]
        return lister()  # type: ignore[call-arg]

    return ListedWorkspace(listed, reader or read_local_file, root=os.fspath(workspace))


def _reader_for(read_file: ReadFile, takes_runtime: bool) -> Callable[[str], str | None]:
    """Adapt a user's reader to the guard's ``read_file(path)``: pass the tool runtime when it
    takes one (``takes_runtime``: it is ``read_file(runtime, path)``), and read
    ``FileNotFoundError`` as a missing file."""

    def read(path: str) -> str | None:
        try:
            if takes_runtime:
                return read_file(_tool_runtime.get(), path)  # type: ignore[call-arg]
            return read_file(path)  # type: ignore[call-arg]
        except FileNotFoundError:
            return None

    return read


def _required_positional_count(function: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(1 for p in parameters
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)
