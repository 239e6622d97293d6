"""check_write: which gate applies, what a block carries, and when a write goes through."""

from __future__ import annotations

from typing import Any

import pytest

from policy.language.hint_variables import RULE_VARIABLES
from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy, GateRule, ToolSpec, Validator
from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.model.hint_template import compile_hint
from policy.model.variables import COMMON_VARIABLES
from policy.runtime.gates import check_write, file_effect, matching_gate

WRITE = ToolSpec("write_file", "write", {"path": "path", "content": "content", "append": "append"})
EDIT = ToolSpec("str_replace", "edit",
                {"path": "path", "old": "old_str", "new": "new_str", "all": "replace_all"})


def gate(name: str, *globs: str, kind: str = "python", partial: bool = True, hint: str | None = None,
         command: str | None = None) -> GateRule:
    return GateRule(
        ref=RuleRef("gate", name),
        globs=globs,
        validator=Validator(kind, command),
        partial=partial,
        hint=compile_hint(f"{name}_hint", hint) if hint is not None else None,
    )


def policy(*gates: GateRule) -> CompiledPolicy:
    return CompiledPolicy(name="team", tools={"write_file": WRITE, "str_replace": EDIT}, gates=gates)


def write(path: str, content: str, **extra: Any) -> ToolCall:
    return ToolCall(id="c1", name="write_file", args={"path": path, "content": content, **extra})


class Files(dict[str, str]):
    """An in-memory sandbox that counts reads."""

    reads = 0

    def read(self, path: str) -> str | None:
        self.reads += 1
        return self.get(path)


@pytest.fixture(scope="module")
def default() -> CompiledPolicy:
    return load_policy("builtin:default")


def test_a_broken_python_write_is_blocked_with_where_and_what(default: CompiledPolicy) -> None:
    decision = check_write(default, write("app.py", "def f(x)\n    return x\n"), Files().read)
    assert decision.action == "block"
    assert decision.rule is not None and str(decision.rule) == "gate python"
    assert decision.call_id == "c1"
    assert decision.metadata == {
        "path": "app.py",
        "line": 1,
        "column": 9,
        "message": "expected ':'",
        "snippet": "1 | def f(x)\n  |         ^",
        "validator": "python",
        "language": "Python",
        "output": "SyntaxError: expected ':'",
    }
    assert decision.hint is not None  # rendered from the shipped syntax_error template
    for fragment in ("app.py", "line 1", "column 9", "expected ':'", "1 | def f(x)\n  |         ^"):
        assert fragment in decision.hint


def test_a_python_file_written_in_chunks_goes_through(default: CompiledPolicy) -> None:
    files = Files()
    first = check_write(default, write("app.py", "class A:\n    def f(self):\n"), files.read)
    assert first.action == "allow" and first.metadata["incomplete"] is True
    files["app.py"] = "class A:\n    def f(self):\n"
    second = check_write(default, write("app.py", "        return 1\n", append=True), files.read)
    assert second.action == "allow" and second.metadata == {}


def test_an_append_that_breaks_the_file_is_blocked_at_its_line(default: CompiledPolicy) -> None:
    files = Files({"app.py": "def f(x):\n    return x\n"})
    decision = check_write(default, write("app.py", "\nprint(f(1)))\nx = 2\n", append="true"), files.read)
    assert decision.action == "block"
    assert (decision.metadata["line"], decision.metadata["message"]) == (4, "unmatched ')'")


def test_an_edit_is_checked_on_the_spliced_file(default: CompiledPolicy) -> None:
    files = Files({"app.py": "def f(x):\r\n    return x\r\n"})
    call = ToolCall(id="e1", name="str_replace",
                    args={"path": "app.py", "old_str": "def f(x):\n", "new_str": "def f(x)\n"})
    decision = check_write(default, call, files.read)
    assert decision.action == "block" and decision.metadata["line"] == 1


def test_an_edit_whose_old_text_is_absent_is_left_to_the_tool(default: CompiledPolicy) -> None:
    files = Files({"app.py": "x = 1\n"})
    call = ToolCall(id="e1", name="str_replace", args={"path": "app.py", "old_str": "nope", "new_str": "("})
    assert check_write(default, call, files.read).action == "allow"


def test_json_and_toml_gates_block_their_errors(default: CompiledPolicy) -> None:
    broken_json = '{\n  "a": 1,,\n  "b": 2\n}\n'
    json_block = check_write(default, write("cfg/settings.json", broken_json), Files().read)
    assert json_block.action == "block" and json_block.metadata["validator"] == "json"
    assert (json_block.metadata["line"], json_block.metadata["column"]) == (2, 10)
    toml_block = check_write(default, write("pyproject.toml", "[project]\nname = = 'x'\n"), Files().read)
    assert toml_block.action == "block" and toml_block.metadata["line"] == 2


def test_the_default_policy_gates_jsx_written_in_chunks(default: CompiledPolicy) -> None:
    files = Files({"src/App.jsx": "export function App() {\n  return (\n    <div className=\"app\">\n"})
    cut_in_a_tag = '      <button\n        class="counter"\n        onClick={() => setCount((c) => c + 1)}\n'
    assert check_write(default, write("src/App.jsx", cut_in_a_tag, append=True), files.read).action == "allow"
    broken = check_write(default, write("src/App.jsx", "      <p>{count + }</p>\n    </div>\n  );\n}\n",
                                        append=True), files.read)
    assert broken.action == "block" and broken.metadata["validator"] == "javascript"


