"""The signatures agents meet most, each on the output of the real command run here.

Each test builds what the command needs in a temporary folder (a stale diff, a
broken C file, a project whose package is not on the import path…), runs the
real command, and sends its output through a real ``Guard`` whose reader is the
file system, as an agent's harness would.  Successful commands, and commands
whose non-zero status is an answer (``grep`` found nothing), get no hint.
Where a tool cannot run here, the output is verbatim and the test names its
source.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard

PY = sys.executable
PIP_ADVICE = re.compile(r"pip install [\w.-]")
"""An instruction to install a named distribution."""
DO_NOT_REPEAT = re.compile(
    r"(?i)do not|fails? the same way|same (?:error|result|way)|before running it again|raises the same"
)
C_ENV = {**os.environ, "LC_ALL": "C", "LANG": "C"}

needs = {
    tool: pytest.mark.skipif(shutil.which(tool) is None, reason=f"`{tool}` is not installed")
    for tool in ("patch", "git", "dash", "node", "tsc", "gcc", "g++", "make", "cmake")
}
needs_django = pytest.mark.skipif(
    importlib.util.find_spec("django") is None, reason="Django is not installed"
)


@pytest.fixture(scope="module")
def policy() -> CompiledPolicy:
    return load_policy("builtin:default")


class Ran:
    """A real command's output as a bash tool returns it (``harness`` adds the exit status as
    a harness reports it), and the guard's decision on it."""

    def __init__(
        self,
        policy: CompiledPolicy,
        command: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        harness: str = "{output}",
    ) -> None:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env or C_ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        self.output = proc.stdout  # stderr interleaved, as a terminal shows it
        self.code = proc.returncode
        content = harness.format(output=self.output, code=proc.returncode)
        status = "error" if proc.returncode else "success"
        guard = Guard(policy, read_file=lambda path: _read(cwd, path))
        call = ToolCall(id="c1", name="bash", args={"command": command})
        scope = Scope(thread_id="t", run_id="r")
        guard.on_turn([call], scope)
        guard.on_call(call, scope)
        self.decision: Decision = guard.on_result(call, ToolResult(content=content, status=status), scope)

    @property
    def hint(self) -> str:
        return self.decision.hint or ""

    def expect(self, signature: str, mentions: Sequence[str] = (), **captures: str | None) -> str:
        """The decision is a hint of ``signature`` with these captures (None: absent), naming
        ``mentions`` and telling the model not to repeat the call; the hint text."""
        assert self.decision.signature == signature, (self.decision.signature, self.output[-3000:])
        assert self.decision.action == "hint"
        for name, value in captures.items():
            assert self.decision.captures.get(name) == value, (name, self.decision.captures, self.output)
        assert self.hint.startswith("[HINT]") and DO_NOT_REPEAT.search(self.hint), self.hint
        for text in mentions:
            assert text in self.hint, (text, self.hint)
        return self.hint


