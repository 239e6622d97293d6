"""HarnessGuardMiddleware in real ``create_agent`` graphs: scripted fake models, real tools, real files."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from chat_models import recording
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import get_runtime
from langgraph.types import Command

from policy.hooks.langchain.messages import message_text, stopped_ai_message
from policy.hooks.langchain.middleware import HarnessGuardMiddleware
from policy.model.decision import Decision, RuleRef
from policy.model.events import Scope

PYTHON = sys.executable


# --- scripted models -------------------------------------------------------------


class ScriptedModel(GenericFakeChatModel):
    """langchain-core's fake chat model, usable by ``create_agent`` (which binds tools)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


class PerConversationModel(FakeMessagesListChatModel):
    """Answers by the conversation's own progress (its AI turns so far), so concurrent runs
    sharing the model each follow the whole script."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> PerConversationModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=self.responses[turn])])


_ids = iter(range(1, 1_000_000))


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"id": f"call-{next(_ids)}", "name": name, "args": args, "type": "tool_call"}


def turn(*calls: dict[str, Any], content: str = "") -> AIMessage:
    return AIMessage(content=content, tool_calls=list(calls))


def answer(text: str = "All done.") -> AIMessage:
    return AIMessage(content=text)


def model(*messages: AIMessage) -> ScriptedModel:
    return ScriptedModel(messages=iter(messages))


# --- real tools over a real directory ---------------------------------------------


class Workspace:
    """DeerFlow-named tools (write_file, str_replace, bash) acting on a real directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.executed: list[str] = []

    def tools(self) -> list[BaseTool]:
        workspace = self

        @tool
        def write_file(path: str, content: str, append: bool = False) -> str:
            """Write (or append) content to a file."""
            workspace.executed.append("write_file")
            with Path(path).open("a" if append else "w", encoding="utf-8") as handle:
                handle.write(content)
            return "OK"

        @tool
        def str_replace(path: str, old_str: str, new_str: str, replace_all: bool = False) -> str:
            """Replace text in a file."""
            workspace.executed.append("str_replace")
            text = Path(path).read_text(encoding="utf-8")
            Path(path).write_text(text.replace(old_str, new_str, -1 if replace_all else 1), encoding="utf-8")
            return "OK"

        @tool
        def bash(command: str) -> str:
            """Run a shell command."""
            workspace.executed.append(command)
            done = subprocess.run(command, shell=True, cwd=workspace.root, capture_output=True, text=True,
                                  timeout=60)
            output = (done.stdout + done.stderr).rstrip()
            return f"{output}\nExit code: {done.returncode}" if done.returncode else output

        return [write_file, str_replace, bash]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def actions(result: dict[str, Any]) -> list[str | None]:
    """The policy action stamped on each ToolMessage (None: the guard left it alone)."""
    return [m.additional_kwargs.get("policy", {}).get("action") for m in tool_messages(result)]


def final_message(result: dict[str, Any]) -> AIMessage:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    return last


def repeated(command: str, times: int) -> list[AIMessage]:
    return [turn(call("bash", command=command)) for _ in range(times)]


def invoke(agent: Any, request: dict[str, Any], asynchronous: bool, **kwargs: Any) -> dict[str, Any]:
    """``agent.invoke``, or ``agent.ainvoke`` run to its end: one run through the sync or the async graph."""
    result: dict[str, Any] = (asyncio.run(agent.ainvoke(request, **kwargs)) if asynchronous
                              else agent.invoke(request, **kwargs))
    return result


sync_and_async = pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
"""A run-lifecycle test through the sync graph and through the async one."""


# --- write gates -------------------------------------------------------------------


def test_a_broken_python_write_is_blocked_and_the_file_untouched(workspace: Workspace) -> None:
    target = workspace.root / "app.py"
    target.write_text("x = 1\n")
    guard = HarnessGuardMiddleware()
    agent = create_agent(model(turn(call("write_file", path=str(target), content="def f(:\n    pass\n")),
                               answer()), tools=workspace.tools(), middleware=[guard])

    result = agent.invoke({"messages": [HumanMessage("write app.py")]})

    assert target.read_text() == "x = 1\n"
    assert workspace.executed == []
    (message,) = tool_messages(result)
    assert message.status == "error"
    assert message.name == "write_file"
    assert "line 1" in message.text
    assert message.additional_kwargs["policy"]["action"] == "block"
    assert message.additional_kwargs["policy"]["rule"] == "gate python"
    meta = message.additional_kwargs["deerflow_tool_meta"]
    assert meta["status"] == "error"
    assert meta["recoverable_by_model"] is True
    assert final_message(result).text == "All done."


def test_a_valid_python_file_written_in_chunks_goes_through(workspace: Workspace) -> None:
    target = workspace.root / "app.py"
    chunks = [turn(call("write_file", path=str(target), content="def f(x):\n")),
              turn(call("write_file", path=str(target), content="    return x\n", append=True))]
    agent = create_agent(model(*chunks, answer()), tools=workspace.tools(),
                         middleware=[HarnessGuardMiddleware()])

    result = agent.invoke({"messages": [HumanMessage("write app.py in two chunks")]})

    assert target.read_text() == "def f(x):\n    return x\n"
    assert [m.text for m in tool_messages(result)] == ["OK", "OK"]
    assert all("policy" not in m.additional_kwargs for m in tool_messages(result))


