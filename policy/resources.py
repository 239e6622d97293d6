"""Locate the shipped data folders (grammar/, policies/, hints/).

In a checkout they sit beside the ``policy`` package; in an installed wheel
they are packaged inside it as ``policy/_data/<name>``.
"""

from __future__ import annotations

import os
import stat
import sys
from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The folder ``name`` (``grammar``, ``policies`` or ``hints``)."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"policyctl data folder {name!r} is missing from the installation")


def builtin_policy_path(name: str) -> Path:
    """Path of ``builtin:NAME`` (it may not exist; the caller reports that)."""
    return data_dir("policies") / f"{name}.policy"


def builtin_policy_names() -> list[str]:
    return sorted(p.stem for p in data_dir("policies").glob("*.policy"))


def user_cache_dir() -> Path:
    """A per-user cache folder, created private (0700)."""
    if sys.platform == "darwin":
        return _private(Path.home() / "Library" / "Caches")
    return _private(_user_base("XDG_CACHE_HOME", Path.home() / ".cache"))


def user_state_dir() -> Path:
    """A per-user state folder (hook state that must outlive a process), created private."""
    return _private(_user_base("XDG_STATE_HOME", Path.home() / ".local" / "state"))


def _user_base(xdg_variable: str, default: Path) -> Path:
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    return Path(os.environ.get(xdg_variable) or default)


class UnsafeFolder(OSError):
    """A per-user folder that someone else owns or may write: it is not used."""


def _private(base: Path) -> Path:
    return private_folder(base / "policyctl")


def private_folder(path: Path) -> Path:
    """``path``, created 0700; raises :class:`UnsafeFolder` when it is a symlink, is not a folder,
    belongs to another user or is writable by others (nothing in it can then be trusted)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if sys.platform == "win32":
        return path
    info = path.lstat()
    problem = None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder (a symlink?)"
    elif info.st_uid != os.getuid():
        problem = f"belongs to user {info.st_uid}, not to {os.getuid()}"
    elif info.st_mode & 0o022:
        problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    if problem:
        raise UnsafeFolder(f"{path} {problem}; it is not used")
    return path
