"""One parsed file → its declarations, checked against the schema.

Everything that can be judged from the file alone is reported here: unknown
declarations (E101) and settings (E102), wrong values (E103, E107, E501), a
name declared twice (E105), a setting given twice (E106).  What needs the
whole composed policy (required settings, hints, thresholds…) is the
compiler's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from policy.language import ast
from policy.language.collector import DiagnosticCollector, did_you_mean, join_help, quoted_list
from policy.language.schema import DECLARATIONS, LOOP_LAYERS, VALIDATORS
from policy.language.spec import Spec
from policy.language.value_forms import Part, Resolution, form, resolve, usage, values_span_text
from policy.model.diagnostics import Span


@dataclass(frozen=True, slots=True)
class Setting:
    """A validated setting and, when it has a block, its validated settings."""

    statement: ast.Statement
    settings: Mapping[str, Setting] = field(default_factory=dict)


_NO_SETTINGS: Mapping[str, Setting] = MappingProxyType({})
"""The settings of a setting without a block: one shared empty mapping, not a dict each."""


@dataclass
class Declaration:
    """A named declaration (``gate python { … }``) with its settings by slot key."""

    kind: str
    name: str
    header: ast.Statement
    settings: dict[str, Setting]
    broken: frozenset[str] = frozenset()
    """Slot keys of settings that were written but had errors (already reported)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)

    @property
    def file(self) -> str:
        return self.header.lines.path

    @property
    def head_span(self) -> Span:
        """``gate python``: the keyword and the name, without the block."""
        header = self.header
        return spanning(header.name_span, header.values[0].span) if header.values else header.name_span


@dataclass
class FileDeclarations:
    """What one file declares, in file order."""

    extends: list[ast.Statement] = field(default_factory=list)
    disables: list[ast.Statement] = field(default_factory=list)
    normalizers: list[ast.Statement] = field(default_factory=list)
    declarations: dict[tuple[str, str], Declaration] = field(default_factory=dict)


def read_declarations(policy_file: ast.PolicyFile, report: DiagnosticCollector) -> FileDeclarations:
    """Check a file's statements against the schema and collect its declarations."""
    result = FileDeclarations()
    for statement in split_run_on_lines(policy_file.statements, DECLARATIONS, report):
        spec = DECLARATIONS.get(statement.name)
        if spec is None:
            report.unknown("E101", "declaration", statement.name, statement.name_span, DECLARATIONS)
            continue
        if not check_statement(statement, spec, DECLARATIONS, report):
            continue
        if spec.name == "extends":
            result.extends.append(statement)
        elif spec.name == "disable":
            result.disables.append(statement)
        elif spec.name == "normalize":
            result.normalizers.append(statement)
        else:
            declaration = _declaration(statement, spec, report)
            if declaration is not None:
                _add_declaration(result.declarations, declaration, report)
    return result


def declaration_name(statement: ast.Statement) -> str:
    """The name a declaration header gives (``policy`` headers have none: one per file)."""
    if statement.name == "policy" or not statement.values:
        return ""
    first = statement.values[0]
    return first.value if isinstance(first, (ast.Name, ast.String)) else ""


def _declaration(statement: ast.Statement, spec: Spec, report: DiagnosticCollector) -> Declaration | None:
    name = declaration_name(statement)
    settings_spec = spec.block
    if spec.variants:
        settings_spec = spec.variants.get(name)
        if settings_spec is None:
            report.add(
                "E101",
                f"unknown loop layer `{name}`",
                statement.values[0].span,
                join_help(did_you_mean(name, LOOP_LAYERS), f"loop layers: {quoted_list(LOOP_LAYERS)}"),
            )
            return None
    settings: dict[str, Setting] = {}
    broken: set[str] = set()
    if statement.block is not None and settings_spec is not None and not spec.steps:
        settings, broken = read_block(statement.block, settings_spec, report)
    return Declaration(spec.name, name, statement, settings, frozenset(broken) if broken else _NONE_BROKEN)


_NONE_BROKEN: frozenset[str] = frozenset()


