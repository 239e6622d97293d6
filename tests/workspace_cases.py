"""Commands that change files in a real git work tree, and what the guard must say about each.

Shared by ``tests/test_workspace_sweep.py`` (each case is a test) and
``bench/bench_sweep.py`` (caught / not caught / false alarms over all of them).
Every case runs for real: the files are committed to a fresh git repository,
``setup`` runs unobserved, then ``command`` runs through ``bash`` between the
guard's ``on_call`` and ``on_result``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard

APP = "def f(x):\n    return x\n"
CONFIG = '{"name": "demo", "debug": false}\n'
PYPROJECT = '[project]\nname = "demo"\nversion = "0.1.0"\n'
BASE = {"app.py": APP, "cfg.json": CONFIG, "pyproject.toml": PYPROJECT}


@dataclass(frozen=True)
class Case:
    name: str
    command: str
    broken: tuple[str, ...] = ()
    """Files the command leaves broken, which the guard must name (empty: it must say nothing)."""
    blocked: bool = False
    """The shell-write gate must refuse the command before it runs (the files stay as they were)."""
    files: dict[str, str] = field(default_factory=dict)
    """Committed before the case, in addition to ``BASE``."""
    setup: str = ""
    """Run before the guard sees anything (a patch prepared, an untracked file)."""


@dataclass(frozen=True)
class Outcome:
    blocked: bool
    named: frozenset[str]
    """Files the sweep's hint named."""
    hint: str


def _patch_of(broken_app: str) -> str:
    """A setup that leaves ``fix.patch`` (a diff of app.py to ``broken_app``) and app.py unchanged."""
    return (f"cat > app.py <<'EOF'\n{broken_app}EOF\n"
            "git diff > fix.patch && git checkout -q -- app.py")


BROKEN = [
    Case("sed -i drops a colon", "sed -i 's/):$/)/' app.py", broken=("app.py",)),
    Case("a patch script breaks indentation", "python3 fix.py", broken=("app.py",),
         files={"fix.py": "p = 'app.py'\ns = open(p).read()\n"
                          "open(p, 'w').write(s.replace('    return x', '    y = x\\n      return y'))\n"}),
    Case("python - <<EOF patch leaves a bracket open",
         "python3 - <<'EOF'\np = 'app.py'\ns = open(p).read()\n"
         "open(p, 'w').write(s.replace('return x', 'return (x'))\nEOF",
         broken=("app.py",)),
    Case("python -c writes a trailing comma into JSON",
         "python3 -c \"open('cfg.json', 'w').write('{\\\"a\\\": 1,}')\"", broken=("cfg.json",)),
    Case("cat >> with an expanding heredoc appends a bad def",
         "N=2; cat >> app.py <<EOF\ndef g$N(:\n    pass\nEOF", broken=("app.py",)),
    Case("perl -pi -e opens a bracket", "perl -pi -e 's/return x/return [x/' app.py", broken=("app.py",)),
    Case("git apply of a hunk that drops a colon", "git apply fix.patch", broken=("app.py",),
         setup=_patch_of("def f(x)\n    return x\n")),
    Case("patch -p1 of a hunk that breaks indentation", "patch -s -p1 < fix.patch", broken=("app.py",),
         setup=_patch_of("def f(x):\n  y = x\n    return y\n")),
    Case("sed -i leaves a TOML string open", "sed -i 's/name = \"demo\"/name = \"demo/' pyproject.toml",
         broken=("pyproject.toml",)),
    Case("cp makes a new module from prose", "cp notes.txt helpers.py", broken=("helpers.py",),
         files={"notes.txt": "Remember: helpers go here.\n"}),
    Case("mv puts a broken draft in place", "mv draft.txt app.py", broken=("app.py",),
         files={"draft.txt": "def f(x)\n    return x\n"}),
    Case("a command breaks two files at once", "sed -i 's/):$/)/' app.py pkg/util.py",
         broken=("app.py", "pkg/util.py"), files={"pkg/util.py": "def g():\n    return 1\n"}),
    Case("cat >> of a quoted heredoc would append a bad def",
         "cat >> app.py <<'EOF'\ndef g(:\n    pass\nEOF", blocked=True),
    Case("cat > of a quoted heredoc would drop a colon", "cat > app.py <<'EOF'\ndef f(x)\n    return x\nEOF",
         blocked=True),
    Case("cat <<EOF > with the redirect last", "cat <<EOF > app.py\nreturn = 1\nEOF", blocked=True),
    Case("tee would write JSON without a value", "tee cfg.json <<'EOF'\n{\"a\": }\nEOF", blocked=True),
    Case("printf would write an unclosed TOML table header",
         "printf '[project\\nname = 1\\n' > pyproject.toml", blocked=True),
    Case("mkdir and cd, then a heredoc into the new folder",
         "mkdir -p pkg && cd pkg && cat > mod.py <<'EOF'\nclass C\n    pass\nEOF", blocked=True),
]

