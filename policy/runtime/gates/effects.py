"""The file a write or edit call would leave behind, computed before the call runs.

Arguments come from a model and may be malformed: a missing path, content
that is not a string, ``"true"`` for a boolean.  Nothing here raises for
them; a call that cannot be understood has no effect (None) and is left to
the tool, which reports the problem itself.  A text past the policy's
``max_check_bytes`` — the file, the content, any edit's result — raises
``TooLarge`` before it is read or built (``policy.runtime.gates.bounds``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy.model.compiled import ToolSpec
from policy.runtime.gates.bounds import DEFAULT_MAX_CHECK_BYTES, MAX_EDITS, TooLarge, check_size, text_bytes

ReadFile = Callable[[str], str | None]

_FLAG_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False,
               "0": False, "": False}


@dataclass(frozen=True)
class FileEffect:
    """``path`` before (None: missing) and after the call.

    ``gate_path`` is the name the gates match when it is not ``path``: a
    notebook cell is checked as a file of its language (``nb.ipynb#cell.py``).
    """

    path: str
    before: str | None
    after: str
    gate_path: str | None = None

    @property
    def changes_file(self) -> bool:
        return self.after != self.before


def file_effect(spec: ToolSpec, args: Mapping[str, Any], read_file: ReadFile,
                limit: int = DEFAULT_MAX_CHECK_BYTES) -> FileEffect | None:
    """The effect of a ``writes``/``edits``/``multiedits`` tool's call; None for other tools or a call
    that cannot be understood (or, for an edit, whose old text is absent or whose file is missing).

    An edit whose first old text is empty creates a missing (or empty) file with its new
    text, as Claude Code's ``Edit`` and ``MultiEdit`` do; on a file with content, tools
    disagree about what an empty old text means, so that call is left to the tool.
    """
    path = _path(spec.arg("path", args))
    if path is None:
        return None
    if spec.role == "write":
        return _write(spec, args, path, read_file, limit)
    if spec.role == "edit":
        edit = _replacement(args, spec.args)
        return _apply(path, [edit] if edit else [], read_file, limit)
    if spec.role == "multiedit":
        edits = _replacements(spec.arg("edits", args), spec.args)
        if len(edits) > MAX_EDITS:
            raise TooLarge(f"the call makes {len(edits)} edits, more than {MAX_EDITS}")
        return _apply(path, edits, read_file, limit)
    if spec.role == "notebookedit":
        return _notebook_cell(spec, args, path, read_file, limit)
    return None


@dataclass(frozen=True)
class UnreadEffect:
    """What a write or edit that no gate checks does, judged from its arguments alone: its file is
    not read.  ``changes`` is None for an overwrite, which changes the file unless it writes the
    content (``digest``) the last such write to the path left."""

    path: str
    changes: bool | None
    digest: str | None = None


def unread_effect(spec: ToolSpec, args: Mapping[str, Any]) -> UnreadEffect | None:
    """The :class:`UnreadEffect` of a ``writes``/``edits``/``multiedits``/``notebookedit`` call; None
    for a call that cannot be understood (left to the tool)."""
    path = _path(spec.arg("path", args))
    if path is None:
        return None
    if spec.role == "write":
        content, append = spec.arg("content", args), flag(spec.arg("append", args))
        if not isinstance(content, str) or append is None:
            return None
        if append:
            return UnreadEffect(path, changes=content != "")
        digest = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        return UnreadEffect(path, changes=None, digest=digest)
    if spec.role == "notebookedit":
        return UnreadEffect(path, changes=True)
    if spec.role == "edit":
        edit = _replacement(args, spec.args)
        edits = [edit] if edit else []
    elif spec.role == "multiedit":
        edits = _replacements(spec.arg("edits", args), spec.args)
    else:
        return None
    return UnreadEffect(path, changes=any(old != new for old, new, _ in edits)) if edits else None


def bounded_effect(spec: ToolSpec, args: Mapping[str, Any], read_file: ReadFile,
                   limit: int) -> FileEffect | TooLarge | None:
    """:func:`file_effect`, with a bound exceeded given back as the ``TooLarge`` it raised."""
    try:
        return file_effect(spec, args, read_file, limit)
    except TooLarge as err:
        return err


def _notebook_cell(spec: ToolSpec, args: Mapping[str, Any], path: str,
                   read_file: ReadFile, limit: int) -> FileEffect | None:
    """The cell a notebook edit leaves: its new source, checked as a file of the notebook's
    language (``metadata.language_info``, else the kernel's; Python by default).

    Markdown cells and deleted cells have nothing to check.  IPython's line magics and shell
    escapes (``%matplotlib``, ``!pip``) read as ``pass``, and a cell magic (``%%bash``) is not
    checked: they are not the language's syntax.  A notebook that is missing or not JSON, or a
    cell id it does not have, is left to the tool (it reports the problem itself).
    """
    source, mode = spec.arg("source", args), spec.arg("mode", args) or "replace"
    notebook = _json_object(_read(read_file, path, limit))
    cells = notebook.get("cells") if notebook is not None else None
    if not isinstance(source, str) or mode not in ("replace", "insert") or not isinstance(cells, list):
        return None
    cell_id = spec.arg("cell", args)
    index = _cell_index(cells, cell_id) if isinstance(cell_id, str) and cell_id else None
    if mode == "replace" and index is None:
        return None
    old = cells[index] if mode == "replace" and index is not None and isinstance(cells[index], dict) else {}
    kind = spec.arg("type", args) or old.get("cell_type") or "code"
    if kind != "code" or source.lstrip().startswith("%%"):
        return None
    before = old.get("source") if mode == "replace" else None
    before = "".join(before) if isinstance(before, list) else before if isinstance(before, str) else None
    label = cell_id if mode == "replace" else f"new cell after {cell_id}" if cell_id else "new first cell"
    return FileEffect(f"{path} (cell {label})", before, _without_magics(source),
                      gate_path=f"{path}#cell{_extension(notebook or {})}")


def _json_object(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _cell_index(cells: list[Any], cell_id: str) -> int | None:
    """The cell with this id; ids of the form ``cell-N`` (or ``N``) also name the N-th cell of a
    notebook whose cells carry no ids (nbformat before 4.5), as Claude Code reads them."""
    for index, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("id") == cell_id:
            return index
    number = cell_id.removeprefix("cell-")
    if number.isdigit() and int(number) < len(cells):
        return int(number)
    return None


def _extension(notebook: Mapping[str, Any]) -> str:
    metadata = notebook.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    info = metadata.get("language_info")
    info = info if isinstance(info, dict) else {}
    extension = info.get("file_extension")
    if isinstance(extension, str) and extension.startswith(".") and len(extension) <= 10:
        return extension
    kernel = metadata.get("kernelspec")
    language = info.get("name") or (kernel.get("language") if isinstance(kernel, dict) else None) or "python"
    return _LANGUAGE_EXTENSIONS.get(str(language).lower(), f".{language}")


_LANGUAGE_EXTENSIONS = {"python": ".py", "python3": ".py", "json": ".json", "r": ".r", "julia": ".jl"}


def _without_magics(source: str) -> str:
    """IPython's ``%magic`` and ``!shell`` lines as ``pass`` (same indentation, same line numbers)."""
    lines = source.split("\n")
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            lines[number] = line[: len(line) - len(stripped)] + "pass"
    return "\n".join(lines)


def _write(spec: ToolSpec, args: Mapping[str, Any], path: str, read_file: ReadFile,
           limit: int) -> FileEffect | None:
    """``write_file(path, content, append=False)``: a missing file appends to empty text."""
    content = spec.arg("content", args)
    append = flag(spec.arg("append", args))
    if not isinstance(content, str) or append is None:
        return None
    check_size(content, limit, "the content")
    before = _read(read_file, path, limit)
    if not append:
        return FileEffect(path, before, content)
    return FileEffect(path, before, check_size((before or "") + content, limit, "the appended file"))


Replacement = tuple[str, str, bool]


def _replacement(item: Mapping[str, Any], names: Mapping[str, str]) -> Replacement | None:
    """``(old, new, all)`` from the arguments (or one item of a multi-edit) named by the role fields."""
    old, new = item.get(names.get("old", "")), item.get(names.get("new", ""))
    every = flag(item.get(names.get("all", "")))
    if not isinstance(old, str) or not isinstance(new, str) or every is None:
        return None
    return old, new, every


def _replacements(raw: Any, names: Mapping[str, str]) -> list[Replacement]:
    """Every edit of a multi-edit, in order; empty when any one cannot be understood."""
    items = _json_list(raw)
    edits = [_replacement(item, names) if isinstance(item, Mapping) else None for item in items]
    return [edit for edit in edits if edit is not None] if all(edits) else []


def _json_list(raw: Any) -> Sequence[Any]:
    """A list argument, also when the model sent it as a JSON string."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    return raw if isinstance(raw, list | tuple) else []


def _apply(path: str, edits: list[Replacement], read_file: ReadFile, limit: int) -> FileEffect | None:
    if not edits:
        return None
    before = _read(read_file, path, limit)
    creates = edits[0][0] == ""
    if (before is None and not creates) or (creates and before):
        return None
    after = before or ""
    for index, (old, new, every) in enumerate(edits):
        if not old:
            if index:  # only the first edit can create the file
                return None
            after = check_size(new, limit, "the new text")
            continue
        spliced = splice(after, old, new, every, limit)
        if spliced is None:
            return None
        after = spliced
    return FileEffect(path, before, after)


def splice(text: str, old: str, new: str, every: bool, limit: int = DEFAULT_MAX_CHECK_BYTES) -> str | None:
    """Replace the first (or every) ``old`` with ``new``, their line endings matched to the text's first.

    None when ``old`` does not occur.  Raises ``TooLarge``, without building it,
    when the result would be larger than ``limit`` bytes.
    """
    crlf = _uses_crlf(text)
    for old_form, new_form in ((_line_endings(old, crlf), _line_endings(new, crlf)), (old, new)):
        if old_form in text:
            count = text.count(old_form) if every else 1
            growth = text_bytes(new_form) - text_bytes(old_form)
            if growth > 0 and text_bytes(text) + count * growth > limit:
                raise TooLarge(f"the edited file would be larger than max_check_bytes ({limit} bytes)")
            return text.replace(old_form, new_form) if every else text.replace(old_form, new_form, 1)
    return None


def _uses_crlf(text: str) -> bool:
    """Most line breaks are CRLF."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 >= text.count("\n")


def _line_endings(fragment: str, crlf: bool) -> str:
    lf = fragment.replace("\r\n", "\n")
    return lf.replace("\n", "\r\n") if crlf else lf


def _path(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def flag(value: Any) -> bool | None:
    """A boolean argument: missing is false; ``"true"``/``"false"``, 1/0 are understood; None otherwise."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _FLAG_WORDS.get(value.strip().lower())
    return None


def _read(read_file: ReadFile, path: str, limit: int) -> str | None:
    """The current text; bytes are decoded (UTF-8, undecodable bytes kept as surrogates)."""
    current: Any = read_file(path)
    if isinstance(current, bytes):
        if len(current) > limit:
            raise TooLarge(f"{path} is larger than max_check_bytes ({limit} bytes)")
        current = current.decode("utf-8", "surrogateescape")
    return check_size(current, limit, path) if isinstance(current, str) else None
