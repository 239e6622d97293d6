"""Stable call keys: what counts as "the same call"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall
from policy.model.fingerprint import fingerprint
from policy.runtime.loops.keys import MAX_KEY_LENGTH, CallKeys, KeyRecipe, batch_key

POLICY = """
policy "keys" { ignore description }
tool read_file { reads path=path start=start_line end=end_line; ignore reason }
tool Read { reads path=file_path start=offset limit=limit }
tool fetch { key url }
tool bash { runs command=command }
"""


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> CompiledPolicy:
    path = tmp_path_factory.mktemp("keys") / "keys.policy"
    path.write_text(POLICY, encoding="utf-8")
    return load_policy(path)


def key(policy: CompiledPolicy, tool: str, args: object) -> str:
    call = ToolCall(id="c", name=tool, args=args)  # type: ignore[arg-type]
    return CallKeys(policy).call_key(call)


def test_argument_order_and_json_strings_do_not_matter(policy: CompiledPolicy) -> None:
    as_dict = key(policy, "bash", {"command": "ls", "cwd": "/w"})
    assert key(policy, "bash", {"cwd": "/w", "command": "ls"}) == as_dict
    assert key(policy, "bash", '{"cwd": "/w", "command": "ls"}') == as_dict
    assert as_dict == 'bash {"command":"ls","cwd":"/w"}'


def test_nested_values_are_sorted_too(policy: CompiledPolicy) -> None:
    assert key(policy, "bash", {"env": {"B": 1, "A": 2}}) == key(policy, "bash", {"env": {"A": 2, "B": 1}})


def test_different_values_or_tools_give_different_keys(policy: CompiledPolicy) -> None:
    assert key(policy, "bash", {"command": "ls"}) != key(policy, "bash", {"command": "ls -l"})
    assert key(policy, "bash", {"command": "ls"}) != key(policy, "sh", {"command": "ls"})


def test_ignored_arguments_leave_the_key(policy: CompiledPolicy) -> None:
    plain = key(policy, "bash", {"command": "ls"})
    assert key(policy, "bash", {"command": "ls", "description": "list files"}) == plain
    assert key(policy, "undeclared", {"q": 1, "description": "x"}) == key(policy, "undeclared", {"q": 1})
    # A tool's own ignore list replaces the policy's.
    plain_read = key(policy, "read_file", {"path": "a"})
    assert key(policy, "read_file", {"path": "a", "reason": "x"}) == plain_read
    assert key(policy, "read_file", {"path": "a", "description": "x"}) != plain_read


def test_key_arguments_keep_only_those(policy: CompiledPolicy) -> None:
    assert key(policy, "fetch", {"url": "u", "timeout": 5}) == key(policy, "fetch", {"url": "u", "retry": 1})
    assert key(policy, "fetch", {"url": "u"}) != key(policy, "fetch", {"url": "v"})


def test_read_ranges_share_a_key_within_a_200_line_bucket(policy: CompiledPolicy) -> None:
    def read(start: object, end: object) -> str:
        return key(policy, "read_file", {"path": "big.py", "start_line": start, "end_line": end})

    assert read(1, 50) == read(120, 200) == read("3", "199")
    assert read(1, 50) != read(201, 250)
    assert read(150, 450) == read(450, 150)  # order-normalised
    assert read(150, 450) != read(150, 250)
    assert read(1, None) == read(None, 1) == read(1, 1)
    assert read("top", 10) != read(1, 10)  # not a number: kept as written


def test_read_without_a_range_reads_from_line_one(policy: CompiledPolicy) -> None:
    """DeerFlow's rule: a read that names no line is the read of the file's first bucket."""
    whole = key(policy, "read_file", {"path": "a.py"})
    assert whole == 'read_file {"end_line":0,"path":"a.py","start_line":0}'
    assert whole == key(policy, "read_file", {"path": "a.py", "start_line": 1, "end_line": 50})
    assert whole != key(policy, "read_file", {"path": "a.py", "start_line": 201})


def test_a_read_with_a_line_count_is_bucketed_by_its_last_line(policy: CompiledPolicy) -> None:
    def read(offset: int, limit: int) -> str:
        return key(policy, "Read", {"file_path": "big.py", "offset": offset, "limit": limit})

    assert read(1, 100) == read(10, 150)
    assert read(1, 100) != read(1, 300)


def test_long_keys_are_hashed_but_stay_distinct(policy: CompiledPolicy) -> None:
    long_a = key(policy, "bash", {"command": "x" * 1000})
    long_b = key(policy, "bash", {"command": "x" * 999 + "y"})
    assert long_a.startswith("bash #") and len(long_a) < MAX_KEY_LENGTH
    assert long_a != long_b
    assert long_a == key(policy, "bash", {"command": "x" * 1000})


def test_values_json_cannot_encode_still_key_deterministically(policy: CompiledPolicy) -> None:
    mixed_key_types = {1: "a", "b": 2}  # json cannot sort these keys
    assert key(policy, "bash", mixed_key_types) == key(policy, "bash", {"b": 2, 1: "a"})
    cyclic: dict[str, object] = {"a": 1}
    cyclic["self"] = cyclic
    assert key(policy, "bash", cyclic)


def test_batch_key_is_the_sorted_multiset_of_call_keys(policy: CompiledPolicy) -> None:
    ls = ToolCall(id="1", name="bash", args={"command": "ls"})
    pwd = ToolCall(id="2", name="bash", args={"command": "pwd"})

    def batch(*calls: ToolCall) -> str:
        return batch_key([CallKeys(policy).call_key(call) for call in calls])

    assert batch(ls, pwd) == batch(pwd, ls)
    assert batch(ls, ls, pwd) != batch(ls, pwd)
    assert batch(ls) == CallKeys(policy).call_key(ls)


def test_the_detectors_precomputed_keys_agree_with_each_tools_recipe(policy: CompiledPolicy) -> None:
    keys = CallKeys(policy)
    calls = [
        ToolCall(id="1", name="read_file", args={"path": "a", "start_line": 300, "end_line": 20}),
        ToolCall(id="2", name="fetch", args={"url": "u", "x": 1}),
        ToolCall(id="3", name="mystery", args={"description": "d", "z": [1, 2]}),
    ]
    for call in calls:
        assert keys.call_key(call) == KeyRecipe.for_tool(policy.tool(call.name)).key(call)


def test_fingerprints_are_the_same_in_another_process() -> None:
    """State moves between workers (Redis): fingerprints must not depend on PYTHONHASHSEED."""
    code = (
        "from policy.model.fingerprint import fingerprint; "
        "print(fingerprint('bash {\"command\":\"ls\"}').hex())"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == fingerprint('bash {"command":"ls"}').hex()
    assert len(fingerprint("")) == 8 and fingerprint("") != bytes(8)


def test_the_policy_key_applies_to_undeclared_tools_and_falls_back_to_all_arguments(tmp_path: Path) -> None:
    path = tmp_path / "salient.policy"
    path.write_text(
        'policy "salient" { key path command; ignore description }\n'
        "tool read_file { reads path=path start=start_line end=end_line }\n",
        encoding="utf-8",
    )
    salient = load_policy(path)
    assert key(salient, "web", {"path": "a", "verbose": True}) == key(salient, "web", {"path": "a"})
    assert key(salient, "search", {"q": "x"}) != key(salient, "search", {"q": "y"})  # no key argument present
    # A read's range stays part of its key even when the policy's `key` leaves it out.
    def read(start: int, end: int) -> str:
        return key(salient, "read_file", {"path": "a", "start_line": start, "end_line": end})

    assert read(1, 100) == read(50, 150) != read(300, 350)


def test_deerflow_keys_writes_by_every_argument_and_commands_by_their_salient_fields() -> None:
    deerflow = load_policy("builtin:deerflow")
    write = {"path": "a", "content": "x"}
    assert key(deerflow, "write_file", {**write, "description": "1"}) != key(deerflow, "write_file", write)
    assert key(deerflow, "bash", {"command": "ls", "timeout": 5}) == key(deerflow, "bash", {"command": "ls"})
