"""The local walk's caches: what it remembers between snapshots must never hide a change.

Every test runs twice: with folder watches (inotify, the default on Linux) and
with the stat walk alone (``notify=False``).  Folders are aged before the
snapshot that fills the cache, so the stat walk keeps their listings as it
would between two commands of an agent.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from policy.hooks.respond import Responder
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard
from policy.runtime.workspace import local
from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.local import LocalWorkspace
from policy.runtime.workspace.notify import Events, Notifier
from policy.runtime.workspace.snapshot import Changes, Snapshot
from policy.runtime.workspace.watch import coverage_of

COVERED = Coverage(["*.py", "*.json"])
AN_HOUR_AGO = 3600


def make(root: Path, *paths: str, text: str = "x = 1\n") -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def age(root: Path) -> None:
    """Set every folder's times an hour back: the stat walk caches only folders not changed just now."""
    for folder, _, _ in os.walk(root):
        info = os.stat(folder)
        os.utime(folder, ns=(info.st_atime_ns - AN_HOUR_AGO * 10**9, info.st_mtime_ns - AN_HOUR_AGO * 10**9))


class Walker:
    """A workspace whose caches are warm, and the snapshot they were warmed with."""

    def __init__(self, root: Path, notify: bool) -> None:
        self.root = root
        self.workspace = LocalWorkspace(root, notify=notify)
        age(root)
        self.workspace.snapshot(COVERED)
        self.last = self.workspace.snapshot(COVERED)  # the second walk starts watching

    def changes(self) -> Changes:
        """What changed since the last snapshot, by this walk and by a walk with no cache at all."""
        now = self.workspace.snapshot(COVERED)
        fresh = LocalWorkspace(self.root, notify=False).snapshot(COVERED)
        assert now == fresh, "the cached walk disagrees with a walk from scratch"
        changes, self.last = self.last.changes(now), now
        return changes


def inotify_available() -> bool:
    try:
        Notifier().close()
    except OSError:
        return False
    return True


