"""HarnessGuardMiddleware.after_model against DeerFlow's own LoopDetectionMiddleware.after_model.

    .venv/bin/python bench/bench_deerflow.py [--rounds 5] [--turns 4000] [--no-logging]
                                             [--warm-caches | --evict-mb 8] [--per-turn]

The baseline, ``DeerFlowLoopDetection`` below, restates DeerFlow's middleware on
the paths this bench runs (bytedance/deer-flow at ``f1f4af99``, 2026-08-22,
``backend/packages/harness/deerflow/agents/middlewares/loop_detection_middleware.py``:
``_normalize_tool_call_args``, ``_stable_tool_key``, ``_hash_tool_calls``, and of
``LoopDetectionMiddleware`` ``after_model`` -> ``_apply`` -> ``_track_and_check``,
``_get_thread_id``, ``_get_run_id``, ``_pending_key``, ``_evict_if_needed``,
``_queue_pending_warning`` with its touch and prune helpers, ``_append_text``,
``_build_hard_stop_update``, ``wrap_model_call`` -> ``_augment_request`` ->
``_drain_pending_warnings``, ``_format_warning_message``, ``after_agent`` ->
``_clear_current_run_pending_warnings``; ``_bounded_dict.BoundedDict``) with its
defaults, texts and log records: per call a JSON key per tool call and an MD5
of the sorted batch, a list of recent hashes with ``count``, a deque and
``Counter`` of tool names, a warning queue drained into the next request as a
``HumanMessage``, and on a stop a deep copy of the response metadata and a copy
of the message without its tool calls (``consume_stop_reason``, ``reset`` and
the async hooks are not on these paths and are left out).  Where DeerFlow's
loop-detection lifecycle note differs, the note is followed, as
``builtin:deerflow`` does; its commit (``36ce7590b7``) is not in the snapshot
read, so that part follows the note's text.  That adds work HEAD's code does not
do: state keyed by (thread, run), computed once per call, where HEAD keys by the
thread id; frequency counted on a warning's turn, where HEAD returns at the
first warning; and the warning marked and logged once selected.  Run against
HEAD's own class (loaded with only ``typing.override`` shimmed, one thread id per
scope standing in for the run id), interleaved, 5 rounds each, this baseline
cost 1.04-1.06x HEAD's on allow (the run key), 1.04-1.08x on warn and
0.99-1.02x on stop, logging as in production or off (2 Dec 2026, load 3.1): a
ratio under 1.0 by less than that is not conclusive.  A run without an id keeps HEAD's fallback
(``str(id(runtime))``; the note's, anchored to ``Runtime.control``, is not
needed: every run here has an id).  DeerFlow cannot be imported here.

Workload (the same for both, in one process): ``--turns`` turns of one bash
call, in run scopes of 25 turns: 20 distinct commands, then one command five
times, so each scope has one warning (3rd) and one stop (5th) under the
``builtin:deerflow`` policy, DeerFlow's defaults.  Each turn is what the agent
loop does: ``after_model`` (timed), then the tool call and the next model
request (not timed; the guard's ``wrap_tool_call`` and both ``wrap_model_call``s,
whose handler, the model call, is for both sides the same ``rest_of_the_turn``:
the tool's 1.4 KB answer joins the conversation, which is serialised as the next
request, and 8 MB are written, as the tool's process and the model's round trip
would evict the core's caches; ``--warm-caches`` skips that, ``--evict-mb`` sets how much
is written: 48 MB is past the 32 MB last level of the machine of 4 Dec 2026), each scope entered
with ``before_agent`` and left with ``after_agent``.  The eviction runs inside
the handler, as the round trip does: what a ``wrap_model_call`` touches before
its handler is not left warm for the next ``after_model``.

Logging.  By default as DeerFlow's gateway sets it up (``production_logging``):
the root logger at INFO with one formatting stream handler, and the ``deerflow``
logger at INFO, so DeerFlow's warn and stop paths each make one WARNING/ERROR
record (through its module's logger, below ``deerflow``) and policyctl's INFO
records are made too (its loggers have no level of their own).  Both sides
pay for formatting their records; the handler writes to the null device, so
no side pays for a terminal or a disk.  ``--no-logging`` switches logging off
altogether (``logging.disable``): the decisions alone.

Paths: allow (nothing fires), warn (the 3rd identical call), stop (the 5th).
Each round interleaves the two implementations scope by scope and takes the
median time per path; the ratio per round is ours / DeerFlow's.  Reported: the
median ratio over the rounds and its range.  Target: every path <= 1.0.
``--per-turn`` adds each turn of a scope, and what a warn or stop turn costs over
an allow turn: the decision's own work, on either side.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import logging
import os
import statistics
import sys
import threading
import time
from collections import Counter, OrderedDict, defaultdict, deque
from collections.abc import Callable
from copy import deepcopy
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolRuntime
from langgraph.runtime import Runtime

from policy.hooks.langchain import HarnessGuardMiddleware

TARGET = 1.0
SCOPE_TURNS = 25
PATHS = {22: "warn", 24: "stop"}
"""Turn index within a scope -> its path (the rest allow)."""
SIDES = ("policyctl", "deerflow")

# --- the baseline: DeerFlow's after_model, restated -------------------------------------------


log = logging.getLogger("deerflow.agents.middlewares.loop_detection_middleware")
"""DeerFlow's module logger (``logging.getLogger(__name__)``): below the ``deerflow`` logger that
``production_logging`` sets to INFO, as DeerFlow's gateway does, so a record passes through it."""

