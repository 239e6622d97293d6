"""Malformed calls and outputs never fault the guard: random events through every built-in policy.

A fault would not crash the agent (the guard allows and logs it), but it
would skip the checks of that event: none may happen.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard

EVENTS = 1500
PIECES = [
    "a", "\n", "\r\n", "\r", "é", "✓", "\ud800", "\udcff", "\x00", "\t", " ", "\\", "'", '"', "{", "[1,",
    "0x1f", "12ms", "/tmp/x.y", "2024-01-01 10:00:00", "Error: ", "No module named 'x'", "def f(:", '"""',
    "Traceback (most recent call last):\n",
]
TOOLS = ["bash", "Bash", "write_file", "Write", "Edit", "MultiEdit", "str_replace", "read_file", "Read",
         "other"]


def random_args(rnd: random.Random, text: str) -> Any:
    return rnd.choice([
        {"command": text[:80]},
        {"path": "a.py", "content": text[:200], "append": rnd.choice([True, "yes", 3, None])},
        {"file_path": "a.json", "content": text[:200]},
        {"file_path": "a.py", "old_string": rnd.choice(["", "x", text[:5]]), "new_string": text[:30]},
        {"path": "a.py", "old_str": rnd.choice(["", "x"]), "new_str": text[:30],
         "replace_all": rnd.choice([1, 3])},
        {"file_path": "b.py", "edits": rnd.choice([[{"old_string": "", "new_string": text[:20]}], "[]",
                                                  [{"old_string": "x"}], None, "{"])},
        {"path": "f.py", "start_line": rnd.choice([1, "x", None, -5]), "end_line": 1e9},
        {"path": 1}, "not json", None, [1, 2],
    ])


@pytest.mark.parametrize("policy_name", ["builtin:default", "builtin:deerflow", "builtin:claude-code"])
def test_random_malformed_events_never_fault_the_guard(policy_name: str) -> None:
    rnd = random.Random(policy_name)
    files: list[Any] = [None, "", "x = 1\n", b"\xff\xfe", "a\r\nb\r\n", "\ud800"]  # bytes: a sloppy harness
    guard = Guard(load_policy(policy_name), read_file=lambda path: rnd.choice(files))
    faults = []
    for n in range(EVENTS):
        scope = Scope("t", f"r{n % 7}")
        text = "".join(rnd.choice(PIECES) for _ in range(rnd.randrange(300))) * rnd.choice([1, 3, 40])
        call_id = rnd.choice([f"c{n}", "same", ""])
        call = ToolCall(id=call_id, name=rnd.choice(TOOLS), args=random_args(rnd, text))
        content = rnd.choice([text, text.encode("utf-8", "surrogatepass"), None, [{"text": text}], 42])
        status = rnd.choice(["error", "success", "failed"])
        decisions = [
            guard.on_turn([call] * rnd.choice([1, 1, 2]), scope),
            guard.on_call(call, scope),
            guard.on_result(call, ToolResult(content=content, status=status), scope),  # type: ignore[arg-type]
        ]
        faults += [(call, d.metadata["internal_error"]) for d in decisions if "internal_error" in d.metadata]
    assert faults == []
