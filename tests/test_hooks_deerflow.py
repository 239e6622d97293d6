"""HarnessGuardMiddleware in DeerFlow's entry points, through real ``create_agent`` graphs.

DeerFlow is not on the package index, so ``tests/deerflow_standin/deerflow`` stands in for it
(each module names the DeerFlow file it mirrors): the lead agent's chain, the embedded client,
the SDK factory with its ``@Prev`` anchors, the subagent executor and its context keys, the local
sandbox's bash output, the ``deerflow_tool_meta`` contract and the read-before-write gate.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from chat_models import recording
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

from policy.hooks.deerflow import deerflow_guard, guard_chain, guard_lead_agent, guard_subagents, sdk_options
from policy.hooks.langchain import HarnessGuardMiddleware
from policy.hooks.langchain.messages import blocked_tool_message
from policy.language.loader import load_policy
from policy.model.decision import Decision, RuleRef
from policy.model.events import ToolCall, ToolResult
from policy.runtime.output import output_reader
from policy.runtime.signatures import diagnose

STANDIN = Path(__file__).parent / "deerflow_standin"


@pytest.fixture(autouse=True)
def deerflow(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """DeerFlow's stand-in on the import path, fresh for each test."""
    monkeypatch.syspath_prepend(str(STANDIN))
    yield
    for name in [name for name in sys.modules if name == "deerflow" or name.startswith("deerflow.")]:
        del sys.modules[name]


CapturingModel = recording(FakeMessagesListChatModel)
"""Scripted answers by the conversation's progress; records every request it was sent."""


_ids = iter(range(1, 1_000_000))


def bash_turn(command: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"id": f"call-{next(_ids)}", "name": "bash",
                                               "args": {"command": command}, "type": "tool_call"}])


def scripted(*messages: AIMessage) -> CapturingModel:
    return CapturingModel(responses=list(messages))


def sandbox_tools(root: Path) -> list[BaseTool]:
    """DeerFlow-named tools; ``bash`` answers in the local sandbox's format (``Exit Code: N``)."""
    from deerflow.sandbox.local.local_sandbox import execute_command

    @tool
    def bash(command: str) -> str:
        """Run a shell command in the sandbox."""
        return execute_command(command, cwd=str(root))

    @tool
    def write_file(path: str, content: str, append: bool = False) -> str:
        """Write or append to a file."""
        with Path(path).open("a" if append else "w", encoding="utf-8") as handle:
            handle.write(content)
        return "OK"

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return Path(path).read_text(encoding="utf-8")

    return [bash, write_file, read_file]


def names(chain: Sequence[Any]) -> list[str]:
    return [type(m).__name__ for m in chain]


def loop_warnings(messages: Sequence[BaseMessage]) -> list[HumanMessage]:
    return [m for m in messages if isinstance(m, HumanMessage) and m.name == "loop_warning"]


# --- the lead agent -------------------------------------------------------------------------


def test_the_lead_agents_chain_gets_the_guard_outside_read_before_write_and_no_loop_detection() -> None:
    from deerflow.agents.lead_agent import agent as lead

    undo = guard_lead_agent("builtin:deerflow")
    try:
        chain = lead.build_middlewares({"configurable": {}}, model_name=None)
    finally:
        undo()

    assert names(chain) == ["SandboxMiddleware", "SandboxAuditMiddleware", "HarnessGuardMiddleware",
                            "ReadBeforeWriteMiddleware", "ToolProgressMiddleware",
                            "ToolErrorHandlingMiddleware", "SafetyFinishReasonMiddleware",
                            "ClarificationMiddleware"]
    assert "LoopDetectionMiddleware" in names(lead.build_middlewares({"configurable": {}}, model_name=None))


def test_the_guarded_lead_agent_warns_once_in_the_next_request_and_keeps_it_out_of_the_state(
        tmp_path: Path) -> None:
    from deerflow.agents.lead_agent.agent import make_lead_agent

    model = scripted(*(bash_turn("ls") for _ in range(3)), AIMessage(content="final answer"))
    undo = guard_lead_agent("builtin:deerflow")
    try:
        agent = make_lead_agent({"configurable": {"model": model, "tools": sandbox_tools(tmp_path)}})
    finally:
        undo()

    result = agent.invoke({"messages": [("user", "inspect the directory")]},
                          context={"thread_id": "t", "run_id": "r"})

    assert [len(loop_warnings(request)) for request in model.requests] == [0, 0, 0, 1]
    fourth = model.requests[3]
    assert isinstance(fourth[-2], ToolMessage)
    assert fourth[-1].name == "loop_warning"
    assert "[LOOP DETECTED]" in fourth[-1].text
    assert loop_warnings(result["messages"]) == []
    assert all("LOOP" not in m.text for m in result["messages"] if isinstance(m, ToolMessage))
    assert result["messages"][-1].text == "final answer"