CORRECT = [
    Case("sed -i renames a variable", "sed -i 's/x/value/g' app.py"),
    Case("a patch script edits correctly", "python3 fix.py",
         files={"fix.py": "p = 'app.py'\ns = open(p).read()\n"
                          "open(p, 'w').write(s.replace('return x', 'return x + 1'))\n"}),
    Case("python - <<EOF patch edits correctly",
         "python3 - <<'EOF'\nimport json\nd = json.load(open('cfg.json'))\nd['debug'] = True\n"
         "json.dump(d, open('cfg.json', 'w'))\nEOF"),
    Case("cat >> of a quoted heredoc appends a function",
         "cat >> app.py <<'EOF'\n\ndef g():\n    return 2\nEOF"),
    Case("cat >> of an expanding heredoc appends a function",
         "N=2; cat >> app.py <<EOF\n\ndef g$N():\n    return $N\nEOF"),
    Case("cat > rewrites a module", "cat > app.py <<'EOF'\ndef f(x):\n    return 2 * x\nEOF"),
    Case("tee writes JSON", "tee cfg.json > /dev/null <<'EOF'\n{\"a\": [1, 2]}\nEOF"),
    Case("printf writes TOML", "printf '[tool.demo]\\nlevel = 3\\n' >> pyproject.toml"),
    Case("echo appends a line", "echo 'DEBUG = False' >> app.py"),
    Case("perl -pi -e edits correctly", "perl -pi -e 's/return x/return x * 2/' app.py"),
    Case("git apply of a good hunk", "git apply fix.patch", setup=_patch_of("def f(x):\n    return -x\n")),
    Case("patch -p1 of a good hunk",
         "patch -s -p1 < fix.patch", setup=_patch_of("def f(x):\n    return x or 0\n")),
    Case("git checkout restores a modified file",
         "git checkout -q -- app.py", setup="echo 'y = 2' >> app.py"),
    Case("git stash puts changes away", "git stash -q", setup="echo 'y = 2' >> app.py"),
    Case("rm deletes a module", "rm app.py"),
    Case("touch changes only the time", "touch app.py cfg.json"),
    Case("mv renames a module", "mv app.py main.py"),
    Case("json.tool reformats JSON in place",
         "python3 -m json.tool cfg.json > cfg.tmp && mv cfg.tmp cfg.json"),
    Case("sed -i on a fixture that was broken before", "sed -i 's/broken/still broken/' tests/data/bad.py",
         files={"tests/data/bad.py": "# broken on purpose\ndef f(:\n    pass\n"}),
    Case("a broken file in a .gitignore'd folder",
         "mkdir -p build && python3 -c \"open('build/gen.py', 'w').write('def (')\"",
         files={".gitignore": "build/\n"}),
    Case("a broken file in node_modules",
         "mkdir -p node_modules/x && python3 -c \"open('node_modules/x/package.json', 'w').write('{')\""),
    Case("a broken file in a virtual environment",
         "mkdir -p env/lib && touch env/pyvenv.cfg && "
         "python3 -c \"open('env/lib/site.py', 'w').write('def (')\""),
    Case("a command that changes nothing", "ls -la && git status --short"),
    Case("a failing command that changes nothing", "python3 -c 'import no_such_module_here'"),
]

CASES = BROKEN + CORRECT
SCOPE = Scope(thread_id="cases", run_id="run")


def prepare(case: Case, root: Path) -> None:
    """The case's files committed to a fresh git repository under ``root``, then its setup."""
    for path, text in {**BASE, **case.files}.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "b"]):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    if case.setup:
        subprocess.run(["bash", "-c", case.setup], cwd=root, check=True, capture_output=True)


def run_command(guard: Guard, root: Path, command: str, call_id: str = "c1") -> tuple[bool, Decision]:
    """One bash call through the guard as a harness makes it: turn, gate, run for real, result.
    Whether the gate refused it, and the decision on it (the gate's, or the result's)."""
    call = ToolCall(id=call_id, name="bash", args={"command": command})
    guard.on_turn([call], SCOPE)
    gate = guard.on_call(call, SCOPE)
    if gate.action == "block":
        return True, gate
    done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True, timeout=60)
    status = "success" if done.returncode == 0 else "error"
    result = ToolResult(content=done.stdout + done.stderr, status=status)
    return False, guard.on_result(call, result, SCOPE)


def run_case(case: Case, root: Path, policy: CompiledPolicy | str = "builtin:default", *,
             warm: bool = False) -> Outcome:
    """The case's command through a guard on a fresh workspace; ``warm``: after two commands that
    change nothing, so the workspace already watches its folders (where the system can)."""
    prepare(case, root)
    guard = Guard(policy, workspace=root)
    for number in range(2 if warm else 0):
        run_command(guard, root, "true", call_id=f"warm{number}")
    blocked, decision = run_command(guard, root, case.command)
    return Outcome(blocked=blocked, named=swept_paths(decision), hint=decision.hint or "")


def swept_paths(decision: Decision) -> frozenset[str]:
    """The files a decision's sweep findings name."""
    return frozenset(str(entry["path"]) for part in decision.parts if str(part.rule).startswith("sweep ")
                     for entry in part.metadata["files"])
