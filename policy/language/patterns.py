"""Regex literals, file globs and replacement strings: compiled or rejected with a diagnostic.

Patterns run on RE2, whose matching time is linear in the input: a pattern
that only a backtracking engine can run (backreferences, lookaround,
possessive or atomic groups) is E202, told apart from a plain invalid
pattern (E201) by asking Python's ``re`` whether it would have compiled.
Linear is not enough when the constant is huge: more than
``MAX_CAPTURE_GROUPS`` groups (E204) or a program larger than
``MAX_PROGRAM_SIZE`` (E205) is refused, and RE2's memory is capped
(``policy.model.re2_spans.MAX_MEMORY``).
"""

from __future__ import annotations

import re
import warnings

import re2

from policy.language import ast
from policy.language.collector import DiagnosticCollector
from policy.model.compiled import Pattern
from policy.model.re2_spans import compile_re2

REGEX_FLAGS = {"i": "ignore case", "m": "`^` and `$` match at line ends", "s": "`.` matches a newline"}

_UNSUPPORTED = [
    (re.compile(r"invalid escape sequence: \\[1-9]"), "a backreference (`\\1`)"),
    (re.compile(r"invalid named capture group|\(\?P[=>]"), "a named backreference"),
    (re.compile(r"\(\?<?[=!]"), "a lookaround assertion"),
    (re.compile(r"\(\?>"), "an atomic group"),
    (re.compile(r"bad repetition operator: .\+"), "a possessive quantifier"),
    (re.compile(r"too large|max_mem"), "a pattern this large"),
]
_HELP_E202 = "patterns run on RE2, which matches in linear time and has no backtracking: rewrite without it"


MAX_CAPTURE_GROUPS = 32
"""More groups make RE2 fall back to slower engines to extract them (time grows with their number)."""
MAX_PROGRAM_SIZE = 10_000
"""The largest compiled program (RE2's own measure; the shipped patterns stay under 400)."""


def compile_regex(node: ast.Regex, report: DiagnosticCollector) -> Pattern | None:
    """Compile a ``/regex/flags`` literal with RE2; report E201/E202 and return None when it cannot run."""
    flags = ""
    if node.flags:
        unknown = sorted(set(node.flags) - REGEX_FLAGS.keys())
        if unknown:
            listing = ", ".join(f"{flag} ({meaning})" for flag, meaning in REGEX_FLAGS.items())
            report.add("E201", f"unknown regex flag `{unknown[0]}`", node.span, f"flags: {listing}")
            return None
        flags = "".join(sorted(set(node.flags)))
    source = f"(?{flags}){node.pattern}" if flags else node.pattern
    try:
        regex = compile_re2(source)
    except re2.error as err:
        _report_rejected(node, source, _message(err), report)
        return None
    if regex.groups > MAX_CAPTURE_GROUPS:
        report.add("E204", f"pattern has {regex.groups} capture groups, more than {MAX_CAPTURE_GROUPS}",
                   node.span, "use `(?:…)` for groups whose text no hint needs")
        return None
    if regex.programsize > MAX_PROGRAM_SIZE:
        report.add("E205", f"pattern compiles to {regex.programsize} RE2 instructions, more than "
                   f"{MAX_PROGRAM_SIZE}", node.span, "shorten it, or split it into several signatures")
        return None
    groups = tuple(name for name, _ in sorted(regex.groupindex.items(), key=lambda item: item[1]))
    return Pattern(source=node.pattern, flags=flags, groups=groups)  # compiled again where it runs


def _message(err: Exception) -> str:
    detail = err.args[0] if err.args else str(err)
    return detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)


def _report_rejected(node: ast.Regex, source: str, re2_message: str, report: DiagnosticCollector) -> None:
    python_error = _python_error(source)
    if python_error is not None:
        report.add("E201", f"invalid regular expression: {python_error}", node.span)
        return
    construct = next((name for probe, name in _UNSUPPORTED if probe.search(re2_message)), None)
    what = construct or re2_message
    report.add("E202", f"pattern not supported by the linear-time engine: {what}", node.span, _HELP_E202)