def test_guarding_the_lead_agent_twice_keeps_one_guard_and_undo_restores_deerflows_chain() -> None:
    from deerflow.agents.lead_agent import agent as lead

    original = lead.build_middlewares
    first = guard_lead_agent()
    second = guard_lead_agent()
    chain = lead.build_middlewares({"configurable": {}}, model_name=None)
    assert names(chain).count("HarnessGuardMiddleware") == 1
    second()
    assert lead.build_middlewares is original
    first()
    assert lead.build_middlewares is original


def test_the_embedded_client_gets_a_guard_although_it_imported_deerflows_builder_by_name(
        tmp_path: Path) -> None:
    """``deerflow.client`` holds its own reference to ``build_middlewares``, taken at its import
    (before the helper runs, as an application's imports are); each ``chat`` is a new run of the
    one agent the client keeps."""
    from deerflow import client as embedded

    target = tmp_path / "app.py"
    broken = AIMessage(content="", tool_calls=[{"id": f"w{next(_ids)}", "name": "write_file",
                                                 "type": "tool_call",
                                                 "args": {"path": str(target), "content": "def f(:\n"}}])
    run = [broken, *(bash_turn("ls") for _ in range(3))]
    model = scripted(*run, AIMessage(content="first"), *run, AIMessage(content="second"))
    original = embedded.build_middlewares
    undo = guard_lead_agent("builtin:deerflow")
    try:
        client = embedded.DeerFlowClient(model, sandbox_tools(tmp_path))
        answers = [client.chat("inspect", thread_id="t") for _ in range(2)]
    finally:
        undo()

    assert answers == ["first", "second"]
    assert not target.exists()  # the guard's write gate, in the chain the client built
    warned = [loop_warnings(request) for request in model.requests]
    assert [len(w) for w in warned] == [0, 0, 0, 0, 1] * 2  # a fresh budget per run, one warning each
    assert all("3 times" in w[0].text for w in warned if w)  # policyctl's warning, not DeerFlow's
    assert embedded.build_middlewares is original


# --- the SDK factory -------------------------------------------------------------------------


def test_the_sdk_factory_places_the_anchored_guard_before_the_error_handler(tmp_path: Path) -> None:
    from deerflow.agents.factory import assemble_from_features

    guard = deerflow_guard()
    options = sdk_options(guard)

    assert options["features"].loop_detection is False
    chain = assemble_from_features(options["features"], options["extra_middleware"])
    assert names(chain) == ["DanglingToolCallMiddleware", "HarnessGuardMiddleware",
                            "ToolErrorHandlingMiddleware", "ClarificationMiddleware"]
    assert chain[1] is guard


