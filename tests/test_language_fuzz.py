"""Any input gets diagnostics or a clean success, never an exception, and every span lies in its file."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy.language.loader import check_policy
from policy.resources import builtin_policy_path

SAMPLE = '''\
policy "sample" { description "all constructs"; scope { max_scopes 10 }; scan_limit 64KB; ignore description }
tool write_file { writes path=path content=content append=append }
tool str_replace { edits path=path old=old new=new all=all; key path old }
tool bash { runs command=command; mutates_when /pip install/i; fails_when /Traceback/ }
gate python { files "*.py"; check python; partial allow; hint syntax }
gate sh { files "*.sh"; check command "bash -n {file}"; timeout 5 }
signature MOD { on error; match /No module named '(?P<module>[\\w.]+)'/; tools bash; hint mod }
normalize /(\\d+)ms/ "\\\\1<ms>"
loop repeat { window 20; warn 3; stop 5; until_progress; hint repeated }
loop frequency { window 50; warn 30; stop 50; tool bash { warn 40; stop 60 } }
loop error_streak { warn 3; stop 6; same captures }
loop oscillation { period 2..4; repeats 2; no_progress; warn }
hint syntax "{{ path }}:{{ line }}:{{ column }} {{ message }}"
hint mod """
  pip install {{ module | pip_name }}
  """
hint repeated "{{ count }} times: {{ call }}"
test "t" {
  file "a.py" "x = 1\\n"
  turn { call write_file { "path": "a.py", "content": "def f(:" }; call bash {} }
  result error "No module named 'yaml'"
  repeat 2 { call bash { "command": "ls", "n": [1, 2.5, null] } }
  expect hint signature MOD
  expect hint contains "yaml"
  expect hint matches /pip/
}
'''

VOCABULARY = [
    "{",
    "}",
    ";",
    "\n",
    " ",
    "=",
    ",",
    ":",
    "[",
    "]",
    '"',
    '"""',
    "/",
    "#",
    "policy",
    "tool",
    "gate",
    "signature",
    "loop",
    "hint",
    "test",
    "extends",
    "disable",
    "normalize",
    "repeat",
    "frequency",
    "warn",
    "stop",
    "window",
    "files",
    "check",
    "match",
    "call",
    "expect",
    "result",
    "turn",
    "file",
    "writes",
    "path=x",
    "0",
    "-1",
    "2..1",
    "64KB",
    "1e999",
    '"x"',
    "/(/",
    "/a\\1/",
    "/x/z",
    '"{{ nope }}"',
    '"{% if %}"',
    '"\\q"',
    '"builtin:nope"',
    '"p.policy"',
    "\x00",
    "\ufeff",
    "é",
    "\t",
]


def assert_checks_cleanly(text: str, name: str = "fuzz.policy") -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _policy, diagnostics = check_policy(path)
        for diagnostic in diagnostics:
            span = diagnostic.span
            if span.file != str(path):
                continue
            assert 1 <= span.line <= text.count("\n") + 1, diagnostic
            assert span.column >= 1, diagnostic
            assert (span.line, span.column) <= (span.end_line, span.end_column), diagnostic
            assert 0 <= span.start <= span.end <= len(text), diagnostic


@st.composite
def mutated(draw: st.DrawFn, source: str) -> str:
    text = source
    for _ in range(draw(st.integers(1, 4))):
        cut = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "duplicate"]))
        if kind == "insert":
            text = text[:cut] + draw(st.sampled_from(VOCABULARY)) + text[cut:]
        elif kind == "delete":
            end = draw(st.integers(cut, min(len(text), cut + 12)))
            text = text[:cut] + text[end:]
        else:
            end = draw(st.integers(cut, min(len(text), cut + 40)))
            text = text[:end] + text[cut:end] + text[end:]
    return text


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_sample_is_clean() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sample.policy"
        path.write_text(SAMPLE, encoding="utf-8")
        assert check_policy(path).diagnostics == []


@FUZZ
@given(mutated(SAMPLE))
def test_mutated_policies_never_crash(text: str) -> None:
    assert_checks_cleanly(text)


@FUZZ
@given(st.lists(st.sampled_from(VOCABULARY), max_size=40).map("".join))
def test_token_soup_never_crashes(text: str) -> None:
    assert_checks_cleanly(text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes(text: str) -> None:
    assert_checks_cleanly(text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(builtin_policy_path("default").read_text(encoding="utf-8")))
def test_a_mutated_default_policy_never_crashes(text: str) -> None:
    assert_checks_cleanly(text)


def test_binary_and_invalid_utf8_files_are_diagnostics(tmp_path: Path) -> None:
    for data in (b"\xff\xfe\x00garbage", b'policy "x" {\n  description "\xc3\x28"\n}\n'):
        path = tmp_path / "binary.policy"
        path.write_bytes(data)
        assert [d.code for d in check_policy(path).diagnostics] == ["E001"]


def test_a_directory_is_not_a_policy(tmp_path: Path) -> None:
    assert [d.code for d in check_policy(tmp_path).diagnostics] == ["E601"]
