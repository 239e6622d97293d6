"""The built-in policies against 33 real agent sessions (../shared/traces).

A good policy stops no session that was making progress, and warns on the
real loops the traces' README names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.replay.replayer import ReplayResult, replay_file
from policy.resources import builtin_policy_names

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
SESSIONS = sorted(TRACES.rglob("*.jsonl"))

pytestmark = pytest.mark.skipif(not SESSIONS, reason=f"no traces at {TRACES}")

NAMED_LOOPS = {
    "swe-agent/ctf__crypto__eps.jsonl": "the same submit answered 'Wrong flag!' four times",
    "openhands/resolver-mock__Add_a_toggle_for_dark_mode.jsonl":
        "eight edits rejected with the same syntax error",
    "openhands/multi_swe_bench__ponylang__ponyc-4593.jsonl":
        "the same malformed str_replace error four times",
    "swe-agent/testdata__pydicom__pydicom-1458.jsonl":
        "an edit rejected for a syntax error, re-sent identically",
}


@pytest.fixture(scope="module")
def default_reports() -> dict[str, ReplayResult]:
    policy = load_policy("builtin:default")
    return {str(path.relative_to(TRACES)): replay_file(policy, path) for path in SESSIONS}


def test_every_session_replays_cleanly(default_reports: dict[str, ReplayResult]) -> None:
    assert len(default_reports) == 33
    for name, report in default_reports.items():
        assert report.errors == [], name
        assert report.events > 0, name


def test_default_stops_no_real_session(default_reports: dict[str, ReplayResult]) -> None:
    stopped = [name for name, report in default_reports.items() if report.stopped]
    assert stopped == []


@pytest.mark.parametrize("name", sorted(NAMED_LOOPS))
def test_default_warns_on_each_named_loop(default_reports: dict[str, ReplayResult], name: str) -> None:
    report = default_reports[name]
    warnings = [r for r in report.records if r.decision.action == "warn"]
    assert warnings, f"{name}: no warning for {NAMED_LOOPS[name]}"


@pytest.mark.parametrize("policy_name", builtin_policy_names())
def test_every_builtin_policy_replays_every_session(policy_name: str) -> None:
    policy = load_policy(f"builtin:{policy_name}")
    for path in SESSIONS:
        report = replay_file(policy, path)
        assert report.errors == [], path.name
