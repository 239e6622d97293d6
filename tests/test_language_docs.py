"""docs/language.md tells the truth: its examples check cleanly, and each diagnostic's example triggers it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from policy.language.codes import CODES
from policy.language.loader import check_policy
from policy.model.diagnostics import Severity
from policy.model.validators import BUILTIN_VALIDATORS

DOC = Path(__file__).resolve().parents[1] / "docs" / "language.md"
_FENCE = re.compile(r"```policy\n(.*?)```", re.S)
_CODE_SECTION = re.compile(r"^### ([EW]\d{3}) (.+)$", re.M)


def _sections() -> tuple[str, dict[str, tuple[str, str]]]:
    """The reference part, and each code's (title, section text)."""
    text = DOC.read_text(encoding="utf-8")
    reference, diagnostics = text.split("\n## Diagnostics\n")
    heads = list(_CODE_SECTION.finditer(diagnostics))
    sections = {}
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        end = after.start() if after else len(diagnostics)
        sections[head.group(1)] = (head.group(2), diagnostics[head.end() : end])
    return reference, sections


REFERENCE, SECTIONS = _sections()
REFERENCE_EXAMPLES = _FENCE.findall(REFERENCE)


def check_example(folder: Path, text: str) -> list[tuple[str, Severity]]:
    path = folder / "example.policy"
    path.write_text(text, encoding="utf-8")
    return [(d.code, d.severity) for d in check_policy(path).diagnostics]


def test_every_code_is_documented_with_its_title() -> None:
    assert {code: title for code, (title, _) in SECTIONS.items()} == {c.code: c.title for c in CODES.values()}


@pytest.mark.parametrize(
    "example", REFERENCE_EXAMPLES, ids=[f"example-{i}" for i in range(len(REFERENCE_EXAMPLES))]
)
def test_reference_examples_have_no_errors(tmp_path: Path, example: str) -> None:
    errors = [code for code, severity in check_example(tmp_path, example) if severity is Severity.ERROR]
    assert errors == []


@pytest.mark.parametrize("code", sorted(c for c in CODES if c not in ("E001", "E605")))
def test_each_diagnostic_example_triggers_its_code(tmp_path: Path, code: str) -> None:
    [example] = _FENCE.findall(SECTIONS[code][1])
    assert code in [found for found, _ in check_example(tmp_path, example)]


def test_every_validator_a_gate_can_name_is_listed_in_the_gate_section() -> None:
    section = REFERENCE.split("\n## `gate`", 1)[1].split("\n## ", 1)[0]
    assert [name for name in BUILTIN_VALIDATORS if f"`{name}`" not in section] == []


def test_the_e001_description_holds(tmp_path: Path) -> None:
    assert "0xff" in SECTIONS["E001"][1]
    path = tmp_path / "example.policy"
    path.write_bytes(b'policy "p" { description "\xff" }\n')
    assert [d.code for d in check_policy(path).diagnostics] == ["E001"]
