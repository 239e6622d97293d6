"""Cost of the Python write gate on a ~200 KB file, against ``ast.parse`` of the same text.

The file is real code: top-level modules of the running Python's standard
library, concatenated until the text reaches 200 KB.  The gate is
``check_write`` with ``builtin:default`` for a ``write_file`` call of that
text (the valid path: one parse, then stop).  Each side is timed ROUNDS
times, interleaved; the best times are compared.  For reference the same is
shown for the partial path: the text cut inside its last function, an
incomplete prefix the gate has to close and parse again.

    .venv/bin/python bench/bench_gate.py
"""

from __future__ import annotations

import ast
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from policy.language.loader import load_policy
from policy.model.events import ToolCall
from policy.runtime.gates import check_write

TARGET_SIZE = 200 * 1024
ROUNDS = 15
TARGET_RATIO = 1.3


def real_python(size: int) -> str:
    """Standard-library modules, whole, in name order, until about ``size`` characters."""
    parts: list[str] = []
    total = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if total + len(text) > size * 1.1:
            continue
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        parts.append(text)
        total += len(text)
        if total >= size:
            break
    return "\n".join(parts)


def incomplete_prefix(text: str) -> str:
    """The text cut just after the last ``def`` header: a function with no body yet."""
    cut = text.rindex("\n    def ")
    return text[: text.index("\n", cut + 1) + 1]


def best_of(rounds: int, *tasks: Callable[[], object]) -> list[float]:
    best = [float("inf")] * len(tasks)
    for _ in range(rounds):
        for index, task in enumerate(tasks):
            start = time.perf_counter()
            task()
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def main() -> None:
    policy = load_policy("builtin:default")
    text = real_python(TARGET_SIZE)
    prefix = incomplete_prefix(text)
    whole = ToolCall(id="w", name="write_file", args={"path": "big.py", "content": text})
    partial = ToolCall(id="p", name="write_file", args={"path": "big.py", "content": prefix})
    assert check_write(policy, whole, lambda path: None).action == "allow"
    assert check_write(policy, partial, lambda path: None).metadata.get("incomplete") is True

    gate, parse, gate_partial, parse_partial = best_of(
        ROUNDS,
        lambda: check_write(policy, whole, lambda path: None),
        lambda: ast.parse(text),
        lambda: check_write(policy, partial, lambda path: None),
        lambda: ast.parse(prefix + "        pass\n"),
    )
    ratio = gate / parse
    print(f"text: {len(text) / 1024:.0f} KB of standard-library Python, best of {ROUNDS}")
    print(f"valid    gate {gate * 1e3:7.1f} ms   ast.parse {parse * 1e3:7.1f} ms   "
          f"ratio {ratio:.2f}x (target <= {TARGET_RATIO}x)")
    print(f"partial  gate {gate_partial * 1e3:7.1f} ms   ast.parse {parse_partial * 1e3:7.1f} ms   "
          f"ratio {gate_partial / parse_partial:.2f}x (an incomplete prefix, for reference)")
    print("PASS" if ratio <= TARGET_RATIO else "FAIL")


if __name__ == "__main__":
    main()