def test_an_edit_is_gated_against_the_file_read_by_a_runtime_aware_reader(workspace: Workspace) -> None:
    """A ``read_file(runtime, path)`` reader (DeerFlow's sandbox reader's shape) gets the tool's runtime."""
    seen: list[Any] = []
    files = {"/mnt/user-data/cfg.json": '{"retries": 3}'}

    def reader(runtime: Any, path: str) -> str:
        seen.append(runtime.context["sandbox"])
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    agent = create_agent(model(turn(call("str_replace", path="/mnt/user-data/cfg.json", old_str="3}",
                                         new_str="3,}")), answer()),
                         tools=workspace.tools(), middleware=[HarnessGuardMiddleware(read_file=reader)])

    result = agent.invoke({"messages": [HumanMessage("edit")]},
                          context={"sandbox": "sbx-1", "thread_id": "t"})

    (message,) = tool_messages(result)
    assert message.status == "error"
    assert message.additional_kwargs["policy"]["rule"] == "gate json"
    assert seen and set(seen) == {"sbx-1"}
    assert workspace.executed == []


# --- error hints ----------------------------------------------------------------------


def test_a_failing_command_gets_its_hint_after_a_blank_line(workspace: Workspace) -> None:
    command = f"{PYTHON} -c 'import nosuchmod'"
    agent = create_agent(model(turn(call("bash", command=command)), answer()), tools=workspace.tools(),
                         middleware=[HarnessGuardMiddleware()])

    result = agent.invoke({"messages": [HumanMessage("run it")]})

    (message,) = tool_messages(result)
    output, _, hint = message.text.partition("\n\n[HINT]")
    assert "ModuleNotFoundError: No module named 'nosuchmod'" in output
    assert "nosuchmod" in hint
    policy = message.additional_kwargs["policy"]
    assert (policy["action"], policy["signature"], policy["captures"]) == \
        ("hint", "MODULE_NOT_FOUND", {"module": "nosuchmod"})
    assert message.additional_kwargs["deerflow_tool_meta"]["error_type"] == "not_found"  # DeerFlow's value


def test_a_tool_exception_is_counted_and_reraised_unchanged(workspace: Workspace) -> None:
    @tool
    def flaky(x: int) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    guard = HarnessGuardMiddleware()
    agent = create_agent(model(turn(call("flaky", x=1)), answer()), tools=[flaky], middleware=[guard])

    with pytest.raises(RuntimeError, match="disk on fire"):
        agent.invoke({"messages": [HumanMessage("go")]}, context={"thread_id": "t", "run_id": "r"})

    with guard.guard.store.scope(Scope("t", "r")) as state:
        assert state.streak.count == 1  # the failure counts toward an error streak
        assert state.repeat.inflight == {}  # and the call is no longer waiting for its result


# --- loops ------------------------------------------------------------------------------


def test_three_identical_calls_warn_on_the_third(workspace: Workspace) -> None:
    agent = create_agent(model(*repeated("echo same", 3), answer()), tools=workspace.tools(),
                         middleware=[HarnessGuardMiddleware()])

    result = agent.invoke({"messages": [HumanMessage("go")]})

    first, second, third = tool_messages(result)
    assert first.text == second.text == "same"
    assert third.text.startswith("same\n\n[LOOP DETECTED]")
    assert "3 times" in third.text
    assert third.additional_kwargs["policy"]["action"] == "warn"
    assert third.additional_kwargs["policy"]["rule"] == "loop repeat"
    assert third.additional_kwargs["deerflow_tool_meta"]["recommended_next_action"] == "try_alternative"


def test_five_identical_calls_stop_the_run_with_the_stop_text_in_the_answer(workspace: Workspace) -> None:
    script = [*repeated("echo same", 5), answer("never reached")]
    fifth = script[4]
    fifth.response_metadata["finish_reason"] = "tool_calls"  # as a provider's tool-calling answer says
    guard = HarnessGuardMiddleware()
    agent = create_agent(model(*script), tools=workspace.tools(), middleware=[guard])
    context: dict[str, Any] = {"thread_id": "t1", "run_id": "run-42"}

    result = agent.invoke({"messages": [HumanMessage("go")]}, context=context)

    assert workspace.executed == ["echo same"] * 4
    final = final_message(result)
    assert final.tool_calls == []
    assert "[LOOP STOPPED]" in final.text
    assert final.response_metadata["finish_reason"] == "stop"
    assert final.additional_kwargs["policy"]["rule"] == "loop repeat"
    assert len(tool_messages(result)) == 4  # every executed call has exactly one answer
    assert context["stop_reason"] == "loop_capped"
    assert guard.consume_stop_reason("run-42") == "loop_capped"
    assert guard.consume_stop_reason("run-42") is None
    assert fifth.tool_calls and fifth.content == ""  # the model's own message was not mutated


@sync_and_async
def test_a_reused_compiled_graph_starts_each_run_with_a_fresh_budget(
        workspace: Workspace, asynchronous: bool) -> None:
    guard = HarnessGuardMiddleware()
    agent = create_agent(model(*repeated("echo same", 4), answer("first"), *repeated("echo same", 4),
                               answer("second")), tools=workspace.tools(), middleware=[guard])
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}

    for expected in ("first", "second"):
        result = invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous, config=config)
        assert final_message(result).text == expected
        assert actions(result) == [None, None, "warn", None]  # the 3rd warns (once); nothing stops
        assert guard.scopes.anchored_runs() == 0  # after_agent released the generated run id
    assert len(workspace.executed) == 8