def _read(cwd: Path, path: str) -> str | None:
    target = Path(path) if os.path.isabs(path) else cwd / path
    try:
        return target.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """git with an identity and no configuration of the machine it runs on."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in C_ENV.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CEILING_DIRECTORIES=str(tmp_path),
        GIT_AUTHOR_NAME="T",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="T",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return env


@pytest.fixture
def repo(tmp_path: Path, git_env: dict[str, str]) -> Path:
    path = write(tmp_path / "repo", {"f.txt": "a\nb\nc\nd\ne\n"})
    subprocess.run(
        "git init -q && git add f.txt && git commit -qm base", shell=True, cwd=path, env=git_env, check=True
    )
    return path


# --- patches --------------------------------------------------------------------------------------


@needs["patch"]
def test_patch_rejected_hunk(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {"notes.orig": "one\ntwo\nthree\nfour\nfive\n", "notes.txt": "one\ntwo\nTHREE\nfour\nfive\n"},
    )
    subprocess.run(
        "diff -u notes.orig notes.txt > change.diff; cp notes.orig notes.txt; "
        "sed -i 's/two/2/; s/three/3/; s/four/4/' notes.txt",
        shell=True,
        cwd=tmp_path,
    )
    ran = Ran(policy, "patch -p0 notes.txt < change.diff", tmp_path)
    ran.expect(
        "PATCH_REJECTED",
        ["`notes.txt`", "hunk #1 failed at line 1", "has changed since the diff", "`notes.txt.rej`"],
        file="notes.txt",
        hunk="1",
        line="1",
    )


@needs["git"]
def test_patch_rejected_git_apply(policy: CompiledPolicy, repo: Path, git_env: dict[str, str]) -> None:
    subprocess.run(
        "sed -i 's/^c$/C/' f.txt && git diff > ../fix.diff && git checkout -q f.txt && "
        "sed -i 's/^c$/cc/' f.txt",
        shell=True,
        cwd=repo,
        env=git_env,
        check=True,
    )
    ran = Ran(policy, "git apply ../fix.diff", repo, env=git_env)
    ran.expect("PATCH_REJECTED", ["`f.txt`", "has changed since the diff"], git_file="f.txt", git_line="1")


@needs["git"]
def test_patch_rejected_git_apply_corrupt(
    policy: CompiledPolicy, repo: Path, git_env: dict[str, str]
) -> None:
    (repo / "cut.diff").write_text(
        "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n"
    )
    ran = Ran(policy, "git apply cut.diff", repo, env=git_env)
    ran.expect("PATCH_REJECTED", ["malformed"], corrupt="8")


# --- the shell ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("bash -c 'if true; then echo hi'", "syntax error: unexpected end of file"),
        ("bash -c 'for f in *; do echo $f; done; fi'", "syntax error near unexpected token `fi'"),
        ('bash -c "echo \'unterminated"', "unexpected EOF while looking for matching"),
        ("sh -c 'if true; then echo hi'", "end of file unexpected"),
    ],
)
def test_shell_syntax_error_in_the_command(
    policy: CompiledPolicy, tmp_path: Path, command: str, message: str
) -> None:
    hint = Ran(policy, command, tmp_path).expect("SHELL_SYNTAX_ERROR", ["your command", "bash -n"])
    assert message in hint


@needs["dash"]
def test_shell_syntax_error_dash_arithmetic(policy: CompiledPolicy, tmp_path: Path) -> None:
    Ran(policy, "dash -c 'echo $(( 1 + ))'", tmp_path).expect("SHELL_SYNTAX_ERROR", ["arithmetic expression"])


def test_shell_syntax_error_in_a_script(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"deploy.sh": "if true; then\n  echo deploying\n"})
    Ran(policy, "bash deploy.sh", tmp_path).expect(
        "SHELL_SYNTAX_ERROR", ["`deploy.sh`", "bash -n deploy.sh"], source="deploy.sh"
    )


# --- JavaScript, TypeScript, C and C++ ------------------------------------------------------------


@needs["node"]
def test_node_syntax_error_in_a_file(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"bad.js": "const x = {\n  a: 1,\n  b: 2\n;\nconsole.log(x)\n"})
    ran = Ran(policy, "node bad.js", tmp_path)
    ran.expect("NODE_SYNTAX_ERROR", [f"`{tmp_path}/bad.js`, line 4", "Unexpected token"], line="4")


@needs["node"]
def test_node_syntax_error_in_eval(policy: CompiledPolicy, tmp_path: Path) -> None:
    Ran(policy, "node -e 'let x = ;'", tmp_path).expect(
        "NODE_SYNTAX_ERROR", ["given with `-e`"], file="[eval]"
    )


@needs["tsc"]
@pytest.mark.parametrize(
    ("source", "code", "kind"),
    [
        ("let x: number = 1;\nfunction f( {\n", "TS1005", "syntax error"),
        ("const n: number = 'text';\nexport {}\n", "TS2322", "type error"),
    ],
)
def test_typescript_error(policy: CompiledPolicy, tmp_path: Path, source: str, code: str, kind: str) -> None:
    write(tmp_path, {"app.ts": source})
    Ran(policy, "tsc --noEmit app.ts", tmp_path).expect(
        "TYPESCRIPT_ERROR", ["`app.ts`", kind], file="app.ts", code=code
    )


@needs["gcc"]
def test_c_compile_error(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"bad.c": "int main(void) {\n  int x = 1\n  return x;\n}\n"})
    Ran(policy, "gcc -c bad.c -o bad.o", tmp_path).expect(
        "C_COMPILE_ERROR", ["`bad.c` line 3, column 3", "expected"], file="bad.c", line="3"
    )


@needs["g++"]
def test_c_compile_error_cpp(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {"bad.cpp": "#include <vector>\nint main() {\n  std::vector<int> v\n  return v.size();\n}\n"},
    )
    Ran(policy, "g++ -c bad.cpp -o bad.o", tmp_path).expect(
        "C_COMPILE_ERROR", ["`bad.cpp` line 4"], file="bad.cpp"
    )


@needs["gcc"]
def test_c_compile_error_missing_header(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"inc.c": '#include "missing.h"\nint main(void) { return 0; }\n'})
    Ran(policy, "gcc -c inc.c -o inc.o", tmp_path).expect("C_COMPILE_ERROR", ["`inc.c` includes", "-I<dir>"])


@needs["gcc"]
def test_c_compile_error_undefined_reference(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"link.c": "int f(void);\nint main(void) { return f(); }\n"})
    Ran(policy, "gcc link.c -o link", tmp_path).expect(
        "C_COMPILE_ERROR", ["undefined reference to `f'"], object="link.c"
    )


# --- make, grep, sed ------------------------------------------------------------------------------


@needs["make"]
def test_make_no_rule_for_the_target(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"Makefile": "all:\n\techo all\n"})
    Ran(policy, "make install", tmp_path).expect("MAKE_NO_RULE", ["no target `install`"], target="install")


@needs["make"]
def test_make_no_rule_for_a_missing_source(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"Makefile": "app: main.o\n\tcc -o app main.o\nmain.o: main.c\n\tcc -c main.c\n"})
    Ran(policy, "make", tmp_path).expect(
        "MAKE_NO_RULE", ["needs `main.c`"], target="main.c", needed_by="main.o"
    )


@needs["make"]
def test_make_without_a_makefile(policy: CompiledPolicy, tmp_path: Path) -> None:
    Ran(policy, "make", tmp_path).expect(
        "MAKE_NO_RULE", ["no Makefile"], no_makefile="No targets specified and no makefile found"
    )


@needs["cmake"]
def test_cmake_error(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(demo C)\n"
            "find_package(NoSuchLib CONFIG REQUIRED)\n"
        },
    )
    Ran(policy, "cmake -S . -B build", tmp_path, harness="{output}\nExit Code: {code}").expect(
        "CMAKE_ERROR", ["found no `NoSuchLib`", "-DNoSuchLib_DIR"], package="NoSuchLib"
    )
    (tmp_path / "unconfigured").mkdir()
    Ran(policy, "cmake --build unconfigured", tmp_path).expect("CMAKE_ERROR", ["CMakeCache.txt"])


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("grep 'foo\\(' notes.txt", "grep"),
        ("grep -E 'foo(' notes.txt", "grep"),
        ("grep -E '[a-' notes.txt", "grep"),
        ("sed -e 's/foo/bar' notes.txt", "sed"),
        ("sed -E 's/(foo/bar/' notes.txt", "sed"),
        ("sed -e 'k' notes.txt", "sed"),
    ],
)
def test_regex_error(policy: CompiledPolicy, tmp_path: Path, command: str, program: str) -> None:
    write(tmp_path, {"notes.txt": "foo\n"})
    hint = Ran(policy, command, tmp_path).expect("REGEX_ERROR", ["could not parse"], program=program)
    assert program in hint


# --- test runners ---------------------------------------------------------------------------------


def pytest_command(*args: str) -> str:
    return " ".join([PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args])


PYTEST_ENV = {**C_ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def test_pytest_no_tests_collected(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"test_helpers.py": "def helper():\n    return 1\n"})
    Ran(policy, pytest_command("-q", "test_helpers.py"), tmp_path, env=PYTEST_ENV).expect(
        "PYTEST_NO_TESTS", ["collected none", "--collect-only"], deselected=None
    )


def test_pytest_no_tests_selected(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"test_one.py": "def test_x():\n    pass\n\ndef test_y():\n    pass\n"})
    Ran(policy, pytest_command("-q", "-k", "nomatch", "test_one.py"), tmp_path, env=PYTEST_ENV).expect(
        "PYTEST_NO_TESTS", ["deselected all 2 tests"], deselected="2"
    )


def test_pytest_collection_error(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "test_api.py": "from helpers import missing_name\n\ndef test_x():\n    pass\n",
            "helpers.py": "present = 1\n",
        },
    )
    Ran(policy, pytest_command("-q", "test_api.py"), tmp_path, env=PYTEST_ENV).expect(
        "IMPORT_ERROR", ["`missing_name`"]
    )  # the cause the collection error shows wins over the summary
    write(tmp_path, {"test_api.py": "raise RuntimeError('conftest-like setup failed')\n"})
    Ran(policy, pytest_command("-q", "test_api.py"), tmp_path, env=PYTEST_ENV).expect(
        "PYTEST_COLLECTION_ERROR", ["`test_api.py`", "--collect-only"], path="test_api.py"
    )


def test_unittest_failed(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "test_u.py": "import unittest\n\nclass T(unittest.TestCase):\n"
            "    def test_a(self):\n        self.assertEqual(1, 2)\n"
            "    def test_b(self):\n        raise KeyError('k')\n"
            "    def test_c(self):\n        pass\n"
        },
    )
    hint = Ran(policy, f"{PY} -m unittest test_u", tmp_path).expect(
        "UNITTEST_FAILED", ["failures=1, errors=1"], counts="failures=1, errors=1"
    )
    assert re.search(r"python -m unittest test_u\.T\.test_[ab]", hint), hint


# --- git, the file system -------------------------------------------------------------------------


@needs["git"]
@pytest.mark.parametrize(
    ("command", "mentions", "group"),
    [
        ("git comit -m x", ["no command `comit`", "git commit"], "unknown_command"),
        ("git commit --bogus", ["no option `bogus`"], "unknown_option"),
        ("git log nosuchbranch", ["`nosuchbranch`", "git branch -a"], "revision"),
    ],
)
def test_git_usage_errors(
    policy: CompiledPolicy, repo: Path, git_env: dict[str, str], command: str, mentions: list[str], group: str
) -> None:
    ran = Ran(policy, command, repo, env=git_env)
    ran.expect("GIT_ERROR", mentions)
    assert group in ran.decision.captures


def test_file_exists(policy: CompiledPolicy, tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    Ran(policy, "mkdir build", tmp_path).expect(
        "FILE_EXISTS", ["`build` already exists", "mkdir -p"], path="build"
    )
    Ran(policy, f"{PY} -c \"import os; os.mkdir('build')\"", tmp_path).expect(
        "FILE_EXISTS", ["exist_ok=True"], target="build"
    )


def test_is_a_directory(policy: CompiledPolicy, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    Ran(policy, "cat src", tmp_path).expect("IS_A_DIRECTORY", ["`src` is a directory", "ls src"], path="src")
    Ran(policy, f"{PY} -c \"open('src')\"", tmp_path).expect("IS_A_DIRECTORY", ["`src`"], target="src")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc")
def test_io_error(policy: CompiledPolicy, tmp_path: Path) -> None:
    # Reading /proc/self/mem at offset 0 (an unmapped address) fails with EIO.
    Ran(policy, "cat /proc/self/mem", tmp_path).expect(
        "IO_ERROR", ["`/proc/self/mem`", "I/O error"], path="/proc/self/mem"
    )


# --- Python ---------------------------------------------------------------------------------------


def test_the_final_error_of_a_chained_traceback_wins(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "load.py": "import json\n\ndef load(text):\n    try:\n        return json.loads(text)\n"
            "    except json.JSONDecodeError as err:\n"
            "        raise LookupError('config.json is not valid JSON') from err\n\n"
            "load('{')\n"
        },
    )
    ran = Ran(policy, f"{PY} load.py", tmp_path)
    assert "The above exception was the direct cause" in ran.output
    ran.expect("PYTHON_EXCEPTION", ["`LookupError`", "config.json is not valid JSON", "load.py` line 7"])


def test_a_handled_missing_module_yields_to_the_error_it_raised(
    policy: CompiledPolicy, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {
            "settings.py": "class ImproperlyConfigured(Exception):\n    pass\n\ntry:\n"
            "    import local_settings_missing\nexcept ModuleNotFoundError:\n"
            "    raise ImproperlyConfigured('Requested setting DATABASES, but settings "
            "are not configured.')\n"
        },
    )
    ran = Ran(policy, f"{PY} settings.py", tmp_path)
    assert "During handling of the above exception" in ran.output
    hint = ran.expect("DJANGO_ERROR", ["DJANGO_SETTINGS_MODULE"], setting="DATABASES")
    assert not PIP_ADVICE.search(hint) and "MODULE_NOT_FOUND" in ran.decision.metadata["matches"]


@pytest.mark.parametrize("cut", ["head -n 9", "head -n 4; echo 'Test run finished'", "grep -A 6 Traceback"])
def test_traceback_truncated(policy: CompiledPolicy, tmp_path: Path, cut: str) -> None:
    write(
        tmp_path,
        {
            "deep.py": "def a(n):\n    if n == 0:\n        raise RuntimeError('boom')\n"
            "    return a(n - 1)\n\na(30)\n"
        },
    )
    ran = Ran(policy, f"{PY} deep.py 2>&1 | {cut}", tmp_path)
    assert "RuntimeError" not in ran.output
    ran.expect("TRACEBACK_TRUNCATED", ["cut off", "tail -n 40"])


def test_printed_lines_in_a_traceback_are_not_exceptions(policy: CompiledPolicy, tmp_path: Path) -> None:
    # stdout written while the traceback is printed lands between its frames and its exception line.
    write(
        tmp_path,
        {
            "mixed.py": "import sys, traceback\ntry:\n    {}['amount']\nexcept KeyError:\n"
            "    lines = traceback.format_exc().splitlines(True)\n"
            "    sys.stderr.write(''.join(lines[:-1]))\n"
            "    print('Test 3: Empty input', flush=True)\n    print('Valid: no')\n"
            "    sys.stderr.write(lines[-1])\n    sys.exit(1)\n"
        },
    )
    ran = Ran(policy, f"{PY} mixed.py 2>&1", tmp_path)
    ran.expect("PYTHON_EXCEPTION", ["`KeyError`"], exception="KeyError")


def test_a_project_package_off_the_import_path_is_not_a_pip_package(
    policy: CompiledPolicy, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {
            "mylib/__init__.py": "def helper():\n    return 1\n",
            "scripts/run.py": "from mylib import helper\nprint(helper())\n",
        },
    )
    hint = Ran(policy, f"{PY} scripts/run.py", tmp_path).expect(
        "MODULE_NOT_FOUND", ["`mylib` is part of this project", "PYTHONPATH"], module="mylib"
    )
    assert not PIP_ADVICE.search(hint), hint


@pytest.mark.parametrize(
    ("module", "command"),
    [
        (
            "test_sqlite",
            'DJANGO_SETTINGS_MODULE=test_sqlite {py} -c "import os, importlib; '
            "importlib.import_module(os.environ['DJANGO_SETTINGS_MODULE'])\"",
        ),
        ("tests.runtests", "{py} -m tests.runtests"),
        (
            "myproj",
            'DJANGO_SETTINGS_MODULE=myproj.settings {py} -c "import os, importlib; '
            "importlib.import_module(os.environ['DJANGO_SETTINGS_MODULE'])\"",
        ),
    ],
)
def test_test_and_settings_modules_are_the_projects(
    policy: CompiledPolicy, tmp_path: Path, module: str, command: str
) -> None:
    hint = Ran(policy, command.format(py=PY), tmp_path).expect(
        "MODULE_NOT_FOUND", ["part of this project"], module=module
    )
    assert not PIP_ADVICE.search(hint) and "DJANGO_SETTINGS_MODULE" in hint


def test_the_project_under_test_found_in_the_traceback_is_not_a_pip_package(
    policy: CompiledPolicy, tmp_path: Path
) -> None:
    # Django's own checkout, as SWE-bench runs it: tests/runtests.py imports the checkout's django.
    write(
        tmp_path,
        {
            "django/__init__.py": "from django.utils.version import get_version\n",
            "django/utils/__init__.py": "",
            "django/utils/version.py": "import django_missing_helper\n",
            "tests/runtests.py": "import sys\nsys.path.insert(0, '..')\nimport django\n",
        },
    )
    ran = Ran(policy, f"cd tests && {PY} runtests.py", tmp_path)
    hint = ran.expect("MODULE_NOT_FOUND", ["`django_missing_helper`"])
    assert "pip install django_missing_helper" in hint  # a name the checkout does not have: third-party
    write(tmp_path, {"django/utils/version.py": "import django.conf.global_settings\n"})
    hint = Ran(policy, f"cd tests && {PY} runtests.py", tmp_path).expect(
        "MODULE_NOT_FOUND", ["part of this project"], module="django.conf"
    )
    assert not PIP_ADVICE.search(hint), hint


def test_an_unbuilt_extension_module(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "fastpkg/__init__.py": "from fastpkg._speedups import add\n",
            "fastpkg/_speedups.c": "#include <Python.h>\n",
            "setup.py": "from setuptools import setup, Extension\n"
            "setup(name='fastpkg', ext_modules=[Extension('fastpkg._speedups', "
            "['fastpkg/_speedups.c'])])\n",
        },
    )
    hint = Ran(policy, f"{PY} -c 'import fastpkg'", tmp_path).expect(
        "MODULE_NOT_FOUND", ["compiled extension", "build_ext --inplace"], module="fastpkg._speedups"
    )
    assert "pip install fastpkg" not in hint


def test_a_third_party_module_gets_pip_with_the_distribution_name(
    policy: CompiledPolicy, tmp_path: Path
) -> None:
    Ran(policy, f"{PY} -I -S -c 'import yaml'", tmp_path).expect("MODULE_NOT_FOUND", ["pip install PyYAML"])


def test_a_removed_library_attribute_is_not_a_spelling_mistake(
    policy: CompiledPolicy, tmp_path: Path
) -> None:
    # numpy 2.0 removed `trapz`; Python suggests the nearest spelling, `trace`.  A stand-in library here.
    write(tmp_path, {"lib/numlib.py": "__version__ = '2.0.0'\n\ndef trace(a):\n    return 0\n"})
    hint = Ran(policy, f"PYTHONPATH=lib {PY} -c 'import numlib; numlib.trapz([1, 2])'", tmp_path).expect(
        "ATTRIBUTE_ERROR",
        ["installed version may have removed or renamed `trapz`", "numlib.__version__"],
        suggestion="trace",
    )
    assert "Did you mean" not in hint


ASTROPY_UNBUILT = """\
Traceback (most recent call last):
  File "/testbed/astropy/__init__.py", line 143, in _initialize_astropy
    from .utils import _compiler
