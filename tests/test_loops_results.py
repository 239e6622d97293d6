"""Result-level loop logic: progress for ``repeat … until_progress``, ``error_streak``, ``oscillation``."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import ToolCall, ToolResult
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.layer import ErrorKey
from policy.runtime.loops.state import ScopeState

_ids = itertools.count(1)


def load(tmp_path: Path, text: str) -> CompiledPolicy:
    path = tmp_path / "loops.policy"
    path.write_text(text, encoding="utf-8")
    return load_policy(path)


class Session:
    """Drives a detector the way the guard does: a turn, then each call's result."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.detector = LoopDetector(policy)
        self.state = ScopeState()

    def turn(self, *commands: str) -> tuple[Decision, list[ToolCall]]:
        calls = [ToolCall(id=f"c{next(_ids)}", name="bash", args={"command": c}) for c in commands]
        return self.detector.on_turn(self.state, calls), calls

    def result(
        self,
        call: ToolCall,
        text: str,
        *,
        failed: bool = False,
        error_key: ErrorKey | None = None,
        state_changed: bool = False,
    ) -> Decision:
        return self.detector.on_result(
            self.state,
            call,
            ToolResult(text, "error" if failed else "success"),
            failed=failed,
            error_key=error_key,
            state_changed=state_changed,
        )

    def step(self, command: str, output: str, **result: Any) -> tuple[str, str]:
        """One call and its result: the turn's action and the result's action."""
        decision, (call,) = self.turn(command)
        return decision.action, self.result(call, output, **result).action


# --- repeat ... until_progress -----------------------------------------------------------

PROGRESS = """
normalize /\\b\\d+(\\.\\d+)?s\\b/ "<dur>"
loop repeat { window 20; warn 3; stop 5; until_progress }
"""


@pytest.fixture
def progress(tmp_path: Path) -> Session:
    return Session(load(tmp_path, PROGRESS))


def test_the_same_call_with_the_same_result_counts(progress: Session) -> None:
    actions = [progress.step("submit flag{x}", "Wrong flag!")[0] for _ in range(5)]
    assert actions == ["allow", "allow", "warn", "allow", "stop"]


def test_a_different_result_restarts_the_count(progress: Session) -> None:
    outputs = ["3 failed", "2 failed", "1 failed", "2 failed", "3 failed", "1 failed"]
    assert [progress.step("pytest", output)[0] for output in outputs] == ["allow"] * 6
    # Two equal results in a row, and the next identical call is the third that counts.
    assert progress.step("pytest", "1 failed")[0] == "allow"
    assert progress.step("pytest", "1 failed")[0] == "warn"


def test_volatile_text_is_normalised_before_results_are_compared(progress: Session) -> None:
    actions = [progress.step("pytest", f"1 failed in {t}s")[0] for t in ("0.51", "0.48", "0.50")]
    assert actions == ["allow", "allow", "warn"]


def test_a_state_change_restarts_every_count(progress: Session) -> None:
    progress.step("pytest", "1 failed")
    progress.step("pytest", "1 failed")
    progress.step("pip install foo", "Successfully installed foo", state_changed=True)
    assert [progress.step("pytest", "1 failed")[0] for _ in range(3)] == ["allow", "allow", "warn"]


def test_a_failed_state_changing_call_changes_nothing(progress: Session) -> None:
    progress.step("pytest", "1 failed")
    progress.step("pytest", "1 failed")
    progress.step("pip install nosuch", "ERROR: No matching distribution", failed=True)
    assert progress.step("pytest", "1 failed")[0] == "warn"


def test_a_restart_lifts_the_warning_so_a_new_loop_warns_again(progress: Session) -> None:
    assert [progress.step("pytest", "A")[0] for _ in range(3)] == ["allow", "allow", "warn"]
    progress.step("pytest", "B")
    assert progress.state.repeat.warned == []
    assert [progress.step("pytest", "B")[0] for _ in range(2)] == ["allow", "warn"]


def test_a_batch_counts_while_all_its_results_stay_the_same(progress: Session) -> None:
    for _ in range(3):
        decision, (build, check) = progress.turn("make", "make check")
        progress.result(check, "1 error")
        progress.result(build, "ok")
    assert decision.action == "warn"
    decision, (build, check) = progress.turn("make", "make check")
    progress.result(build, "ok")
    progress.result(check, "0 errors")  # one of the batch's results changed
    assert progress.turn("make", "make check")[0].action == "allow"