@sync_and_async
def test_one_run_spans_every_graph_entry_and_a_new_run_starts_fresh(
        workspace: Workspace, asynchronous: bool) -> None:
    guard = HarnessGuardMiddleware()
    agent = create_agent(model(*repeated("echo same", 3), answer("paused"),
                               *repeated("echo same", 2),  # the 2nd is the run's 5th: it stops the run
                               *repeated("echo same", 2), answer("fresh")),
                         tools=workspace.tools(), middleware=[guard])

    entry = invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous,
                   context={"thread_id": "t", "run_id": "r1"})
    assert final_message(entry).text == "paused"
    continuation = invoke(agent, {"messages": [HumanMessage("continue")]}, asynchronous,
                          context={"thread_id": "t", "run_id": "r1"})
    assert "[LOOP STOPPED]" in final_message(continuation).text  # the 5th call of run r1
    new_run = invoke(agent, {"messages": [HumanMessage("again")]}, asynchronous,
                     context={"thread_id": "t", "run_id": "r2"})
    assert final_message(new_run).text == "fresh"


@sync_and_async
def test_reset_clears_every_run_of_the_thread(workspace: Workspace, asynchronous: bool) -> None:
    guard = HarnessGuardMiddleware()
    script = [*repeated("echo same", 4), answer("a"), *repeated("echo same", 2), answer("b")]
    agent = create_agent(model(*script), tools=workspace.tools(), middleware=[guard])
    invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous,
           context={"thread_id": "t", "run_id": "r1"})

    guard.reset("t")

    result = invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous,
                    context={"thread_id": "t", "run_id": "r1"})
    assert final_message(result).text == "b"
    assert len(guard.guard.store) == 1


def test_sync_and_async_invocations_guard_alike(workspace: Workspace) -> None:
    target = workspace.root / "broken.json"

    def build() -> Any:
        return create_agent(model(turn(call("write_file", path=str(target), content='{"a": 1,,}')),
                                  *repeated("echo same", 3), answer()),
                            tools=workspace.tools(), middleware=[HarnessGuardMiddleware()])

    def summary(result: dict[str, Any]) -> list[tuple[str, str | None]]:
        return list(zip([m.status for m in tool_messages(result)], actions(result), strict=True))

    sync = build().invoke({"messages": [HumanMessage("go")]})
    asynchronous = asyncio.run(build().ainvoke({"messages": [HumanMessage("go")]}))

    expected = [("error", "block"), ("success", None), ("success", None), ("success", "warn")]
    assert summary(sync) == summary(asynchronous) == expected
    assert not target.exists()


def test_async_stop(workspace: Workspace) -> None:
    guard = HarnessGuardMiddleware()
    agent = create_agent(model(*repeated("echo same", 5), answer("never")), tools=workspace.tools(),
                         middleware=[guard])
    context: dict[str, Any] = {"thread_id": "t", "run_id": "a1"}

    result = asyncio.run(agent.ainvoke({"messages": [HumanMessage("go")]}, context=context))

    assert "[LOOP STOPPED]" in final_message(result).text
    assert context["stop_reason"] == "loop_capped"
    assert workspace.executed == ["echo same"] * 4


def _lockstep_bash(barrier: threading.Barrier) -> BaseTool:
    @tool
    def bash(command: str) -> str:
        """Run a shell command (in lockstep with the other run)."""
        barrier.wait(timeout=30)
        return subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()

    return bash


def test_two_runs_on_two_threads_at_once_do_not_share_state() -> None:
    barrier = threading.Barrier(2)
    script: list[BaseMessage] = [*repeated("echo same", 4), answer("done")]
    agent = create_agent(PerConversationModel(responses=script), tools=[_lockstep_bash(barrier)],
                         middleware=[HarnessGuardMiddleware()])
    results: dict[str, dict[str, Any]] = {}

    def run(thread_id: str) -> None:
        results[thread_id] = agent.invoke({"messages": [HumanMessage("go")]},
                                          config={"configurable": {"thread_id": thread_id}})

    workers = [threading.Thread(target=run, args=(name,)) for name in ("alpha", "beta")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)

    for result in results.values():  # together they made 8 identical calls; each alone made 4
        assert final_message(result).text == "done"
        assert actions(result) == [None, None, "warn", None]
    assert len(results) == 2


def test_two_async_runs_at_once_do_not_share_state() -> None:
    script: list[BaseMessage] = [*repeated("echo same", 4), answer("done")]
    agent = create_agent(PerConversationModel(responses=script), tools=[_lockstep_bash(threading.Barrier(2))],
                         middleware=[HarnessGuardMiddleware()])

    async def both() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(agent.ainvoke({"messages": [HumanMessage("go")]},
                                                         context={"thread_id": "t", "run_id": run})
                                           for run in ("r1", "r2"))))

    for result in asyncio.run(both()):
        assert final_message(result).text == "done"


# --- run anchors -------------------------------------------------------------------------


