"""Compiled policies cached on disk, keyed by the content of everything they were built from.

A hook process that must compile its policy pays for the whole language
stack (Lark, pydantic) on every event; one that finds the compiled policy
here only unpickles it.  An entry is used only when

- the package's code, Jinja2's, google-re2's and the interpreter are the ones
  that wrote it (:func:`code_identity`: every module's size and modification
  time, and the Python version — an upgrade or an edit of any of them
  invalidates it: hint templates are kept compiled, and patterns are compiled
  on first use, trusting that the RE2 which checked them still accepts them);
- every file it was built from (policy files, ``extends`` bases, hint
  templates) still has the content it had (SHA-256), and no hint template
  that would now take precedence has appeared;
- it comes from the user's private cache folder (owned by the user, written
  by nobody else) and carries a valid HMAC under a per-user key kept there.
  Nothing is unpickled before the HMAC checks out, and even then only
  policyctl's own classes (and a handful of builtins) may be rebuilt.

A missing, stale, foreign or corrupt entry is simply compiled again.  Each
new entry prunes the folder: entries not written for ``MAX_AGE_DAYS`` go,
and of the rest only the ``MAX_ENTRIES`` written last stay (every edit or
upgrade of policyctl writes new ones).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.util
import io
import os
import pickle
import stat
import sys
import time
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from policy.model.compiled import CompiledPolicy
from policy.model.hint_template import HintTemplate
from policy.resources import data_dir, user_cache_dir

FORMAT = b"policyctl-compiled-1\n"
_KEY_BYTES = 32
_MAC_BYTES = hashlib.sha256().digest_size
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_COMPILED_WITH = ("jinja2", "re2")
"""Libraries whose upgrade invalidates a cached policy: Jinja2 (templates kept as its code) and
google-re2 (patterns compiled on first use)."""
_ALLOWED_BUILTINS = frozenset({"frozenset", "set", "tuple", "list", "dict", "getattr"})

MAX_ENTRIES = 32
"""Entries the folder keeps (the newest): a user's policies, times the policyctl versions in use."""
MAX_AGE_DAYS = 30
"""An entry not written for this long is removed (one still in use is compiled again once)."""
_ENTRY_SUFFIX = ".pickle"
_TEMPORARY_AGE_SECONDS = 3600
"""A half-written entry (its writer was killed) older than this is removed."""

Dependencies = tuple[tuple[str, str | None], ...]
"""(path, SHA-256 of its content, or None: the file must not exist)."""


@cache
def code_identity() -> str:
    """What a cached policy depends on besides its files: the interpreter, policyctl's own code and
    that of the libraries it keeps compiled work of (found without importing them)."""
    digest = hashlib.sha256(sys.version.encode())
    digest.update(str(sys.implementation.cache_tag).encode())
    _add_sources(digest, str(_PACKAGE_DIR))
    for library in _COMPILED_WITH:
        spec = importlib.util.find_spec(library)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            digest.update(f"{library}\n".encode())
            _add_sources(digest, folder)
    return digest.hexdigest()


def _add_sources(digest: Any, folder: str) -> None:
    """Every ``.py`` (and extension module) file's path, size and modification time under
    ``folder``, in name order."""
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            if entry.name.endswith((".py", ".so", ".pyd")):
                info = entry.stat()
                digest.update(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}\n".encode())
            elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                _add_sources(digest, entry.path)