def test_an_sdk_agent_blocks_a_broken_write_and_stops_a_loop_with_a_stop_reason(tmp_path: Path) -> None:
    from deerflow.agents.factory import create_deerflow_agent

    target = tmp_path / "app.py"
    broken = AIMessage(content="", tool_calls=[{"id": "w1", "name": "write_file", "type": "tool_call",
                                                 "args": {"path": str(target), "content": "def f(:\n"}}])
    model = scripted(broken, *(bash_turn("ls") for _ in range(5)), AIMessage(content="never reached"))
    guard = deerflow_guard()
    agent = create_deerflow_agent(model, sandbox_tools(tmp_path), **sdk_options(guard))

    result = agent.invoke({"messages": [("user", "write app.py")]},
                          context={"thread_id": "t", "run_id": "r1"})

    assert not target.exists()
    blocked = next(m for m in result["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "w1")
    assert blocked.status == "error"
    assert blocked.additional_kwargs["policy"]["rule"] == "gate python"
    assert "[LOOP STOPPED]" in result["messages"][-1].text
    assert not result["messages"][-1].tool_calls
    assert guard.consume_stop_reason("r1") == "loop_capped"
    assert guard.consume_stop_reason("r1") is None


def test_sdk_options_refuses_a_guard_without_deerflows_anchor() -> None:
    with pytest.raises(TypeError, match="deerflow_guard"):
        sdk_options(HarnessGuardMiddleware("builtin:deerflow"))


# --- subagents ----------------------------------------------------------------------------


def test_a_stopped_subagent_without_a_run_id_reports_loop_capped(tmp_path: Path) -> None:
    from deerflow.subagents.executor import SubagentExecutor

    undo = guard_subagents("builtin:deerflow")
    try:
        executor = SubagentExecutor(scripted(*(bash_turn("ls") for _ in range(5)), AIMessage(content="x")),
                                    sandbox_tools(tmp_path), thread_id="parent-thread", run_id=None)
        result = executor.execute("list the files")
    finally:
        undo()

    assert result.status == "completed"
    assert result.stop_reason == "loop_capped"
    assert "[LOOP STOPPED]" in (result.result or "")
    assert names(executor._stop_reason_middlewares) == ["HarnessGuardMiddleware"]


def test_each_subagent_gets_a_guard_of_its_own(tmp_path: Path) -> None:
    """Subagents share their lead's thread and run ids; their loop budgets must not add up."""
    from deerflow.subagents.executor import SubagentExecutor

    undo = guard_subagents("builtin:deerflow")
    try:
        results = [SubagentExecutor(scripted(*(bash_turn("ls") for _ in range(3)), AIMessage(content="done")),
                                    sandbox_tools(tmp_path), thread_id="lead",
                                    run_id="lead-run").execute("go")
                   for _ in range(2)]
    finally:
        undo()

    assert [r.stop_reason for r in results] == [None, None]
    assert [r.result for r in results] == ["done", "done"]


# --- conventions ---------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["builtin:deerflow", "builtin:default"])
@pytest.mark.parametrize(("command", "failed"), [("echo building; exit 2", True), ("exit 137", True),
                                                 ("echo 'Exit Code: 0 means fine'", False), ("true", False)])
def test_a_sandbox_result_ending_in_a_non_zero_exit_code_is_a_failure(tmp_path: Path, policy: str,
                                                                       command: str, failed: bool) -> None:
    from deerflow.sandbox.local.local_sandbox import execute_command

    compiled = load_policy(policy)
    output = execute_command(command, cwd=str(tmp_path))
    call = ToolCall(id="c", name="bash", args={"command": command})

    diagnosis = diagnose(compiled, call, ToolResult(content=output), output_reader(compiled).read(output))

    assert diagnosis.failed is failed, output


def test_three_failures_in_the_sandboxs_format_are_an_error_streak(tmp_path: Path) -> None:
    from deerflow.agents.factory import create_deerflow_agent

    guard = deerflow_guard("builtin:default")
    script = [bash_turn(f"echo building; exit 2  # attempt {n}") for n in range(3)]
    agent = create_deerflow_agent(scripted(*script, AIMessage(content="ok")), sandbox_tools(tmp_path),
                                  **sdk_options(guard))

    result = agent.invoke({"messages": [("user", "go")]}, context={"thread_id": "t", "run_id": "r"})

    answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert all(m.text.startswith("building\n\nExit Code: 2") for m in answers)
    assert answers[2].additional_kwargs["policy"]["rule"] == "loop error_streak"
    assert answers[2].additional_kwargs["deerflow_tool_meta"]["recommended_next_action"] == "try_alternative"


def test_tool_meta_uses_only_the_values_deerflow_declares(tmp_path: Path) -> None:
    """DeerFlow reads a result's meta as ``ToolResultMeta(**meta)`` (tool_progress_middleware.py)."""
    from deerflow.agents.middlewares import tool_result_meta as meta

    target = tmp_path / "app.py"
    write = AIMessage(content="", tool_calls=[{"id": "w", "name": "write_file", "type": "tool_call",
                                                "args": {"path": str(target), "content": "def f(:\n"}}])
    script = [write, bash_turn("python3 -c 'import nope_module'"),
              *(bash_turn(f"sh -c 'exit 3' # {n}") for n in range(6)), AIMessage(content="x")]
    agent = create_agent(scripted(*script), sandbox_tools(tmp_path), middleware=[HarnessGuardMiddleware()])

    result = agent.invoke({"messages": [("user", "go")]}, context={"thread_id": "t", "run_id": "r"})

    answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    stamped = [m.additional_kwargs["deerflow_tool_meta"] for m in answers
               if "deerflow_tool_meta" in m.additional_kwargs]
    sources = set()
    for entry in stamped:
        parsed = meta.ToolResultMeta(**entry)
        assert parsed.status in meta.STATUSES
        assert parsed.source in meta.SOURCES
        assert parsed.recommended_next_action in meta.NEXT_ACTIONS
        assert parsed.error_type is None or parsed.error_type in meta.ERROR_TYPES
        sources.add(parsed.source)
    assert stamped[0] == {"status": "error", "error_type": "unknown", "recoverable_by_model": True,
                          "recommended_next_action": "try_alternative", "source": "tool_return"}
    assert stamped[1]["error_type"] == "not_found"
    assert stamped[-1]["recommended_next_action"] == "stop"
    assert sources == {"tool_return", "content_analysis"}


def test_a_call_refused_after_a_stop_is_stamped_as_deerflows_progress_guard_block() -> None:
    stop = Decision(action="stop", rule=RuleRef("loop", "error_streak"), hint="stopped")

    message = blocked_tool_message(ToolCall(id="c", name="bash", args={}), stop)

    assert message.additional_kwargs["deerflow_tool_meta"] == {
        "status": "error", "error_type": "blocked_by_progress_guard", "recoverable_by_model": False,
        "recommended_next_action": "stop", "source": "progress_middleware"}


def test_chunked_appends_under_read_before_write_need_a_read_between_chunks(tmp_path: Path) -> None:
    from deerflow.agents.middlewares.read_before_write_middleware import ReadBeforeWriteMiddleware
    from deerflow.agents.middlewares.tool_error_handling_middleware import ToolErrorHandlingMiddleware

    target = tmp_path / "app.py"

    def call(name: str, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"id": f"call-{next(_ids)}", "name": name, "args": args,
                                                   "type": "tool_call"}])

    script = [call("write_file", path=str(target), content="def f(x):\n"),
              call("write_file", path=str(target), content="    return x\n", append=True),  # not re-read
              call("read_file", path=str(target)),
              call("write_file", path=str(target), content="    return x\n", append=True),
              AIMessage(content="done")]
    chain = guard_chain([ReadBeforeWriteMiddleware(), ToolErrorHandlingMiddleware()], deerflow_guard())
    agent = create_agent(scripted(*script), sandbox_tools(tmp_path), middleware=chain)

    result = agent.invoke({"messages": [("user", "write app.py in chunks")]},
                          context={"thread_id": "t", "run_id": "r"})

    answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in answers] == ["success", "error", "success", "success"]
    assert "blocked" in answers[1].text and "not read its current version" in answers[1].text
    assert target.read_text() == "def f(x):\n    return x\n"