def test_repeat_metadata_says_whether_the_result_was_the_same(progress: Session) -> None:
    progress.step("submit flag{x}", "Wrong flag!")
    progress.step("submit flag{x}", "Wrong flag!")
    decision, _ = progress.turn("submit flag{x}")
    assert decision.metadata["same_result"] is True
    assert decision.metadata["result_excerpt"] == "Wrong flag!"
    assert "with the same result each time" in (decision.hint or "")


def test_plain_repeat_counts_whatever_the_results(tmp_path: Path) -> None:
    plain = Session(load(tmp_path, "loop repeat { window 20; warn 3; stop 5 }"))
    actions = [plain.step("pytest", f"{n} failed", state_changed=True)[0] for n in range(5)]
    assert actions == ["allow", "allow", "warn", "allow", "stop"]


def test_results_of_unknown_or_forgotten_calls_are_harmless(progress: Session) -> None:
    stray = ToolCall(id="never-announced", name="bash", args={"command": "ls"})
    assert progress.result(stray, "x", state_changed=True).action == "allow"
    _, (old,) = progress.turn("ls")
    for _ in range(25):  # its turn leaves the window
        progress.turn("pwd")
    assert progress.result(old, "late").action == "allow"
    assert "never-announced" not in progress.state.repeat.inflight
    assert old.id not in progress.state.repeat.inflight


# --- error_streak ------------------------------------------------------------------------

STREAK = """
signature MODULE_NOT_FOUND { match /No module named '(?P<module>[\\w.]+)'/ }
loop error_streak { same captures; warn 3; stop 6 }
"""


@pytest.fixture
def streak(tmp_path: Path) -> Session:
    return Session(load(tmp_path, STREAK))


def module(name: str) -> ErrorKey:
    return ErrorKey("MODULE_NOT_FOUND", (("module", name),))


def fail(session: Session, command: str, key: ErrorKey | None, text: str = "error") -> Decision:
    _, (call,) = session.turn(command)
    return session.result(call, text, failed=True, error_key=key)


def test_the_same_error_warns_once_at_warn_and_stops_at_stop(streak: Session) -> None:
    key = module("yaml")
    actions = [fail(streak, f"python run{n}.py", key).action for n in range(7)]
    assert actions == ["allow", "allow", "warn", "allow", "allow", "stop", "stop"]


def test_a_success_or_a_different_error_ends_the_streak(streak: Session) -> None:
    yaml, numpy = module("yaml"), module("numpy")
    fail(streak, "a", yaml)
    fail(streak, "b", yaml)
    streak.step("pip install pyyaml", "ok")
    assert [fail(streak, "c", yaml).action for _ in range(2)] == ["allow", "allow"]
    assert fail(streak, "d", numpy).action == "allow"
    assert [fail(streak, "e", yaml).action for _ in range(3)] == ["allow", "allow", "warn"]


def test_same_signature_compares_only_the_signature(tmp_path: Path) -> None:
    session = Session(load(tmp_path, STREAK.replace("same captures", "same signature")))
    modules = ("yaml", "numpy", "requests")
    actions = [fail(session, "python x.py", module(m)).action for m in modules]
    assert actions == ["allow", "allow", "warn"]


def test_a_streak_names_the_error_and_its_captures(streak: Session) -> None:
    for _ in range(3):
        decision = fail(streak, "python app.py", module("yaml"),
                        "Traceback …\nModuleNotFoundError: No module named 'yaml'\n")
    assert decision.metadata["layer"] == "error_streak"
    assert decision.metadata["signature"] == "MODULE_NOT_FOUND"
    assert decision.metadata["captures"] == {"module": "yaml"}
    assert decision.metadata["excerpt"].endswith("No module named 'yaml'")
    assert decision.hint == (
        "[policy] loop error_streak warn: the same error (MODULE_NOT_FOUND module=yaml) came back 3 times "
        "in a row (warn at 3, stop at 6): Traceback … ModuleNotFoundError: No module named 'yaml'."
    )


