"""Machine formats of a lint report: JSON, GitHub workflow commands, SARIF 2.1.0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy.language.codes import CODES
from policy.model.diagnostics import Diagnostic, Severity, Span
from policy.reporters import LintReport, relative_location
from policy.reporters.github import escape_data, escape_property, render_github
from policy.reporters.json_format import render_json
from policy.reporters.sarif import render_sarif


def diag(file: str, code: str = "E102", *, severity: Severity = Severity.ERROR,
         message: str = "unknown setting `wran`", help: str | None = "did you mean `warn`?") -> Diagnostic:
    span = Span(file=file, line=2, column=3, end_line=2, end_column=7)
    return Diagnostic(code=code, severity=severity, message=message, span=span, help=help)


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LintReport:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "team.policy").write_text("loop repeat {\n  wran 3\n}\n")
    warning = diag("policies/team.policy", "W103", severity=Severity.WARNING,
                   message="hint `x` is never used", help=None)
    return LintReport.build([diag("policies/team.policy"), warning], files=2)


def test_json_document(report: LintReport) -> None:
    document = json.loads(render_json(report))
    assert document == {
        "diagnostics": [
            {"file": "policies/team.policy", "line": 2, "column": 3, "end_line": 2, "end_column": 7,
             "code": "E102", "severity": "error", "message": "unknown setting `wran`",
             "help": "did you mean `warn`?"},
            {"file": "policies/team.policy", "line": 2, "column": 3, "end_line": 2, "end_column": 7,
             "code": "W103", "severity": "warning", "message": "hint `x` is never used", "help": None},
        ],
        "summary": {"files": 2, "errors": 1, "warnings": 1},
    }


def test_github_commands(report: LintReport) -> None:
    assert render_github(report).splitlines() == [
        "::error file=policies/team.policy,line=2,col=3,endLine=2,endColumn=7,title=E102"
        "::unknown setting `wran`%0Ahelp: did you mean `warn`?",
        "::warning file=policies/team.policy,line=2,col=3,endLine=2,endColumn=7,title=W103"
        "::hint `x` is never used",
    ]


def test_github_escaping() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    odd = LintReport.build([diag("we,ird:name.policy", message="50% of\nit", help=None)], 1)
    assert render_github(odd) == (
        "::error file=we%2Cird%3Aname.policy,line=2,col=3,endLine=2,endColumn=7,title=E102::50%25 of%0Ait\n"
    )


def test_github_paths_are_relative_to_the_working_folder(report: LintReport, tmp_path: Path) -> None:
    absolute = LintReport.build([diag(str(tmp_path / "policies" / "team.policy"))], 1)
    assert render_github(absolute).startswith("::error file=policies/team.policy,")


def test_sarif_log(report: LintReport, tmp_path: Path) -> None:
    log = json.loads(render_sarif(report))
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "policyctl"
    assert [r["id"] for r in driver["rules"]] == list(CODES)
    assert all(r["shortDescription"]["text"] == CODES[r["id"]].title for r in driver["rules"])
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.as_uri() + "/"
    error, warning = run["results"]
    assert error == {
        "ruleId": "E102",
        "ruleIndex": list(CODES).index("E102"),
        "level": "error",
        "message": {"text": "unknown setting `wran`\nhelp: did you mean `warn`?"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": "policies/team.policy", "uriBaseId": "SRCROOT"},
            "region": {"startLine": 2, "startColumn": 3, "endLine": 2, "endColumn": 7},
        }}],
    }
    assert warning["level"] == "warning"
    assert driver["rules"][warning["ruleIndex"]]["id"] == "W103"


def test_sarif_uris_outside_the_working_folder_and_not_on_disk(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "other folder" / "x.policy"
    outside.parent.mkdir()
    outside.write_text("")
    inside = tmp_path / "work"
    inside.mkdir()
    monkeypatch.chdir(inside)
    log = json.loads(render_sarif(LintReport.build([diag(str(outside)), diag("builtin:default")], 2)))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"]]
    assert {"uri": "builtin:default"} in uris
    assert {"uri": outside.as_uri()} in uris
    assert "%20" in outside.as_uri()


def test_relative_location(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.policy").write_text("")
    assert relative_location(str(tmp_path / "a" / "x.policy"), tmp_path) == "a/x.policy"
    assert relative_location(str(tmp_path / "a" / "x.policy"), tmp_path / "a" / "b") is None
    assert relative_location("builtin:default", tmp_path) is None
