"""``policyctl replay`` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cli.replay import replay

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(replay, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_json_output_is_one_object_per_decision_then_a_summary() -> None:
    code, out, _ = invoke("--format", "json", str(EXAMPLES / "repeat_loop.jsonl"))
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["id"], r["action"], r["rule"]) for r in lines[:-1]] == [
        ("c3", "warn", "loop repeat"), ("c5", "stop", "loop repeat")]
    assert set(lines[0]) == {"event", "id", "action", "rule", "signature", "hint"}
    assert lines[-1] == {"summary": {"events": 12, "allow": 9, "hint": 0, "warn": 1, "block": 0,
                                     "stop": 1}}


def test_text_output_shows_each_decision_and_a_summary() -> None:
    code, out, _ = invoke(str(EXAMPLES / "broken_write.jsonl"))
    assert code == 0
    assert "BLOCK gate python" in " ".join(out.split())
    assert out.splitlines()[-1].startswith("9 events · allow 6 · hint 0 · warn 0 · block 1 · stop 0")


def test_a_folder_gives_one_row_per_session() -> None:
    code, out, _ = invoke(str(EXAMPLES))
    assert code == 0
    rows = out.splitlines()
    assert rows[0].split() == ["session", "events", "hint", "warn", "block", "stop"]
    assert len(rows) == 1 + 4 + 1
    assert rows[-1] == "4 sessions · warned 2 · blocked 1 · stopped 1"


def test_a_bad_trace_line_is_named_and_replay_goes_on(tmp_path: Path) -> None:
    trace = tmp_path / "bad.jsonl"
    good = (EXAMPLES / "missing_module.jsonl").read_text(encoding="utf-8").splitlines()
    trace.write_text("\n".join([good[0], "{not json", '{"type": "turn"}', *good[1:]]) + "\n",
                     encoding="utf-8")
    code, out, err = invoke("--format", "json", str(trace))
    assert code == 0
    assert f"{trace}:2: trace error: not JSON" in err
    assert f"{trace}:3: trace error: invalid event: turn.calls" in err
    assert json.loads(out.splitlines()[0])["rule"] == "signature MODULE_NOT_FOUND"


def test_a_broken_policy_prints_its_diagnostics_and_exits_2(tmp_path: Path) -> None:
    policy = tmp_path / "team.policy"
    policy.write_text("loop repeat { wran 3 }\n", encoding="utf-8")
    code, out, err = invoke("--policy", str(policy), str(EXAMPLES / "repeat_loop.jsonl"))
    assert code == 2
    assert out == ""
    assert "error[E102]" in err and "did you mean `warn`?" in err
    assert err.rstrip().endswith("no trace was replayed")


def test_policy_names_exactly_one_policy(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.policy").write_text('extends "builtin:default"\n', encoding="utf-8")
    code, _, err = invoke("--policy", str(tmp_path), str(EXAMPLES / "repeat_loop.jsonl"))
    assert code == 2
    assert "--policy names one policy" in err


def test_a_write_past_the_gates_bound_is_replayed_unchecked_then_edited(tmp_path: Path) -> None:
    trace = tmp_path / "big.jsonl"
    big = "x = 1\n" * 500_000  # 3 MB: over max_check_bytes
    events = [
        {"type": "turn", "thread": "t", "run": "r",
         "calls": [{"id": "c1", "tool": "write_file", "args": {"path": "a.py", "content": big}}]},
        {"type": "result", "id": "c1", "content": "ok"},
        {"type": "turn", "thread": "t", "run": "r", "calls": [{"id": "c2", "tool": "str_replace", "args": {
            "path": "a.py", "old_str": "x = 1", "new_str": "x = (", "replace_all": True}}]},
        {"type": "result", "id": "c2", "content": "ok"},
    ]
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")

    code, out, err = invoke("--format", "json", str(trace))

    assert code == 0 and "Traceback" not in err, err
    assert json.loads(out.splitlines()[-1])["summary"]["events"] == 4