class AnchorProbe(AgentMiddleware):
    """Records the invocation's shared ``RunControl`` and the guard's run id at every node."""

    def __init__(self, guard: HarnessGuardMiddleware) -> None:
        super().__init__()
        self.guard = guard
        self.seen: list[tuple[str, object, str]] = []

    def _note(self, where: str, runtime: Any, control: object) -> None:
        scope = self.guard.scopes.resolve(runtime.context, runtime.execution_info, {}, control)
        self.seen.append((where, control, str(scope.run_id)))

    def before_agent(self, state: Any, runtime: Any) -> None:
        self._note("before_agent", runtime, runtime.control)

    def after_model(self, state: Any, runtime: Any) -> None:
        self._note("after_model", runtime, runtime.control)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        self._note("tool", request.runtime, get_runtime().control)
        return handler(request)


def test_the_generated_run_id_is_shared_by_every_node_and_new_per_invocation(workspace: Workspace) -> None:
    guard = HarnessGuardMiddleware()
    probe = AnchorProbe(guard)
    agent = create_agent(model(*repeated("echo a", 2), answer(), *repeated("echo a", 2), answer()),
                         tools=workspace.tools(), middleware=[guard, probe])

    invocations = []
    for _ in range(2):
        probe.seen.clear()
        agent.invoke({"messages": [HumanMessage("go")]})
        invocations.append(list(probe.seen))

    for seen in invocations:
        assert {where for where, _, _ in seen} == {"before_agent", "after_model", "tool"}
        assert len({id(control) for _, control, _ in seen}) == 1
        assert len({run for _, _, run in seen}) == 1
    first, second = (seen[0] for seen in invocations)
    assert first[1] is not second[1]
    assert first[2] != second[2]
    assert first[2].startswith("run-") and not first[2].endswith(str(id(first[1])))


@sync_and_async
def test_invocations_that_never_reach_their_end_keep_at_most_max_scopes_anchors(
        tmp_path: Path, asynchronous: bool) -> None:
    """An exception skips after_agent, so a generated run id stays anchored: the map's bound covers it."""
    @tool
    def flaky(x: int) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    team = tmp_path / "team.policy"
    team.write_text('extends "builtin:default"\npolicy "team" { scope { max_scopes 3 } }\n', encoding="utf-8")
    guard = HarnessGuardMiddleware(team)
    agent = create_agent(PerConversationModel(responses=[turn(call("flaky", x=1)), answer()]), tools=[flaky],
                         middleware=[guard])
    anchored = []
    for _ in range(5):
        with pytest.raises(RuntimeError, match="disk on fire"):
            invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous, context={"thread_id": "t"})
        anchored.append(guard.scopes.anchored_runs())
    assert anchored == [1, 2, 3, 3, 3]


def test_a_nested_agent_sharing_the_middleware_does_not_end_its_callers_run(workspace: Workspace) -> None:
    guard = HarnessGuardMiddleware()
    inner = create_agent(model(answer("inner done")), tools=[], middleware=[guard])

    @tool
    def delegate(task: str) -> str:
        """Run a sub-agent."""
        return final_message(inner.invoke({"messages": [HumanMessage(task)]})).text

    script = [*repeated("echo same", 2), turn(call("delegate", task="x")), *repeated("echo same", 1),
              answer()]
    outer = create_agent(model(*script), tools=[*workspace.tools(), delegate], middleware=[guard])

    result = outer.invoke({"messages": [HumanMessage("go")]})

    # the outer run's budget survived the end of the inner agent
    assert actions(result) == [None, None, None, "warn"]
    assert guard.scopes.anchored_runs() == 0


# --- lifecycle of pending warnings (hooks driven directly) --------------------------------


def _runtime(run_id: str, thread_id: str = "t") -> Any:
    """A node runtime of a run that names its ids (as DeerFlow's gateway does)."""
    context = {"thread_id": thread_id, "run_id": run_id}
    return SimpleNamespace(context=context, execution_info=None, control=None)


def _request(tool_call: Any, runtime: Any) -> ToolCallRequest:
    tool_runtime: Any = SimpleNamespace(context=runtime.context, execution_info=None, config={})
    return ToolCallRequest(tool_call=tool_call, tool=None, state={}, runtime=tool_runtime)


def _state(*messages: BaseMessage) -> Any:
    return {"messages": list(messages)}


def _ok(request: ToolCallRequest) -> ToolMessage:
    return ToolMessage(content="same", tool_call_id=request.tool_call["id"], name=request.tool_call["name"])


def _never_called(request: ToolCallRequest) -> ToolMessage:
    raise AssertionError(f"{request.tool_call['name']} must not run")


def _drive_to_a_pending_warning(guard: HarnessGuardMiddleware, runtime: Any) -> dict[str, Any]:
    """Three identical turns; the first two run; the third's warning is pending. Returns the third call."""
    for _ in range(2):
        tool_call = call("bash", command="echo same")
        assert guard.after_model(_state(turn(tool_call)), runtime) is None
        guard.wrap_tool_call(_request(tool_call, runtime), _ok)
    third = call("bash", command="echo same")
    assert guard.after_model(_state(turn(third)), runtime) is None
    return third