def _add_declaration(
    declarations: dict[tuple[str, str], Declaration], declaration: Declaration, report: DiagnosticCollector
) -> None:
    first = declarations.get(declaration.key)
    if first is None:
        declarations[declaration.key] = declaration
        return
    header = declaration.header
    where = header.values[0].span if header.values and declaration.kind != "policy" else header.name_span
    what = (
        "a second `policy` header"
        if declaration.kind == "policy"
        else (f"{declaration.kind} `{declaration.name}` declared twice")
    )
    report.add(
        "E105",
        what,
        where,
        f"first declared at line {first.header.span.line}"
        + ("; a file has at most one `policy` header" if declaration.kind == "policy" else ""),
    )


def read_block(
    block: ast.Block, specs: Mapping[str, Spec], report: DiagnosticCollector
) -> tuple[dict[str, Setting], set[str]]:
    """Validate a block's settings; returns them by slot key, and the keys of broken ones."""
    settings: dict[str, Setting] = {}
    firsts: dict[str, ast.Statement] = {}
    broken: set[str] = set()
    for statement in split_run_on_lines(block.statements, specs, report):
        spec = specs.get(statement.name)
        if spec is None:
            report.unknown("E102", "setting", statement.name, statement.name_span, specs)
            continue
        key = spec.slot_key
        if spec.keyed and statement.values:
            key = f"{spec.name} {declaration_name(statement)}"
        first = firsts.get(key)
        if first is not None:
            _report_twice(statement, first, spec, report)
            continue
        firsts[key] = statement
        if not check_statement(statement, spec, specs, report):
            broken.add(key)
            continue
        nested: Mapping[str, Setting] = _NO_SETTINGS
        if spec.block is not None and statement.block is not None:
            nested, nested_broken = read_block(statement.block, spec.block, report)
            if nested_broken:
                broken.add(key)
        settings[key] = Setting(statement, nested)
    return settings, broken


def _report_twice(
    statement: ast.Statement, first: ast.Statement, spec: Spec, report: DiagnosticCollector
) -> None:
    if statement.name != first.name and spec.slot:
        report.add(
            "E106",
            f"`{statement.name}` conflicts with `{first.name}` on line {first.span.line}",
            statement.name_span,
            f"give only one of them ({spec.slot})",
        )
        return
    label = f"`{statement.name} {declaration_name(statement)}`" if spec.keyed else f"`{statement.name}`"
    report.add(
        "E106",
        f"{label} given twice",
        statement.name_span,
        f"first given at line {first.span.line}; remove one of them",
    )


# --- values ------------------------------------------------------------------


def check_statement(
    statement: ast.Statement, spec: Spec, siblings: Mapping[str, Spec], report: DiagnosticCollector
) -> bool:
    """Check one statement's values and block against its spec; report and return False when wrong."""
    resolution = resolve(statement.values, spec.forms)
    if resolution.form is None:
        _report_values(statement, spec, siblings, resolution, report)
        return False
    if statement.block is not None and spec.block is None:
        report.add(
            "E103",
            f"`{statement.name}` takes no `{{ … }}` block",
            statement.block.span,
            f"expected: {usage(statement.name, spec.forms)}",
        )
        return False
    if statement.block is None and spec.block_required:
        report.add(
            "E103",
            f"`{statement.name}` needs a `{{ … }}` block",
            statement.name_span,
            f"expected: {usage(statement.name, spec.forms, block=True)}",
        )
        return False
    return True


def _report_values(
    statement: ast.Statement,
    spec: Spec,
    siblings: Mapping[str, Spec],
    resolution: Resolution,
    report: DiagnosticCollector,
) -> None:
    if resolution.bad_choices:
        for value, part in resolution.bad_choices:
            _report_choice(statement, value, part, spec, report)
        return
    run_on = [v.value for v in statement.values if isinstance(v, ast.Name) and v.value in siblings]
    hint_run_on = None
    if run_on:
        hint_run_on = f"`{run_on[0]}` starts another statement: end each statement with `;` or a newline"
    forms = (resolution.intended.text,) if resolution.intended else spec.forms
    expected = usage(statement.name, forms, block=spec.block_required)
    report.add(
        "E103",
        f"wrong values for `{statement.name}`: got {values_span_text(statement.values)}",
        _values_span(statement),
        join_help(f"expected: {expected}", hint_run_on),
    )