@pytest.fixture(params=[True, False], ids=["watched", "stat-walk"])
def notify(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_a_file_changed_in_place_is_seen(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "pkg/a.py", "pkg/b.py")
    walker = Walker(tmp_path, notify)
    assert walker.workspace.watching is (notify and inotify_available())
    folder_time = (tmp_path / "pkg").stat().st_mtime_ns
    (tmp_path / "pkg/a.py").write_text("x = 22\n")
    assert (tmp_path / "pkg").stat().st_mtime_ns == folder_time  # in place: the folder's time stays
    assert walker.changes() == Changes(modified=("pkg/a.py",))
    assert walker.changes() == Changes()


def test_a_file_added_in_a_deep_folder_is_seen(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "a.py", "d1/d2/d3/d4/old.py", "d1/x.py")
    walker = Walker(tmp_path, notify)
    make(tmp_path, "d1/d2/d3/d4/new.py")
    make(tmp_path, "d1/d2/d3/d4/d5/newest.json", text="{}")
    assert walker.changes() == Changes(created=("d1/d2/d3/d4/d5/newest.json", "d1/d2/d3/d4/new.py"))


def test_a_renamed_folder_moves_its_files(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "pkg/sub/a.py", "pkg/b.py", "other/c.py")
    walker = Walker(tmp_path, notify)
    (tmp_path / "pkg").rename(tmp_path / "lib")
    assert walker.changes() == Changes(created=("lib/b.py", "lib/sub/a.py"),
                                       deleted=("pkg/b.py", "pkg/sub/a.py"))
    (tmp_path / "lib/sub/a.py").write_text("x = 3\n")  # still watched under its new name
    assert walker.changes() == Changes(modified=("lib/sub/a.py",))
    (tmp_path / "lib").rename(tmp_path / "pkg")  # and back: the old name's folders are walked afresh
    (tmp_path / "pkg/sub/new.py").write_text("")
    assert walker.changes() == Changes(created=("pkg/b.py", "pkg/sub/a.py", "pkg/sub/new.py"),
                                       deleted=("lib/b.py", "lib/sub/a.py"))


def test_a_folder_removed_and_made_again_is_listed_again(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "pkg/a.py", "pkg/deep/b.py")
    walker = Walker(tmp_path, notify)
    shutil.rmtree(tmp_path / "pkg")
    make(tmp_path, "pkg/deep/b.py", "pkg/c.py")
    changes = walker.changes()
    assert changes.created == ("pkg/c.py",) and changes.deleted == ("pkg/a.py",)
    assert changes.modified == ("pkg/deep/b.py",)  # the same path, a new file


def test_an_edited_gitignore_changes_what_is_covered_below_it(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "pkg/keep.py", "pkg/gen/out.py", "pkg/gen/deeper/more.py", "top.json")
    (tmp_path / "pkg/.gitignore").write_text("nothing\n")
    walker = Walker(tmp_path, notify)
    (tmp_path / "pkg/.gitignore").write_text("gen/\n")  # edited in place: no folder's time changes
    assert walker.changes() == Changes(deleted=("pkg/gen/deeper/more.py", "pkg/gen/out.py"))
    (tmp_path / "pkg/.gitignore").write_text("keep.py\n")
    assert walker.changes() == Changes(created=("pkg/gen/deeper/more.py", "pkg/gen/out.py"),
                                       deleted=("pkg/keep.py",))


def test_a_new_gitignore_hides_files_in_folders_already_walked(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "a/b/c/d.py", "a/e.py")
    walker = Walker(tmp_path, notify)
    (tmp_path / "a/.gitignore").write_text("d.py\n")
    assert walker.changes() == Changes(deleted=("a/b/c/d.py",))
    (tmp_path / "a/.gitignore").unlink()
    assert walker.changes() == Changes(created=("a/b/c/d.py",))


def test_git_info_exclude_is_read_again_when_it_changes(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, "a.py", "b/c.py")
    (tmp_path / ".git/info").mkdir(parents=True)
    walker = Walker(tmp_path, notify)
    (tmp_path / ".git/info/exclude").write_text("c.py\n")
    assert walker.changes() == Changes(deleted=("b/c.py",))


@pytest.mark.parametrize("command", [
    ["cp", "-p", "new.txt", "pkg/a.py"],             # content and times copied from another file
    ["sh", "-c", "echo 'x = 9' > pkg/a.py && touch -r ref.txt pkg/a.py"],  # times set back by hand
])
def test_a_write_that_keeps_the_files_time_is_seen(tmp_path: Path, notify: bool, command: list[str]) -> None:
    make(tmp_path, "pkg/a.py", text="x = 1\n")
    (tmp_path / "new.txt").write_text("x = 2\n")  # the same size as what it replaces
    (tmp_path / "ref.txt").write_text("")
    before = (tmp_path / "pkg/a.py").stat()
    for path in ("new.txt", "ref.txt"):
        os.utime(tmp_path / path, ns=(before.st_atime_ns, before.st_mtime_ns))
    walker = Walker(tmp_path, notify)
    subprocess.run(command, cwd=tmp_path, check=True)
    after = (tmp_path / "pkg/a.py").stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert walker.changes() == Changes(modified=("pkg/a.py",))  # its status-change time moved


def test_a_symbolic_link_to_a_file_elsewhere_is_stat_ed_every_time(tmp_path: Path, notify: bool) -> None:
    outside = tmp_path / "outside"
    make(outside, "real.py")
    root = tmp_path / "root"
    make(root, "pkg/plain.py")
    (root / "pkg/link.py").symlink_to(outside / "real.py")
    walker = Walker(root, notify)
    (outside / "real.py").write_text("x = 12345\n")  # no watch sees this: the target is elsewhere
    assert walker.changes() == Changes(modified=("pkg/link.py",))


def test_a_watched_workspace_that_did_not_change_costs_no_stat(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if not inotify_available():
        pytest.skip("no inotify here")
    make(tmp_path, *(f"p{i}/m{j}.py" for i in range(5) for j in range(5)))
    walker = Walker(tmp_path, True)
    make(tmp_path, "p3/m1.py", text="y = 2\n")
    stats: list[str] = []
    real = os.stat

    def counting(path: str, *args: object, **kwargs: object) -> os.stat_result:
        stats.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local.os, "stat", counting)
    assert walker.workspace.snapshot(COVERED) != walker.last
    assert all(path.startswith(f"{tmp_path}/p3") or path.endswith("exclude") for path in stats), stats
    stats.clear()
    assert walker.workspace.snapshot(COVERED) is walker.workspace.snapshot(COVERED)
    assert [path for path in stats if not path.endswith("exclude")] == []


def test_a_lost_event_queue_walks_everything_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not inotify_available():
        pytest.skip("no inotify here")
    make(tmp_path, "a/b.py", "c.py")
    walker = Walker(tmp_path, True)
    (tmp_path / "a/b.py").write_text("x = 100\n")
    monkeypatch.setattr(Notifier, "events", lambda self: Events(overflowed=True))
    assert walker.changes() == Changes(modified=("a/b.py",))
    assert walker.workspace.watching


def test_a_refused_watch_falls_back_to_the_stat_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, "a/b.py", "c.py")

    def refuse(self: Notifier, path: str) -> int:
        raise OSError(errno.ENOSPC, "no space left for watches")

    monkeypatch.setattr(Notifier, "watch", refuse)
    walker = Walker(tmp_path, True)
    assert not walker.workspace.watching
    (tmp_path / "a/b.py").write_text("x = 100\n")
    make(tmp_path, "a/new.py")
    assert walker.changes() == Changes(created=("a/new.py",), modified=("a/b.py",))