def test_a_warning_waits_for_its_call_and_survives_a_sibling_runs_end() -> None:
    guard = HarnessGuardMiddleware()
    mine, sibling = _runtime("mine"), _runtime("sibling")
    third = _drive_to_a_pending_warning(guard, mine)

    guard.before_agent(_state(), sibling)
    guard.after_agent(_state(), sibling)
    guard.before_agent(_state(), mine)  # deletes nothing

    delivered = guard.wrap_tool_call(_request(third, mine), _ok)
    assert isinstance(delivered, ToolMessage)
    assert "[LOOP DETECTED]" in delivered.text


def test_after_agent_clears_its_pending_warnings_but_not_its_loop_history() -> None:
    guard = HarnessGuardMiddleware()
    runtime = _runtime("r")
    third = _drive_to_a_pending_warning(guard, runtime)

    guard.after_agent(_state(), runtime)

    delivered = guard.wrap_tool_call(_request(third, runtime), _ok)
    assert isinstance(delivered, ToolMessage) and delivered.text == "same"  # the warning was dropped
    fourth, fifth = call("bash", command="echo same"), call("bash", command="echo same")
    guard.after_model(_state(turn(fourth)), runtime)
    guard.wrap_tool_call(_request(fourth, runtime), _ok)
    update = guard.after_model(_state(turn(fifth)), runtime)
    assert update is not None and update["messages"][0].tool_calls == []  # history kept: the 5th stops


def test_runs_that_never_call_a_tool_take_no_place_among_the_scopes() -> None:
    """DeerFlow tracks a scope from its first tool call: a chat-only run's model request and end
    create no state, so a burst of them evicts no live run's history (``max_scopes``: 100)."""
    guard = HarnessGuardMiddleware("builtin:deerflow")
    mine = _runtime("mine")
    for _ in range(4):
        tool_call = call("bash", command="echo same")
        assert guard.after_model(_state(turn(tool_call)), mine) is None
        guard.wrap_tool_call(_request(tool_call, mine), _ok)
    for number in range(guard.guard.policy.max_scopes):
        chat = _runtime(f"chat-{number}")
        request: Any = SimpleNamespace(runtime=chat, messages=[])
        guard.before_agent(_state(), chat)
        guard.wrap_model_call(request, lambda request: answer())
        guard.after_agent(_state(), chat)

    assert len(guard.guard.store) == 1
    update = guard.after_model(_state(turn(call("bash", command="echo same"))), mine)
    assert update is not None and update["messages"][0].tool_calls == []  # the fifth still stops


def test_a_stop_decided_on_a_result_refuses_the_rest_and_ends_the_next_turn(tmp_path: Path) -> None:
    policy = tmp_path / "strict.policy"
    policy.write_text('extends "builtin:default"\nloop error_streak { warn 2; stop 3 }\n')
    guard = HarnessGuardMiddleware(policy)
    runtime = _runtime("r")
    context = runtime.context

    def failing(request: ToolCallRequest) -> ToolMessage:
        return ToolMessage(content="ModuleNotFoundError: No module named 'nosuchmod'", status="error",
                           tool_call_id=request.tool_call["id"], name="bash")

    answers = []
    for command in ("python a.py", "python b.py", "python c.py"):
        tool_call = call("bash", command=command)
        guard.after_model(_state(turn(tool_call)), runtime)
        answers.append(guard.wrap_tool_call(_request(tool_call, runtime), failing))
    assert isinstance(answers[-1], ToolMessage)
    assert answers[-1].additional_kwargs["policy"]["action"] == "stop"
    assert context["stop_reason"] == "loop_capped"

    sibling = call("bash", command="ls")
    refused = guard.wrap_tool_call(_request(sibling, runtime), _never_called)
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert "Not executed" in refused.text

    update = guard.after_model(_state(turn(call("bash", command="ls"))), runtime)
    assert update is not None
    assert update["messages"][0].tool_calls == []
    assert guard.consume_stop_reason("r") == "loop_capped"


def test_a_command_result_gets_its_own_tool_message_annotated() -> None:
    guard = HarnessGuardMiddleware()
    runtime = _runtime("r")
    tool_call = call("bash", command="python -c 'import nosuchmod'")
    other = ToolMessage(content="unrelated", tool_call_id="someone-else")

    def handler(request: ToolCallRequest) -> Command[Any]:
        own = ToolMessage(content="ModuleNotFoundError: No module named 'nosuchmod'", status="error",
                          tool_call_id=request.tool_call["id"], name="bash")
        return Command(update={"messages": [other, own], "files": ["x"]})

    outcome = guard.wrap_tool_call(_request(tool_call, runtime), handler)

    assert isinstance(outcome, Command)
    assert isinstance(outcome.update, dict)
    first, annotated = outcome.update["messages"]
    assert first is other
    assert "[HINT]" in annotated.text
    assert outcome.update["files"] == ["x"]


# --- stop message shapes -----------------------------------------------------------------


_STOP = Decision(action="stop", rule=RuleRef("loop", "repeat"), hint="[LOOP STOPPED] enough.")


def _with_calls(content: Any) -> AIMessage:
    return AIMessage(
        content=content,
        tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "ls"}, "type": "tool_call"}],
        additional_kwargs={"tool_calls": [{"id": "c1"}], "function_call": {"name": "bash"}, "refusal": None},
        response_metadata={"finish_reason": "tool_calls", "model_name": "m"},
    )