WARN, HARD, WINDOW, MAX_SCOPES = 3, 5, 20, 100
FREQ_WARN, FREQ_HARD = 30, 50
FREQ_WINDOW = max(WINDOW, FREQ_HARD)
MAX_PENDING = 4
SALIENT = ("path", "url", "query", "command", "pattern", "glob", "cmd")

WARNING_TEXT = ("[LOOP DETECTED] You are repeating the same tool calls. Stop calling tools and produce your "
                "final answer now. If you cannot complete the task, summarize what you accomplished so far.")
FREQ_WARNING_TEXT = ("[LOOP DETECTED] You have called {tool_name} {count} times without producing a final "
                     "answer. Stop calling tools and produce your final answer now. If you cannot complete "
                     "the task, summarize what you accomplished so far.")
STOP_TEXT = ("[FORCED STOP] Repeated tool calls exceeded the safety limit. Producing final answer with "
             "results collected so far.")
FREQ_STOP_TEXT = ("[FORCED STOP] Tool {tool_name} called {count} times — exceeded the per-tool safety limit. "
                  "Producing final answer with results collected so far.")


def normalized_args(raw: object) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {}, raw
        if isinstance(parsed, dict):
            return parsed, None
        return {}, json.dumps(parsed, sort_keys=True, default=str)
    if raw is None:
        return {}, None
    return {}, json.dumps(raw, sort_keys=True, default=str)


def stable_key(name: str, args: dict[str, Any], fallback: str | None) -> str:
    if name == "read_file" and fallback is None:
        start, end = args.get("start_line"), args.get("end_line")
        try:
            first = int(start) if start is not None else 1
        except (TypeError, ValueError):
            first = 1
        try:
            last = int(end) if end is not None else first
        except (TypeError, ValueError):
            last = first
        first, last = sorted((first, last))
        return f"{args.get('path') or ''}:{(max(first, 1) - 1) // 200}-{(max(last, 1) - 1) // 200}"
    if name in ("write_file", "str_replace"):
        return fallback if fallback is not None else json.dumps(args, sort_keys=True, default=str)
    salient = {field: args[field] for field in SALIENT if args.get(field) is not None}
    if salient:
        return json.dumps(salient, sort_keys=True, default=str)
    if fallback is not None:
        return fallback
    return json.dumps(args, sort_keys=True, default=str)


def batch_hash(tool_calls: list[dict[str, Any]]) -> str:
    keys = []
    for call in tool_calls:
        name = call.get("name", "")
        args, fallback = normalized_args(call.get("args", {}))
        keys.append(f"{name}:{stable_key(name, args, fallback)}")
    keys.sort()
    return hashlib.md5(json.dumps(keys, sort_keys=True, default=str).encode()).hexdigest()[:12]


