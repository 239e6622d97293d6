"""Error signatures: matching semantics, tail scanning, captures, keys and hint rendering.

Each test loads a small real policy file (through the real loader), so the
patterns, hints and settings under test are compiled exactly as in production.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from textwrap import dedent

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import policy.runtime.output as output
import policy.runtime.signatures as signatures
from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall, ToolResult
from policy.runtime.loops.layer import ErrorKey
from policy.runtime.output import scanned_tail as tail_and_truncated
from policy.runtime.signatures import Diagnosis, diagnose, excerpt, hint_decision

MB = 1024 * 1024
MODULE_POLICY = """
signature A { match /No module named '(?P<m>\\w+)'/; hint h }
hint h "{{ m }}"
"""
FILLER = "progress line that says nothing at all\n"
TEN_MB_OF_FILLER = FILLER * (10 * MB // len(FILLER) + 1)


def make_policy(tmp_path: Path, text: str) -> CompiledPolicy:
    path = tmp_path / "test.policy"
    path.write_text(dedent(text), encoding="utf-8")
    return load_policy(path)


def scanned_tail(text: str, limit: int) -> bytes:
    """The tail the guard scans with a ``scan_limit`` of ``limit``."""
    return tail_and_truncated(text, limit)[0]


def bash(command: str = "run it") -> ToolCall:
    return ToolCall(id="c1", name="bash", args={"command": command})


def failed(content: str) -> ToolResult:
    return ToolResult(content=content, status="error")


@pytest.fixture
def two_signatures(tmp_path: Path) -> CompiledPolicy:
    return make_policy(
        tmp_path,
        """
        signature SPECIFIC { match /No module named '(?P<module>[\\w.]+)'/; hint specific }
        signature BROAD { match /Error/; hint broad }
        signature OTHER { match /nothing like this/; hint broad }
        hint specific "missing {{ module }}"
        hint broad "something failed"
        """,
    )


# --- which signature wins --------------------------------------------------------


def test_the_first_signature_in_policy_order_wins_and_all_matches_are_listed(
    two_signatures: CompiledPolicy,
) -> None:
    result = failed("ModuleNotFoundError: No module named 'yaml'")
    diagnosis = diagnose(two_signatures, bash(), result)
    assert diagnosis.signature is not None and diagnosis.signature.ref.name == "SPECIFIC"
    assert diagnosis.matches == ("SPECIFIC", "BROAD")
    decision = hint_decision(two_signatures, bash(), result, diagnosis)
    assert decision.action == "hint"
    assert str(decision.rule) == "signature SPECIFIC"
    assert decision.signature == "SPECIFIC"
    assert decision.call_id == "c1"
    assert decision.hint == "missing yaml"
    assert decision.metadata == {"matches": ["SPECIFIC", "BROAD"], "failed": True}


def test_order_is_policy_order_not_position_in_the_output(two_signatures: CompiledPolicy) -> None:
    diagnosis = diagnose(two_signatures, bash(), failed("Error first\nthen: No module named 'x'"))
    assert diagnosis.matches == ("SPECIFIC", "BROAD")


def test_no_match_gives_an_allow_decision_for_the_call(two_signatures: CompiledPolicy) -> None:
    result = failed("all quiet")
    diagnosis = diagnose(two_signatures, bash(), result)
    assert diagnosis.signature is None and diagnosis.matches == () and diagnosis.captures == {}
    decision = hint_decision(two_signatures, bash(), result, diagnosis)
    assert decision.action == "allow" and decision.call_id == "c1" and decision.hint is None


def test_on_error_signatures_ignore_successful_results_and_on_any_ones_do_not(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature ONLY_ERRORS { on error; match /warning: (?P<what>\\w+)/; hint h }
        signature ANY_RESULT { on any; match /warning: (?P<what>\\w+)/; hint h }
        hint h "{{ what }}"
        """,
    )
    ok = diagnose(policy, bash(), ToolResult(content="warning: deprecated", status="success"))
    assert ok.failed is False
    assert ok.matches == ("ANY_RESULT",)
    error = diagnose(policy, bash(), failed("warning: deprecated"))
    assert error.failed is True
    assert error.matches == ("ONLY_ERRORS", "ANY_RESULT")


@pytest.mark.parametrize(
    ("content", "status", "is_failed"),
    [
        ("boom", "error", True),
        ("Error: File not found: /x", "success", True),
        ("\n  Error: leading whitespace is fine", "success", True),
        ("an Error: in the middle is not a failure", "success", False),
        ("everything went fine", "success", False),
    ],
)
def test_a_result_is_failed_by_status_or_an_error_prefix(
    two_signatures: CompiledPolicy, content: str, status: str, is_failed: bool
) -> None:
    result = ToolResult(content=content, status=status)  # type: ignore[arg-type]
    assert diagnose(two_signatures, bash(), result).failed is is_failed


