"""The write gates on adversarial text, against a plain parse of the same text.

Each input is what an agent can send in one write: brackets nested deep,
one very long line, many strings with the last one left open, a large file
ending in open brackets, the same shapes for JSON, TOML and YAML, and for
the tree-sitter gates lines of calls that never close (text tree-sitter's
error recovery reads slowly).  The gate is the ``partial`` check (the one
that tells a cut-off text from a broken one); the baseline is the
language's own parser on the same text (``ast.parse``, ``json.loads``,
``tomllib.loads``, PyYAML's ``compose_all``, tree-sitter's ``Parser.parse``),
whatever it answers.  Both are timed ROUNDS times, interleaved, in REPEATS
separate runs; the range of the per-run ratios (best gate / best baseline)
is reported.  Target: every ratio at most 2x.

    .venv/bin/python bench/bench_gate_hostile.py
"""

from __future__ import annotations

import ast
import contextlib
import json
import time
import tomllib
import warnings
from collections.abc import Callable
from functools import partial

import yaml

from policy.runtime.gates.data_syntax import check_json, check_toml, check_yaml
from policy.runtime.gates.grammars import parser
from policy.runtime.gates.python_syntax import check_python
from policy.runtime.gates.syntax_tree import check_syntax_tree

ROUNDS = 5
REPEATS = 3
TARGET_RATIO = 2.0


def _quiet(parse: Callable[[str], object]) -> Callable[[str], None]:
    def run(text: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.suppress(Exception):  # the baseline's verdict does not matter, only its time
                parse(text)
    return run


def _yaml_compose(text: str) -> None:
    for _ in yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        pass


PYTHON = {
    "deep brackets (100,000 `(`)": "x = " + "(" * 100_000,
    "150 open brackets, then a 1 MB line": "y = " + "(" * 150 + "1 + " * 250_000,
    "1 MB of code ending in 150 `(`": "def f(x):\n    return x + 1\n" * 38_000 + "z = " + "(" * 150,
    "20,000 strings, the last one open": "x = [" + "'a', " * 20_000 + "'",
    "a 1 MB line of a list": "x = [" + "1, " * 350_000,
    "10,000 lines of open triple strings": 'x = """\n' + "text (\n" * 10_000,
}
DATA: dict[str, tuple[Callable[[str, bool], object], Callable[[str], None], str]] = {
    "JSON: 100,000 `[`": (check_json, _quiet(json.loads), "[" * 100_000),
    "JSON: 1 MB array, cut in a string": (check_json, _quiet(json.loads), "[" + '"abc", ' * 150_000 + '"ab'),
    "TOML: 1 MB of keys, cut in a value":
        (check_toml, _quiet(tomllib.loads), "k = 1\n" * 170_000 + "x = [1, "),
    "YAML: 5,000 `[`": (check_yaml, _quiet(_yaml_compose), "[" * 5_000),
    "YAML: 1 MB mapping, cut in a value":
        (check_yaml, _quiet(_yaml_compose), "key: value\n" * 95_000 + "k: [1, "),
}

SYNTAX_TREE = {
    "JavaScript: 2,000 lines of `f(x`": ("javascript", "f(x\n" * 2_000),
    "C: 2,000 lines of `A_(x`": ("c", "A_(x\n" * 2_000),
}


def best(rounds: int, gate: Callable[[], object], base: Callable[[], object]) -> tuple[float, float]:
    gate_best = base_best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        gate()
        gate_best = min(gate_best, time.perf_counter() - start)
        start = time.perf_counter()
        base()
        base_best = min(base_best, time.perf_counter() - start)
    return gate_best, base_best


def main() -> None:
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = []
    for name, text in PYTHON.items():
        cases.append((f"Python: {name}", partial(check_python, text, True), partial(_quiet(ast.parse), text)))
    for name, (check, parse, text) in DATA.items():
        cases.append((name, partial(check, text, True), partial(parse, text)))
    for name, (language, text) in SYNTAX_TREE.items():
        cases.append((name, partial(check_syntax_tree, language, text, True),
                      partial(parser(language).parse, text.encode())))
    worst = 0.0
    print(f"best of {ROUNDS} rounds, {REPEATS} runs; ratio = gate / parser of the same text")
    for name, gate, base in cases:
        ratios, gate_ms, base_ms = [], [], []
        for _ in range(REPEATS):
            g, b = best(ROUNDS, gate, base)
            ratios.append(g / max(b, 1e-6))
            gate_ms.append(g * 1e3)
            base_ms.append(b * 1e3)
        worst = max(worst, max(ratios))
        print(f"{name:45s} gate {min(gate_ms):8.1f}-{max(gate_ms):8.1f} ms   parser {min(base_ms):8.1f}-"
              f"{max(base_ms):8.1f} ms   ratio {min(ratios):5.2f}-{max(ratios):5.2f}x")
    print(f"worst ratio {worst:.2f}x (target <= {TARGET_RATIO}x)")
    print("PASS" if worst <= TARGET_RATIO else "FAIL")


if __name__ == "__main__":
    main()