@pytest.mark.parametrize(("content", "expected"), [
    ("Let me look again.", "Let me look again.\n\n[LOOP STOPPED] enough."),
    ("", "[LOOP STOPPED] enough."),
    ([{"type": "text", "text": "Looking."}, {"type": "tool_use", "id": "c1", "name": "bash", "input": {}}],
     [{"type": "text", "text": "Looking."}, {"type": "text", "text": "[LOOP STOPPED] enough."}]),
    ([], [{"type": "text", "text": "[LOOP STOPPED] enough."}]),
])
def test_a_stopped_message_keeps_its_text_and_loses_its_calls(content: Any, expected: Any) -> None:
    original = _with_calls(content)
    snapshot = original.model_dump()

    stopped = stopped_ai_message(original, _STOP)

    assert stopped.content == expected
    assert stopped.tool_calls == [] and stopped.invalid_tool_calls == []
    assert stopped.additional_kwargs == {"refusal": None, "policy": {
        "action": "stop", "rule": "loop repeat", "signature": None, "captures": {}, "counts": {}}}
    assert stopped.response_metadata == {"finish_reason": "stop", "model_name": "m"}
    assert stopped.id == original.id
    assert original.model_dump() == snapshot


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_stopped_message_keeps_a_finish_reason_other_than_tool_calls(reason: str) -> None:
    original = _with_calls("Cut off.")
    original.response_metadata["finish_reason"] = reason

    stopped = stopped_ai_message(original, _STOP)

    assert stopped.response_metadata == {"finish_reason": reason, "model_name": "m"}



# --- the README's example ------------------------------------------------------------------


def readme_blocks(section: str, language: str) -> list[str]:
    """The ``language`` code blocks of the README section titled ``section``."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n```", 1)[0] for block in body.split(f"```{language}\n")[1:]]


def test_the_readme_example_runs_and_reports_a_stop(workspace: Workspace,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (example,) = readme_blocks("Use with LangChain", "python")
    write_file, str_replace, bash = workspace.tools()
    namespace = {"model": model(*repeated("echo same", 5)), "write_file": write_file,
                 "str_replace": str_replace, "bash": bash}

    exec(compile(example, "README.md", "exec"), namespace)

    printed = capsys.readouterr().out
    assert printed.startswith("the guard ended the run: ")
    assert "[LOOP STOPPED]" in printed
    assert workspace.executed == ["echo same"] * 4


# --- warnings delivered into the next model request (deliver_warnings next_request) ----------


CapturingModel = recording(PerConversationModel)
"""``PerConversationModel`` that records every request it is sent."""


def loop_warnings(messages: Sequence[BaseMessage]) -> list[HumanMessage]:
    return [m for m in messages if isinstance(m, HumanMessage) and m.name == "loop_warning"]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_next_request_warning_reaches_the_next_model_request_only(workspace: Workspace,
                                                                      asynchronous: bool) -> None:
    """DeerFlow's own graph test, restated: the warning follows the last ToolMessage in the 4th
    request, is in no ToolMessage, and never enters the run's state."""
    model_ = CapturingModel(responses=[*repeated("echo same", 3), answer("final answer")])
    agent = create_agent(model_, tools=workspace.tools(),
                         middleware=[HarnessGuardMiddleware("builtin:deerflow")])
    request = {"messages": [HumanMessage("inspect the directory")]}
    context = {"thread_id": "t", "run_id": "r"}

    result = asyncio.run(agent.ainvoke(request, context=context)) if asynchronous else agent.invoke(
        request, context=context)

    assert [len(loop_warnings(r)) for r in model_.requests] == [0, 0, 0, 1]
    fourth = model_.requests[3]
    assert isinstance(fourth[-2], ToolMessage)
    assert fourth[-2].tool_call_id == tool_messages(result)[2].tool_call_id
    assert "[LOOP DETECTED]" in fourth[-1].text and "3 times" in fourth[-1].text
    assert loop_warnings(result["messages"]) == []
    assert actions(result) == [None, None, None]
    assert final_message(result).text == "final answer"


@pytest.mark.parametrize(("team", "in_the_next_request"), [
    ('extends "builtin:default"\npolicy "team" { deliver_warnings next_request }\n', True),
    ('extends "builtin:deerflow"\npolicy "team" { deliver_warnings tool_message }\n', False),
], ids=["default-to-next-request", "deerflow-to-tool-message"])
def test_any_policy_chooses_where_its_warnings_go(workspace: Workspace, team: str,
                                                  in_the_next_request: bool) -> None:
    path = workspace.root / "team.policy"
    path.write_text(team, encoding="utf-8")
    model_ = CapturingModel(responses=[*repeated("echo same", 3), answer("final answer")])
    agent = create_agent(model_, tools=workspace.tools(), middleware=[HarnessGuardMiddleware(path)])

    result = agent.invoke({"messages": [HumanMessage("go")]}, context={"thread_id": "t", "run_id": "r"})

    in_requests = [len(loop_warnings(r)) for r in model_.requests]
    in_tool_messages = ["[LOOP DETECTED]" in m.text for m in tool_messages(result)]
    if in_the_next_request:
        assert (in_requests, in_tool_messages) == ([0, 0, 0, 1], [False, False, False])
    else:
        assert (in_requests, in_tool_messages) == ([0, 0, 0, 0], [False, False, True])
    assert loop_warnings(result["messages"]) == []