def test_a_tool_fails_when_its_fails_when_pattern_matches(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        tool bash { runs command=command; fails_when /(?m)^status: [1-9]/ }
        tool grep { runs command=command }
        signature EXIT { match /status: (?P<code>\\d+)/; hint h }
        hint h "exit {{ code }}"
        """,
    )
    output = ToolResult(content="some output\nstatus: 2\n", status="success")
    by_bash = diagnose(policy, bash(), output)
    assert by_bash.failed is True
    assert by_bash.captures == {"code": "2"}
    by_grep = diagnose(policy, ToolCall(id="c2", name="grep", args={"command": "x"}), output)
    assert by_grep.failed is False and by_grep.signature is None
    clean = diagnose(policy, bash(), ToolResult(content="status: 0\n", status="success"))
    assert clean.failed is False


def test_tools_restricts_a_signature_to_the_named_tools(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature EDIT_ONLY { tools str_replace write_file; match /not found/; hint h }
        signature ANYWHERE { match /not found/; hint h }
        hint h "fix it"
        """,
    )
    result = failed("String to replace not found in file")
    edit = ToolCall(id="c1", name="str_replace", args={"path": "a.py"})
    assert diagnose(policy, edit, result).matches == ("EDIT_ONLY", "ANYWHERE")
    assert diagnose(policy, bash(), result).matches == ("ANYWHERE",)


# --- the scanned tail ---------------------------------------------------------------


def test_a_match_only_in_the_head_of_a_huge_output_is_not_seen(two_signatures: CompiledPolicy) -> None:
    head = "ModuleNotFoundError: No module named 'yaml'\n"
    content = head + TEN_MB_OF_FILLER
    assert len(content) > 10 * MB
    diagnosis = diagnose(two_signatures, bash(), failed(content))
    assert diagnosis.failed is True
    assert diagnosis.signature is None


def test_a_match_in_the_tail_of_a_huge_output_is_seen(two_signatures: CompiledPolicy) -> None:
    content = TEN_MB_OF_FILLER + "No module named 'yaml'\n"
    diagnosis = diagnose(two_signatures, bash(), failed(content))
    assert diagnosis.signature is not None and diagnosis.signature.ref.name == "SPECIFIC"
    assert diagnosis.captures == {"module": "yaml"}


def test_the_scan_limit_setting_decides_how_much_is_read(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        policy "small" { scan_limit 1KB }
        signature OLD_NEWS { match /early failure/; hint h }
        hint h "seen"
        """,
    )
    near_the_end = "early failure\n" + "x" * 900 + "\n"
    too_far = "early failure\n" + "x" * 1100 + "\n"
    assert diagnose(policy, bash(), failed(near_the_end)).signature is not None
    assert diagnose(policy, bash(), failed(too_far)).signature is None


def test_the_tail_starts_at_a_line_start() -> None:
    text = "first line\n" + "a" * 50 + "\nlast line\n"
    tail = scanned_tail(text, 30)
    assert tail == b"last line\n"
    assert scanned_tail("abc\ndef\n", 4) == b"def\n"  # the cut falls exactly on a line start


def test_the_tail_of_one_huge_line_starts_on_a_whole_character() -> None:
    text = "é" * 1000  # two bytes each
    tail = scanned_tail(text, 101)
    assert len(tail) == 100
    assert tail.decode("utf-8") == "é" * 50


def test_a_short_output_is_read_whole_and_crlf_reads_as_lf() -> None:
    assert scanned_tail("line one\r\nline two\r\n", 64 * 1024) == b"line one\nline two\n"


# --- captures, keys, excerpts -----------------------------------------------------------


def test_unmatched_groups_are_dropped_from_captures_but_defined_for_hints(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature PORT { match /in use(?: on port (?P<port>\\d+))?/; hint h }
        hint h "{% if port %}port {{ port }}{% else %}some port{% endif %} is busy"
        """,
    )
    with_port = failed("address in use on port 8000")
    without = failed("address in use")
    first = diagnose(policy, bash(), with_port)
    second = diagnose(policy, bash(), without)
    assert first.captures == {"port": "8000"}
    assert second.captures == {}
    assert hint_decision(policy, bash(), with_port, first).hint == "port 8000 is busy"
    assert hint_decision(policy, bash(), without, second).hint == "some port is busy"


