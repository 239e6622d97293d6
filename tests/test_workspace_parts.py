"""The workspace's parts: shell-write reading, .gitignore rules, snapshots, listers, stored state."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.gates.open_end import open_end
from policy.runtime.gates.shell_writes import ShellWrite, shell_writes
from policy.runtime.guard import Guard
from policy.runtime.loops.state import ScopeState
from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.ignore import IgnoreFile, IgnoreStack
from policy.runtime.workspace.listed import ListedWorkspace, find_lister, parse_find_line
from policy.runtime.workspace.local import LocalWorkspace
from policy.runtime.workspace.snapshot import Snapshot
from policy.runtime.workspace.state import WorkspaceState
from policy.stores.memory import MemoryStore

PY = Coverage(["*.py", "*.json"])


@pytest.mark.parametrize(("command", "writes"), [
    ("cat > f.py <<'EOF'\nx = 1\nEOF", [ShellWrite("f.py", "x = 1\n", False)]),
    ("cat >> f.py <<EOF\ny = 2\nEOF\n", [ShellWrite("f.py", "y = 2\n", True)]),
    ("cat <<'EOF' > a/b.json\n{}\nEOF\npython -c 'import json'", [ShellWrite("a/b.json", "{}\n", False)]),
    ("cat > f.py <<EOF\nx = '\\$HOME'\nEOF", [ShellWrite("f.py", "x = '$HOME'\n", False)]),
    ("tee -a f.json > /dev/null <<'EOF'\n[1]\nEOF", [ShellWrite("f.json", "[1]\n", True)]),
    ("printf 'a = 1\\nb = \"%%\"\\n' > f.toml", [ShellWrite("f.toml", 'a = 1\nb = "%"\n', False)]),
    ("echo 'x = 1' >> f.py", [ShellWrite("f.py", "x = 1\n", True)]),
    ("echo -n hi > f.py 2>&1", [ShellWrite("f.py", "hi", False)]),
    ("mkdir -p pkg && cd pkg && cat > m.py <<'EOF'\npass\nEOF", [ShellWrite("pkg/m.py", "pass\n", False)]),
    ("cat > f.py <<'EOF' && python f.py\nprint(1)\nEOF\n", [ShellWrite("f.py", "print(1)\n", False)]),
    ("cat > f.py <<-EOF\n\tx = 1\n\tEOF\n", [ShellWrite("f.py", "x = 1\n", False)]),
    ("ls | grep x && cat > g.py <<'EOF'\nok\nEOF", [ShellWrite("g.py", "ok\n", False)]),
    ("cat > f.py <<'EOF'\na\nEOF\ncat >> f.py <<'EOF'\nb\nEOF", [ShellWrite("f.py", "a\n", False),
                                                                   ShellWrite("f.py", "b\n", True)]),
])
def test_writes_the_text_determines_are_read(command: str, writes: list[ShellWrite]) -> None:
    assert shell_writes(command) == writes


@pytest.mark.parametrize("command", [
    "cat > f.py <<EOF\nx = $HOME\nEOF",            # parameter expansion
    "cat > f.py <<EOF\nx = `date`\nEOF",            # command substitution
    "cat > $F <<'EOF'\nx\nEOF",                     # an expanding target
    "cat > *.py <<'EOF'\nx\nEOF",                   # a glob
    "cat > ~/f.py <<'EOF'\nx\nEOF",                 # a tilde
    "echo \"x = $y\" >> f.py",
    "echo 'a\\nb' > f.py",                          # echo's backslashes differ between shells
    "printf '%s\\n' a > f.toml",                    # a conversion
    "for i in 1 2; do cat >> f.py <<'EOF'\nx\nEOF\ndone",
    "if true; then cat > f.py <<'EOF'\nx\nEOF\nfi",
    "(cat > f.py <<'EOF'\nx\nEOF\n)",
    "cat <<'EOF' | python\nprint(1)\nEOF",
    "sed -i 's/a/b/' f.py && cat >> f.py <<'EOF'\nz\nEOF",  # the text before the append is unknown
    "cat > f.py <<'EOF'\nnever closed\n",
    "cat > f.py <<'A' > g.py\nx\nA",
    "X=1 cat > f.py <<'EOF'\nx\nEOF",
    "cat > f.py 2>err.log <<'EOF'\nx\nEOF",
    "cat > f.py <<< 'x'",
    "cat a.py > f.py",
])
def test_nothing_the_shell_would_expand_is_guessed_at(command: str) -> None:
    assert shell_writes(command) == []


def test_an_overwrite_after_an_unread_command_is_still_read() -> None:
    assert shell_writes("python gen.py; cat > f.py <<'EOF'\nx\nEOF") == [ShellWrite("f.py", "x\n", False)]


@pytest.mark.parametrize(("path", "folder", "ignored"), [
    ("x.pyc", False, True), ("a/x.pyc", False, True), ("keep.pyc", False, False),
    ("build", True, True), ("build", False, False), ("src/build", True, True),
    ("dist", True, True), ("src/dist", True, False), ("docs/a/b/c.md", False, True),
    ("foo/x.py", False, True), ("a/x/y/b.py", False, True), ("Temp1.py", False, True), ("x.py", False, False),
    ("sp ace.py", False, True),
])
def test_gitignore_rules_follow_git(path: str, folder: bool, ignored: bool) -> None:
    rules = IgnoreFile("# comment\n*.pyc\nbuild/\n/dist\ndocs/**/*.md\n!keep.pyc\nfoo/**\na/**/b.py\n"
                       "[Tt]emp*\nsp\\ ace.py\n")
    assert IgnoreStack().inside("", rules).ignored(path, folder) is ignored


def test_a_deeper_gitignore_overrides_a_shallower_one() -> None:
    stack = IgnoreStack().inside("", IgnoreFile("*.json\n")).inside("keep/", IgnoreFile("!*.json\n"))
    assert not stack.ignored("keep/a.json", False)
    assert IgnoreStack().inside("", IgnoreFile("*.json\n")).ignored("other/a.json", False)


def test_the_walk_skips_ignored_vcs_vendored_and_virtualenv_folders(tmp_path: Path) -> None:
    for path in ("a.py", "pkg/b.py", "build/c.py", ".git/d.py", "node_modules/e.json", "env/f.py",
                 "pkg/__pycache__/g.py", "pkg/sub/h.json", "pkg/sub/skip.json", "notes.txt"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    (tmp_path / "env/pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "pkg/sub/.gitignore").write_text("skip.json\n")
    workspace = LocalWorkspace(tmp_path)
    assert workspace.snapshot(PY).paths == ("a.py", "pkg/b.py", "pkg/sub/h.json")
    (tmp_path / "pkg/sub/.gitignore").write_text("h.json\n")  # edited in place: the folder's time stays
    assert workspace.snapshot(PY).paths == ("a.py", "pkg/b.py", "pkg/sub/skip.json")


def test_a_cached_folder_still_shows_new_and_changed_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    workspace = LocalWorkspace(tmp_path)
    first = workspace.snapshot(PY)
    (tmp_path / "a.py").write_text("x = 22\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    changes = first.changes(workspace.snapshot(PY))
    assert changes.created == ("b.py",) and changes.modified == ("a.py",) and changes.deleted == ()


def test_snapshots_round_trip_packed_and_reject_garbage() -> None:
    snapshot = Snapshot.of([("b.py", 3, 10, 11), ("a.py", 1, 20, 21)], truncated=True)
    assert Snapshot.from_bytes(snapshot.to_bytes()) == snapshot
    assert Snapshot.from_bytes(Snapshot().to_bytes()) == Snapshot()
    assert snapshot.stat("b.py") == (3, 10, 11) and snapshot.stat("c.py") is None
    for garbage in (b"", b"S1 0 4\na.pyAAAA", b"S2 0 0\n", b"S1 0 99\na.py"):
        with pytest.raises(ValueError):
            Snapshot.from_bytes(garbage)


def test_scope_state_keeps_what_it_knows_about_files() -> None:
    state = ScopeState()
    state.files = WorkspaceState(latest="0123abcd", checked={"a.py": [1, 2, 3, 1]},
                                 digests={"a.py": "00ff"}, fingerprint=7, seen=bytes(16),
                                 incomplete={"b.py": {"call": "c1"}})
    assert ScopeState.from_json(state.to_json()).files == state.files


def test_a_listed_workspace_reads_a_sandbox_through_find(tmp_path: Path) -> None:
    for path in ("a.py", "gen/b.py", "node_modules/c.json", "d.txt"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    (tmp_path / ".gitignore").write_text("gen/\n")

    def run(command: str) -> str:  # a sandbox's shell: here, the local one
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout

    def read(path: str) -> str | None:
        file = Path(path)
        return file.read_text() if file.is_file() else None

    workspace = ListedWorkspace(find_lister(run, str(tmp_path)), read, root=str(tmp_path))
    snapshot = workspace.snapshot(PY)
    assert snapshot.paths == ("a.py",)
    size, mtime, _ = snapshot.stat("a.py") or (0, 0, 0)
    assert size == 2 and abs(mtime - (tmp_path / "a.py").stat().st_mtime_ns) < 1000
    assert workspace.relative(str(tmp_path / "gen/b.py")) == "gen/b.py"
    assert workspace.relative("/elsewhere/x.py") is None


def test_find_lines_that_are_not_files_are_skipped() -> None:
    assert parse_find_line("a.py\t12\t1700000000.5\t1700000000.25") == ("a.py", 12, 1700000000500000000,
                                                                        1700000000250000000)
    assert parse_find_line("garbage") is None
    assert parse_find_line("a.py\tx\t1\t1") is None


@pytest.mark.parametrize(("text", "validator", "where"), [
    ("x = (\n  1,\n", "python", (1, 5, "the `(` opened here is not closed (it needs `)`)")),
    ("def f(x):\n", "python", (1, 1, "the block `def f(x):` has no body yet")),
    ('s = """abc\n', "python", (1, 5, 'the triple-quoted string opened here is not closed (it needs """)')),
    ('{"a": [1, 2', "json", (1, 7, "the `[` opened here is not closed (it needs `]`)")),
    ("a = [\n 1,", "toml", (1, 5, "the `[` opened here is not closed (it needs `]`)")),
])
def test_the_open_end_of_an_incomplete_prefix_is_located(text: str, validator: str,
                                                         where: tuple[int, int, str]) -> None:
    end = open_end(text, validator)
    assert (end.line, end.column, end.where) == where


def test_the_walk_gives_the_files_in_path_order(tmp_path: Path) -> None:
    for path in ("a.py", "a/b.py", "a-b.py", "a/c/d.py", "a/a.py", "b.py", "A.py", "a0/x.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x = 1\n")
    snapshot = LocalWorkspace(tmp_path).snapshot(PY)
    assert list(snapshot.paths) == sorted(snapshot.paths) and len(snapshot) == 8
    assert all(snapshot.stat(path) is not None for path in snapshot.paths)


class _WatchedStore(MemoryStore):
    """A memory store that notes whether a scope is held, for a workspace that checks it."""

    def __init__(self) -> None:
        super().__init__()
        self.held = False

    @contextlib.contextmanager
    def scope(self, scope: Scope) -> Iterator[ScopeState]:
        with super().scope(scope) as state:
            self.held = True
            try:
                yield state
            finally:
                self.held = False


def test_snapshots_are_taken_outside_the_store_lock_and_shared_by_scopes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    store = _WatchedStore()
    walks: list[bool] = []

    class Watched(LocalWorkspace):
        def snapshot(self, coverage: Coverage) -> Snapshot:
            walks.append(store.held)
            return super().snapshot(coverage)

    guard = Guard("builtin:default", store=store, workspace=Watched(tmp_path))
    for thread in ("t1", "t2"):
        scope = Scope(thread_id=thread, run_id="r")
        call = ToolCall(id=f"{thread}-c", name="bash", args={"command": "ls"})
        guard.on_turn([call], scope)
        guard.on_call(call, scope)
        guard.on_result(call, ToolResult(content="a.py"), scope)
    assert walks and not any(walks)  # every walk ran with no scope held
    latest = []
    for thread in ("t1", "t2"):
        with store.scope(Scope(thread_id=thread, run_id="r")) as state:
            latest.append(state.files.latest)
    assert latest[0] is not None and latest[0] == latest[1]  # one snapshot kept for both


def test_a_lost_before_snapshot_without_a_local_clock_is_said_not_passed_over() -> None:
    from policy.language.loader import load_policy
    from policy.runtime.workspace.sweep import sweep, sweep_decision

    policy = load_policy("builtin:default")
    files = {"/w/app.py": "def f(x)\n"}
    workspace = ListedWorkspace(lambda: [("app.py", 9, 2_000, 2_000)], files.get, root="/w")
    after = workspace.snapshot(PY)
    call = ToolCall(id="c1", name="bash", args={"command": "true"})
    result = sweep(policy, workspace, WorkspaceState(), None, after, started_ns=1_000, predicted={})
    decision = sweep_decision(policy, call, "true", result)
    assert result.before_lost and not result.broken
    assert decision.action == "allow" and decision.metadata["sweep"] == "unchecked"


def test_file_times_stand_in_for_a_lost_before_snapshot() -> None:
    snapshot = Snapshot.of([("old.py", 1, 100, 100), ("new.py", 1, 500, 500), ("moved.py", 1, 100, 700)])
    changes = snapshot.with_changes_since(400).changes(snapshot)
    assert (changes.created, changes.modified, changes.deleted) == ((), ("moved.py", "new.py"), ())
