"""The tree-sitter gates' partial path on real code: a file cut at line ends, as a chunked write sends it.

    .venv/bin/python bench/bench_treesitter_partial.py [LANGUAGE ...] [--file LANGUAGE:PATH ...]

``bench_treesitter.py`` times the valid path (one parse).  A write cut off
mid-file takes the partial path: the text has an error, so the gate closes
what is open and parses again, and in C and C++ preprocesses first when the
text does not complete as written.  Here each language's ~200 KB of real
code (``bench_treesitter.real_code``), or a file given with ``--file``, is
cut at ``CUTS`` line ends spread over its last two thirds; each cut text is
checked with ``partial`` (``check_syntax_tree``) and parsed, best of
``ROUNDS``, and the totals over the cuts compared.  Reported per language:
that ratio in each of ``REPEATS`` repeats, the range of the cuts' own
ratios, and how the cuts were judged.  A diagnostic, with no target: the
figures tell where the partial path costs many parses.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from bench_gate import best_of  # beside this script: the same interleaved timing
from bench_treesitter import real_code  # and the same real code as the valid path's bench

from policy.model.validators import SYNTAX_TREE_LANGUAGES
from policy.runtime.gates.grammars import parser
from policy.runtime.gates.syntax_tree import check_syntax_tree

SIZE = 200 * 1024
CUTS = 12
ROUNDS = 3
REPEATS = 2


def cuts(text: str) -> list[str]:
    """``text`` cut after ``CUTS`` line ends spread evenly over its last two thirds."""
    ends = [index + 1 for index, char in enumerate(text) if char == "\n" and index >= len(text) // 3]
    step = max(1, len(ends) // CUTS)
    return [text[: ends[index]] for index in range(0, len(ends), step)][:CUTS]


def measure(language: str, name: str, text: str) -> None:
    """Print, under ``name``, how the partial checks of ``text``'s cuts compare with their parses."""
    tree_parser = parser(language)
    texts = cuts(text)
    totals, spread, verdicts = [], [], Counter[str]()
    for repeat in range(REPEATS):
        gate_total = parse_total = 0.0
        for cut in texts:
            data = cut.encode("utf-8", "surrogateescape")
            gate, parse = best_of(ROUNDS, lambda: check_syntax_tree(language, cut, partial=True),  # noqa: B023
                                  lambda: tree_parser.parse(data))  # noqa: B023
            gate_total += gate
            parse_total += parse
            if repeat == 0:
                spread.append(gate / parse)
                verdicts[check_syntax_tree(language, cut, partial=True).status] += 1
        totals.append(gate_total / parse_total)
    judged = ", ".join(f"{count} {status}" for status, count in sorted(verdicts.items()))
    print(f"  {name:<24} {len(text) / 1024:5.0f} KB  {len(texts)} cuts"
          f"  total ratio {min(totals):6.2f}-{max(totals):6.2f}x"
          f"  cuts {min(spread):6.2f}-{max(spread):6.2f}x  ({judged})")


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("languages", nargs="*", metavar="LANGUAGE")
    arguments.add_argument("--file", action="append", default=[], metavar="LANGUAGE:PATH")
    options = arguments.parse_args()
    unknown = {*options.languages, *(given.partition(":")[0] for given in options.file)} \
        - set(SYNTAX_TREE_LANGUAGES)
    if unknown:
        arguments.error(f"not a tree-sitter language: {', '.join(sorted(unknown))}")
    print(f"partial check of real code cut at {CUTS} line ends vs Parser.parse of the cut, "
          f"best of {ROUNDS}, {REPEATS} repeats")
    languages = options.languages or ([] if options.file else list(SYNTAX_TREE_LANGUAGES))
    for language in languages:
        text = real_code(language, SIZE)
        if text is None:
            print(f"  {language:<24} no corpus installed here (.ci/run installs it)")
            continue
        measure(language, language, text)
    for given in options.file:
        language, _, path = given.partition(":")
        measure(language, f"{language}: {Path(path).name}",
                Path(path).read_text(encoding="utf-8", errors="surrogateescape"))


if __name__ == "__main__":
    main()
