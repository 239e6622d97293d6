"""A checked declaration's settings read as plain values: the first value, an integer, a word, names.

The compiler's steps (``policy.language.compiler``) and the loop kinds
(``policy.language.loops``) read settings the checker has validated, so a
value has the form its spec allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from policy.language import ast
from policy.model.diagnostics import Span

if TYPE_CHECKING:
    from policy.language.checker import Setting


def first_value(settings: Mapping[str, Setting], key: str) -> ast.Value | None:
    """The first value of a setting, or None when the setting is absent."""
    setting = settings.get(key)
    if setting is None or not setting.statement.values:
        return None
    return setting.statement.values[0]


def int_value(settings: Mapping[str, Setting], key: str) -> tuple[int, Span] | None:
    value = first_value(settings, key)
    if isinstance(value, ast.Number) and isinstance(value.value, int):
        return value.value, value.span
    return None


def word(settings: Mapping[str, Setting], key: str, default: str) -> str:
    """A setting's first value as a word (``partial allow`` → ``allow``), or ``default``."""
    value = first_value(settings, key)
    return value.value if isinstance(value, (ast.Name, ast.String)) else default


def names(settings: Mapping[str, Setting], key: str) -> tuple[str, ...] | None:
    """A setting's values as names (``tools bash python``), or None when the setting is absent."""
    setting = settings.get(key)
    if setting is None:
        return None
    return tuple(v.value for v in setting.statement.values if isinstance(v, (ast.Name, ast.String)))