def test_the_file_limit_is_kept_with_runs_of_files(tmp_path: Path, notify: bool) -> None:
    make(tmp_path, *(f"f{i:02}.py" for i in range(10)), "sub/g.py")
    workspace = LocalWorkspace(tmp_path, max_files=4, notify=notify)
    for _ in range(3):
        snapshot = workspace.snapshot(COVERED)
        assert snapshot.paths == ("f00.py", "f01.py", "f02.py", "f03.py") and snapshot.truncated
        assert Snapshot(snapshot.paths, snapshot.stats) == Snapshot.of(
            (path, *(snapshot.stat(path) or (0, 0, 0))) for path in snapshot.paths)
    exact = LocalWorkspace(tmp_path, max_files=11, notify=notify).snapshot(COVERED)
    assert len(exact) == 11 and not exact.truncated


def test_a_guard_made_for_each_event_keeps_the_workspace_s_caches(tmp_path: Path) -> None:
    if not inotify_available():
        pytest.skip("no inotify here")
    make(tmp_path, "a/b.py", "c.py")
    workspace = LocalWorkspace(tmp_path)
    for _ in range(2):
        workspace.snapshot(Coverage(["*.py", "*.json"]))
    last = workspace.snapshot(Coverage(["*.py", "*.json"]))  # equal globs, a new object: as a hook's guard
    assert workspace.snapshot(Coverage(["*.py", "*.json"])) is last
    other = workspace.snapshot(Coverage(["*.py"]))  # other globs: walked afresh
    assert other == LocalWorkspace(tmp_path, notify=False).snapshot(Coverage(["*.py"])) and other is not last


def test_a_hook_process_reuses_one_watching_workspace_across_events(tmp_path: Path) -> None:
    if not inotify_available():
        pytest.skip("no inotify here")
    make(tmp_path, "app.py")
    responder = Responder()
    policy = responder.policy("builtin:claude-code")
    workspace = responder.workspace(tmp_path, policy)
    assert responder.workspace(tmp_path, policy) is workspace

    def event(number: int) -> None:  # one Guard per event, as the resident process makes them
        guard = Guard(policy, workspace=workspace)
        call = ToolCall(id=f"c{number}", name="Bash", args={"command": "true"})
        guard.on_call(call, Scope(thread_id="s", run_id="r"))
        guard.on_result(call, ToolResult(content=""), Scope(thread_id="s", run_id="r"))

    for number in range(3):
        event(number)
    last = workspace.snapshot(coverage_of(policy))
    event(3)
    assert workspace.watching and workspace.snapshot(coverage_of(policy)) is last


def test_one_folder_under_two_paths_is_stat_ed_under_the_second(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if not inotify_available():
        pytest.skip("no inotify here")
    make(tmp_path, "a/x.py", "b/y.py")
    real = Notifier.watch

    def same_for_a_and_b(self: Notifier, path: str) -> int:  # as a bind mount of a/ at b/ would be
        return real(self, path.replace(f"{tmp_path}/b", f"{tmp_path}/a"))

    monkeypatch.setattr(Notifier, "watch", same_for_a_and_b)
    walker = Walker(tmp_path, True)
    (tmp_path / "b/y.py").write_text("y = 2222\n")  # reported for a/'s watch only
    assert walker.changes() == Changes(modified=("b/y.py",))
