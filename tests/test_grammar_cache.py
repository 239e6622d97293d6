"""The grammar cache cannot run code: a planted file is refused, a folder others can write is not used."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class _Planted:
    """What an attacker pickles: unpickling it runs a command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def _lint(cache_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", "lint", "builtin:default"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache_home)})


def test_a_planted_cache_file_is_not_run_and_the_tables_are_rebuilt(tmp_path: Path) -> None:
    assert _lint(tmp_path).returncode == 0
    [tables] = (tmp_path / "policyctl").glob("grammar-*.tables")
    marker = tmp_path / "pwned"
    tables.write_bytes(pickle.dumps(_Planted(marker)))
    done = _lint(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert b"posix" not in tables.read_bytes() and b"system" not in tables.read_bytes()
    assert pickle.loads(tables.read_bytes()) is not None  # rebuilt: plain data again


def test_a_cache_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "policyctl"
    folder.mkdir()
    folder.chmod(0o777)
    done = _lint(tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(folder.iterdir()) == []
    assert done.stderr == ("policyctl: warning: not caching the policy grammar: "
                           f"{folder} is writable by others (mode 777); it is not used\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "policyctl"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)  # nobody's
    done = _lint(tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(folder.iterdir()) == []
    warning = f"policyctl: warning: not caching the policy grammar: {folder} belongs to user 65534"
    assert warning in done.stderr