def _python_error(source: str) -> str | None:
    """Python's complaint about the pattern, or None when Python's ``re`` accepts it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(source)
        except re.error as err:
            return f"{err.msg} at position {err.pos}" if err.pos is not None else err.msg
        except (RecursionError, OverflowError, ValueError, MemoryError) as err:
            return str(err) or type(err).__name__
    return None


def check_glob(node: ast.String, report: DiagnosticCollector) -> bool:
    """A ``files`` glob must be non-empty, one line, and close every ``[``."""
    text = node.value
    problem = None
    if not text.strip():
        problem = "empty file glob"
    elif "\n" in text or "\0" in text:
        problem = "a file glob cannot contain a newline or NUL character"
    elif _unclosed_bracket(text):
        problem = f"unclosed `[` in file glob `{text}`"
    if problem:
        report.add("E203", problem, node.span, 'globs use `*`, `?` and `[abc]`, e.g. "*.py" or "src/*.json"')
        return False
    return True


def _unclosed_bracket(glob: str) -> bool:
    index = 0
    while index < len(glob):
        if glob[index] == "[":
            end = index + 1
            if end < len(glob) and glob[end] in "!^":
                end += 1
            if end < len(glob) and glob[end] == "]":
                end += 1
            end = glob.find("]", end)
            if end < 0:
                return True
            index = end
        index += 1
    return False


_REFERENCE = re.compile(r"\\(?:([1-9][0-9]?)|g<(\w+)>)")
_OCTAL = re.compile(r"\\[0-7]{3}")


def check_replacement(pattern: Pattern, node: ast.String, report: DiagnosticCollector) -> bool:
    """A ``normalize`` replacement may refer only to groups the pattern has (``\\1``, ``\\g<name>``).

    Read as RE2's Python binding reads it: a backslash starts a three-digit
    octal escape, a group reference, or a two-character escape; any other
    character stands for itself.
    """
    text = node.value
    literal: list[str] = []
    position = 0
    while (backslash := text.find("\\", position)) >= 0:
        literal.append(text[position:backslash])
        reference = None if _OCTAL.match(text, backslash) else _REFERENCE.match(text, backslash)
        if reference is None:
            literal.append(text[backslash : backslash + 2])
            position = backslash + 2
            continue
        problem = _bad_reference(pattern, reference)
        if problem:
            report.add("E107", problem, node.span, _group_help(pattern))
            return False
        position = reference.end()
    literal.append(text[position:])
    try:
        _unescaped("".join(literal))
    except UnicodeDecodeError as err:
        report.add(
            "E107",
            f"invalid escape in replacement: {err.reason}",
            node.span,
            'a literal backslash is written "\\\\\\\\" (two escaped backslashes)',
        )
        return False
    return True


def replacement_template(pattern: Pattern, text: str) -> tuple[bytes | int, ...]:
    """A checked replacement (see ``check_replacement``) as UTF-8 literals and group numbers,
    read exactly as RE2's Python binding reads a template."""
    pieces: list[bytes | int] = []
    literal = ""
    while (backslash := text.find("\\")) >= 0:
        literal, text = literal + text[:backslash], text[backslash:]
        reference = None if _OCTAL.match(text) else _REFERENCE.match(text)
        if reference is None:
            literal, text = literal + text[:2], text[2:]
            continue
        pieces += [_unescaped(literal), _group_number(pattern, reference)]
        literal, text = "", text[reference.end() :]
    pieces.append(_unescaped(literal + text))
    return tuple(piece for piece in pieces if piece != b"")


def _unescaped(literal: str) -> bytes:
    """Literal replacement text with its escapes (``\\t``, ``\\u2026``…) decoded, as UTF-8;
    any other character stands for itself."""
    decoded = literal.encode("latin-1", "backslashreplace").decode("unicode_escape")
    return decoded.encode("utf-8", "surrogatepass")


def _group_number(pattern: Pattern, reference: re.Match[str]) -> int:
    number, name = reference.group(1), reference.group(2)
    if number is not None:
        return int(number)
    return int(name) if name.isdigit() else int(pattern.regex.groupindex[name])


def _bad_reference(pattern: Pattern, match: re.Match[str]) -> str | None:
    number, name = match.group(1), match.group(2)
    group_count = int(pattern.regex.groups)
    if number is not None:
        return (
            None
            if int(number) <= group_count
            else f"replacement refers to group {number}, "
            f"but the pattern has {group_count} group{'s' if group_count != 1 else ''}"
        )
    if name.isdigit():
        return (
            None if int(name) <= group_count else f"replacement refers to group {name}, which does not exist"
        )
    return None if name in pattern.groups else f"replacement refers to group `{name}`, which does not exist"


def _group_help(pattern: Pattern) -> str:
    named = ", ".join(f"`{g}`" for g in pattern.groups)
    return "groups: \\1 … \\{}{}".format(pattern.regex.groups, f", named {named}" if named else "")