def test_a_warning_queued_when_a_run_ends_is_dropped_not_carried_into_the_next(workspace: Workspace) -> None:
    guard = HarnessGuardMiddleware("builtin:deerflow")
    first = CapturingModel(responses=[*repeated("echo same", 3), answer("a")])
    create_agent(first, tools=workspace.tools(), middleware=[guard]).invoke(
        {"messages": [HumanMessage("go")]}, context={"thread_id": "t", "run_id": "r1"})
    assert len(loop_warnings(first.requests[-1])) == 1

    runtime = _runtime("r2")
    for _ in range(3):
        tool_call = call("bash", command="echo again")
        guard.after_model(_state(turn(tool_call)), runtime)
        guard.wrap_tool_call(_request(tool_call, runtime), _ok)
    guard.after_agent(_state(), runtime)  # r2 ends before its next model request
    assert guard.guard.take_warnings(Scope("t", "r2")) == []


@sync_and_async
def test_a_warning_of_a_run_entered_twice_waits_for_its_own_next_request(
        workspace: Workspace, asynchronous: bool) -> None:
    """One run id is one budget and one queue across graph entries; a sibling run's end drops nothing."""
    guard = HarnessGuardMiddleware("builtin:deerflow")
    agent = create_agent(CapturingModel(responses=[*repeated("echo same", 2), answer("paused")]),
                         tools=workspace.tools(), middleware=[guard])
    invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous,
           context={"thread_id": "t", "run_id": "run"})
    again = CapturingModel(responses=[*repeated("echo same", 1), answer("done")])
    result = invoke(create_agent(again, tools=workspace.tools(), middleware=[guard]),
                    {"messages": [HumanMessage("go on")]}, asynchronous,
                    context={"thread_id": "t", "run_id": "run"})

    assert [len(loop_warnings(r)) for r in again.requests] == [0, 1]
    assert loop_warnings(result["messages"]) == []


@sync_and_async
def test_consume_stop_reason_none_answers_for_a_run_whose_context_has_no_run_id(
        workspace: Workspace, asynchronous: bool) -> None:
    """DeerFlow's subagent executor passes ``run_id: None`` and asks ``consume_stop_reason(None)``."""
    guard = HarnessGuardMiddleware("builtin:deerflow")
    agent = create_agent(model(*repeated("echo same", 5), answer("never")), tools=workspace.tools(),
                         middleware=[guard])

    invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous,
           context={"thread_id": "t", "run_id": None})

    assert guard.consume_stop_reason(None) == "loop_capped"
    assert guard.consume_stop_reason(None) is None


@sync_and_async
@pytest.mark.parametrize("config", [{"run_id": uuid.UUID(int=7)}, {"configurable": {"run_id": "server-run"}}],
                         ids=["config-run-id", "configurable-run-id"])
def test_a_context_run_id_of_none_wins_over_a_run_id_in_the_config(
        workspace: Workspace, asynchronous: bool, config: RunnableConfig) -> None:
    """DeerFlow keys a run by the presence of ``run_id`` in the context: ``None`` there is the run's
    answer even when the config names a run (LangChain's ``run_id``, LangGraph Server's
    ``configurable.run_id``), so its stop is ``consume_stop_reason(None)``'s."""
    guard = HarnessGuardMiddleware("builtin:deerflow")
    agent = create_agent(model(*repeated("echo same", 5), answer("never")), tools=workspace.tools(),
                         middleware=[guard])
    context: dict[str, Any] = {"thread_id": "t", "run_id": None}

    invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous, context=context, config=config)

    assert context["stop_reason"] == "loop_capped"
    assert guard.consume_stop_reason(None) == "loop_capped"
    assert guard.consume_stop_reason("server-run") is None
    assert guard.scopes.anchored_runs() == 0


@sync_and_async
def test_a_missing_run_id_is_a_fresh_run_for_each_invocation(
        workspace: Workspace, asynchronous: bool) -> None:
    guard = HarnessGuardMiddleware("builtin:deerflow")
    agent = create_agent(PerConversationModel(responses=[*repeated("echo same", 4), answer("done")]),
                         tools=workspace.tools(), middleware=[guard])

    for _ in range(2):  # four identical calls per invocation: each starts a fresh budget, none stops
        result = invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous, context={"thread_id": "t"})
        assert final_message(result).text == "done"
    assert guard.consume_stop_reason(None) is None
    assert guard.scopes.anchored_runs() == 0


@sync_and_async
@pytest.mark.parametrize("no_thread", [None, ""], ids=["none", "empty"])
def test_reset_without_a_thread_forgets_every_thread_and_every_stop(
        workspace: Workspace, asynchronous: bool, no_thread: str | None) -> None:
    """``reset()``, and ``reset("")`` as DeerFlow's ``reset`` reads a falsy thread id."""
    guard = HarnessGuardMiddleware("builtin:deerflow")
    for thread in ("t1", "t2"):
        agent = create_agent(model(*repeated("echo same", 5), answer()), tools=workspace.tools(),
                             middleware=[guard])
        invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous,
               context={"thread_id": thread, "run_id": "r"})
    assert len(guard.guard.store) == 2

    guard.reset(no_thread)

    assert len(guard.guard.store) == 0
    assert guard.consume_stop_reason("r") is None
    again = create_agent(model(*repeated("echo same", 4), answer("done")), tools=workspace.tools(),
                         middleware=[guard])
    result = invoke(again, {"messages": [HumanMessage("go")]}, asynchronous,
                    context={"thread_id": "t1", "run_id": "r"})
    assert final_message(result).text == "done"  # no stop left over for (t1, r)