def test_long_captures_are_trimmed(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature LONG { match /value: (?P<value>\\S+)/; hint h }
        hint h "{{ value }}"
        """,
    )
    diagnosis = diagnose(policy, bash(), failed("value: " + "v" * 10_000))
    assert len(diagnosis.captures["value"]) <= signatures.CAPTURE_LIMIT
    assert diagnosis.captures["value"].startswith("vvv")


def test_the_key_is_the_signature_and_its_key_captures(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature SYNTAX {
          match /File "(?P<file>[^"]+)", line (?P<line>\\d+): (?P<message>.+)/
          key file line
          hint h
        }
        hint h "{{ file }}:{{ line }} {{ message }}"
        """,
    )
    one = diagnose(policy, bash(), failed('File "a.py", line 3: invalid syntax'))
    other_message = diagnose(policy, bash(), failed('File "a.py", line 3: unexpected indent'))
    other_line = diagnose(policy, bash(), failed('File "a.py", line 4: invalid syntax'))
    assert one.key == ErrorKey("SYNTAX", (("file", "a.py"), ("line", "3")))
    assert other_message.key == one.key
    assert other_line.key != one.key


def test_without_a_signature_the_key_is_the_normalised_end_of_the_output(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        normalize /\\d+\\.\\d+s/ "<dur>"
        signature NEVER { match /never printed/; hint h }
        hint h "x"
        """,
    )
    first = diagnose(policy, bash(), failed("lots of output\nfailed after 1.25s"))
    second = diagnose(policy, bash(), failed("lots of output\nfailed after 3.50s"))
    different = diagnose(policy, bash(), failed("lots of output\nfailed differently"))
    assert first.key == ErrorKey.of_text("lots of output\nfailed after <dur>")
    assert second.key == first.key
    assert different.key != first.key
    success = diagnose(policy, bash(), ToolResult(content="lots of output\nall done", status="success"))
    assert success.key is None


def test_the_error_text_key_reads_only_the_end_of_a_long_output(tmp_path: Path) -> None:
    policy = make_policy(tmp_path, 'signature NEVER { match /never printed/; hint h }\nhint h "x"\n')
    content = "".join(f"line {i}\n" for i in range(5000)) + "final error\n"
    key = diagnose(policy, bash(), failed(content)).key
    assert key is not None and key.signature == "text"
    text = dict(key.captures)["text"]
    assert text.endswith("final error")
    assert len(text.encode()) <= signatures.ERROR_TEXT_LIMIT
    assert text.startswith("line ")  # cut at a line start


def test_the_excerpt_is_the_matched_line_with_a_line_of_context() -> None:
    text = b"one\ntwo\nthree MATCH here\nfour\nfive\n"
    start = text.index(b"MATCH")
    assert excerpt(text, start, start + 5) == "two\nthree MATCH here\nfour"
    assert excerpt(text, 0, 3) == "one\ntwo"


def test_the_excerpt_trims_long_lines_and_long_matches() -> None:
    line = b"x" * 10_000 + b" MATCH " + b"y" * 10_000
    start = line.index(b"MATCH")
    trimmed = excerpt(line, start, start + 5)
    assert len(trimmed) <= signatures.EXCERPT_LINE_LIMIT
    many = b"".join(b"line %d\n" % i for i in range(100))
    shown = excerpt(many, 0, len(many))
    assert len(shown.split("\n")) == signatures.EXCERPT_MAX_LINES + 1
    assert "…" in shown


# --- hint rendering ------------------------------------------------------------------------


def test_template_syntax_in_tool_output_is_printed_literally(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature BAD { match /bad value (?P<value>.+)/; hint h }
        hint h \"\"\"
        value={{ value }}
        excerpt={{ excerpt }}
        \"\"\"
        """,
    )
    result = failed("bad value {{ 7*7 }}")
    decision = hint_decision(policy, bash(), result, diagnose(policy, bash(), result))
    assert decision.hint == "value={{ 7*7 }}\nexcerpt=bad value {{ 7*7 }}"
    assert "49" not in (decision.hint or "")


