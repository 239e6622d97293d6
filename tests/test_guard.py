"""The Guard: delivery of turn warnings, progress, faults, threads and asyncio."""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard
from policy.runtime.loops.state import MAX_OPEN_CALLS, ScopeState
from policy.stores.file import FileStore
from policy.stores.memory import MemoryStore


@pytest.fixture(scope="module")
def default() -> CompiledPolicy:
    return load_policy("builtin:default")


def overlay(tmp_path: Path, text: str) -> CompiledPolicy:
    path = tmp_path / "team.policy"
    path.write_text('extends "builtin:default"\n' + text, encoding="utf-8")
    return load_policy(path)


def bash(call_id: str, command: str = "submit flag{x}") -> ToolCall:
    return ToolCall(id=call_id, name="bash", args={"command": command})


def run(guard: Guard, call: ToolCall, scope: Scope, output: str = "Wrong flag!",
        status: str = "success") -> list[str]:
    """One call as a harness makes it; the actions of its turn, call and result decisions."""
    turn = guard.on_turn([call], scope)
    gate = guard.on_call(call, scope)
    result = guard.on_result(call, ToolResult(content=output, status=status), scope)  # type: ignore[arg-type]
    return [turn.action, gate.action, result.action]


def test_a_turn_warning_reaches_the_model_with_that_calls_result_once(default: CompiledPolicy) -> None:
    guard, scope = Guard(default), Scope("t", "r")
    run(guard, bash("c1"), scope)
    run(guard, bash("c2"), scope)
    call = bash("c3")
    turn = guard.on_turn([call], scope)
    assert (turn.action, turn.call_id) == ("warn", "c3")
    assert guard.on_call(call, scope).action == "allow"
    result = guard.on_result(call, ToolResult("Wrong flag!"), scope)
    assert result.action == "warn"
    assert result.hint is not None and "3 times" in result.hint
    assert guard.on_result(call, ToolResult("Wrong flag!"), scope).action == "allow"


def test_a_pending_warning_is_folded_into_a_block(default: CompiledPolicy) -> None:
    guard, scope = Guard(default, read_file=lambda path: None), Scope("t", "r")
    broken = {"path": "app.py", "content": "def f(:\n"}
    for call_id in ("c1", "c2"):
        call = ToolCall(id=call_id, name="write_file", args=broken)
        guard.on_turn([call], scope)
        assert guard.on_call(call, scope).action == "block"
    call = ToolCall(id="c3", name="write_file", args=broken)
    assert guard.on_turn([call], scope).action == "warn"
    decision = guard.on_call(call, scope)
    assert decision.action == "block"
    assert decision.hint is not None
    assert "[BLOCKED]" in decision.hint and "[LOOP DETECTED]" in decision.hint
    rules = [str(d.rule) for d in decision.metadata["decisions"]]
    assert rules[0] == "gate python"
    assert "loop repeat" in rules and "loop error_streak" in rules


def test_a_combined_decision_keeps_its_parts_as_decisions_and_writes_them_as_dicts(
    default: CompiledPolicy,
) -> None:
    guard, scope = Guard(default, read_file=lambda path: None), Scope("t", "r")
    broken = {"path": "app.py", "content": "def f(:\n"}
    for call_id in ("c1", "c2", "c3"):
        call = ToolCall(id=call_id, name="write_file", args=broken)
        guard.on_turn([call], scope)
        decision = guard.on_call(call, scope)
    assert len(decision.parts) > 1 and all(isinstance(part, Decision) for part in decision.parts)
    assert decision.parts[0].rule is not None and decision.parts[0].rule.span is not None
    written = decision.to_dict()["metadata"]["decisions"]
    assert [part["rule"] for part in written] == [str(part.rule) for part in decision.parts]
    restored = Decision.from_state(decision.to_state())
    assert restored.parts == decision.parts
    assert Decision(action="hint").parts == (Decision(action="hint"),)


def test_blocked_writes_with_the_same_error_make_an_error_streak(default: CompiledPolicy) -> None:
    guard, scope = Guard(default, read_file=lambda path: None), Scope("t", "r")
    actions = []
    for i in range(6):  # different texts, the same error
        call = ToolCall(id=f"c{i}", name="write_file",
                        args={"path": "app.py", "content": f"x = {i}\ndef f(:\n"})
        guard.on_turn([call], scope)
        decision = guard.on_call(call, scope)
        actions.append((decision.action, decision.rule and str(decision.rule)))
    assert actions[:2] == [("block", "gate python")] * 2
    assert actions[-1] == ("stop", "loop error_streak")