# --- malformed calls, states and outcomes (the agent goes on, the guard says what it could not read) ---


DEEP_JSON = "[" * 100_000 + "]" * 100_000
"""Arguments as a JSON text nested past what Python's parser reads."""


@pytest.mark.parametrize("tool_call", [
    {"id": "c1", "name": "bash", "args": DEEP_JSON},
    {"id": "c1", "args": {"command": "ls"}},  # no name
], ids=["args-nested-too-deep", "no-name"])
def test_a_malformed_tool_call_is_guarded_without_crashing(tool_call: dict[str, Any]) -> None:
    """As a middleware before the guard may leave a call (an AIMessage validates its calls when made)."""
    guard = HarnessGuardMiddleware("builtin:deerflow")
    runtime = _runtime("r")
    message = turn(call("bash", command="ls"))
    message.tool_calls[0].clear()
    message.tool_calls[0].update(tool_call)

    assert guard.after_model(_state(message), runtime) is None
    answered = guard.wrap_tool_call(_request(tool_call, runtime),
                                    lambda request: ToolMessage(content="same", tool_call_id="c1"))

    assert isinstance(answered, ToolMessage) and answered.text.startswith("same")


def test_messages_that_are_not_a_list_are_no_model_turn() -> None:
    guard = HarnessGuardMiddleware()
    assert guard.after_model({"messages": turn(call("bash", command="ls"))}, _runtime("r")) is None


MISSING_MODULE = "No module named 'yaml'"


@pytest.mark.parametrize(("content", "read"), [(None, ""), (MISSING_MODULE.encode(), MISSING_MODULE)],
                         ids=["none", "bytes"])
def test_a_tool_message_whose_content_is_not_text_is_read_as_its_text(content: Any, read: str) -> None:
    guard = HarnessGuardMiddleware()
    runtime = _runtime("r")
    tool_call = call("bash", command="python app.py")

    def answered(request: ToolCallRequest) -> ToolMessage:
        message = _ok(request).model_copy(update={"content": content, "status": "error"})
        assert message.content is content  # as an inner middleware may leave it
        return message

    guard.after_model(_state(turn(tool_call)), runtime)
    outcome = guard.wrap_tool_call(_request(tool_call, runtime), answered)

    assert isinstance(outcome, ToolMessage)
    text = message_text(outcome.content)
    assert text.startswith(read)
    if read:  # the missing module's hint follows the error
        assert "yaml" in text[len(read):]


def test_an_outcome_of_plain_text_is_read_and_one_of_nothing_is_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    guard = HarnessGuardMiddleware()
    runtime = _runtime("r")
    failed, silent = call("bash", command="python app.py"), call("bash", command="ls")

    guard.after_model(_state(turn(failed, silent)), runtime)
    error = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'yaml'"
    text: Any = guard.wrap_tool_call(_request(failed, runtime), lambda request: error)
    nothing: Any = guard.wrap_tool_call(_request(silent, runtime), lambda request: None)

    assert isinstance(text, str) and text.startswith(error + "\n\n") and "yaml" in text[len(error):]
    assert nothing is None
    assert f"tool call {silent['id']} (bash) answered with NoneType, not a ToolMessage" in caplog.text


def test_a_command_answering_with_a_message_dict_is_read_and_annotated() -> None:
    """LangGraph's ToolNode takes a Command whose update holds message dicts; the guard reads the
    call's own and answers with it annotated, the other messages left as they are."""
    guard = HarnessGuardMiddleware()
    runtime = _runtime("r")
    tool_call = call("bash", command="foo --version")
    other = {"role": "user", "content": "unrelated"}

    def answered(request: ToolCallRequest) -> Command[Any]:
        own = {"role": "tool", "content": "bash: foo: command not found", "status": "error",
               "tool_call_id": request.tool_call["id"]}
        return Command(update={"messages": [other, own], "files": ["a.py"]})

    guard.after_model(_state(turn(tool_call)), runtime)
    outcome = guard.wrap_tool_call(_request(tool_call, runtime), answered)

    assert isinstance(outcome, Command) and isinstance(outcome.update, dict)
    assert outcome.update["files"] == ["a.py"]
    first, own = outcome.update["messages"]
    assert first is other
    assert isinstance(own, ToolMessage) and own.tool_call_id == tool_call["id"] and own.status == "error"
    assert own.text.startswith("bash: foo: command not found\n\n[HINT]")
    assert own.additional_kwargs["policy"]["signature"] == "COMMAND_NOT_FOUND"


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise KeyError("no message")


@sync_and_async
def test_a_tool_exception_that_cannot_be_printed_is_still_re_raised_unchanged(
        workspace: Workspace, asynchronous: bool) -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise _Unprintable()

    agent = create_agent(model(turn(call("explode")), answer()), tools=[explode],
                         middleware=[HarnessGuardMiddleware()])

    with pytest.raises(_Unprintable):
        invoke(agent, {"messages": [HumanMessage("go")]}, asynchronous)