def test_without_an_error_key_the_normalised_error_text_decides(streak: Session) -> None:
    assert [fail(streak, "x", None, "boom").action for _ in range(3)] == ["allow", "allow", "warn"]
    assert fail(streak, "x", None, "another boom").action == "allow"
    assert streak.state.streak.count == 1


# --- oscillation ---------------------------------------------------------------------------

OSCILLATION = "loop oscillation { period 2..3; repeats 2; no_progress }"


@pytest.fixture
def oscillation(tmp_path: Path) -> Session:
    return Session(load(tmp_path, OSCILLATION))


def results(session: Session, steps: Sequence[tuple[str, str]], **result: Any) -> list[str]:
    return [session.step(command, output, **result)[1] for command, output in steps]


def test_a_to_b_to_a_to_b_with_the_same_results_warns_once(oscillation: Session) -> None:
    ab = [("git checkout a", "on a"), ("git checkout b", "on b")]
    assert results(oscillation, ab * 3) == ["allow", "allow", "allow", "warn", "allow", "allow"]


def test_the_warning_names_the_cycle(oscillation: Session) -> None:
    decisions = []
    for command, output in [("cat a", "A"), ("cat b", "B")] * 2:
        _, (call,) = oscillation.turn(command)
        decisions.append(oscillation.result(call, output))
    warning = decisions[-1]
    assert warning.metadata["layer"] == "oscillation"
    assert warning.metadata["cycle"] == ['bash {"command":"cat a"}', 'bash {"command":"cat b"}']
    assert (warning.metadata["period"], warning.metadata["repeats"], warning.metadata["count"]) == (2, 2, 2)


def test_a_cycle_of_three_is_found(oscillation: Session) -> None:
    abc = [("a", "1"), ("b", "2"), ("c", "3")]
    assert results(oscillation, abc * 2)[-1] == "warn"


def test_one_call_repeated_is_not_an_oscillation(oscillation: Session) -> None:
    assert set(results(oscillation, [("ls", "x")] * 8)) == {"allow"}


def test_a_changed_result_breaks_the_cycle(oscillation: Session) -> None:
    steps = [("edit", "ok"), ("pytest", "3 failed"), ("edit", "ok"), ("pytest", "2 failed")]
    assert set(results(oscillation, steps)) == {"allow"}


def test_a_state_change_breaks_the_cycle(oscillation: Session) -> None:
    for command, output in [("a", "1"), ("b", "2"), ("a", "1")]:
        oscillation.step(command, output)
    assert oscillation.step("b", "2", state_changed=True)[1] == "allow"


def test_a_new_cycle_after_a_break_warns_again(oscillation: Session) -> None:
    ab = [("a", "1"), ("b", "2")]
    assert results(oscillation, ab * 2)[-1] == "warn"
    oscillation.step("c", "3")
    assert results(oscillation, ab * 2)[-1] == "warn"


def test_without_no_progress_only_the_calls_count(tmp_path: Path) -> None:
    session = Session(load(tmp_path, "loop oscillation { period 2..2; repeats 2 }"))
    steps = [("edit", "ok"), ("pytest", "3 failed"), ("edit", "ok"), ("pytest", "2 failed")]
    assert results(session, steps, state_changed=True)[-1] == "warn"


def test_an_oscillation_rule_can_stop(tmp_path: Path) -> None:
    session = Session(load(tmp_path, "loop oscillation { period 2..2; repeats 3; stop }"))
    assert results(session, [("a", "1"), ("b", "2")] * 3)[-1] == "stop"


def test_an_error_streak_outranks_an_oscillation_of_equal_severity(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = Session(load(tmp_path, OSCILLATION + "\nloop error_streak { same signature; warn 4; stop 9 }"))
    key = ErrorKey("ERR")
    for command in ("a", "b", "a"):
        session.step(command, "boom", failed=True, error_key=key)
    with caplog.at_level(logging.INFO, logger="policy.loops"):
        decision = session.step("b", "boom", failed=True, error_key=key)[1]  # streak 4 and cycle a-b
    assert decision == "warn"
    assert [r.getMessage().split(" on ")[0] for r in caplog.records] == ["loop error_streak warn"]
    assert session.state.oscillation.warned == b""  # not selected, not marked: it warns next time
    assert session.step("a", "boom", failed=True, error_key=key)[1] == "warn"
    assert session.state.oscillation.warned != b""