def test_writing_the_content_a_file_already_has_is_not_progress(default: CompiledPolicy) -> None:
    files = {"app.py": "x = 1\n"}
    guard, scope = Guard(default, read_file=files.get), Scope("t", "r")
    same = {"path": "app.py", "content": "x = 1\n"}
    results = []
    for i in range(3):
        results.append(run(guard, bash(f"b{i}", "python app.py"), scope, "AssertionError", "error")[2])
        run(guard, ToolCall(id=f"w{i}", name="write_file", args=same), scope, "OK")
    assert results[-1] == "warn"


def test_a_write_that_changes_the_file_restarts_the_count(default: CompiledPolicy) -> None:
    files = {"app.py": "x = 1\n"}
    guard, scope = Guard(default, read_file=files.get), Scope("t", "r")
    results = []
    for i in range(5):
        results.append(run(guard, bash(f"b{i}", "python app.py"), scope, "AssertionError", "error")[2])
        edit = ToolCall(id=f"w{i}", name="write_file", args={"path": "app.py", "content": f"x = {i + 2}\n"})
        run(guard, edit, scope, "OK")
        files["app.py"] = edit.args["content"]
    assert "warn" not in results and "stop" not in results


class _BrokenStore:
    @contextmanager
    def scope(self, scope: Scope) -> Iterator[ScopeState]:
        raise ConnectionError("store unreachable")
        yield ScopeState()  # pragma: no cover

    @contextmanager
    def existing(self, scope: Scope) -> Iterator[ScopeState | None]:
        raise ConnectionError("store unreachable")
        yield None  # pragma: no cover

    def drop_thread(self, thread_id: str) -> None:
        raise ConnectionError("store unreachable")

    def __len__(self) -> int:
        return 0


def test_a_decision_cannot_be_changed_only_copied(default: CompiledPolicy) -> None:
    guard = Guard(default, read_file=lambda path: None)
    decision = guard.on_result(bash("c1"), ToolResult("No module named 'yaml'", "error"), Scope("t", "r"))
    with pytest.raises(AttributeError):
        decision.action = "allow"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Decision().metadata["shared"] = True  # type: ignore[index]
    assert pickle.loads(pickle.dumps(Decision())) == copy.deepcopy(Decision()) == Decision()
    quiet = decision._replace(hint=None)
    assert (quiet.action, quiet.hint, decision.action) == ("hint", None, "hint") and decision.hint


def test_a_store_fault_costs_loop_counting_and_says_so(default: CompiledPolicy) -> None:
    guard, scope = Guard(default, store=_BrokenStore()), Scope("t", "r")
    decision = guard.on_turn([bash("c1")], scope)
    assert decision.action == "allow"
    assert decision.metadata["loop_state"] == "unavailable"
    assert "ConnectionError" in decision.metadata["loop_state_reason"]
    guard.reset("t")
    guard.clear_pending(scope)


def _failing_reader(path: str) -> str | None:
    raise RuntimeError("the sandbox is gone")


def test_a_fault_inside_the_guard_allows_and_says_so(default: CompiledPolicy) -> None:
    guard, scope = Guard(default, read_file=_failing_reader), Scope("t", "r")
    call = ToolCall(id="c1", name="write_file", args={"path": "app.py", "content": "x = 1\n"})
    decision = guard.on_call(call, scope)
    assert decision.action == "allow"
    assert "RuntimeError" in decision.metadata["internal_error"]


def test_on_internal_error_block_blocks_the_call(tmp_path: Path) -> None:
    policy = overlay(tmp_path, "policy \"strict\" { on_internal_error block }\n")
    guard, scope = Guard(policy, read_file=_failing_reader), Scope("t", "r")
    call = ToolCall(id="c1", name="write_file", args={"path": "app.py", "content": "x = 1\n"})
    decision = guard.on_call(call, scope)
    assert decision.action == "block"
    assert decision.hint is not None and "internal error" in decision.hint
    assert guard.on_turn([call], scope).action == "allow"


def test_clearing_a_runs_pending_warnings_leaves_a_sibling_runs(default: CompiledPolicy) -> None:
    guard = Guard(default)
    mine, sibling = Scope("t", "r1"), Scope("t", "r2")
    for scope in (mine, sibling):
        run(guard, bash("c1"), scope)
        run(guard, bash("c2"), scope)
        assert guard.on_turn([bash("c3")], scope).action == "warn"
    guard.clear_pending(mine)
    assert guard.on_result(bash("c3"), ToolResult("Wrong flag!"), mine).action == "allow"
    assert guard.on_result(bash("c3"), ToolResult("Wrong flag!"), sibling).action == "warn"


