"""pytest plugin: a team's policy tests as pytest items, and their hints as snapshots.

Installed with policyctl (entry point ``pytest11: policyctl``); nothing
happens until a test asks for one of its fixtures.  Name the policies with a
marker (paths relative to the test file; ``builtin:NAME`` works too) or, for
every test, with the ini option ``policyctl_policies`` (paths relative to the
ini file)::

    # tests/test_policy.py
    import pytest

    pytestmark = pytest.mark.policyctl("../team.policy")

    def test_policy(policy_test):                     # one item per `test` block
        policy_test.check()

    def test_hints(policy_hints, policy_snapshot):    # one .md snapshot per `test` block
        assert policy_hints == policy_snapshot

``policy_test`` is parametrized over every ``test`` block of those policies;
``check()`` fails with the step, expected versus actual, and the rendered
hint.  ``policy_hints`` is the Markdown transcript of the hints that test
drew; ``policy_snapshot`` is syrupy's ``snapshot`` writing one ``.md`` file
per test.  A policy with errors is a collection error showing its diagnostics.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from policy.model.compiled import CompiledPolicy, PolicyTest
    from policy.testing.runner import PolicyTestResult

MARKER = "policyctl"
INI_OPTION = "policyctl_policies"
_POLICIES = pytest.StashKey[dict[str, "CompiledPolicy"]]()


class PolicyTestFailed(AssertionError):
    """A policy ``test`` block did not pass."""


class PolicyLoadError(Exception):
    """A policy named for ``policy_test`` could not be loaded (its diagnostics are the message)."""


class PolicyCase:
    """One ``test`` block of one policy, run at most once per pytest session."""

    __test__ = False

    def __init__(self, policy: CompiledPolicy, test: PolicyTest) -> None:
        self.policy = policy
        self.test = test
        self._result: PolicyTestResult | None = None

    @property
    def name(self) -> str:
        return self.test.name

    @property
    def result(self) -> PolicyTestResult:
        if self._result is None:
            from policy.testing.runner import run_test

            self._result = run_test(self.policy, self.test)
        return self._result

    def check(self) -> None:
        """Fail with every failed step (expected versus actual, and the hint) unless the test passed."""
        __tracebackhide__ = True
        result = self.result
        if result.passed:
            return
        from policy.reporters.text import format_failure, location

        details = "\n".join(format_failure(f, result.file) for f in result.failures)
        raise PolicyTestFailed(
            f"policy test {self.test.name!r} failed ({location(result.file, result.line)})\n{details}"
        )

    def hints(self) -> str:
        """The calls of this test and the hints they drew, as Markdown."""
        from policy.testing.transcript import hint_transcript

        return hint_transcript(self.result)

    def __repr__(self) -> str:
        return f"<PolicyCase {self.policy.name}: {self.test.name}>"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(INI_OPTION, type="paths", default=[],
                  help="policy files whose test blocks policy_test runs (relative to the ini file)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(*sources): policy files (relative to the test file) or builtin:NAME "
                   "whose test blocks the policy_test fixture runs")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "policy_test" not in metafunc.fixturenames:
        return
    sources = _sources(metafunc)
    if not sources:
        raise PolicyLoadError(
            f"policy_test needs policies: mark the test with @pytest.mark.{MARKER}(\"team.policy\") "
            f"or set `{INI_OPTION}` in the pytest configuration")
    policies = [_load(metafunc.config, source) for source in sources]
    cases = [PolicyCase(policy, test) for policy in policies for test in policy.tests]
    several = len(policies) > 1
    metafunc.parametrize(
        "policy_test", cases, indirect=True,
        ids=[f"{case.policy.name}: {case.name}" if several else case.name for case in cases],
    )


def _sources(metafunc: pytest.Metafunc) -> list[str]:
    """The marker's sources (nearest marker first), else the ini option's."""
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is not None:
        folder = metafunc.definition.path.parent
        return [arg if str(arg).startswith("builtin:") else str(folder / arg) for arg in marker.args]
    return [str(path) for path in metafunc.config.getini(INI_OPTION)]


def _load(config: pytest.Config, source: str) -> CompiledPolicy:
    """Load once per session; errors become a collection error with the diagnostics."""
    from policy.language.loader import check_policy
    from policy.reporters.text import render_diagnostics

    cache = config.stash.setdefault(_POLICIES, {})
    key = source if source.startswith("builtin:") else str(Path(source).resolve())
    if key not in cache:
        result = check_policy(source)
        if result.policy is None:
            shown = "\n\n".join(render_diagnostics(result.diagnostics, result.texts.get))
            raise PolicyLoadError(f"policy {source} has errors:\n\n{shown}")
        cache[key] = result.policy
    return cache[key]


@pytest.fixture
def policy_test(request: pytest.FixtureRequest) -> PolicyCase:
    """One ``test`` block of the policies named by ``@pytest.mark.policyctl(…)`` or ``policyctl_policies``."""
    case: PolicyCase = request.param
    return case


@pytest.fixture
def policy_hints(policy_test: PolicyCase) -> str:
    """The Markdown transcript of the hints ``policy_test`` drew (calls, results, decisions, hints)."""
    return policy_test.hints()


@pytest.fixture
def policy_snapshot(snapshot: Any) -> Any:
    """syrupy's ``snapshot`` storing one readable ``.md`` file per test."""
    from policy.testing.snapshot import MarkdownSnapshotExtension

    return snapshot.use_extension(MarkdownSnapshotExtension)
