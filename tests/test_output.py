"""Reading a tool output once: its tail, the patterns that match it, its fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.fingerprint import fingerprint
from policy.runtime.output import HEAD_CHARS, OutputReader, output_reader

NORMALIZING = """
normalize /\\b\\d+(\\.\\d+)?s\\b/ "<dur>"
normalize /0x[0-9a-f]+/ "<addr>"
normalize /<dur> later/ "<soon>"
signature SLOW { match /took (?P<seconds>\\d+)s/ }
"""


@pytest.fixture(scope="module")
def normalizing(tmp_path_factory: pytest.TempPathFactory) -> CompiledPolicy:
    path = tmp_path_factory.mktemp("output") / "normalize.policy"
    path.write_text(NORMALIZING, encoding="utf-8")
    return load_policy(path)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain output with nothing volatile",
        "1 failed in 0.51s",
        "object at 0x7f3a",
        "done in 3s later",  # the first rule's replacement makes the third one match
        "0xff then 2.5s then 0xab",
        "ünïcödé 12s",
    ],
)
def test_a_fingerprint_is_that_of_the_normalised_text(normalizing: CompiledPolicy, text: str) -> None:
    reader = OutputReader(normalizing)
    assert reader.fingerprint(reader.read(text)) == fingerprint(normalizing.normalize(text))


def test_volatile_text_does_not_change_a_fingerprint(normalizing: CompiledPolicy) -> None:
    reader = OutputReader(normalizing)

    def key(text: str) -> bytes:
        return reader.fingerprint(reader.read(text))

    assert key("1 failed in 0.51s") == key("1 failed in 0.73s")
    assert key("1 failed in 0.51s") != key("2 failed in 0.51s")
    assert key("a\r\nb") == key("a\nb")  # line endings are not a change


def test_one_pass_tells_which_signatures_and_which_normalize_rules_match(normalizing: CompiledPolicy) -> None:
    reader = OutputReader(normalizing)
    output = reader.read("it took 12s at 0xff")
    assert output.signatures == {0}
    assert output.normalize_from == 0
    late = reader.read("pointer 0xff")
    assert late.signatures == frozenset() and late.normalize_from == 1
    plain = reader.read("nothing here")
    assert plain.normalize_from == len(normalizing.normalizers)


def test_a_huge_output_is_read_by_its_tail_and_compared_by_its_start_and_end() -> None:
    policy = load_policy("builtin:default")
    reader = output_reader(policy)
    half = "x" * 5_000_000
    text = f"start\n{half}one{half}\nend: 3 failed"
    output = reader.read(text)
    assert output.truncated and len(output.tail) <= policy.scan_limit
    assert output.tail == b"end: 3 failed"  # the line before it is longer than the limit

    def key(text: str) -> bytes:
        return reader.fingerprint(reader.read(text))

    assert key(text) == key(text.replace("one", "two"))  # neither in the head nor in the tail
    assert key(text) != key(text.replace("3 failed", "2 failed"))
    assert key(text) != key(text.replace("start", "begin"))
    assert len(half) > HEAD_CHARS


def test_the_tail_starts_at_a_line_and_never_splits_a_character(normalizing: CompiledPolicy) -> None:
    policy = load_policy("builtin:default")
    lines = "".join(f"line {n} ✓\n" for n in range(20_000))
    tail = output_reader(policy).read(lines).tail
    assert tail.startswith(b"line ") and len(tail) <= policy.scan_limit
    tail.decode("utf-8")  # whole characters only
    one_line = "✓" * 100_000
    assert output_reader(policy).read(one_line).tail.decode("utf-8") == "✓" * (policy.scan_limit // 3)


@pytest.mark.parametrize(
    ("content", "text"),
    [(None, ""), (b"caf\xc3\xa9", "café"), (["a", "b"], "['a', 'b']"), (42, "42")],
)
def test_content_that_is_not_a_string_is_read_as_text(content: object, text: str) -> None:
    output = output_reader(load_policy("builtin:default")).read(content)
    assert output.text == text


def test_a_policy_without_patterns_reads_outputs(tmp_path: Path) -> None:
    path = tmp_path / "empty.policy"
    path.write_text('policy "empty" {}\n', encoding="utf-8")
    policy = load_policy(path)
    reader = OutputReader(policy)
    output = reader.read("anything")
    assert output.signatures == frozenset() and output.normalize_from == 0
    assert reader.fingerprint(output) == fingerprint("anything")


def test_the_reader_is_built_once_per_policy(normalizing: CompiledPolicy) -> None:
    assert output_reader(normalizing) is output_reader(normalizing)


REPLACEMENTS = """
normalize /(?P<name>\\w+)=\\d+/ "\\\\g<name>=<n>"
normalize /(\\d+)-(\\d+)/ "\\\\2..\\\\1"
normalize /x(y)?z/ "[\\\\1]"
normalize /TAB/ "\\\\t"
normalize /AAA/ "\\\\101\\\\g<0>"
normalize /é+/ "E"
"""


@pytest.mark.parametrize(
    "text",
    ["took=35 ms and n=7", "range 3-9, 10-20", "xz xyz", "a TAB b", "AAA!", "café été", "", "nothing"],
)
def test_normalize_replaces_as_re2_sub_does(tmp_path: Path, text: str) -> None:
    path = tmp_path / "replacements.policy"
    path.write_text(REPLACEMENTS, encoding="utf-8")
    policy = load_policy(path)
    expected = text
    for rule in policy.normalizers:
        expected = rule.pattern.regex.sub(rule.replacement, expected)
    assert policy.normalize(text) == expected
