"""Value forms: the notation for the values a statement takes (written the way the docs show
them), and matching a statement's values against it.  Which statement takes which forms is
``policy.language.schema``.

A form is a space-separated list of parts::

    INT                       one integer
    STRING+                   one or more strings
    NAME file STRING          a name, the word ``file``, a string
    allow|block               one of these words

Shapes are ``NAME``, ``ARG`` (a name or a string: argument and tool names),
``STRING``, ``INT``, ``NUMBER``, ``SIZE``, ``RANGE``, ``REGEX``, ``PAIR`` and
``JSON``.  A lowercase word must appear literally; ``a|b`` is a choice of
words.  ``+`` repeats a part (only the last part of a form repeats).  The
empty form is a bare flag.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from policy.language import ast

_SHAPES: dict[str, Callable[[ast.Value], bool]] = {
    "NAME": lambda v: isinstance(v, ast.Name),
    "ARG": lambda v: isinstance(v, (ast.Name, ast.String)),
    "STRING": lambda v: isinstance(v, ast.String),
    "INT": lambda v: isinstance(v, ast.Number) and isinstance(v.value, int),
    "NUMBER": lambda v: isinstance(v, ast.Number),
    "SIZE": lambda v: isinstance(v, ast.Size),
    "RANGE": lambda v: isinstance(v, ast.Range),
    "REGEX": lambda v: isinstance(v, ast.Regex),
    "PAIR": lambda v: isinstance(v, ast.Pair),
    "JSON": lambda v: isinstance(v, ast.Json),
}


@dataclass(frozen=True)
class Part:
    kind: Literal["shape", "literal", "choice"]
    text: str
    choices: tuple[str, ...] = ()
    repeated: bool = False

    def fits(self, value: ast.Value) -> bool:
        """Whether ``value`` has this part's shape (a choice accepts any name here)."""
        if self.kind == "shape":
            return _SHAPES[self.text](value)
        if self.kind == "literal":
            return isinstance(value, ast.Name) and value.value == self.text
        return isinstance(value, ast.Name)


@dataclass(frozen=True)
class Match:
    """How well values fit one form."""

    fits: bool
    """Every value has the shape its part asks for, and the count is right."""
    keyword: bool
    """The form has literal words and every one of them is present (the writer meant this form)."""
    bad_choices: tuple[tuple[ast.Value, Part], ...] = ()
    """Names that are not among their part's choices."""

    @property
    def ok(self) -> bool:
        return self.fits and not self.bad_choices


@dataclass(frozen=True)
class Form:
    text: str
    parts: tuple[Part, ...]

    def match(self, values: Sequence[ast.Value]) -> Match:
        index = 0
        bad: list[tuple[ast.Value, Part]] = []
        literals_seen = 0
        fits = True
        for part in self.parts:
            taken = 0
            while index < len(values) and part.fits(values[index]) and (taken == 0 or part.repeated):
                value = values[index]
                if part.kind == "choice" and isinstance(value, ast.Name) and value.value not in part.choices:
                    bad.append((value, part))
                literals_seen += part.kind == "literal"
                index += 1
                taken += 1
            if taken == 0:
                fits = False
                break
        literal_count = sum(p.kind == "literal" for p in self.parts)
        return Match(
            fits=fits and index == len(values),
            keyword=literal_count > 0 and literals_seen == literal_count,
            bad_choices=tuple(bad),
        )


@cache
def form(text: str) -> Form:
    """Parse a form's text (cached: forms are constants of the schema)."""
    parts = []
    for word in text.split():
        repeated = word.endswith("+")
        word = word.rstrip("+")
        if word in _SHAPES:
            parts.append(Part("shape", word, repeated=repeated))
        elif "|" in word:
            parts.append(Part("choice", word, tuple(word.split("|")), repeated))
        elif word.isupper():
            raise ValueError(f"unknown shape {word!r} in form {text!r}")
        else:
            parts.append(Part("literal", word, repeated=repeated))
    return Form(text, tuple(parts))


@dataclass(frozen=True)
class Resolution:
    """The outcome of fitting values to the forms of one statement."""

    form: Form | None
    """The form that fits (None when none does)."""
    intended: Form | None = None
    """When nothing fits: the form whose literal words were all written, if any."""
    bad_choices: tuple[tuple[ast.Value, Part], ...] = ()
    """When the only problem is a word outside its choices."""


def resolve(values: Sequence[ast.Value], texts: Sequence[str]) -> Resolution:
    """Find the form that ``values`` fit; else explain the closest miss."""
    texts = tuple(texts)
    words = _words(texts)
    key = (texts, _shapes(values, words))
    try:
        fitting = _FITTING[key]
    except KeyError:
        fits = (Resolution(candidate) for candidate in map(form, texts) if candidate.match(values).ok)
        fitting = next(fits, None)
        if len(_FITTING) >= _FITTING_SIZE:
            _FITTING.clear()
        _FITTING[key] = fitting
    if fitting is not None:
        return fitting
    matches = [(candidate, candidate.match(values)) for candidate in map(form, texts)]
    for candidate, result in matches:
        if result.keyword and not result.fits:
            return Resolution(None, intended=candidate)
    for _candidate, result in matches:
        if result.fits:
            return Resolution(None, bad_choices=result.bad_choices)
    return Resolution(None)


# Which form fits depends only on each value's shape and, for a name, on whether it is one of the
# forms' words: values that look alike resolve alike, so a large file matches each look once.

Shape = type | tuple[type, type] | str
"""A value's node type (a number's with its Python type), or a name's text when it is one of the words."""

_FITTING: dict[tuple[tuple[str, ...], tuple[Shape, ...]], Resolution | None] = {}
"""(forms, shapes of the values) → the resolution to the first form they fit, None when none does."""
_FITTING_SIZE = 4096


def _shapes(values: Sequence[ast.Value], words: frozenset[str]) -> tuple[Shape, ...]:
    """Each value's shape (one loop, not a call per value: every statement of a policy is looked up)."""
    shapes: list[Shape] = []
    for value in values:
        if isinstance(value, ast.Name):
            shapes.append(value.value if value.value in words else ast.Name)
        elif isinstance(value, ast.Number):
            shapes.append((ast.Number, type(value.value)))
        else:
            shapes.append(type(value))
    return tuple(shapes)


@cache
def _words(texts: tuple[str, ...]) -> frozenset[str]:
    """Every literal word and choice of the forms: the only names that forms tell apart."""
    return frozenset(word for text in texts for part in form(text).parts if part.kind != "shape"
                     for word in (part.choices or (part.text,)))


def usage(name: str, texts: Sequence[str], block: bool = False) -> str:
    """``warn INT`` / ``check command STRING or check python|json|toml|yaml``."""
    suffix = " { … }" if block else ""
    return " or ".join(f"{name} {t}".rstrip() + suffix for t in texts)


def values_span_text(values: Sequence[ast.Value]) -> str:
    """The kinds of the given values, for messages (``a name and a number``)."""
    words = [_KIND_WORDS[v.kind] for v in values]
    if not words:
        return "no value"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


_KIND_WORDS = {
    "name": "a name",
    "string": "a string",
    "regex": "a /regex/",
    "number": "a number",
    "size": "a size",
    "range": "a range",
    "pair": "a key=value pair",
    "json": "a JSON literal",
}
