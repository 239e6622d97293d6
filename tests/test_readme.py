"""The README's examples run as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policy.language.loader import check_policy
from policy.testing.runner import run_tests

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(section: str, language: str) -> list[str]:
    body = README.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n```", 1)[0] for block in body.split(f"```{language}\n")[1:]]


def test_the_policy_example_is_clean_and_its_test_passes(tmp_path: Path) -> None:
    source = tmp_path / "starter.policy"
    source.write_text(_blocks("What it does", "")[0], encoding="utf-8")
    policy, diagnostics = check_policy(source)
    assert diagnostics == []
    assert policy is not None
    results = run_tests(policy)
    assert [r.passed for r in results] == [True]


def test_the_python_api_example_runs() -> None:
    (example,) = _blocks("Python API", "python")
    files = {"app.py": "print('hello')\n"}
    namespace: dict[str, Any] = {"my_sandbox_read": files.get}
    exec(compile(example, "README.md", "exec"), namespace)
    decision = namespace["d"]
    assert (decision.action, str(decision.rule), decision.signature) == (
        "hint", "signature MODULE_NOT_FOUND", "MODULE_NOT_FOUND")
    assert files == {"app.py": "print('hello')\n"}
