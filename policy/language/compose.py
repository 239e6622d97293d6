"""``extends`` and ``disable``: load a policy file with its bases and merge them.

A file's result is its bases, merged in the order of its ``extends``
statements, minus what it disables, overlaid with its own declarations (so
``disable loop repeat`` followed by a fresh ``loop repeat { … }`` replaces
the base's rule whole instead of merging into it).
Overlaying merges block by block: a declaration of the same kind and name
keeps the base's settings except those the overlay gives (a ``hint`` or a
``test`` is replaced whole); new declarations are appended; normalizers
accumulate.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from policy.language import ast
from policy.language.checker import Declaration, FileDeclarations, read_declarations
from policy.language.collector import DiagnosticCollector, did_you_mean, join_help, quoted_list
from policy.language.parser import decode_policy, parse
from policy.model.diagnostics import Span
from policy.resources import builtin_policy_names, builtin_policy_path

BUILTIN_PREFIX = "builtin:"
POLICY_SUFFIX = ".policy"
MAX_EXTENDS_DEPTH = 32
"""The longest chain of ``extends`` (a file, its base, that one's base …)."""
MAX_POLICY_BYTES = 64 * 2**20
"""Larger files are refused unread (a policy is a few kilobytes; this guards against devices and dumps)."""


@dataclass
class Composition:
    """The merged declarations of a policy file and everything it extends."""

    root: str
    """The path of the file asked for, as diagnostics show it."""
    declarations: dict[tuple[str, str], Declaration] = field(default_factory=dict)
    normalizers: list[ast.Statement] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    """Every policy file read, bases first."""
    texts: dict[str, str] = field(default_factory=dict)
    """The text of every file read, by path (diagnostics show their lines)."""
    complete: bool = True
    """False when a file could not be read or parsed: the merged view has gaps."""
    allowed: tuple[Path, ...] = ()
    """Folders (resolved) whose files ``extends`` and ``hint … file`` may name besides the naming
    file's own folder tree."""

    def may_read(self, path: Path, tree: Path) -> bool:
        """Whether ``path`` (symlinks resolved) lies inside ``tree`` or an allowed folder."""
        real = _identity(path)
        return any(real.is_relative_to(folder) for folder in (_identity(tree), *self.allowed))


@dataclass
class _Layer:
    declarations: dict[tuple[str, str], Declaration] = field(default_factory=dict)
    normalizers: list[ast.Statement] = field(default_factory=list)

    def overlay(self, top: _Layer) -> None:
        for key, declaration in top.declarations.items():
            base = self.declarations.get(key)
            self.declarations[key] = declaration if base is None else _merge(base, declaration)
        seen = {(n.span.file, n.span.start) for n in self.normalizers}
        self.normalizers.extend(n for n in top.normalizers if (n.span.file, n.span.start) not in seen)


def _merge(base: Declaration, top: Declaration) -> Declaration:
    settings = {**base.settings, **top.settings}
    broken = (base.broken - top.settings.keys()) | top.broken
    return Declaration(top.kind, top.name, top.header, settings, broken)


def resolve_target(target: str) -> tuple[Path | None, str]:
    """The file a target names (None for an unknown ``builtin:``) and the path diagnostics show."""
    if target.startswith(BUILTIN_PREFIX):
        name = target[len(BUILTIN_PREFIX) :]
        if name not in builtin_policy_names():
            return None, target
        path = builtin_policy_path(name)
        return path, str(path)
    return Path(target), target


def compose(target: str, report: DiagnosticCollector, *,
            allow_paths: Iterable[str | PathLike[str]] = ()) -> Composition:
    """Load ``target`` (a path or ``builtin:NAME``) with its bases, reporting what goes wrong.

    ``extends`` and ``hint … file`` read only files inside the folder tree of
    the file that names them, or inside one of ``allow_paths``.
    """
    path, shown = resolve_target(target)
    composition = Composition(root=shown, allowed=tuple(_identity(Path(p)) for p in allow_paths))
    start = Span(file=shown, line=1, column=1, end_line=1, end_column=1)
    if path is None:
        _report_unknown_builtin(target, start, report)
        composition.complete = False
        return composition
    layer = _Composer(composition, report).load(path, shown, start, ())
    if layer is not None:
        composition.declarations = layer.declarations
        composition.normalizers = layer.normalizers
    return composition


class _Composer:
    """Loads each file once and merges each file's bases once (a diamond of bases is not re-merged)."""

    def __init__(self, composition: Composition, report: DiagnosticCollector) -> None:
        self.composition = composition
        self.report = report
        self.files: dict[Path, FileDeclarations | None] = {}
        self.layers: dict[Path, _Layer | None] = {}

    def load(self, path: Path, shown: str, cause: Span, stack: tuple[Path, ...]) -> _Layer | None:
        identity = _identity(path)
        if identity in stack:
            cycle = " → ".join([*(p.name for p in stack[stack.index(identity) :]), identity.name])
            self.report.add("E602", f"extends cycle: {cycle}", cause, "a policy cannot extend itself")
            self.composition.complete = False
            return None
        if len(stack) >= MAX_EXTENDS_DEPTH:
            self.report.add("E605", f"`extends` chain deeper than {MAX_EXTENDS_DEPTH} files", cause,
                            "flatten the chain: a policy may extend several bases")
            self.composition.complete = False
            return None
        if identity not in self.layers:
            self.layers[identity] = self._layer(path, identity, shown, cause, stack)
        return self.layers[identity]

    def _layer(self, path: Path, identity: Path, shown: str, cause: Span,
               stack: tuple[Path, ...]) -> _Layer | None:
        declarations = self._read(path, identity, shown, cause, extended=bool(stack))
        if declarations is None:
            return None
        layer = _Layer()
        for statement in declarations.extends:
            base = self._load_extends(statement, shown, (*stack, identity))
            if base is not None:
                layer.overlay(base)
        if shown not in self.composition.sources:
            self.composition.sources.append(shown)
        for statement in declarations.disables:
            self._disable(layer, statement)
        layer.overlay(_Layer(dict(declarations.declarations), list(declarations.normalizers)))
        return layer

    def _load_extends(self, statement: ast.Statement, parent: str, stack: tuple[Path, ...]) -> _Layer | None:
        value = statement.values[0]
        assert isinstance(value, ast.String)
        target = value.value
        if target.startswith(BUILTIN_PREFIX):
            path, shown = resolve_target(target)
            if path is None:
                _report_unknown_builtin(target, value.span, self.report)
                self.composition.complete = False
                return None
        else:
            shown = os.path.normpath(os.path.join(os.path.dirname(parent), target))
            path = Path(shown)
            if not self._may_read(path, shown, parent, value):
                self.composition.complete = False
                return None
        return self.load(path, shown, value.span, stack)

    def _may_read(self, path: Path, shown: str, parent: str, value: ast.String) -> bool:
        """A base must be a ``.policy`` file inside the folder tree of the file that names it
        (symlinks resolved) or inside an allowed folder; a refusal is reported at ``value``."""
        if path.suffix != POLICY_SUFFIX:
            self.report.add("E601", f"`{value.value}` is not a policy file: it was not read", value.span,
                            f"policy files are named *{POLICY_SUFFIX}")
            return False
        if not self.composition.may_read(path, _identity(Path(parent)).parent):
            self.report.add("E604", f"`{value.value}` is outside the folder of `{parent}`: it was not read",
                            value.span, "a policy extends only files in its folder tree (or builtin:NAME); "
                            "`--allow-path DIR` allows more")
            return False
        return True

    def _read(
        self, path: Path, identity: Path, shown: str, cause: Span, extended: bool
    ) -> FileDeclarations | None:
        if identity in self.files:
            return self.files[identity]
        declarations = None
        data, problem = _read_policy_bytes(path)
        if data is None:
            self.report.add(
                "E601",
                f"cannot read policy `{shown}`: {problem}",
                cause,
                "paths in `extends` are relative to the file that names them" if extended else None,
            )
        else:
            text, diagnostics = decode_policy(data, shown)
            tree = None
            if text is None:  # shown as the E001 excerpt
                self.composition.texts[shown] = data.decode("utf-8", "replace").removeprefix("\ufeff")
            else:
                self.composition.texts[shown] = text
                tree, diagnostics = parse(text, shown)
            self.report.extend(diagnostics)
            if tree is not None:
                declarations = read_declarations(tree, self.report)
        if declarations is None:
            self.composition.complete = False
        self.files[identity] = declarations
        return declarations

    def _disable(self, layer: _Layer, statement: ast.Statement) -> None:
        kind_value, name_value = statement.values
        assert isinstance(kind_value, ast.Name) and isinstance(name_value, (ast.Name, ast.String))
        kind, name = kind_value.value, name_value.value
        if layer.declarations.pop((kind, name), None) is not None:
            return
        present = [n for k, n in layer.declarations if k == kind]
        listing = (
            f"{kind}s of the extended policies: {quoted_list(sorted(present))}"
            if present
            else (f"the extended policies declare no {kind}")
        )
        self.report.add(
            "E603",
            f"cannot disable {kind} `{name}`: the extended policies have no such {kind}",
            name_value.span,
            join_help(did_you_mean(name, present), listing),
        )


def _read_policy_bytes(path: Path) -> tuple[bytes | None, str]:
    """A policy file's bytes, or None and why not (only regular files, at most ``MAX_POLICY_BYTES``)."""
    try:
        if not path.is_file():
            return None, "no such file" if not path.exists() else "not a regular file"
        if path.stat().st_size > MAX_POLICY_BYTES:
            return None, f"larger than {MAX_POLICY_BYTES // 2**20} MiB"
        return path.read_bytes(), ""
    except OSError as err:
        return None, err.strerror or type(err).__name__


def _identity(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _report_unknown_builtin(target: str, span: Span, report: DiagnosticCollector) -> None:
    name = target[len(BUILTIN_PREFIX) :]
    names = builtin_policy_names()
    report.add(
        "E601",
        f"no built-in policy `{name}`",
        span,
        join_help(did_you_mean(name, names), f"built-in policies: {quoted_list(names)}"),
    )