# --- placement rules -------------------------------------------------------------------------


class _Wrapper:
    """The shape of DeerFlow's extension ``IsolatedMiddleware``: the wrapped middleware is ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner


def test_guard_chain_removes_a_wrapped_loop_detection_and_refuses_a_chain_without_anchors() -> None:
    from deerflow.agents.middlewares.loop_detection_middleware import LoopDetectionMiddleware
    from deerflow.agents.middlewares.tool_error_handling_middleware import ToolErrorHandlingMiddleware

    guard = HarnessGuardMiddleware("builtin:deerflow")
    chain = guard_chain([_Wrapper(LoopDetectionMiddleware()), ToolErrorHandlingMiddleware()], guard)
    assert names(chain) == ["HarnessGuardMiddleware", "ToolErrorHandlingMiddleware"]
    with pytest.raises(ValueError, match="tool-call middlewares"):
        guard_chain([LoopDetectionMiddleware()], guard)


def test_guarding_without_deerflow_says_so() -> None:
    sys.modules["deerflow"] = None  # type: ignore[assignment]  # an import of it fails
    with pytest.raises(ImportError, match="chain builders"):
        guard_subagents()


def test_async_lead_agent_runs_deliver_the_warning_as_the_sync_ones_do(tmp_path: Path) -> None:
    from deerflow.agents.lead_agent.agent import make_lead_agent

    model = scripted(*(bash_turn("ls") for _ in range(3)), AIMessage(content="final answer"))
    undo = guard_lead_agent()
    try:
        agent = make_lead_agent({"configurable": {"model": model, "tools": sandbox_tools(tmp_path)}})
    finally:
        undo()

    result = asyncio.run(agent.ainvoke({"messages": [("user", "go")]},
                                       context={"thread_id": "t", "run_id": "r"}))

    assert [len(loop_warnings(request)) for request in model.requests] == [0, 0, 0, 1]
    assert loop_warnings(result["messages"]) == []


# --- the README's DeerFlow section runs as written ------------------------------------------


def readme_blocks(language: str) -> list[str]:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    body = text.split("\n## Use with DeerFlow\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n```", 1)[0] for block in body.split(f"```{language}\n")[1:]]


def test_the_readme_entry_points_run_and_place_the_guard(tmp_path: Path) -> None:
    from deerflow.agents.lead_agent import agent as lead
    from deerflow.agents.middlewares import tool_error_handling_middleware as handler

    lead_block, sdk_block, subagent_block = readme_blocks("python")
    model = scripted(*(bash_turn("ls") for _ in range(5)), AIMessage(content="x"))
    namespace: dict[str, Any] = {"model": model, "tools": sandbox_tools(tmp_path)}
    for block in (lead_block, sdk_block, subagent_block):
        exec(compile(block, "README.md", "exec"), namespace)
    try:
        assert "HarnessGuardMiddleware" in names(lead.build_middlewares({"configurable": {}}, None))
        assert "LoopDetectionMiddleware" not in names(handler.build_subagent_runtime_middlewares())
        result = namespace["agent"].invoke({"messages": [("user", "go")]},
                                           context={"thread_id": "t", "run_id": "readme"})
        assert "[LOOP STOPPED]" in result["messages"][-1].text
        assert namespace["guard"].consume_stop_reason("readme") == "loop_capped"
    finally:
        namespace["undo"]()
        namespace["undo_subagents"]()
    assert "LoopDetectionMiddleware" in names(lead.build_middlewares({"configurable": {}}, None))


def _chunked_write(tmp_path: Path, chunks: int, guard: HarnessGuardMiddleware) -> list[ToolMessage]:
    """A file written in ``chunks`` appends under ReadBeforeWrite, re-read before each append."""
    from deerflow.agents.middlewares.read_before_write_middleware import ReadBeforeWriteMiddleware
    from deerflow.agents.middlewares.tool_error_handling_middleware import ToolErrorHandlingMiddleware

    target = tmp_path / "app.py"

    def call(name: str, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"id": f"call-{next(_ids)}", "name": name, "args": args,
                                                   "type": "tool_call"}])

    script = [call("write_file", path=str(target), content="values = [\n")]
    for n in range(1, chunks):
        script += [call("read_file", path=str(target)),
                   call("write_file", path=str(target), content=f"    {n},\n", append=True)]
    chain = guard_chain([ReadBeforeWriteMiddleware(), ToolErrorHandlingMiddleware()], guard)
    agent = create_agent(scripted(*script, AIMessage(content="done")), sandbox_tools(tmp_path),
                         middleware=chain)
    result = agent.invoke({"messages": [("user", "write it")]}, context={"thread_id": "t", "run_id": "r"})
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_the_readme_says_when_re_reads_between_chunks_stop_a_deerflow_run(tmp_path: Path) -> None:
    answers = _chunked_write(tmp_path, 6, deerflow_guard("builtin:deerflow"))

    assert len(answers) == 9  # the fifth re-read is stopped before it runs
    assert [m.additional_kwargs.get("policy", {}).get("action") for m in answers] == [None] * 9
    assert (tmp_path / "app.py").read_text().count(",") == 4


def test_the_readmes_team_policy_lets_a_many_chunk_write_through(tmp_path: Path) -> None:
    (policy_block,) = [block for block in readme_blocks("") if block.startswith("extends")]
    team = tmp_path / "team.policy"
    team.write_text(policy_block, encoding="utf-8")

    answers = _chunked_write(tmp_path, 8, deerflow_guard(team))

    assert len(answers) == 15
    assert all(m.status == "success" and "policy" not in m.additional_kwargs for m in answers)
    assert (tmp_path / "app.py").read_text().count(",") == 7