def _report_choice(
    statement: ast.Statement, value: ast.Value, part: Part, spec: Spec, report: DiagnosticCollector
) -> None:
    word = value.value if isinstance(value, ast.Name) else ""
    if spec.choice_code == "E501":
        report.add(
            "E501",
            f"unknown validator `{word}`",
            value.span,
            join_help(
                did_you_mean(word, VALIDATORS),
                f'validators: {quoted_list(VALIDATORS)}, or `command "CMD {{file}}"`',
            ),
        )
        return
    keywords = {p.text for text in spec.forms for p in form(text).parts if p.kind == "literal"}
    report.add(
        spec.choice_code,
        f"invalid value `{word}` for `{statement.name}`",
        value.span,
        join_help(
            did_you_mean(word, [*part.choices, *keywords]), f"expected one of: {quoted_list(part.choices)}"
        ),
    )


def _values_span(statement: ast.Statement) -> Span:
    if not statement.values:
        return statement.name_span
    return spanning(statement.values[0].span, statement.values[-1].span)


def spanning(first: Span, last: Span) -> Span:
    """The span from the start of ``first`` to the end of ``last``."""
    return Span(
        file=first.file,
        line=first.line,
        column=first.column,
        end_line=last.end_line,
        end_column=last.end_column,
        start=first.start,
        end=last.end,
    )


# --- several statements on one line -----------------------------------------


def split_run_on_lines(
    statements: Sequence[ast.Statement], specs: Mapping[str, Spec], report: DiagnosticCollector
) -> list[ast.Statement]:
    """The statements, with run-on lines (``window 20 warn 3``) reported once and split apart."""
    result: list[ast.Statement] = []
    for statement in statements:
        for value in statement.values:  # only a bare word naming a statement can start a run-on
            if isinstance(value, ast.Name) and value.value in specs:
                pieces = _split_run_on(statement, specs)
                break
        else:
            pieces = None
        if pieces is None:
            result.append(statement)
            continue
        names = quoted_list(p.name for p in pieces)
        spec = specs[statement.name]
        quote = (
            f'; to use `{pieces[1].name}` as a value, quote it: "{pieces[1].name}"'
            if _fits(statement.values, spec)
            else ""
        )
        report.add(
            "E103",
            f"several statements on one line: {names}",
            statement.span,
            "end each statement with `;` or a newline" + quote,
        )
        result.extend(pieces)
    return result


def _split_run_on(statement: ast.Statement, specs: Mapping[str, Spec]) -> list[ast.Statement] | None:
    """Split at bare words naming sibling statements, when every piece is a valid statement.

    ``tools bash hint h`` splits (``tools bash`` and ``hint h`` both fit);
    ``ignore key`` does not (``key`` alone is not a valid statement).
    """
    if statement.name not in specs:
        return None
    starts = [i for i, v in enumerate(statement.values) if isinstance(v, ast.Name) and v.value in specs]
    if not starts:
        return None
    bounds = [*starts, len(statement.values)]
    lines = statement.lines
    first_end = statement.values[starts[0] - 1].end if starts[0] else statement.start + len(statement.name)
    pieces = [
        ast.Statement(lines=lines, start=statement.start, end=first_end, name=statement.name,
                      values=statement.values[: starts[0]], block=None)
    ]
    for index, start in enumerate(starts):
        head = statement.values[start]
        assert isinstance(head, ast.Name)
        rest = statement.values[start + 1 : bounds[index + 1]]
        pieces.append(
            ast.Statement(lines=lines, start=head.start, end=rest[-1].end if rest else head.end,
                          name=head.value, values=rest, block=None)
        )
    last = pieces[-1]
    pieces[-1] = replace(last, block=statement.block)
    for piece in pieces:
        piece_spec = specs[piece.name]
        if not _fits(piece.values, piece_spec):
            return None
        if piece_spec.block_required and piece.block is None:
            return None
    return pieces


def _fits(values: Sequence[ast.Value], spec: Spec) -> bool:
    resolution = resolve(values, spec.forms)
    return resolution.form is not None or bool(resolution.bad_choices)