class BoundedDict(OrderedDict[Any, Any]):
    """DeerFlow's ``_bounded_dict.BoundedDict``: the oldest entry goes once ``maxsize`` is reached."""

    def __init__(self, maxsize: int = 1000) -> None:
        super().__init__()
        self.maxsize = maxsize

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self and len(self) >= self.maxsize:
            self.popitem(last=False)
        super().__setitem__(key, value)


class DeerFlowLoopDetection:
    """DeerFlow's ``LoopDetectionMiddleware`` on this bench's paths, run-scoped as the lifecycle note
    says: detect, queue a warning, or strip the calls (``after_model`` -> ``_apply`` ->
    ``_track_and_check``), and drain the queue into the next request (``wrap_model_call`` ->
    ``_augment_request``)."""

    def __init__(self) -> None:
        self.warn_threshold, self.hard_limit, self.window_size = WARN, HARD, WINDOW
        self.max_tracked_threads = MAX_SCOPES
        self.tool_freq_warn, self.tool_freq_hard_limit = FREQ_WARN, FREQ_HARD
        self._tool_freq_overrides: dict[str, tuple[int, int]] = {}
        self._tool_freq_window = max(self.window_size, self.tool_freq_hard_limit,
                                     *(hard for _, hard in self._tool_freq_overrides.values()))
        self._lock = threading.Lock()
        self._history: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
        self._warned: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._tool_name_history: defaultdict[tuple[str, str], deque[str]] = defaultdict(deque)
        self._tool_name_counter: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self._tool_freq_warned: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._pending_warnings: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._pending_warning_touch_order: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._max_pending_warning_keys = max(1, self.max_tracked_threads * 2)
        self._stop_reason = BoundedDict(1000)

    def _get_thread_id(self, runtime: Any) -> str:
        thread_id = runtime.context.get("thread_id") if runtime.context else None
        if thread_id:
            return str(thread_id)
        return "default"

    def _get_run_id(self, runtime: Any) -> Any:
        # The note anchors a missing run id to the invocation; every run here names its id.
        context = getattr(runtime, "context", None)
        if isinstance(context, dict) and "run_id" in context:
            return context["run_id"]
        return str(id(runtime))

    def _pending_key(self, runtime: Any) -> tuple[str, str]:
        """The (thread, run) scope: of the pending warnings at HEAD, of every piece of state in the note."""
        return self._get_thread_id(runtime), self._get_run_id(runtime)

    def _evict_if_needed(self) -> None:
        while len(self._history) > self.max_tracked_threads:
            evicted, _ = self._history.popitem(last=False)
            self._warned.pop(evicted, None)
            self._tool_name_history.pop(evicted, None)
            self._tool_name_counter.pop(evicted, None)
            self._tool_freq_warned.pop(evicted, None)
            for key in list(self._pending_warnings):
                if key == evicted:
                    self._drop_pending_warning_key_locked(key)
            log.debug("Evicted loop tracking for thread %s (LRU)", evicted)

    def _drop_pending_warning_key_locked(self, key: tuple[str, str]) -> None:
        self._pending_warnings.pop(key, None)
        self._pending_warning_touch_order.pop(key, None)

    def _touch_pending_warning_key_locked(self, key: tuple[str, str]) -> None:
        self._pending_warning_touch_order[key] = None
        self._pending_warning_touch_order.move_to_end(key)

    def _prune_pending_warning_state_locked(self, protected_key: tuple[str, str]) -> None:
        overflow = len(self._pending_warning_touch_order) - self._max_pending_warning_keys
        if overflow <= 0:
            return
        candidates = [key for key in self._pending_warning_touch_order if key != protected_key]
        for key in candidates[:overflow]:
            self._drop_pending_warning_key_locked(key)

    def _queue_pending_warning(self, pending_key: tuple[str, str], warning: str) -> None:
        """Given the scope (HEAD computes it from the runtime here: once per call in all)."""
        with self._lock:
            warnings = self._pending_warnings[pending_key]
            if warning not in warnings:
                warnings.append(warning)
            if len(warnings) > MAX_PENDING:
                del warnings[: len(warnings) - MAX_PENDING]
            self._touch_pending_warning_key_locked(pending_key)
            self._prune_pending_warning_state_locked(protected_key=pending_key)

    def _track_and_check(self, state: dict[str, Any], scope: tuple[str, str]) -> tuple[str | None, bool]:
        """HEAD's two layers, keyed by ``scope`` and ordered as the note says: a hash warning does not
        cut frequency counting short, a stop outranks it, and only the selected warning is marked and
        logged (HEAD returns at the first warning, marked and logged at once)."""
        messages = state.get("messages", [])
        if not messages:
            return None, False
        last_msg = messages[-1]
        if getattr(last_msg, "type", None) != "ai":
            return None, False
        tool_calls = getattr(last_msg, "tool_calls", None)
        if not tool_calls:
            return None, False
        call_hash = batch_hash(tool_calls)
        with self._lock:
            if scope in self._history:
                self._history.move_to_end(scope)
            else:
                self._history[scope] = []
                self._evict_if_needed()
            history = self._history[scope]
            history.append(call_hash)
            if len(history) > self.window_size:
                history[:] = history[-self.window_size :]
            warned_hashes = self._warned.get(scope)
            if warned_hashes is not None:
                warned_hashes.intersection_update(history)
                if not warned_hashes:
                    self._warned.pop(scope, None)
            count = history.count(call_hash)
            tool_names = [tc.get("name", "?") for tc in tool_calls]
            if count >= self.hard_limit:
                log.error("Loop hard limit reached — forcing stop",
                          extra={"thread_id": scope[0], "call_hash": call_hash, "count": count,
                                 "tools": tool_names})
                return STOP_TEXT, True
            hash_warning = count >= self.warn_threshold and call_hash not in self._warned[scope]
            frequency_warning: tuple[str, int] | None = None
            tool_name_history = self._tool_name_history[scope]
            name_counter = self._tool_name_counter[scope]
            for tc in tool_calls:
                name = tc.get("name", "")
                if not name:
                    continue
                tool_name_history.append(name)
                name_counter[name] += 1
                while len(tool_name_history) > self._tool_freq_window:
                    old = tool_name_history.popleft()
                    c = name_counter[old] - 1
                    if c <= 0:
                        del name_counter[old]
                    else:
                        name_counter[old] = c
                freq_count = name_counter.get(name, 0)
                if name in self._tool_freq_overrides:
                    eff_warn, eff_hard = self._tool_freq_overrides[name]
                else:
                    eff_warn, eff_hard = self.tool_freq_warn, self.tool_freq_hard_limit
                if freq_count >= eff_hard:
                    log.error("Tool frequency hard limit reached — forcing stop",
                              extra={"thread_id": scope[0], "tool_name": name, "count": freq_count})
                    return FREQ_STOP_TEXT.format(tool_name=name, count=freq_count), True
                if freq_count >= eff_warn:
                    if frequency_warning is None and name not in self._tool_freq_warned[scope]:
                        frequency_warning = (name, freq_count)
                else:
                    self._tool_freq_warned[scope].discard(name)
            if hash_warning:
                self._warned[scope].add(call_hash)
                log.warning("Repetitive tool calls detected — injecting warning",
                            extra={"thread_id": scope[0], "call_hash": call_hash, "count": count,
                                   "tools": tool_names})
                return WARNING_TEXT, False
            if frequency_warning is not None:
                name, freq_count = frequency_warning
                self._tool_freq_warned[scope].add(name)
                log.warning("Tool frequency warning — too many calls to same tool type",
                            extra={"thread_id": scope[0], "tool_name": name, "count": freq_count})
                return FREQ_WARNING_TEXT.format(tool_name=name, count=freq_count), False
        return None, False

    @staticmethod
    def _append_text(content: Any, text: str) -> Any:
        if content is None:
            return text
        if isinstance(content, list):
            return [*content, {"type": "text", "text": f"\n\n{text}"}]
        if isinstance(content, str):
            return content + f"\n\n{text}"
        return str(content) + f"\n\n{text}"

    @staticmethod
    def _build_hard_stop_update(last_msg: Any, content: Any) -> dict[str, Any]:
        update = {"tool_calls": [], "content": content}
        additional_kwargs = dict(getattr(last_msg, "additional_kwargs", {}) or {})
        for key in ("tool_calls", "function_call"):
            additional_kwargs.pop(key, None)
        update["additional_kwargs"] = additional_kwargs
        response_metadata = deepcopy(getattr(last_msg, "response_metadata", {}) or {})
        if response_metadata.get("finish_reason") == "tool_calls":
            response_metadata["finish_reason"] = "stop"
        update["response_metadata"] = response_metadata
        return update

    def _apply(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        scope = self._pending_key(runtime)  # once per call: HEAD takes the thread id here, the run id below
        warning, hard_stop = self._track_and_check(state, scope)
        if hard_stop:
            run_id = scope[1]
            with self._lock:
                self._stop_reason[run_id] = "loop_capped"
            context = getattr(runtime, "context", None)
            if isinstance(context, dict):
                context["stop_reason"] = "loop_capped"
            messages = state.get("messages", [])
            last_msg = messages[-1]
            content = self._append_text(last_msg.content, warning or STOP_TEXT)
            return {"messages": [last_msg.model_copy(update=self._build_hard_stop_update(last_msg, content))]}
        if warning:
            self._queue_pending_warning(scope, warning)
        return None

    def before_agent(self, state: dict[str, Any], runtime: Any) -> None:
        """A no-op in the lifecycle note (HEAD drops the thread's other runs' pending warnings)."""

    def after_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        return self._apply(state, runtime)

    def after_agent(self, state: dict[str, Any], runtime: Any) -> None:
        self._clear_current_run_pending_warnings(runtime)

    def _clear_current_run_pending_warnings(self, runtime: Any) -> None:
        pending_key = self._pending_key(runtime)
        with self._lock:
            self._drop_pending_warning_key_locked(pending_key)

    @staticmethod
    def _format_warning_message(warnings: list[str]) -> str:
        return "\n\n".join(list(dict.fromkeys(warnings)))

    def _drain_pending_warnings(self, runtime: Any) -> list[str]:
        pending_key = self._pending_key(runtime)
        with self._lock:
            warnings = self._pending_warnings.pop(pending_key, [])
            self._pending_warning_touch_order.pop(pending_key, None)
        return warnings

    def _augment_request(self, request: Any) -> Any:
        warnings = self._drain_pending_warnings(request.runtime)
        if not warnings:
            return request
        notice = HumanMessage(content=self._format_warning_message(warnings), name="loop_warning")
        return request.override(messages=[*request.messages, notice])

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(self._augment_request(request))


# --- the workload -------------------------------------------------------------------------------


def scope_states(scope: int) -> list[tuple[dict[str, Any], str]]:
    """The model's messages of one run scope, each as the state after_model sees, and its path."""
    states = []
    for k in range(SCOPE_TURNS):
        command = f"ls src/module_{scope}_{k}" if k < 20 else "pytest -q tests/test_app.py"
        call = {"id": f"call-{scope}-{k}", "name": "bash", "args": {"command": command}, "type": "tool_call"}
        message = AIMessage(content="", tool_calls=[call], response_metadata={"finish_reason": "tool_calls"})
        states.append(({"messages": [message]}, PATHS.get(k, "allow")))
    return states


TOOL_OUTPUT = "".join(f"src/module_{n}/file_{n}.py: {n * 37 % 1000} lines, last changed {n} days ago\n"
                      for n in range(25))
"""A bash result of 1.4 KB (typical of real coding-agent sessions)."""


def tool_answer(request: ToolCallRequest) -> ToolMessage:
    return ToolMessage(content=TOOL_OUTPUT, tool_call_id=request.tool_call["id"],
                       name=request.tool_call["name"])


EVICT_BYTES = 8 << 20
"""Memory written between turns, more than a core's own caches hold: what the tool's process (a
process start alone touches more) and the model client leave of a middleware's code and data
in them (``--evict-mb``; 0 with ``--warm-caches``).  It is less than a shared last level holds,
so part of what a turn touched is still there at the next turn."""


def rest_of_the_turn(conversation: list[dict[str, Any]], call: dict[str, Any]) -> None:
    """The model call, the handler of both sides' ``wrap_model_call``, the same for both: the
    tool's answer joins the conversation, the next model request is serialised as a chat client
    sends it, and ``EVICT_BYTES`` are written (the tool's process and the model's round trip
    themselves are left out).  Without it, a middleware that does nothing between turns would
    start every timed call with its code and data still in the core's caches, and one that
    reads the tool's result (the guard's ``wrap_tool_call``) from caches that result evicted;
    no real agent loop gives either side warm caches."""
    conversation.append({"role": "assistant", "tool_calls": [call]})
    conversation.append({"role": "tool", "tool_call_id": call["id"], "content": TOOL_OUTPUT})
    json.dumps({"model": "scripted", "messages": conversation})
    if EVICT_BYTES:
        bytearray(EVICT_BYTES)  # written through: zeroed


class _Request:
    """What a ``wrap_model_call`` reads: the runtime and the messages."""

    def __init__(self, runtime: Runtime[Any]) -> None:
        self.runtime = runtime
        self.messages: list[AnyMessage] = []

    def override(self, **changes: Any) -> _Request:
        return self


def run_scope(impl: str, middleware: Any, scope: int, states: list[tuple[dict[str, Any], str]],
              times: list[list[int]]) -> None:
    """One run scope through ``middleware``; ``times[k]`` gets the k-th turn's ``after_model``."""
    runtime: Runtime[Any] = Runtime(context={"thread_id": "thread", "run_id": f"{impl}-{scope}"})
    request = _Request(runtime)
    clock = time.perf_counter_ns
    middleware.before_agent({"messages": []}, runtime)
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing tests."}]
    for turn, (state, _path) in enumerate(states):
        start = clock()
        update = middleware.after_model(state, runtime)
        times[turn].append(clock() - start)
        if impl == "policyctl" and update is None:
            call = state["messages"][-1].tool_calls[0]
            tool_runtime: ToolRuntime[Any, Any] = ToolRuntime(
                state=state, context=runtime.context, config={}, stream_writer=lambda _chunk: None,
                tool_call_id=call["id"], store=None)
            middleware.wrap_tool_call(ToolCallRequest(tool_call=call, tool=None, state=state,
                                                      runtime=tool_runtime), tool_answer)
        tool_call = state["messages"][-1].tool_calls[0]
        middleware.wrap_model_call(request, lambda r, made=tool_call: rest_of_the_turn(conversation, made))
    middleware.after_agent({"messages": []}, runtime)


def production_logging() -> None:
    """DeerFlow's gateway logging (``backend/app/gateway/app.py``: ``logging.basicConfig`` at INFO with
    ``deerflow/logging_config.py``'s text format; ``config.example.yaml``'s ``log_level: info``, which
    ``deerflow/config/app_config.py:apply_logging_level`` sets on the ``deerflow`` and ``app``
    loggers): every logger without a level of its own, policyctl's included, logs INFO and up
    through one stream handler, which formats each record and writes it, here to the null device."""
    handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 (open for the whole run)
    handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s",
                                           datefmt="%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.INFO)
    for name in ("deerflow", "app"):
        logging.getLogger(name).setLevel(logging.INFO)


def main() -> int:
    global EVICT_BYTES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=4000)
    parser.add_argument("--no-logging", action="store_true", help="no log records on either side")
    parser.add_argument("--per-turn", action="store_true",
                        help="also each turn of a scope: both sides' medians, and what a warn or stop adds")
    eviction = parser.add_mutually_exclusive_group()
    eviction.add_argument("--warm-caches", action="store_true",
                          help="nothing evicts the core's caches between turns (see rest_of_the_turn)")
    eviction.add_argument("--evict-mb", type=int, default=EVICT_BYTES >> 20,
                          help="MB written between turns (default: %(default)s)")
    options = parser.parse_args()
    EVICT_BYTES = 0 if options.warm_caches else options.evict_mb << 20
    if options.no_logging:
        logging.disable(logging.CRITICAL)
    else:
        production_logging()

    scopes = options.turns // SCOPE_TURNS
    workload = [scope_states(scope) for scope in range(scopes)]
    ratios: dict[str, list[float]] = {path: [] for path in ("allow", "warn", "stop")}
    medians: dict[tuple[str, str], list[float]] = {}
    turn_medians: dict[str, list[list[float]]] = {impl: [[] for _ in range(SCOPE_TURNS)] for impl in SIDES}
    for round_number in range(options.rounds):
        implementations: dict[str, Any] = {"policyctl": HarnessGuardMiddleware("builtin:deerflow"),
                                           "deerflow": DeerFlowLoopDetection()}
        times: dict[str, list[list[int]]] = {impl: [[] for _ in range(SCOPE_TURNS)] for impl in SIDES}
        gc.collect()
        for scope, states in enumerate(workload):
            order = list(implementations.items())
            for impl, middleware in order if scope % 2 else reversed(order):
                run_scope(impl, middleware, round_number * scopes + scope, states, times[impl])
        for impl in SIDES:
            for turn, samples in enumerate(times[impl]):
                turn_medians[impl][turn].append(statistics.median(samples) / 1000)
        for path in ratios:
            ours, theirs = (statistics.median(sample for turn, samples in enumerate(times[impl])
                                              if PATHS.get(turn, "allow") == path
                                              for sample in samples) / 1000 for impl in SIDES)
            medians.setdefault((path, "policyctl"), []).append(ours)
            medians.setdefault((path, "deerflow"), []).append(theirs)
            ratios[path].append(ours / theirs)

    logs = "logging off" if options.no_logging else "logging as in production"
    logs += f", {EVICT_BYTES >> 20} MB written between turns" if EVICT_BYTES else ", caches warm"
    print(f"HarnessGuardMiddleware.after_model vs DeerFlow's after_model: {options.turns} turns, "
          f"{options.rounds} rounds, {logs}; median wall microseconds per call (range over rounds)")
    print(f"{'path':<6} {'policyctl':>18} {'deerflow':>18} {'ratio':>6} {'range':>13}")
    worst = 0.0
    for path, values in ratios.items():
        our_medians, their_medians = medians[(path, "policyctl")], medians[(path, "deerflow")]
        ratio = statistics.median(values)
        worst = max(worst, ratio)
        print(f"{path:<6} "
              f"{statistics.median(our_medians):>7.2f} ({min(our_medians):.1f}-{max(our_medians):.1f}) "
              f"{statistics.median(their_medians):>7.2f} ({min(their_medians):.1f}-{max(their_medians):.1f}) "
              f"{ratio:>6.2f} "
              f"{min(values):>6.2f}-{max(values):.2f}{'' if ratio <= TARGET else '  over'}")
    print(f"target: every path <= {TARGET}; worst {worst:.2f}")
    if options.per_turn:
        print_turns(turn_medians)
    return 0 if worst <= TARGET else 1


def print_turns(turn_medians: dict[str, list[list[float]]]) -> None:
    """Per turn of a scope: each side's median (median over the rounds), the ratio, and the turn's
    cost over the scope's allow turns: what a warn or stop adds to the turn it happens on."""
    typical = {impl: statistics.median(statistics.median(rounds) for turn, rounds in enumerate(turns)
                                       if turn not in PATHS) for impl, turns in turn_medians.items()}
    print(f"\nper turn (median of the round medians, microseconds); over allow: minus the median allow turn "
          f"({typical['policyctl']:.1f} and {typical['deerflow']:.1f})")
    print(f"{'turn':>4} {'path':<6} {'policyctl':>9} {'deerflow':>9} {'ratio':>6} {'over allow':>20}")
    for turn in range(SCOPE_TURNS):
        ours, theirs = (statistics.median(turn_medians[impl][turn]) for impl in SIDES)
        print(f"{turn:>4} {PATHS.get(turn, 'allow'):<6} {ours:>9.1f} {theirs:>9.1f} {ours / theirs:>6.2f} "
              f"{ours - typical['policyctl']:>9.1f} {theirs - typical['deerflow']:>9.1f}")


if __name__ == "__main__":
    sys.exit(main())
