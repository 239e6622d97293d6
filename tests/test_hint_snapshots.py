"""Every shipped hint, rendered for realistic cases, snapshot-tested as one Markdown file per case.

The cases are the ``test`` blocks of the shipped policies (real outputs from
real agent sessions) plus ``tests/hint_cases/``, run through real sessions,
so the variables are the ones the guard really provides.  A changed hint
shows up in review as a diff of ``__snapshots__/test_hint_snapshots/*.md``;
after reading it, update with ``pytest tests/test_hint_snapshots.py
--snapshot-update``.

Also here: tool output is never evaluated as a template, a template that
fails at render time falls back to one plain line (and is logged), and the
filters hint authors use.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from policy.language.hint_variables import RULE_VARIABLES
from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy, PolicyTest
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.model.hint_template import basename, environment, pip_name, plain_json, truncate_middle
from policy.model.variables import COMMON_VARIABLES
from policy.replay.harness import Session
from policy.resources import builtin_policy_names, data_dir
from policy.testing.runner import PolicyTestResult, run_test
from policy.testing.snapshot import MarkdownSnapshotExtension
from policy.testing.transcript import hint_transcript

HINT_CASES = Path(__file__).parent / "hint_cases"
HINTS_DOC = Path(__file__).resolve().parents[1] / "docs" / "hints.md"
SHIPPED_HINTS = sorted(data_dir("hints").glob("*.j2"))


def _policies() -> list[tuple[str, CompiledPolicy]]:
    shipped = [(name, load_policy(f"builtin:{name}")) for name in builtin_policy_names()]
    cases = [(path.stem, load_policy(path)) for path in sorted(HINT_CASES.glob("*.policy"))]
    return shipped + cases


POLICIES = _policies()
CASES = [(label, policy, test) for label, policy in POLICIES for test in policy.tests]


@pytest.fixture(scope="module")
def results() -> list[PolicyTestResult]:
    return [run_test(policy, test) for _, policy, test in CASES]


@pytest.fixture
def markdown_snapshot(snapshot: Any) -> Any:
    return snapshot.use_extension(MarkdownSnapshotExtension)


@pytest.mark.parametrize(("policy", "test"), [(policy, test) for _, policy, test in CASES],
                         ids=[f"{label} - {test.name}" for label, _, test in CASES])
def test_hints_of_each_policy_test(policy: CompiledPolicy, test: PolicyTest, markdown_snapshot: Any) -> None:
    result = run_test(policy, test)
    assert result.passed, [f"{f.expected} / {f.actual}" for f in result.failures]
    assert hint_transcript(result) == markdown_snapshot


# --- every shipped hint is covered -----------------------------------------------------------


def _rendered(results: list[PolicyTestResult]) -> Iterator[tuple[str, str]]:
    """(template source, action) for every hint a decision in these results rendered."""
    for result in results:
        templates = _templates_by_rule(result.policy)
        for record in result.calls:
            for part in record.decision.parts:
                source = templates.get(str(part.rule) if part.rule else "")
                if source is not None:
                    yield source, part.action


def _templates_by_rule(policy: CompiledPolicy) -> dict[str, str]:
    rules: list[Any] = [*policy.gates, *policy.signatures, *policy.loops]
    templates = {str(rule.ref): rule.hint.source for rule in rules if rule.hint is not None}
    workspace = policy.workspace
    if workspace is not None:
        for gate in policy.gates:
            if workspace.hint is not None:
                templates[f"sweep {gate.ref.name}"] = workspace.hint.source
            if workspace.incomplete_hint is not None:
                templates[f"incomplete {gate.ref.name}"] = workspace.incomplete_hint.source
    return templates


@pytest.mark.parametrize("hint_file", SHIPPED_HINTS, ids=[path.name for path in SHIPPED_HINTS])
def test_every_shipped_hint_is_rendered_by_a_snapshot_case(hint_file: Path,
                                                           results: list[PolicyTestResult]) -> None:
    source = hint_file.read_text(encoding="utf-8")
    actions = {action for rendered, action in _rendered(results) if rendered == source}
    assert actions, f"no test renders {hint_file.name}: add a test block that fires a rule using it"
    if 'action == "stop"' in source:
        assert "stop" in actions and actions - {"stop"}, (
            f"{hint_file.name} words a stop differently: cover both a stop and a warning (got {actions})")


# --- tool output stays text -------------------------------------------------------------------


def _policy(tmp_path: Path, text: str) -> CompiledPolicy:
    path = tmp_path / "case.policy"
    path.write_text(dedent(text), encoding="utf-8")
    return load_policy(path)


def _result_decision(policy: CompiledPolicy, output: str, command: str = "make") -> Decision:
    session = Session(policy)
    scope = Scope("t", "r")
    call = ToolCall("c1", "bash", {"command": command})
    session.turn([call], scope)
    outcome = session.result("c1", ToolResult(output, "error"), scope)
    assert outcome is not None
    return outcome.decision


TEMPLATE_SYNTAX = "{{ 7*7 }} {% for x in range(3) %}{{ x }}{% endfor %} {# note #} {{ config }}"


def test_template_syntax_in_tool_output_is_printed_literally(tmp_path: Path) -> None:
    policy = _policy(tmp_path, """
        tool bash { runs command=command }
        signature WEIRD { match /weird: (?P<detail>[^\\n]+)/; hint weird }
        hint weird "detail={{ detail }} | excerpt={{ excerpt }} | call={{ call }}"
        """)
    decision = _result_decision(policy, f"weird: {TEMPLATE_SYNTAX}", command=TEMPLATE_SYNTAX)
    assert decision.hint is not None
    assert decision.hint.count(TEMPLATE_SYNTAX) == 3
    assert "49" not in decision.hint and "012" not in decision.hint


def test_template_syntax_in_loop_facts_is_printed_literally() -> None:
    policy = load_policy("builtin:default")
    session = Session(policy)
    scope = Scope("t", "r")
    for number in range(1, 4):
        session.turn([ToolCall(f"c{number}", "bash", {"command": "echo '{% for %}'"})], scope)
        outcome = session.result(f"c{number}", ToolResult("{{ 7*7 }} {% for %}"), scope)
    assert outcome is not None and outcome.decision.action == "warn"
    hint = outcome.decision.hint or ""
    assert "echo '{% for %}'" in hint and "{{ 7*7 }} {% for %}" in hint and "49" not in hint


# --- a template that fails at render time -------------------------------------------------------


def test_a_render_error_falls_back_to_one_plain_line_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = _policy(tmp_path, """
        tool bash { runs command=command }
        signature MODULE { match /No module named '(?P<module>[\\w.]+)'/; hint broken }
        hint broken "install {{ module.distribution.name }}"
        """)
    with caplog.at_level(logging.WARNING, logger="policy.hints"):
        decision = _result_decision(policy, "No module named 'yaml'", command="python app.py")
    assert decision.action == "hint" and decision.signature == "MODULE"
    assert decision.hint == \
        '[HINT] Policy rule `signature MODULE` fired on bash {"command": "python app.py"}.'
    assert [r.getMessage() for r in caplog.records if r.name == "policy.hints"] == [
        "hint broken failed to render: 'str object' has no attribute 'distribution'"
    ]


def test_a_sandbox_violation_at_render_time_falls_back_too(tmp_path: Path) -> None:
    policy = _policy(tmp_path, """
        tool bash { runs command=command }
        signature ANY { match /boom/; hint escape }
        hint escape "{{ call.__class__.__mro__ }}"
        """)
    decision = _result_decision(policy, "boom")
    assert decision.hint is not None and decision.hint.startswith("[HINT] Policy rule `signature ANY`")
    assert "\n" not in decision.hint


def test_a_policy_test_fails_when_a_hint_cannot_render(tmp_path: Path) -> None:
    policy = _policy(tmp_path, """
        tool bash { runs command=command }
        signature MODULE { match /No module named '(?P<module>[\\w.]+)'/; hint broken }
        hint broken "install {{ module.distribution.name }}"
        test "the hint renders" {
          call bash { "command": "python app.py" }
          result error "No module named 'yaml'"
          expect hint signature MODULE
        }
        """)
    (result,) = [run_test(policy, test) for test in policy.tests]
    assert [(f.expected, f.actual) for f in result.failures] == [
        ("every hint renders", "hint broken failed to render: 'str object' has no attribute 'distribution'")
    ]


# --- filters ---------------------------------------------------------------------------------------


def _render(source: str, **variables: Any) -> str:
    return environment().from_string(source).render(**variables)


@pytest.mark.parametrize(("path", "expected"), [
    ("/workspace/src/app.py", "app.py"),
    ("C:\\work\\app.py", "app.py"),
    ("app.py", "app.py"),
    ("src/pkg/", ""),
])
def test_basename(path: str, expected: str) -> None:
    assert basename(path) == expected
    assert _render("{{ p | basename }}", p=path) == expected


def test_truncate_middle_keeps_both_ends() -> None:
    text = "Traceback: " + "x" * 500 + " KeyError: 'amount'"
    cut = truncate_middle(text, 60)
    assert len(cut) == 60
    assert cut.startswith("Traceback: ") and cut.endswith("KeyError: 'amount'") and " … " in cut
    assert truncate_middle("short", 60) == "short"
    assert _render("{{ t | truncate_middle(20, '...') }}", t="a" * 30) == "a" * 8 + "..." + "a" * 9


def test_json_is_plain_text_json() -> None:
    value = {"b": "<tag> & 'quote'", "a": [1, None, True], "é": "ünïcode"}
    rendered = _render("{{ v | json }}", v=value)
    assert rendered == '{"a": [1, null, true], "b": "<tag> & \'quote\'", "é": "ünïcode"}'
    assert plain_json(value) == rendered
    assert "\\u003c" in _render("{{ v | tojson }}", v=value)  # what the filter exists to avoid


@pytest.mark.parametrize(("module", "distribution"), [
    ("yaml", "PyYAML"),
    ("cv2", "opencv-python"),
    ("PIL", "Pillow"),
    ("PIL.Image", "Pillow"),
    ("sklearn.linear_model", "scikit-learn"),
    ("bs4", "beautifulsoup4"),
    ("google.protobuf", "protobuf"),
    ("requests", "requests"),
    ("numpy.linalg", "numpy"),
    ("erfa", "pyerfa"),
    ("nacl.signing", "PyNaCl"),
    ("pkg_resources", "setuptools"),
])
def test_pip_name(module: str, distribution: str) -> None:
    assert pip_name(module) == distribution
    assert _render("pip install {{ m | pip_name }}", m=module) == f"pip install {distribution}"


def test_indent_is_jinja_s_own_filter() -> None:
    assert _render("Output:\n{{ out | indent(4, first=true) }}", out="line 1\nline 2") == \
        "Output:\n    line 1\n    line 2"


# --- docs/hints.md lists exactly the variables each kind of rule provides ----------------------------


def _documented_variables() -> dict[str, set[str]]:
    """First-column names of each variables table in docs/hints.md, by section."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in HINTS_DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"### (?:Every rule|`(?:loop )?(\w+)`)", line)
        if heading:
            current = heading.group(1) or "common"
            sections[current] = set()
        elif line.startswith("## "):
            current = None
        elif current is not None and line.startswith("| `"):
            sections[current].update(re.findall(r"`(\w+)`", line.split("|")[1]))
    return sections


def test_the_hints_doc_lists_every_variable_of_every_rule_kind() -> None:
    documented = _documented_variables()
    assert documented.pop("common") == set(COMMON_VARIABLES)
    assert documented == {kind: set(names) for kind, names in RULE_VARIABLES.items()}