def test_hints_see_the_call_the_rule_and_the_output(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        policy "named" { description "d" }
        signature BOOM { match /boom (?P<what>\\w+)/; hint h }
        hint h \"\"\"
        {{ rule }}|{{ rule_kind }}|{{ rule_name }}|{{ action }}|{{ signature }}|{{ policy }}
        {{ tool }}|{{ call_id }}|{{ args.command }}|{{ call }}|{{ status }}|{{ captures }}
        {{ output }}
        \"\"\"
        """,
    )
    result = failed("boom here")
    call = bash("make all")
    hint = hint_decision(policy, call, result, diagnose(policy, call, result)).hint
    assert hint == (
        "signature BOOM|signature|BOOM|hint|BOOM|named\n"
        'bash|c1|make all|bash {"command": "make all"}|error|{\'what\': \'here\'}\n'
        "boom here"
    )


def test_a_group_named_like_a_built_in_variable_does_not_replace_it(tmp_path: Path) -> None:
    policy = make_policy(
        tmp_path,
        """
        signature SHADOW { match /tool (?P<tool>\\w+) broke/; hint h }
        hint h "{{ tool }} / {{ captures.tool }}"
        """,
    )
    result = failed("tool hammer broke")
    decision = hint_decision(policy, bash(), result, diagnose(policy, bash(), result))
    assert decision.hint == "bash / hammer"


def test_a_signature_without_a_hint_still_decides(tmp_path: Path) -> None:
    policy = make_policy(tmp_path, "signature QUIET { match /quiet (?P<x>\\w+)/ }\n")
    result = failed("quiet please")
    decision = hint_decision(policy, bash(), result, diagnose(policy, bash(), result))
    assert decision.action == "hint" and decision.signature == "QUIET"
    assert decision.captures == {"x": "please"}
    assert decision.hint is None


# --- bad input, the RE2 set, threads ---------------------------------------------------------


@pytest.fixture(scope="module")
def default_policy() -> CompiledPolicy:
    return load_policy("builtin:default")


@pytest.mark.parametrize(
    "content",
    [
        None,
        b"\xff\xfe binary \x00\x01 No module named 'x'",
        bytearray(b"No module named 'bytes_module'"),
        ["list", {"text": "content blocks"}],
        "\ud800 lone surrogate, No module named 'y'",
        "\x00" * 100_000,
        "one huge line without a newline " * 400_000,
        "",
    ],
)
def test_garbage_output_never_raises(default_policy: CompiledPolicy, content: object) -> None:
    result = ToolResult(content=content, status="error")  # type: ignore[arg-type]
    diagnosis = diagnose(default_policy, bash(), result)
    decision = hint_decision(default_policy, bash(), result, diagnosis)
    assert decision.action in ("allow", "hint")


def test_content_that_bypassed_coercion_is_still_read(two_signatures: CompiledPolicy) -> None:
    result = ToolResult(content="placeholder", status="error")
    object.__setattr__(result, "content", b"No module named 'raw'")
    assert diagnose(two_signatures, bash(), result).captures == {"module": "raw"}
    object.__setattr__(result, "content", None)
    assert diagnose(two_signatures, bash(), result).signature is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "No module named 'yaml'\n",
                "bash: line 1: foo: command not found\n",
                "Traceback (most recent call last):\n",
                '  File "a.py", line 3\n',
                "SyntaxError: invalid syntax\n",
                "FAILED tests/t.py::test_a - assert 0\n",
                "== 1 failed, 2 passed in 0.1s ==\n",
                "Permission denied",
                "address already in use :::3000",
                "fatal: not a git repository",
                "\n",
                "é",
                "\x00",
            ]
        )
        | st.text(max_size=40),
        max_size=30,
    )
)
def test_the_set_prefilter_agrees_with_searching_each_pattern(
    default_policy: CompiledPolicy, parts: list[str]
) -> None:
    policy = default_policy
    text = "".join(parts)
    tail = scanned_tail(text, policy.scan_limit)
    expected = tuple(rule.ref.name for rule in policy.signatures if rule.pattern.regex.search(tail))
    assert diagnose(policy, bash(), failed(text)).matches == expected


def test_without_an_re2_set_each_pattern_is_searched(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, two_signatures: CompiledPolicy
) -> None:
    monkeypatch.setattr(output, "SET_MAX_MEMORY", 1)  # too small to build the set
    fresh = make_policy(tmp_path, MODULE_POLICY)
    assert output.output_reader(fresh).pattern_set is None
    assert diagnose(fresh, bash(), failed("No module named 'yaml'")).captures == {"m": "yaml"}


def test_a_freed_policy_leaves_nothing_behind(tmp_path: Path) -> None:
    before = len(output.output_reader)
    for _ in range(20):
        policy = make_policy(tmp_path, 'signature A { match /x/; hint h }\nhint h "x"\n')
        diagnose(policy, bash(), failed("x"))
        del policy
    gc.collect()
    assert len(output.output_reader) == before


def test_concurrent_first_use_gives_the_same_answers(tmp_path: Path) -> None:
    policy = make_policy(tmp_path, MODULE_POLICY)
    results: list[Diagnosis] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        for _ in range(50):
            results.append(diagnose(policy, bash(), failed("No module named 'yaml'")))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 400
    assert {result.captures["m"] for result in results} == {"yaml"}