def file_digest(path: str) -> str | None:
    """SHA-256 of a file's content; None when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def dependencies(texts: Mapping[str, str]) -> Dependencies:
    """The files a compiled policy was built from (with their digests), and the hint templates
    that would shadow a shipped one if they appeared (which must stay absent)."""
    found = tuple((path, file_digest(path)) for path in sorted(texts))
    shipped = data_dir("hints").resolve()
    policy_dirs = {Path(path).parent for path in texts if path.endswith(".policy")}
    absent = []
    for path in texts:
        try:
            relative = Path(path).resolve().relative_to(shipped)
        except ValueError:
            continue
        for folder in policy_dirs:
            candidate = folder / "hints" / relative
            if candidate.resolve() != Path(path).resolve() and not candidate.exists():
                absent.append((str(candidate), None))
    return found + tuple(sorted(set(absent)))


def unchanged(deps: Dependencies) -> bool:
    """Every dependency still reads as it did (and every absent one is still absent)."""
    return all(file_digest(path) == digest for path, digest in deps)


class Watch:
    """Tells cheaply, event after event, whether a policy's files still have the content it was
    built from: a file whose status (size, modification time, inode) is unchanged since it was
    last read is not read again, unless it changed within ``settle`` seconds of that reading
    (an edit in the same clock tick would not show in its status)."""

    def __init__(self, deps: Dependencies, settle: float = 2.0) -> None:
        self.deps = deps
        self.settle = settle
        self._known: dict[str, tuple[int, int, int] | None] = {}

    def unchanged(self) -> bool:
        now = time.time_ns()
        for path, digest in self.deps:
            status = _status(path)
            if path in self._known and status == self._known[path] and _settled(status, now, self.settle):
                continue
            if file_digest(path) != digest:
                return False
            self._known[path] = status
        return True


def _status(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def _settled(status: tuple[int, int, int] | None, now: int, settle: float) -> bool:
    return status is None or now - status[1] > settle * 1e9


class PolicyCache:
    """Compiled policies in the user's private cache folder (``compiled/``)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._directory = Path(directory) if directory is not None else None

    def load(self, source: str) -> tuple[CompiledPolicy, Dependencies]:
        """The compiled policy ``source`` names, from the cache when its entry is still true;
        raises ``PolicyError``/``OSError`` as ``load_policy`` does."""
        folder = self._private_folder()
        entry = folder / f"{self._entry_name(source)}{_ENTRY_SUFFIX}" if folder is not None else None
        if entry is not None and folder is not None:
            cached = self._read(folder, entry)
            if cached is not None and unchanged(cached[1]):
                return cached
        from policy.language.loader import load_policy_and_files  # the language stack, on a miss only

        policy, texts = load_policy_and_files(source)
        deps = dependencies(texts)
        if entry is not None and folder is not None:
            with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
                self._write(folder, entry, policy, deps)
            prune(folder, keep=entry)
        return policy, deps

    # --- implementation ---------------------------------------------------------

    def _entry_name(self, source: str) -> str:
        key = f"{code_identity()}\n{source}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(key).hexdigest()[:40]

    def _private_folder(self) -> Path | None:
        """The cache folder, created 0700; None when it is not private to this user (then
        nothing is cached)."""
        try:
            folder = self._directory if self._directory is not None else user_cache_dir() / "compiled"
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            return folder if _private(os.lstat(folder)) else None
        except OSError:
            return None

    def _key(self, folder: Path) -> bytes | None:
        path = folder / "key"
        with contextlib.suppress(FileExistsError, OSError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(_KEY_BYTES))
        data = _read_private(path)
        return data if data is not None and len(data) == _KEY_BYTES else None

    def _read(self, folder: Path, entry: Path) -> tuple[CompiledPolicy, Dependencies] | None:
        key, data = self._key(folder), _read_private(entry)
        if key is None or data is None or not data.startswith(FORMAT):
            return None
        mac, body = data[len(FORMAT):len(FORMAT) + _MAC_BYTES], data[len(FORMAT) + _MAC_BYTES:]
        if not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).digest()):
            return None
        try:
            policy, deps = _PolicyUnpickler(io.BytesIO(body)).load()
        except Exception:  # a corrupt or incompatible entry is compiled again
            return None
        return (policy, deps) if isinstance(policy, CompiledPolicy) else None

    def _write(self, folder: Path, entry: Path, policy: CompiledPolicy, deps: Dependencies) -> None:
        key = self._key(folder)
        if key is None:
            return
        buffer = io.BytesIO()
        _PolicyPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((policy, deps))
        body = buffer.getvalue()
        temporary = folder / f".{entry.name}.{os.urandom(16).hex()}.tmp"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(FORMAT + hmac.new(key, body, hashlib.sha256).digest() + body)
            os.replace(temporary, entry)
        finally:
            temporary.unlink(missing_ok=True)


def prune(folder: Path, keep: Path, max_entries: int = MAX_ENTRIES,
          max_age_days: float = MAX_AGE_DAYS) -> None:
    """Remove the entries of ``folder`` (never ``keep``, never the key) not written for
    ``max_age_days``, then all but the ``max_entries`` written last, and half-written ones."""
    now = time.time()
    entries: list[tuple[float, str]] = []
    with contextlib.suppress(OSError), os.scandir(folder) as listing:
        for item in listing:
            with contextlib.suppress(OSError):
                info = item.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or item.path == str(keep):
                    continue
                if item.name.startswith(".") and item.name.endswith(".tmp"):
                    if now - info.st_mtime > _TEMPORARY_AGE_SECONDS:
                        os.unlink(item.path)
                elif item.name.endswith(_ENTRY_SUFFIX):
                    entries.append((info.st_mtime, item.path))
    entries.sort(reverse=True)
    kept = max(max_entries - 1, 0)  # ``keep`` is one of them
    for number, (written, path) in enumerate(entries):
        if number >= kept or now - written > max_age_days * 86400:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _private(info: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (a directory or a regular file, no link)."""
    kind_ok = stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)
    return kind_ok and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _read_private(path: Path) -> bytes | None:
    """A regular file's bytes, only when it is private to this user (checked on the open file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not _private(os.fstat(fd)):
            return None
        return handle.read()


def _rebuild(cls: type, values: dict[str, Any]) -> Any:
    return cls(**values)


def _read_only(mapping: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(mapping)


class _PolicyPickler(pickle.Pickler):
    """Pickles dataclasses through their constructor (so derived fields, compiled patterns and
    cached templates are rebuilt when first used, not stored), hint templates with their
    compiled code (so rendering one needs no Jinja2 parse), read-only mappings as mappings."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, HintTemplate) and obj.code is None:
            obj = obj.with_code()
        if isinstance(obj, MappingProxyType):
            return _read_only, (dict(obj),)
        if is_dataclass(obj) and not isinstance(obj, type):
            values = {f.name: getattr(obj, f.name) for f in fields(obj) if f.init}
            return _rebuild, (type(obj), values)
        return NotImplemented


class _PolicyUnpickler(pickle.Unpickler):
    """Rebuilds only policyctl's classes and a few builtins."""

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name in ("_rebuild", "_read_only"):
            return globals()[name]
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        if module.startswith("policy.model.") or module.startswith("policy.runtime."):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a compiled policy")
