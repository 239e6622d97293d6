"""HarnessGuardMiddleware.after_model against DeerFlow's own LoopDetectionMiddleware.after_model.

    .venv/bin/python bench/bench_deerflow.py [--rounds 5] [--turns 4000] [--no-logging]

The baseline, ``DeerFlowLoopDetection`` below, restates DeerFlow's algorithm
(bytedance/deer-flow, ``backend/packages/harness/deerflow/agents/middlewares/
loop_detection_middleware.py``: ``_normalize_tool_call_args``, ``_stable_tool_key``,
``_hash_tool_calls``, ``LoopDetectionMiddleware._track_and_check``, ``_apply``,
``_queue_pending_warning``, ``_append_text``, ``_build_hard_stop_update``) with its
defaults and texts: per call a JSON key and an MD5 of the sorted batch, a list
of recent hashes with ``count``, a deque and ``Counter`` of tool names, a
warning queue drained into the next request, and on a stop a copy of the
message without its tool calls.  State is per (thread, run) and a warning
does not cut frequency counting short, as DeerFlow's loop-detection lifecycle
note has it (the per-call work is the same).  DeerFlow cannot be imported here.

Workload (the same for both, in one process): ``--turns`` turns of one bash
call, in run scopes of 25 turns: 20 distinct commands, then one command five
times, so each scope has one warning (3rd) and one stop (5th) under the
``builtin:deerflow`` policy, DeerFlow's defaults.  Each turn is what the agent
loop does: ``after_model`` (timed), then the tool call and the next model
request (not timed; the guard's ``wrap_tool_call`` and both ``wrap_model_call``s).
Both sides log as they do in production (DeerFlow at WARNING/ERROR, policyctl
at INFO), into a handler that drops the records; ``--no-logging`` switches
logging off altogether (``logging.disable``), the stricter baseline: DeerFlow's
warn and stop paths then cost no log record.

Paths: allow (nothing fires), warn (the 3rd identical call), stop (the 5th).
Each round interleaves the two implementations scope by scope and takes the
median time per path; the ratio per round is ours / DeerFlow's.  Reported: the
median ratio over the rounds and its range.  Target: every path <= 1.0.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import logging
import statistics
import sys
import threading
import time
from collections import Counter, OrderedDict, defaultdict, deque
from collections.abc import Callable
from copy import deepcopy
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime

from policy.hooks.langchain import HarnessGuardMiddleware

TARGET = 1.0
SCOPE_TURNS = 25
PATHS = {22: "warn", 24: "stop"}
"""Turn index within a scope -> its path (the rest allow)."""

# --- the baseline: DeerFlow's after_model, restated -------------------------------------------


log = logging.getLogger("bench.deerflow")

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


def append_text(content: Any, text: str) -> Any:
    if content is None:
        return text
    if isinstance(content, list):
        return [*content, {"type": "text", "text": f"\n\n{text}"}]
    return f"{content}\n\n{text}"


class DeerFlowLoopDetection:
    """The after_model half of DeerFlow's middleware: detect, queue a warning, or strip the calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
        self._warned: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._names: defaultdict[tuple[str, str], deque[str]] = defaultdict(deque)
        self._counts: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self._freq_warned: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._pending: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._touched: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._stop_reason: OrderedDict[Any, str] = OrderedDict()

    def _scope(self, runtime: Any) -> tuple[str, str]:
        context = runtime.context
        thread = context.get("thread_id") if context else None
        run = context["run_id"] if isinstance(context, dict) and "run_id" in context else str(id(runtime))
        return (str(thread) if thread else "default"), run

    def _evict(self) -> None:
        while len(self._history) > MAX_SCOPES:
            gone, _ = self._history.popitem(last=False)
            for table in (self._warned, self._names, self._counts, self._freq_warned):
                table.pop(gone, None)  # type: ignore[attr-defined]
            self._pending.pop(gone, None)
            self._touched.pop(gone, None)

    def _track_and_check(self, state: dict[str, Any], runtime: Any) -> tuple[str | None, bool]:
        messages = state.get("messages", [])
        if not messages:
            return None, False
        last = messages[-1]
        if getattr(last, "type", None) != "ai":
            return None, False
        tool_calls = getattr(last, "tool_calls", None)
        if not tool_calls:
            return None, False
        scope = self._scope(runtime)
        call_hash = batch_hash(tool_calls)
        selected: str | None = None
        with self._lock:
            if scope in self._history:
                self._history.move_to_end(scope)
            else:
                self._history[scope] = []
                self._evict()
            history = self._history[scope]
            history.append(call_hash)
            if len(history) > WINDOW:
                history[:] = history[-WINDOW:]
            warned = self._warned.get(scope)
            if warned is not None:
                warned.intersection_update(history)
                if not warned:
                    self._warned.pop(scope, None)
            count = history.count(call_hash)
            names = [call.get("name", "?") for call in tool_calls]
            if count >= HARD:
                log.error("Loop hard limit reached — forcing stop",
                          extra={"thread_id": scope[0], "call_hash": call_hash, "count": count,
                                 "tools": names})
                return STOP_TEXT, True
            if count >= WARN:
                hashes = self._warned[scope]
                if call_hash not in hashes:
                    hashes.add(call_hash)
                    log.warning("Repetitive tool calls detected — injecting warning",
                                extra={"thread_id": scope[0], "call_hash": call_hash, "count": count,
                                       "tools": names})
                    selected = WARNING_TEXT
            history_names, counter = self._names[scope], self._counts[scope]
            for call in tool_calls:
                name = call.get("name", "")
                if not name:
                    continue
                history_names.append(name)
                counter[name] += 1
                while len(history_names) > FREQ_WINDOW:
                    old = history_names.popleft()
                    left = counter[old] - 1
                    if left <= 0:
                        del counter[old]
                    else:
                        counter[old] = left
                freq = counter.get(name, 0)
                if freq >= FREQ_HARD:
                    log.error("Tool frequency hard limit reached — forcing stop",
                              extra={"thread_id": scope[0], "tool_name": name, "count": freq})
                    return FREQ_STOP_TEXT.format(tool_name=name, count=freq), True
                if freq >= FREQ_WARN:
                    freq_warned = self._freq_warned[scope]
                    if name not in freq_warned and selected is None:
                        freq_warned.add(name)
                        log.warning("Tool frequency warning — too many calls to same tool type",
                                    extra={"thread_id": scope[0], "tool_name": name, "count": freq})
                        selected = FREQ_WARNING_TEXT.format(tool_name=name, count=freq)
                else:
                    self._freq_warned[scope].discard(name)
        return selected, False

    def _queue(self, runtime: Any, warning: str) -> None:
        scope = self._scope(runtime)
        with self._lock:
            warnings = self._pending[scope]
            if warning not in warnings:
                warnings.append(warning)
            if len(warnings) > MAX_PENDING:
                del warnings[: len(warnings) - MAX_PENDING]
            self._touched[scope] = None
            self._touched.move_to_end(scope)
            overflow = len(self._touched) - 2 * MAX_SCOPES
            if overflow > 0:
                for key in [key for key in self._touched if key != scope][:overflow]:
                    self._pending.pop(key, None)
                    self._touched.pop(key, None)

    def after_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        warning, hard_stop = self._track_and_check(state, runtime)
        if hard_stop:
            run_id = self._scope(runtime)[1]
            with self._lock:
                if run_id not in self._stop_reason and len(self._stop_reason) >= 1000:
                    self._stop_reason.popitem(last=False)
                self._stop_reason[run_id] = "loop_capped"
            context = getattr(runtime, "context", None)
            if isinstance(context, dict):
                context["stop_reason"] = "loop_capped"
            last = state.get("messages", [])[-1]
            additional = dict(getattr(last, "additional_kwargs", {}) or {})
            for key in ("tool_calls", "function_call"):
                additional.pop(key, None)
            metadata = deepcopy(getattr(last, "response_metadata", {}) or {})
            if metadata.get("finish_reason") == "tool_calls":
                metadata["finish_reason"] = "stop"
            update = {"tool_calls": [], "content": append_text(last.content, warning or STOP_TEXT),
                      "additional_kwargs": additional, "response_metadata": metadata}
            return {"messages": [last.model_copy(update=update)]}
        if warning:
            self._queue(runtime, warning)
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Drain the scope's queued warnings into the request (``_augment_request``)."""
        scope = self._scope(request.runtime)
        with self._lock:
            warnings = self._pending.pop(scope, [])
            self._touched.pop(scope, None)
        if warnings:
            request = request.override(messages=[*request.messages, "\n\n".join(dict.fromkeys(warnings))])
        return handler(request)


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


