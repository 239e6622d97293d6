"""The parser tables of the grammar, cached in the user's private cache folder without running code.

Building the LALR tables takes most of a second; loading them takes a few
milliseconds.  Lark's own cache unpickles whatever file it finds, so a
planted file could run code.  Here the tables are Lark's plain serialised
data (dicts, lists, strings, numbers) and are read back by an unpickler that
refuses every class: a file holding anything else is ignored and rebuilt.
The folder is used only when it is the user's own and no one else can write
it (``policy.resources.private_folder``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import pickle
from pathlib import Path
from typing import Any

import lark
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from policy.resources import user_cache_dir

log = logging.getLogger("policy.parser")


class _PlainUnpickler(pickle.Unpickler):
    """Reads containers, strings and numbers only: naming any class or function is an error."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"the grammar cache names {module}.{name}; only plain data is read")


def cached_parser(grammar: str, options: dict[str, Any]) -> Lark:
    """The parser for ``grammar``: from the cache when a valid entry exists, else built (and cached)."""
    path = _cache_path(grammar, options)
    if path is not None:
        loaded = _load(path)
        if loaded is not None:
            return loaded
    parser = Lark(grammar, **options)
    if path is not None:
        _save(path, parser)
    return parser


def _cache_path(grammar: str, options: dict[str, Any]) -> Path | None:
    key = f"{lark.__version__}\0{sorted(options.items())}\0{grammar}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    try:
        return user_cache_dir() / f"grammar-{digest}.tables"
    except OSError as err:
        log.warning("not caching the policy grammar: %s", err)
        return None


def _load(path: Path) -> Lark | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            data = _PlainUnpickler(io.BytesIO(handle.read())).load()
        return Lark.load(data)
    except Exception as err:  # a stale, truncated or foreign file: rebuild
        log.warning("ignoring the grammar cache %s: %s", path, err)
        return None


def _save(path: Path, parser: Lark) -> None:
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            pickle.dump({"data": data, "memo": memo}, handle, protocol=5)
        os.replace(temporary, path)
    with contextlib.suppress(OSError):
        temporary.unlink()