def test_calls_whose_results_never_come_leave_bounded_state(default: CompiledPolicy) -> None:
    store = MemoryStore()
    guard, scope = Guard(default, read_file=lambda path: None, store=store), Scope("t", "r")
    for n in range(3 * MAX_OPEN_CALLS):
        write = ToolCall(id=f"w{n}", name="write_file", args={"path": f"f{n}.py", "content": "x = 1\n"})
        guard.on_turn([write, bash(f"b{n}", f"echo {n}")], scope)
        assert guard.on_call(write, scope).action == "allow"
    newest = f"w{3 * MAX_OPEN_CALLS - 1}"
    with store.scope(scope) as state:
        assert len(state.pending) == MAX_OPEN_CALLS
        assert len(state.open_calls) == MAX_OPEN_CALLS
        assert newest in state.pending and newest in state.open_calls  # the newest are kept
    last = ToolCall(id=newest, name="write_file", args={"path": "x.py", "content": "x = 1\n"})
    assert guard.on_result(last, ToolResult("ok"), scope).action == "allow"


def test_text_with_lone_surrogates_is_guarded_without_a_fault(default: CompiledPolicy) -> None:
    guard, scope = Guard(default, read_file=lambda path: None), Scope("t", "r")
    results = [("wrote \udc80", "success"), ("No module named 'x\udc80'", "error")]
    for n, (output, status) in enumerate(results):
        call = ToolCall(id=f"c{n}", name="bash", args={"command": "echo \ud800 > out.txt"})  # JSON "\ud800"
        decisions = [guard.on_turn([call], scope), guard.on_call(call, scope),
                     guard.on_result(call, ToolResult(output, status), scope)]  # type: ignore[arg-type]
        assert all("internal_error" not in decision.metadata for decision in decisions)
    assert decisions[-1].signature == "MODULE_NOT_FOUND"


def test_reset_forgets_every_run_of_the_thread(default: CompiledPolicy) -> None:
    guard = Guard(default)
    for run_id in ("r1", "r2"):
        run(guard, bash("c1"), Scope("t", run_id))
        run(guard, bash("c2"), Scope("t", run_id))
    guard.reset("t")
    for run_id in ("r1", "r2"):
        assert guard.on_turn([bash("c3")], Scope("t", run_id)).action == "allow"


def test_threads_on_one_scope_lose_no_update(tmp_path: Path) -> None:
    policy = overlay(tmp_path, "loop repeat { window 1000; warn 500; stop 1000 }\n"
                               "loop frequency { window 1000; warn 900; stop 1000\n"
                               "  tool bash { warn 900; stop 1000 } }\n")
    guard, scope = Guard(policy), Scope("t", "r")
    actions: list[str] = []
    lock = threading.Lock()

    def hammer(worker: int) -> None:
        for i in range(100):
            decision = guard.on_turn([bash(f"w{worker}-{i}", "make test")], scope)
            with lock:
                actions.append(decision.action)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(actions) == 800
    assert actions.count("warn") == 1
    assert actions.count("stop") == 0


def test_async_twins_evaluate_concurrent_runs_separately(default: CompiledPolicy) -> None:
    guard = Guard(default)

    async def session(run_id: str) -> list[str]:
        scope = Scope("t", run_id)
        actions: list[str] = []
        for i in range(3):
            call = bash(f"c{i}")
            await guard.aon_turn([call], scope)
            await guard.aon_call(call, scope)
            actions.append((await guard.aon_result(call, ToolResult("Wrong flag!"), scope)).action)
        await guard.aclear_pending(scope)
        return actions

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(session("r1"), session("r2")))

    assert asyncio.run(both()) == [["allow", "allow", "warn"]] * 2


@pytest.mark.parametrize("delivery", ["next_request", "tool_message"])
def test_a_turns_warning_reaches_a_store_that_writes_its_state_with_its_facts(
    tmp_path: Path, delivery: str,
) -> None:
    """A turn's warning kept by a store that writes the scope out (the file store: JSON) is
    delivered with the same facts and text as one kept in memory."""
    texts = {}
    for name, store in (("memory", MemoryStore()), ("file", FileStore(tmp_path / "state"))):
        policy = load_policy("builtin:deerflow" if delivery == "next_request" else "builtin:default")
        guard, scope = Guard(policy, store=store), Scope(thread_id="t", run_id="r")
        decisions = []
        for number in range(3):
            call = ToolCall(id=f"c{number}", name="bash", args={"command": "pytest -q"})
            turn = guard.on_turn([call], scope)
            decisions.append(guard.on_result(call, ToolResult(content="1 failed"), scope))
        assert turn.action == "warn" and "internal_error" not in decisions[-1].metadata
        delivered = guard.take_warnings(scope) if delivery == "next_request" else [decisions[-1]]
        assert [warning.action for warning in delivered] == ["warn"]
        assert delivered[0].metadata["count"] == 3 and delivered[0].metadata["same_result"] is True
        texts[name] = delivered[0].hint
    assert texts["memory"] == texts["file"] and "3 times" in (texts["file"] or "")