def tool_answer(request: ToolCallRequest) -> ToolMessage:
    return ToolMessage(content="ok", tool_call_id=request.tool_call["id"], name=request.tool_call["name"])


class _Request:
    """What a ``wrap_model_call`` reads: the runtime and the messages."""

    def __init__(self, runtime: Runtime[Any]) -> None:
        self.runtime, self.messages = runtime, []

    def override(self, **changes: Any) -> _Request:
        return self


def run_scope(impl: str, middleware: Any, scope: int, states: list[tuple[dict[str, Any], str]],
              times: dict[str, list[int]]) -> None:
    runtime: Runtime[Any] = Runtime(context={"thread_id": "thread", "run_id": f"{impl}-{scope}"})
    request = _Request(runtime)
    clock = time.perf_counter_ns
    for state, path in states:
        start = clock()
        update = middleware.after_model(state, runtime)
        times[path].append(clock() - start)
        if impl == "policyctl" and update is None:
            call = state["messages"][-1].tool_calls[0]
            tool_runtime = Runtime(context=runtime.context)
            middleware.wrap_tool_call(ToolCallRequest(tool_call=call, tool=None, state=state,
                                                      runtime=tool_runtime), tool_answer)
        middleware.wrap_model_call(request, lambda r: None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=4000)
    parser.add_argument("--no-logging", action="store_true", help="no log records on either side")
    options = parser.parse_args()
    if options.no_logging:
        logging.disable(logging.CRITICAL)
    for name in ("bench.deerflow", "policy.loops", "policy.hooks.langchain"):
        logger = logging.getLogger(name)
        logger.handlers = [logging.NullHandler()]
        logger.propagate = False

    scopes = options.turns // SCOPE_TURNS
    workload = [scope_states(scope) for scope in range(scopes)]
    ratios: dict[str, list[float]] = {path: [] for path in ("allow", "warn", "stop")}
    medians: dict[tuple[str, str], list[float]] = {}
    for round_number in range(options.rounds):
        implementations: dict[str, Any] = {"policyctl": HarnessGuardMiddleware("builtin:deerflow"),
                                           "deerflow": DeerFlowLoopDetection()}
        times: dict[str, dict[str, list[int]]] = {impl: {p: [] for p in ratios} for impl in implementations}
        gc.collect()
        for scope, states in enumerate(workload):
            order = list(implementations.items())
            for impl, middleware in order if scope % 2 else reversed(order):
                run_scope(impl, middleware, round_number * scopes + scope, states, times[impl])
        for path in ratios:
            ours, theirs = (statistics.median(times[impl][path]) / 1000 for impl in ("policyctl", "deerflow"))
            medians.setdefault((path, "policyctl"), []).append(ours)
            medians.setdefault((path, "deerflow"), []).append(theirs)
            ratios[path].append(ours / theirs)

    logs = "logging off" if options.no_logging else "logging as in production"
    print(f"HarnessGuardMiddleware.after_model vs DeerFlow's after_model: {options.turns} turns, "
          f"{options.rounds} rounds, {logs}; median wall microseconds per call (range over rounds)")
    print(f"{'path':<6} {'policyctl':>18} {'deerflow':>18} {'ratio':>6} {'range':>13}")
    worst = 0.0
    for path, values in ratios.items():
        ours, theirs = medians[(path, "policyctl")], medians[(path, "deerflow")]
        ratio = statistics.median(values)
        worst = max(worst, ratio)
        print(f"{path:<6} {statistics.median(ours):>7.2f} ({min(ours):.1f}-{max(ours):.1f}) "
              f"{statistics.median(theirs):>7.2f} ({min(theirs):.1f}-{max(theirs):.1f}) {ratio:>6.2f} "
              f"{min(values):>6.2f}-{max(values):.2f}{'' if ratio <= TARGET else '  over'}")
    print(f"target: every path <= {TARGET}; worst {worst:.2f}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
