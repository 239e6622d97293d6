"""Cost of the tree-sitter write gates on a ~200 KB file per language, against tree-sitter's own parse.

The text is real code (the files tests/test_gate_corpus_tree_sitter.py uses,
from the packages .ci/run installs), whole files concatenated while the
result still parses without an error, until it reaches 200 KB.  The gate is
``check_write`` of a ``write_file`` call of that text with every language
gated (the valid path); the baseline is ``Parser.parse`` of the same bytes.
Each side is timed ROUNDS times, interleaved; the best times are compared,
and the whole comparison is repeated REPEATS times to give a range.

Second, the import-and-load cost of a policy that gates only Python, in a
fresh interpreter, with the tree-sitter packages importable and with them
hidden (as if not installed): the feature must cost nothing there.

    .venv/bin/python bench/bench_treesitter.py [LANGUAGE ...]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_gate import best_of  # the Python gate's bench, beside this script: the same interleaved timing

from policy.language.loader import load_policy
from policy.model.events import ToolCall
from policy.model.validators import SYNTAX_TREE_LANGUAGES
from policy.runtime.gates import check_write
from policy.runtime.gates.grammars import parser

ROOT = Path(__file__).resolve().parent.parent
NPM = Path(os.environ.get("POLICYCTL_CORPUS_NPM", ROOT / ".ci" / "corpus" / "node_modules"))
TARGET_SIZE = 200 * 1024
ROUNDS = 7
REPEATS = 3
LOAD_RUNS = 15
TARGET_RATIO = 1.3
SOURCES: dict[str, tuple[list[Path], tuple[str, ...]]] = {
    "javascript": ([NPM / "lodash-es", NPM / "rxjs" / "dist" / "esm"], (".js",)),
    "typescript": ([NPM / "rxjs" / "src", NPM / "zod"], (".ts",)),
    "tsx": ([NPM, NPM / "rxjs" / "src"], (".tsx", ".ts")),  # few .tsx files: TypeScript that TSX parses too
    "go": ([Path("/usr/share/gocode/src")], (".go",)),
    "rust": ([Path("/usr/share/cargo/registry")], (".rs",)),
    "java": ([NPM / "cordova-android"], (".java",)),
    "c": ([Path("/usr/share/doc/libcurl4/examples")], (".c",)),
    "cpp": ([Path("/usr/src/googletest")], (".cc",)),
    "ruby": ([Path("/usr/lib/ruby")], (".rb",)),
    "php": ([Path("/usr/share/php")], (".php",)),
    "shell": ([Path("/usr/share/debconf"), Path("/usr/lib/git-core"), Path("/usr/bin"), Path("/usr/sbin")],
              ("", ".sh")),
    "html": ([Path("/usr/share/doc")], (".html",)),
    "css": ([Path("/usr/share/javascript"), NPM], (".css",)),
}
EXTENSION = {"javascript": "js", "typescript": "ts", "tsx": "tsx", "go": "go", "rust": "rs", "java": "java",
             "c": "c", "cpp": "cpp", "ruby": "rb", "php": "php", "shell": "sh", "html": "html", "css": "css"}


def real_code(language: str, size: int) -> str | None:
    """Whole files of the language, concatenated while the result parses cleanly, up to ``size``."""
    roots, suffixes = SOURCES[language]
    tree_parser = parser(language)
    parts: list[str] = []
    total = 0
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if path.suffix not in suffixes or not path.is_file() or ".min." in path.name:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if language == "shell" and not text.startswith(("#!/bin/sh", "#!/bin/bash")):
                continue
            text = text if text.endswith("\n") else text + "\n"
            if tree_parser.parse(text.encode()).root_node.has_error:
                continue
            if language == "php" and parts:  # one PHP block: the files' code, without their own tags
                text = text.strip().removeprefix("<?php").removesuffix("?>") + "\n"
            joined = "".join(parts) + text
            if tree_parser.parse(joined.encode()).root_node.has_error:
                continue
            parts.append(text)
            total += len(text)
            if total >= size:
                return joined
    return "".join(parts) if total >= size // 2 else None


def all_gates_policy(folder: str) -> Path:
    gates = "\n".join(f'gate {name} {{ files "*.{EXTENSION[name]}"; check {name}; partial allow }}'
                      for name in SYNTAX_TREE_LANGUAGES)
    path = Path(folder, "all.policy")
    path.write_text('policy "bench" {}\ntool write_file { writes path=path content=content append=append }\n'
                    + gates + "\n", encoding="utf-8")
    return path


def gate_ratios(folder: str, languages: list[str]) -> bool:
    policy = load_policy(all_gates_policy(folder))
    passed = True
    print(f"gate on a ~{TARGET_SIZE // 1024} KB real file vs Parser.parse, "
          f"best of {ROUNDS}, {REPEATS} repeats")
    for language in languages:
        text = real_code(language, TARGET_SIZE)
        if text is None:
            print(f"  {language:<11} no corpus installed here (.ci/run installs it)")
            continue
        data = text.encode()
        path = f"big.{EXTENSION[language]}"
        call = ToolCall(id="w", name="write_file", args={"path": path, "content": text})
        assert check_write(policy, call, lambda path: None).action == "allow"
        tree_parser = parser(language)
        ratios, gates, parses = [], [], []
        for _ in range(REPEATS):
            gate, parse = best_of(
                ROUNDS,
                lambda: check_write(policy, call, lambda path: None),  # noqa: B023
                lambda: tree_parser.parse(data),  # noqa: B023
            )
            ratios.append(gate / parse)
            gates.append(gate)
            parses.append(parse)
        worst = max(ratios)
        passed &= worst <= TARGET_RATIO
        print(f"  {language:<11} {len(text) / 1024:4.0f} KB"
              f"  gate {min(gates) * 1e3:6.2f}-{max(gates) * 1e3:6.2f} ms"
              f"  parse {min(parses) * 1e3:6.2f}-{max(parses) * 1e3:6.2f} ms"
              f"  ratio {min(ratios):.2f}-{worst:.2f}x (target <= {TARGET_RATIO}x)")
    return passed


_LOAD = """
import sys, time
start = time.perf_counter()
from policy.language.loader import load_policy
from policy.model.events import ToolCall
from policy.runtime.gates import check_write
policy = load_policy(sys.argv[1])
call = ToolCall(id="p", name="write_file", args={"path": "app.py", "content": "x = 1\\n"})
assert check_write(policy, call, lambda path: None).action == "allow"
print(time.perf_counter() - start, "tree_sitter" in sys.modules)
"""


def load_cost(folder: str) -> bool:
    policy = Path(folder, "python.policy")
    policy.write_text('policy "py" {}\ntool write_file { writes path=path content=content }\n'
                      'gate python { files "*.py"; check python; partial allow }\n', encoding="utf-8")
    hidden = Path(folder, "hidden")
    hidden.mkdir()
    grammars = ("javascript", "typescript", "go", "rust", "java", "c", "cpp", "ruby", "php", "bash", "html",
                "css")
    for module in ("tree_sitter", *(f"tree_sitter_{name}" for name in grammars)):
        (hidden / f"{module}.py").write_text("raise ImportError('hidden by the bench')\n", encoding="utf-8")
    results: dict[str, list[float]] = {"installed": [], "hidden": []}
    imported = False
    for _ in range(LOAD_RUNS):
        for name, env in (("installed", {}), ("hidden", {"PYTHONPATH": str(hidden)})):
            out = subprocess.run([sys.executable, "-c", _LOAD, str(policy)], capture_output=True, text=True,
                                 env={**os.environ, **env}, check=True).stdout.split()
            results[name].append(float(out[0]))
            imported |= name == "installed" and out[1] == "True"
    print(f"import + load + one Python check, a policy gating only Python, {LOAD_RUNS} fresh interpreters:")
    for name, times in results.items():
        print(f"  tree-sitter {name:<9} median {statistics.median(times) * 1e3:6.1f} ms"
              f"  range {min(times) * 1e3:6.1f}-{max(times) * 1e3:6.1f} ms")
    difference = statistics.median(results["installed"]) - statistics.median(results["hidden"])
    print(f"  median difference {difference * 1e3:+.1f} ms; tree_sitter imported: {imported}")
    return not imported


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="policyctl-bench-") as folder:
        ratios_ok = gate_ratios(folder, sys.argv[1:] or list(SYNTAX_TREE_LANGUAGES))
        load_ok = load_cost(folder)
    print("PASS" if ratios_ok and load_ok else "FAIL")


if __name__ == "__main__":
    main()