def test_a_write_that_changes_nothing_is_not_checked() -> None:
    files = Files({"app.py": "broken(\n\n)x\n"})
    decision = check_write(policy(gate("python", "*.py")), write("app.py", "broken(\n\n)x\n"), files.read)
    assert decision.action == "allow"


def test_a_path_no_gate_matches_is_not_even_read() -> None:
    files = Files()
    decision = check_write(policy(gate("python", "*.py")), write("notes.md", "def f(:"), files.read)
    assert decision.action == "allow" and files.reads == 0


@pytest.mark.parametrize(("path", "name"), [
    ("app.py", "python"),
    ("src/pkg/app.py", "python"),
    ("src\\pkg\\app.py", "python"),
    ("config/app.json", "config"),
    ("other/app.json", "json"),
    ("app.JSON", None),
])
def test_the_first_gate_matching_the_name_or_the_whole_path_applies(path: str, name: str | None) -> None:
    gates = (gate("python", "*.py", "*.pyi"), gate("config", "config/*.json", kind="json"),
             gate("json", "*.json", kind="json"))
    found = matching_gate(gates, path)
    assert (found.ref.name if found else None) == name


def test_a_gate_without_a_hint_reads_like_the_shipped_syntax_error_hint() -> None:
    decision = check_write(policy(gate("python", "*.py")), write("app.py", "x = (1 2)\n"), Files().read)
    assert decision.action == "block"
    assert decision.hint == (
        "[BLOCKED] This `write_file` call was not applied: app.py would not be valid Python. "
        "The file on disk is unchanged.\n"
        "Python error at line 1, column 6: invalid syntax. Perhaps you forgot a comma?\n"
        "1 | x = (1 2)\n  |      ^\n"
        "Fix that spot and send the call again with the corrected text; the same text will be blocked again."
    )


def test_a_hint_sees_every_variable_a_gate_provides() -> None:
    names = sorted(COMMON_VARIABLES | RULE_VARIABLES["gate"])
    template = "\n".join(f"{name}={{{{ {name} }}}}" for name in names if name != "snippet")
    team = policy(gate("py", "*.py", hint=template))
    decision = check_write(team, write("a.py", "def f(:\n"), Files().read)
    rendered = dict(line.split("=", 1) for line in (decision.hint or "").splitlines())
    assert rendered == {
        "action": "block",
        "args": str({"path": "a.py", "content": "def f(:\n"}),
        "call": 'write_file {"content": "def f(:\\n", "path": "a.py"}',
        "call_id": "c1",
        "column": "7",
        "line": "1",
        "message": "invalid syntax",
        "output": "SyntaxError: invalid syntax",
        "path": "a.py",
        "policy": "team",
        "rule": "gate py",
        "rule_kind": "gate",
        "rule_name": "py",
        "tool": "write_file",
        "validator": "python",
        "language": "Python",
    }


def test_partial_block_refuses_an_incomplete_prefix() -> None:
    strict = policy(gate("python", "*.py", partial=False))
    decision = check_write(strict, write("a.py", "def f():\n"), Files().read)
    assert decision.action == "block"
    assert decision.metadata["message"].startswith("expected an indented block")


def test_a_validator_that_does_not_exist_lets_the_write_through_and_says_so() -> None:
    decision = check_write(policy(gate("odd", "*.x", kind="xml")), write("a.x", "<a>"), Files().read)
    assert decision.action == "allow"
    assert decision.metadata["checker"] == "unavailable"
    assert "xml" in decision.metadata["reason"]


@pytest.mark.parametrize("args", [
    {"path": "a.py"},
    {"path": "a.py", "content": 42},
    {"path": None, "content": "def f(:"},
    {"content": "def f(:"},
    {"path": "a.py", "content": "def f(:", "append": "sometimes"},
])
def test_malformed_arguments_never_raise(args: dict[str, Any]) -> None:
    call = ToolCall(id="m", name="write_file", args=args)
    assert check_write(policy(gate("python", "*.py")), call, Files().read).action == "allow"


def test_a_call_of_a_tool_that_does_not_write_is_allowed() -> None:
    call = ToolCall(id="b", name="bash", args={"path": "a.py", "command": "def f(:"})
    assert check_write(policy(gate("python", "*.py")), call, Files().read).action == "allow"


def test_partial_allow_covers_writes_but_not_edits() -> None:
    """An edit leaves the whole file: an unclosed bracket it leaves at the end is an error."""
    files = Files({"app.py": "def handler(event):\n    return event\n"})
    lenient = policy(gate("python", "*.py", partial=True))
    assert check_write(lenient, write("new.py", "data = {\n    'a': 1,\n"), files.read).action == "allow"
    edit = ToolCall(id="c2", name="str_replace",
                    args={"path": "app.py", "old_str": "return event", "new_str": "return {'body': event"})
    decision = check_write(lenient, edit, files.read)
    assert decision.action == "block"
    assert decision.metadata["line"] == 2


def test_a_precomputed_effect_saves_reading_the_file_again() -> None:
    files = Files({"app.py": "x = 1\n"})
    call = ToolCall(id="c1", name="str_replace", args={"path": "app.py", "old_str": "1", "new_str": "(2"})
    effect = file_effect(EDIT, call.args, files.read)
    reads = files.reads
    assert check_write(policy(gate("python", "*.py")), call, files.read, effect).action == "block"
    assert files.reads == reads