ImportError: cannot import name '_compiler' from 'astropy.utils' (/testbed/astropy/utils/__init__.py)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/testbed/astropy/__init__.py", line 150, in _initialize_astropy
    raise ImportError(
ImportError: You appear to be trying to import astropy from within a source checkout or from an editable \
installation without building the extension modules first. Either run:

  pip install -e .

or

  python setup.py build_ext --inplace

to make sure the extension modules are built
"""


def test_c_extension_not_built_verbatim(policy: CompiledPolicy, tmp_path: Path) -> None:
    # astropy's own message (astropy/__init__.py) when imported from an unbuilt checkout, verbatim.
    output = ASTROPY_UNBUILT
    ran = Ran(policy, f"cat <<'EOF'\n{output}EOF\nexit 1", tmp_path)
    ran.expect("C_EXTENSION_NOT_BUILT", ["never built", "pip install -e ."])


@needs_django
def test_django_errors(policy: CompiledPolicy, tmp_path: Path) -> None:
    env = {k: v for k, v in C_ENV.items() if k != "DJANGO_SETTINGS_MODULE"}
    Ran(policy, f"{PY} -m django check", tmp_path, env=env).expect(
        "DJANGO_ERROR", ["settings are not loaded"], setting="DATABASES"
    )
    Ran(policy, f"{PY} -m django nosuchcmd", tmp_path, env=env).expect("DJANGO_ERROR", ["`nosuchcmd`"])
    subprocess.run([PY, "-m", "django", "startproject", "site1", "."], cwd=tmp_path, env=env, check=True)
    Ran(policy, f"{PY} manage.py migrate nosuchapp", tmp_path, env=env).expect(
        "DJANGO_ERROR", ["No installed app with label 'nosuchapp'"]
    )


def test_server_in_foreground(policy: CompiledPolicy, tmp_path: Path) -> None:
    # The harness cuts a command off after its time limit: `timeout` stands in for it.
    ran = Ran(policy, f"timeout 2 {PY} -u -m http.server 0 --bind 127.0.0.1", tmp_path)
    ran.expect("SERVER_IN_FOREGROUND", ["in the background", "server.log"])


# --- exit statuses --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "harness",
    [
        "Exit code {code}\n{output}",
        "{output}\nExit Code: {code}",
        "{output}\n[The command completed with exit code {code}.]",
        "{output}\nexit status {code}",
    ],
)
def test_an_exit_status_the_harness_reports_is_a_failure(
    policy: CompiledPolicy, tmp_path: Path, harness: str
) -> None:
    write(tmp_path, {"Makefile": "all:\n\techo all\n"})
    ran = Ran(policy, "make install; exit 0", tmp_path, harness=harness.replace("{code}", "2"))
    assert ran.code == 0  # the status reaches the guard only through the harness's text
    ran.expect("MAKE_NO_RULE", ["`install`"])


@pytest.mark.parametrize(
    "command",
    [
        "grep -rn TODO src",
        "cd src && grep -c TODO app.py",
        "diff src/app.py src/other.py",
        "cmp src/app.py src/other.py",
        "test -f src/missing.py",
        "[ -d src/missing ]",
        "ls src/* | xargs grep -l TODO",
        "git grep -n TODO -- src",
    ],
)
@pytest.mark.parametrize("harness", ["{output}", "{output}\nExit Code: {code}"])
def test_a_status_given_by_design_is_no_failure(
    policy: CompiledPolicy, tmp_path: Path, git_env: dict[str, str], command: str, harness: str
) -> None:
    write(tmp_path, {"src/app.py": "print('hello')\n", "src/other.py": "print('other')\n"})
    subprocess.run("git init -q && git add -A", shell=True, cwd=tmp_path, env=git_env, check=True)
    ran = Ran(policy, command, tmp_path, env=git_env, harness=harness)
    assert ran.code in (1, 123)
    assert ran.decision.action == "allow" and ran.decision.signature is None, (ran.output, ran.decision)


@pytest.mark.parametrize(
    ("command", "signature"),
    [
        ("grep -rn TODO missing/", "FILE_NOT_FOUND"),
        ("diff src/app.py missing.py", "FILE_NOT_FOUND"),
        ("strings missing.img | grep flag", "FILE_NOT_FOUND"),
    ],
)
def test_a_by_design_program_that_shows_an_error_failed(
    policy: CompiledPolicy, tmp_path: Path, command: str, signature: str
) -> None:
    write(tmp_path, {"src/app.py": "print('hello')\n"})
    Ran(policy, command, tmp_path, harness="{output}\nExit Code: {code}").expect(signature)


# --- successful commands --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "grep -rn 'print' src",
        "diff src/app.py src/app.py",
        f"{PY} -c \"print('Traceback handling: KeyError is caught; No module named x is reported')\"",
        f"{PY} src/app.py",
        "cat src/app.py",
        "echo 'error: none; Exit Code: 0'",
    ],
)
def test_a_successful_command_gets_no_hint(policy: CompiledPolicy, tmp_path: Path, command: str) -> None:
    write(
        tmp_path, {"src/app.py": "print('grep: Unmatched ( or \\\\(  mkdir: File exists  Is a directory')\n"}
    )
    ran = Ran(policy, command, tmp_path, harness="{output}\nExit Code: {code}")
    assert ran.code == 0 and ran.decision.action == "allow", (ran.output, ran.decision)


@needs["gcc"]
@needs["make"]
def test_successful_builds_get_no_hint(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(tmp_path, {"ok.c": "int main(void) { return 0; }\n", "Makefile": "ok: ok.c\n\tcc -o ok ok.c\n"})
    for command in (
        "make",
        "gcc ok.c -o ok2 && ./ok2 && echo compiled",
        "make && echo 'make: nothing to do'",
    ):
        ran = Ran(policy, command, tmp_path)
        assert ran.code == 0 and ran.decision.action == "allow", (command, ran.output, ran.decision)


def test_passing_tests_get_no_hint(policy: CompiledPolicy, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "test_ok.py": "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n"
            "        self.assertTrue(True)\n"
        },
    )
    for command in (pytest_command("-q", "test_ok.py"), f"{PY} -m unittest test_ok"):
        ran = Ran(policy, command, tmp_path, env=PYTEST_ENV)
        assert ran.code == 0 and ran.decision.action == "allow", (command, ran.output, ran.decision)
