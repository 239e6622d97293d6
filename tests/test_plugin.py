"""The pytest plugin, run the way a team runs it: a fresh pytest process in a temporary project.

Also runs ``examples/team-repo`` (its policy tests and hint snapshots), and
checks that syrupy fails the run on an unused ``.md`` snapshot without
touching other extensions' snapshots.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from textwrap import dedent

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
TEAM_REPO = REPO / "examples" / "team-repo"

POLICY = """
extends "builtin:default"

gate yaml { files "*.yml"; check yaml; hint team_block }
hint team_block "[BLOCKED] {{ path }}: {{ message }} (line {{ line }})"

test "a broken workflow is blocked" {
  call write_file { "path": "ci.yml", "content": "jobs:\\n  a: [1\\n  b: 2\\n" }
  expect block gate yaml
}

test "a missing OpenCV warns" {
  call bash { "command": "python app.py" }
  result error "ModuleNotFoundError: No module named 'cv2'"
  expect warn loop error_streak
}
"""

TESTS = """
import pytest

pytestmark = pytest.mark.policyctl("policies/team.policy")


def test_policy(policy_test):
    policy_test.check()


def test_hints(policy_hints, policy_snapshot):
    assert policy_hints == policy_snapshot
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A team project: a policy overlay with two tests, and a pytest file using the plugin's fixtures."""
    (pytester.path / "policies").mkdir()
    (pytester.path / "policies" / "team.policy").write_text(dedent(POLICY), encoding="utf-8")
    pytester.makepyfile(test_team=dedent(TESTS))
    return pytester


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    (plugin,) = entry_points(group="pytest11", name="policyctl")
    assert plugin.value == "policy.testing.plugin"


def test_each_policy_test_is_a_pytest_item(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-v", "-k", "test_policy")
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    result.stdout.fnmatch_lines([
        "*test_policy?a broken workflow is blocked? PASSED*",
        "*test_policy?a missing OpenCV warns? FAILED*",
    ])
    result.stdout.fnmatch_lines([
        "*PolicyTestFailed: policy test 'a missing OpenCV warns' failed (*team.policy:12)",
        "*team.policy:15: expect warn loop error_streak",
        "*  expected: warn loop error_streak",
        "*  actual:   hint signature MODULE_NOT_FOUND",
        "*  hint:",
        "*    | [[]HINT[]] Python cannot import `cv2`*opencv-python*",
    ])


def test_hint_snapshots_are_written_checked_and_fail_when_a_hint_changes(project: pytest.Pytester) -> None:
    written = project.runpytest_subprocess("-k", "test_hints", "--snapshot-update")
    written.assert_outcomes(passed=2, deselected=2)
    snapshot = project.path / "__snapshots__" / "test_team" / "test_hints[a broken workflow is blocked].md"
    text = snapshot.read_text(encoding="utf-8")
    assert text.startswith("# a broken workflow is blocked\n")
    assert "[BLOCKED] ci.yml: " in text and "(line 3)" in text

    project.runpytest_subprocess("-k", "test_hints").assert_outcomes(passed=2, deselected=2)

    policy = project.path / "policies" / "team.policy"
    policy.write_text(policy.read_text().replace("[BLOCKED] {{ path }}", "[BLOCKED] `{{ path }}`"))
    changed = project.runpytest_subprocess("-k", "test_hints")
    changed.assert_outcomes(passed=1, failed=1, deselected=2)
    changed.stdout.fnmatch_lines(["*[[]BLOCKED[]] `ci.yml`*"])


def test_an_unused_markdown_snapshot_fails_the_run_and_other_snapshots_are_left_alone(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_amber="def test_plain(snapshot):\n    assert {'a': 1} == snapshot\n")
    written = project.runpytest_subprocess("--snapshot-update")
    written.assert_outcomes(passed=4, failed=1)  # "a missing OpenCV warns" fails, its snapshot is written
    policy = project.path / "policies" / "team.policy"
    text = policy.read_text()
    policy.write_text(text[: text.index('test "a missing OpenCV')])

    run = project.runpytest_subprocess()
    run.assert_outcomes(passed=3)
    assert run.ret == 1
    run.stdout.fnmatch_lines(["*1 snapshot unused*"])
    assert (project.path / "__snapshots__" / "test_amber.ambr").exists()


def test_the_ini_option_names_the_policies_for_every_test(pytester: pytest.Pytester) -> None:
    (pytester.path / "policies").mkdir()
    (pytester.path / "policies" / "team.policy").write_text(dedent(POLICY), encoding="utf-8")
    pytester.makeini("[pytest]\npolicyctl_policies = policies/team.policy\n")
    pytester.makepyfile(test_ini="def test_policy(policy_test):\n    policy_test.check()\n")
    pytester.runpytest_subprocess().assert_outcomes(passed=1, failed=1)


def test_several_policies_and_builtin_names(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_builtin=dedent("""
        import pytest

        @pytest.mark.policyctl("builtin:default", "builtin:deerflow")
        def test_policy(policy_test):
            policy_test.check()
        """))
    result = pytester.runpytest_subprocess("-v", "-k", "chunks or fiftieth")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*test_policy?default: a Python file written in chunks is allowed? PASSED*",
        "*test_policy?deerflow: the thirtieth call of one tool warns, the fiftieth stops? PASSED*",
    ])


def test_a_policy_with_errors_is_a_collection_error_with_its_diagnostics(project: pytest.Pytester) -> None:
    (project.path / "policies" / "team.policy").write_text("loop repeat { wran 3 }\n", encoding="utf-8")
    result = project.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*PolicyLoadError: policy */policies/team.policy has errors:*",
        "*team.policy:1:15: error[[]E102[]]: unknown setting `wran`*",
    ])


def test_policy_test_without_policies_explains_how_to_name_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_none="def test_policy(policy_test):\n    policy_test.check()\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*policy_test needs policies: mark the test with @pytest.mark.policyctl*"])


def test_the_example_team_repository_passes() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"], cwd=TEAM_REPO,
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "6 passed" in run.stdout
    assert "3 snapshots passed" in run.stdout
