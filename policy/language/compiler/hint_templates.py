"""``hint NAME "…"``, triple-quoted or ``file "x.j2"``: load and compile every hint template.

A template file is looked up in the ``hints/`` folder beside the policy file
that declares it, then in the shipped ``hints/`` folder; one that resolves
(``..``, a symlink) outside the policy's folder tree is refused (E604).  A Jinja2 syntax
error (E303) points at the offending line: in the policy file for an inline
template, in the template file otherwise.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import TemplateError, TemplateSyntaxError

from policy.language import ast
from policy.language.checker import Declaration
from policy.language.compiler.context import Context
from policy.model.diagnostics import Span
from policy.model.hint_template import compile_hint
from policy.resources import data_dir

MAX_TEMPLATE_BYTES = 256 * 1024
"""The largest hint file read (a hint renders to at most 16,384 characters)."""


def compile_hints(ctx: Context) -> None:
    """Compile every declared hint into ``ctx.hints`` (failures into ``ctx.broken_hints``)."""
    for declaration in ctx.declarations("hint"):
        loaded = _load_source(ctx, declaration)
        if loaded is None:
            ctx.broken_hints.add(declaration.name)
            continue
        source, locate = loaded
        try:
            ctx.hints[declaration.name] = compile_hint(declaration.name, source, span=declaration.header.span)
        except TemplateSyntaxError as err:
            ctx.report.add(
                "E303",
                f"template syntax error in hint `{declaration.name}`: {err.message}",
                locate(err.lineno),
                "see https://jinja.palletsprojects.com/templates/",
            )
            ctx.broken_hints.add(declaration.name)
        except (TemplateError, RecursionError) as err:
            ctx.report.add("E303", f"template error in hint `{declaration.name}`: {err}", locate(1))
            ctx.broken_hints.add(declaration.name)


class _Locator:
    """Maps a template line number to a span in the file that holds the template text: a template
    file's, or the policy's for an inline template (``inline``, located only when asked)."""

    def __init__(self, file: str, text: str, inline: ast.String | None = None) -> None:
        self.file = file
        self.text = text
        self.inline = inline

    def __call__(self, template_line: int | None) -> Span:
        first_line = 1
        if self.inline is not None:
            span = self.inline.span
            if not self.inline.triple:
                return span
            opening = span.start + 3
            first_line = span.line + (self.text[opening : opening + 1] in ("\n", "\r"))
        return line_span(self.file, self.text, first_line + max(template_line or 1, 1) - 1)


def _load_source(ctx: Context, declaration: Declaration) -> tuple[str, _Locator] | None:
    values = declaration.header.values
    node = values[-1]
    assert isinstance(node, ast.String)
    policy_file = declaration.file
    if len(values) == 2:
        return node.value, _Locator(policy_file, ctx.composition.texts.get(policy_file, ""), node)
    return _load_file(ctx, declaration.name, node, policy_file)


def _load_file(ctx: Context, name: str, node: ast.String, policy_file: str) -> tuple[str, _Locator] | None:
    shipped = data_dir("hints")
    folders = [Path(policy_file).parent / "hints", shipped]
    for folder in folders:
        path = folder / node.value
        if not path.is_file():
            continue
        tree = folder.parent if folder != shipped else shipped
        if not ctx.composition.may_read(path, tree):
            ctx.report.add("E604", f"hint file `{node.value}` is outside `{tree}`: it was not read",
                           node.span,
                           "a hint file lies in the folder tree of the policy that names it; "
                           "`--allow-path DIR` allows more")
            return None
        shown = str(path)
        try:
            if path.stat().st_size > MAX_TEMPLATE_BYTES:
                message = f"hint file `{node.value}` is larger than {MAX_TEMPLATE_BYTES // 1024} KiB"
                ctx.report.add("E304", message + ": it was not read", node.span,
                               "a hint is a few lines of advice")
                return None
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            ctx.report.add("E304", f"cannot read hint file `{node.value}`: {err}", node.span)
            return None
        ctx.composition.texts[shown] = text
        return text, _Locator(shown, text)
    own = folders[0]
    searched = "the shipped hints" if own == shipped else f"`{own}`, then the shipped hints"
    ctx.report.add(
        "E304", f"hint file `{node.value}` not found for hint `{name}`", node.span, f"looked in {searched}"
    )
    return None


def line_span(file: str, text: str, line: int) -> Span:
    """The span of a line's text, without its indentation (line 1 of an empty text is fine)."""
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    start = sum(len(lines[i]) + 1 for i in range(line - 1))
    content = lines[line - 1].rstrip("\r")
    indent = len(content) - len(content.lstrip())
    end_column = len(content) + 1
    return Span(
        file=file,
        line=line,
        column=indent + 1,
        end_line=line,
        end_column=end_column,
        start=start + indent,
        end=start + end_column - 1,
    )
