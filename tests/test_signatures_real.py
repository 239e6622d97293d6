"""Every signature of ``builtin:default`` on real output.

Each test runs the real failing command as a subprocess (a missing module, a
busy port, a broken pytest run, a git merge conflict, …) and diagnoses what
it printed.  Where a real run is impossible here, the output is verbatim and
the test says where it comes from: an out-of-memory kill of a GPU or Node
process, a registry's 404, a system-managed Python, and the error messages of
agent edit tools (OpenHands, SWE-agent, DeerFlow, Claude Code).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall, ToolResult
from policy.runtime.loops.layer import ErrorKey
from policy.runtime.signatures import diagnose, hint_decision

PY = sys.executable
DO_NOT_REPEAT = re.compile(
    r"(?i)do not|fails? the same way|same (?:error|result|way)|before running it again|before that"
)

needs = {
    tool: pytest.mark.skipif(shutil.which(tool) is None, reason=f"`{tool}` is not installed")
    for tool in ("node", "npm", "curl", "git", "apt-get")
}


@pytest.fixture(scope="module")
def policy() -> CompiledPolicy:
    return load_policy("builtin:default")


def run(command: Sequence[str] | str, *, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 120) -> tuple[str, ToolResult]:
    """Run a real command; return how an agent would have typed it and what it printed."""
    proc = subprocess.run(command, shell=isinstance(command, str), capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout, stdin=subprocess.DEVNULL)
    typed = command if isinstance(command, str) else shlex.join(command)
    output = proc.stdout + proc.stderr
    return typed, ToolResult(content=output, status="error" if proc.returncode else "success")


def expect(policy: CompiledPolicy, ran: tuple[str, ToolResult], signature: str,
           mentions: Sequence[str] = (), **captures: str | None) -> str:
    """Assert the result shows ``signature`` with these captures (None: absent) and a
    hint that names ``mentions`` and tells the model not to repeat the call."""
    command, result = ran
    call = ToolCall(id="c1", name="bash", args={"command": command})
    diagnosis = diagnose(policy, call, result)
    output = result.content[-3000:]
    assert diagnosis.signature is not None, f"no signature for:\n{output}"
    assert diagnosis.signature.ref.name == signature, f"{diagnosis.matches} for:\n{output}"
    for name, value in captures.items():
        assert diagnosis.captures.get(name) == value, (name, diagnosis.captures, output)
    decision = hint_decision(policy, call, result, diagnosis)
    hint = decision.hint or ""
    assert decision.action == "hint" and decision.signature == signature
    assert hint.startswith("[HINT]"), hint
    assert DO_NOT_REPEAT.search(hint), hint
    for text in mentions:
        assert text in hint, (text, hint)
    return hint


def verbatim(content: str, command: str = "(see the test)") -> tuple[str, ToolResult]:
    return command, ToolResult(content=content, status="error")


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """git with no user configuration at all, and no repository above ``tmp_path``."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home), GIT_CONFIG_NOSYSTEM="1",
               GIT_CEILING_DIRECTORIES=str(tmp_path), EMAIL="", LANG="C", LC_ALL="C")
    return env


def git(repo: Path, env: dict[str, str], *args: str) -> None:
    ident = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run(["git", *ident, *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, git_env: dict[str, str]) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, git_env, "init", "-q")
    (path / "notes.txt").write_text("base\n")
    git(path, git_env, "add", "notes.txt")
    git(path, git_env, "commit", "-qm", "base")
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port a listening socket of this test holds."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- Python -----------------------------------------------------------------------------------


def test_module_not_found(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "import nosuchmod_policyctl"])
    expect(policy, ran, "MODULE_NOT_FOUND", ["pip install nosuchmod_policyctl"], module="nosuchmod_policyctl")


def test_module_not_found_names_the_distribution_to_install(policy: CompiledPolicy) -> None:
    ran = run([PY, "-I", "-S", "-c", "import yaml"])  # -S: no site-packages, so no PyYAML
    expect(policy, ran, "MODULE_NOT_FOUND", ["pip install PyYAML"], module="yaml")


def test_import_error_cannot_import_name(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "from json import nosuch"])
    hint = expect(policy, ran, "IMPORT_ERROR", ["`nosuch`", "`json`"],
                  name="nosuch", module="json", circular=None)
    assert "json/__init__.py" in hint  # where the module was loaded from: spots a shadowing file


def test_import_error_circular_import(policy: CompiledPolicy, tmp_path: Path) -> None:
    (tmp_path / "first.py").write_text("from second import helper\nvalue = 1\n")
    (tmp_path / "second.py").write_text("from first import value\nhelper = 2\n")
    ran = run([PY, "-c", "import first"], cwd=tmp_path)
    expect(policy, ran, "IMPORT_ERROR", ["circular import"], name="value", module="first")


def test_syntax_error_in_code_given_on_the_command_line(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "x ="])
    expect(policy, ran, "SYNTAX_ERROR", ["command line", "line 1", "invalid syntax"],
           file="<string>", line="1", error="SyntaxError")


def test_syntax_error_indentation_in_a_file(policy: CompiledPolicy, tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("def f():\nreturn 1\n")
    ran = run([PY, str(script)])
    expect(policy, ran, "SYNTAX_ERROR", [str(script), "line 2"],
           file=str(script), line="2", error="IndentationError")


def test_syntax_error_found_by_pytest_collection_wins_over_the_pytest_summary(
    policy: CompiledPolicy, tmp_path: Path
) -> None:
    (tmp_path / "test_broken.py").write_text("def test_x(:\n    pass\n")
    ran = pytest_run("test_broken.py", cwd=tmp_path)
    expect(policy, ran, "SYNTAX_ERROR", ["test_broken.py"], line="1")
    assert "PYTEST_FAILED" in diagnose(policy, ToolCall(id="c", name="bash"), ran[1]).matches


def test_name_error(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "print(undefined_name)"])
    expect(policy, ran, "NAME_ERROR", ["`undefined_name`"], name="undefined_name", suggestion=None)


def test_name_error_with_a_suggestion(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "total = 1\nprint(totl)"])
    expect(policy, ran, "NAME_ERROR", ["did you mean `total`?"], name="totl", suggestion="total")


def test_attribute_error_on_a_module(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "import json; json.nosuch"])
    expect(policy, ran, "ATTRIBUTE_ERROR", ["`json` has no attribute `nosuch`", "json.__version__"],
           kind="module", owner="json", attribute="nosuch")


def test_attribute_error_on_none(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "value = {}.get('missing'); value.strip()"])
    expect(policy, ran, "ATTRIBUTE_ERROR", ["The value is None"], owner="NoneType", attribute="strip")


def test_attribute_error_with_a_suggestion(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "'text'.uper()"])
    expect(policy, ran, "ATTRIBUTE_ERROR", ["Did you mean `upper`?"], owner="str", suggestion="upper")


def test_type_error(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "len(1)"])
    expect(policy, ran, "TYPE_ERROR", ["object of type 'int' has no len()"],
           message="object of type 'int' has no len()")


def test_python_exception_is_the_fallback_for_any_traceback(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "settings = {}\nsettings['port']"])
    expect(policy, ran, "PYTHON_EXCEPTION", ["`KeyError` in `<string>` line 2", ": 'port'"],
           exception="KeyError", message="'port'")


# --- the shell and the file system -----------------------------------------------------------


def test_command_not_found_in_bash(policy: CompiledPolicy) -> None:
    ran = run(["bash", "-c", "nosuchcmd_policyctl --version"])
    expect(policy, ran, "COMMAND_NOT_FOUND", ["`nosuchcmd_policyctl`"], command="nosuchcmd_policyctl")


def test_command_not_found_in_sh(policy: CompiledPolicy) -> None:
    ran = run("nosuchcmd_policyctl --version")  # /bin/sh, as a sandbox's bash tool runs it
    expect(policy, ran, "COMMAND_NOT_FOUND", ["`nosuchcmd_policyctl`"], command="nosuchcmd_policyctl")


def test_file_not_found_cat(policy: CompiledPolicy) -> None:
    ran = run(["cat", "/nonexistent/notes.txt"])
    expect(policy, ran, "FILE_NOT_FOUND", ["`/nonexistent/notes.txt`"], path="/nonexistent/notes.txt")


def test_file_not_found_ls(policy: CompiledPolicy) -> None:
    ran = run(["ls", "/nonexistent/dir"])
    expect(policy, ran, "FILE_NOT_FOUND", ["`/nonexistent/dir`"], path="/nonexistent/dir")


def test_file_not_found_python_script(policy: CompiledPolicy) -> None:
    ran = run([PY, "/nonexistent/app.py"])
    expect(policy, ran, "FILE_NOT_FOUND", ["`/nonexistent/app.py`"], missing="/nonexistent/app.py")


def test_file_not_found_python_open(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "open('/nonexistent/config.json')"])
    expect(policy, ran, "FILE_NOT_FOUND", ["`/nonexistent/config.json`"], missing="/nonexistent/config.json")


def test_file_not_found_cd(policy: CompiledPolicy) -> None:
    ran = run(["bash", "-c", "cd /nonexistent/build && make"])
    expect(policy, ran, "FILE_NOT_FOUND", ["`/nonexistent/build`"], path="/nonexistent/build")


def script_without_execute_bit(tmp_path: Path) -> Path:
    script = tmp_path / "deploy.sh"
    script.write_text("#!/bin/sh\necho deployed\n")
    script.chmod(0o644)
    return script


def test_permission_denied_running_a_script(policy: CompiledPolicy, tmp_path: Path) -> None:
    script_without_execute_bit(tmp_path)
    ran = run(["bash", "-c", "./deploy.sh"], cwd=tmp_path)
    expect(policy, ran, "PERMISSION_DENIED", ["`./deploy.sh`", "bash script.sh"], path="./deploy.sh")


def test_permission_denied_from_python(policy: CompiledPolicy, tmp_path: Path) -> None:
    script_without_execute_bit(tmp_path)
    ran = run([PY, "-c", "import subprocess; subprocess.run(['./deploy.sh'])"], cwd=tmp_path)
    expect(policy, ran, "PERMISSION_DENIED", ["`./deploy.sh`"], target="./deploy.sh")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write read-only files")
def test_permission_denied_writing_a_read_only_file(policy: CompiledPolicy, tmp_path: Path) -> None:
    target = tmp_path / "locked.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    ran = run([PY, "-c", f"open({str(target)!r}, 'w')"])
    expect(policy, ran, "PERMISSION_DENIED", [str(target)], target=str(target))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_disk_full_from_the_shell(policy: CompiledPolicy) -> None:
    ran = run(["bash", "-c", "echo data > /dev/full"])  # /dev/full: every write fails with ENOSPC
    expect(policy, ran, "DISK_FULL", ["df -h"])


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_disk_full_from_python(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "f = open('/dev/full', 'w'); f.write('data'); f.flush()"])
    expect(policy, ran, "DISK_FULL", ["no space left"])


def test_out_of_memory_memory_error(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "buffer = bytearray(10**15)"])  # a petabyte: the allocation fails at once
    expect(policy, ran, "OUT_OF_MEMORY", ["ran out of memory"])


def test_out_of_memory_killed(policy: CompiledPolicy) -> None:
    # The kernel's OOM killer sends SIGKILL; the shell reports any SIGKILLed job the same way.
    ran = run(["bash", "-c", "sleep 30 & kill -9 $!; wait $!"])
    expect(policy, ran, "OUT_OF_MEMORY", ["was killed"])


@pytest.mark.parametrize(
    "output",
    [
        # Node.js when the V8 heap is exhausted (verbatim)
        "<--- Last few GCs --->\n\nFATAL ERROR: Reached heap limit Allocation failed - "
        "JavaScript heap out of memory\n 1: 0xb7a940 node::Abort() [node]\n",
        # PyTorch on a GPU (verbatim)
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 23.65 GiB of which 1.05 GiB is free.",
    ],
)
def test_out_of_memory_verbatim(policy: CompiledPolicy, output: str) -> None:
    expect(policy, verbatim(output), "OUT_OF_MEMORY", ["ran out of memory"])


def test_usage_error_argparse(policy: CompiledPolicy) -> None:
    ran = run([PY, "-m", "http.server", "--no-such-flag"])
    expect(policy, ran, "USAGE_ERROR", ["--help", "--no-such-flag"],
           program="server.py", problem="unrecognized arguments: --no-such-flag")


def test_usage_error_gnu_tool(policy: CompiledPolicy) -> None:
    ran = run(["ls", "--no-such-flag"], env={**os.environ, "LC_ALL": "C"})
    expect(policy, ran, "USAGE_ERROR", ["`ls`"], program="ls")


def test_timeout_of_a_subprocess(policy: CompiledPolicy) -> None:
    code = ("import subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'], timeout=0.2)")
    ran = run([PY, "-c", code])
    expect(policy, ran, "TIMEOUT", ["timed out"])


def test_timeout_of_a_socket_read(policy: CompiledPolicy, busy_port: int) -> None:
    code = (f"import socket; s = socket.create_connection(('127.0.0.1', {busy_port})); "
            "s.settimeout(0.2); s.recv(1)")  # connected to a listener that never sends
    ran = run([PY, "-c", code])
    expect(policy, ran, "TIMEOUT", ["timed out"])


# --- servers and the network -------------------------------------------------------------------


def test_port_in_use_python_server(policy: CompiledPolicy, busy_port: int) -> None:
    ran = run([PY, "-m", "http.server", "--bind", "127.0.0.1", str(busy_port)])
    expect(policy, ran, "PORT_IN_USE", ["The port is already in use"], port=None, listen_port=None)


@needs["node"]
def test_port_in_use_node_server_names_the_port(policy: CompiledPolicy, busy_port: int) -> None:
    ran = run(["node", "-e", f"require('net').createServer().listen({busy_port}, '127.0.0.1')"])
    expect(policy, ran, "PORT_IN_USE", [f"Port {busy_port} is already in use", f"fuser -k {busy_port}/tcp"],
           listen_port=str(busy_port))


@pytest.mark.parametrize(
    ("output", "port"),
    [
        # uvicorn (verbatim)
        ("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): "
         "address already in use", "8000"),
        # uvicorn on Windows (verbatim)
        ("ERROR: [Errno 10048] error while attempting to bind on address ('0.0.0.0', 8080): only one usage "
         "of each socket address (protocol/network address/port) is normally permitted", "8080"),
        # Flask's development server, werkzeug (verbatim)
        (" * Serving Flask app 'app'\n * Debug mode: on\nAddress already in use\nPort 5000 is in use by "
         "another program. Either identify and stop that program, or start the server with a different port.",
         "5000"),
        # a Go server (verbatim)
        ("2024/05/01 12:00:00 listen tcp :8080: bind: address already in use\nexit status 1", "8080"),
    ],
)
def test_port_in_use_verbatim_servers_name_the_port(policy: CompiledPolicy, output: str, port: str) -> None:
    expect(policy, verbatim(output), "PORT_IN_USE", [f"Port {port} is already in use"])


@needs["curl"]
def test_connection_refused_curl(policy: CompiledPolicy) -> None:
    port = closed_port()
    ran = run(["curl", "-sS", f"http://127.0.0.1:{port}/health"])
    expect(policy, ran, "CONNECTION_REFUSED", [f"127.0.0.1:{port}"], host="127.0.0.1", port=str(port))


def test_connection_refused_python(policy: CompiledPolicy) -> None:
    port = closed_port()
    ran = run([PY, "-c", f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/')"])
    expect(policy, ran, "CONNECTION_REFUSED", ["Nothing is listening"])


@needs["node"]
def test_connection_refused_node_names_the_address(policy: CompiledPolicy) -> None:
    port = closed_port()
    script = (f"require('net').connect({port}, '127.0.0.1')"
              ".on('error', e => { console.error(e.message); process.exit(1) })")
    ran = run(["node", "-e", script])
    expect(policy, ran, "CONNECTION_REFUSED", [f"127.0.0.1:{port}"], address=f"127.0.0.1:{port}")


@needs["curl"]
def test_network_unavailable_curl(policy: CompiledPolicy) -> None:
    ran = run(["curl", "-sS", "https://nosuch.invalid/install.sh"])  # .invalid never resolves (RFC 6761)
    expect(policy, ran, "NETWORK_UNAVAILABLE", ["network is unavailable"])


def test_network_unavailable_python(policy: CompiledPolicy) -> None:
    ran = run([PY, "-c", "import socket; socket.getaddrinfo('nosuch.invalid', 443)"])
    expect(policy, ran, "NETWORK_UNAVAILABLE", ["network is unavailable"])


# --- installers --------------------------------------------------------------------------------


def pip_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1", "PIP_CACHE_DIR": str(tmp_path / "pip-cache")}


def test_pip_install_failed_no_matching_distribution(policy: CompiledPolicy, tmp_path: Path) -> None:
    requirement = "nosuch-policyctl-pkg==1.0"
    ran = run([PY, "-m", "pip", "install", "--no-index", requirement], env=pip_env(tmp_path))
    expect(policy, ran, "PIP_INSTALL_FAILED", [f"`{requirement}`"], requirement=requirement)


def make_wheel(folder: Path, name: str, version: str, *requires: str) -> None:
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    wheel_info = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files = {f"{info}/METADATA": metadata, f"{info}/WHEEL": wheel_info}
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def test_pip_install_failed_resolution_impossible(policy: CompiledPolicy, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "alpha", "1.0", "shared==1.0")
    make_wheel(wheels, "beta", "1.0", "shared==2.0")
    make_wheel(wheels, "shared", "1.0")
    make_wheel(wheels, "shared", "2.0")
    ran = run([PY, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(wheels),
               "alpha", "beta"], env=pip_env(tmp_path))
    assert "ResolutionImpossible" in ran[1].content
    expect(policy, ran, "PIP_INSTALL_FAILED", ["conflict"], requirement=None)


def test_pip_externally_managed_verbatim(policy: CompiledPolicy) -> None:
    # Needs a Python its distributor marked as managed (PEP 668); this is Debian's pip output.
    output = """error: externally-managed-environment

\u00d7 This environment is externally managed
╰─> To install Python packages system-wide, try apt install
    python3-xyz, where xyz is the package you are trying to
    install.

note: If you believe this is a mistake, please contact your Python installation or OS distribution \
provider. You can override this, at the risk of breaking your Python installation or OS, by passing \
--break-system-packages.
hint: See PEP 668 for the detailed specification.
"""
    expect(policy, verbatim(output, "pip install requests"), "PIP_EXTERNALLY_MANAGED", ["python3 -m venv"])


def npm_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "npm_config_cache": str(tmp_path / "npm-cache"),
            "npm_config_update_notifier": "false", "npm_config_audit": "false", "npm_config_fund": "false"}


@needs["npm"]
def test_npm_install_failed_broken_package_json(policy: CompiledPolicy, tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "demo", "version": ')
    ran = run(["npm", "install", "--offline"], cwd=tmp_path, env=npm_env(tmp_path))
    expect(policy, ran, "NPM_INSTALL_FAILED", ["package.json is not valid JSON"], code="EJSONPARSE")


@needs["npm"]
def test_npm_install_failed_without_the_registry(policy: CompiledPolicy, tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "demo", "version": "1.0.0"}')
    ran = run(["npm", "install", "--offline", "left-pad-policyctl"], cwd=tmp_path, env=npm_env(tmp_path))
    expect(policy, ran, "NPM_INSTALL_FAILED", ["cannot be reached"], code="ENOTCACHED")


@pytest.mark.parametrize("prefix", ["npm ERR!", "npm error"])  # npm up to 9, npm 10 and later
def test_npm_install_failed_unknown_package_verbatim(policy: CompiledPolicy, prefix: str) -> None:
    # The registry's 404 needs the network; this is npm's output for it, verbatim.
    output = (f"{prefix} code E404\n"
              f"{prefix} 404 Not Found - GET https://registry.npmjs.org/left-pad-policyctl - Not found\n"
              f"{prefix} 404\n{prefix} 404  'left-pad-policyctl@*' is not in this registry.\n"
              f"{prefix} 404\n{prefix} 404 Note that you can also install from a\n")
    expect(policy, verbatim(output, "npm install left-pad-policyctl"), "NPM_INSTALL_FAILED",
           ["`left-pad-policyctl@*` does not exist"], code="E404", package="left-pad-policyctl@*")


@needs["apt-get"]
def test_apt_package_not_found(policy: CompiledPolicy) -> None:
    ran = run(["apt-get", "install", "--simulate", "nosuch-policyctl-pkg"])
    expect(policy, ran, "APT_PACKAGE_NOT_FOUND", ["`nosuch-policyctl-pkg`", "apt-get update"],
           package="nosuch-policyctl-pkg")


@needs["node"]
def test_node_module_not_found_package(policy: CompiledPolicy, tmp_path: Path) -> None:
    ran = run(["node", "-e", "require('@acme/nosuch-policyctl/lib/util')"], cwd=tmp_path)
    expect(policy, ran, "NODE_MODULE_NOT_FOUND", ["npm install @acme/nosuch-policyctl"],
           module="@acme/nosuch-policyctl/lib/util", package="@acme/nosuch-policyctl")


@needs["node"]
def test_node_module_not_found_script(policy: CompiledPolicy, tmp_path: Path) -> None:
    missing = tmp_path / "server.js"
    ran = run(["node", str(missing)])
    expect(policy, ran, "NODE_MODULE_NOT_FOUND", [f"`{missing}`: no such file"],
           module=str(missing), package=None)


# --- test runners and git ------------------------------------------------------------------------


def pytest_run(*args: str, cwd: Path) -> tuple[str, ToolResult]:
    """A real pytest run; plugins installed here (and their start-up time) are left out."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return run([PY, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env)


@pytest.fixture
def failing_tests(tmp_path: Path) -> Path:
    (tmp_path / "test_totals.py").write_text(
        "def test_sum():\n    assert sum([1, 2]) == 3\n\n"
        "def test_rounding():\n    assert round(2.675, 2) == 2.68\n\n"
        "def test_split():\n    assert 'a,b'.split(',') == ['a', 'b', 'c']\n"
    )
    return tmp_path


def test_pytest_failed(policy: CompiledPolicy, failing_tests: Path) -> None:
    ran = pytest_run("test_totals.py", cwd=failing_tests)
    hint = expect(policy, ran, "PYTEST_FAILED", ["2 failed, 1 passed", "`test_totals.py::test_rounding`"],
                  test="test_totals.py::test_rounding", counts="2 failed, 1 passed")
    assert "python -m pytest 'test_totals.py::test_rounding' -x -q" in hint


def test_pytest_failed_quiet_mode(policy: CompiledPolicy, failing_tests: Path) -> None:
    ran = pytest_run("-q", "test_totals.py", cwd=failing_tests)
    expect(policy, ran, "PYTEST_FAILED", ["2 failed, 1 passed"], test="test_totals.py::test_rounding")


def test_pytest_failed_is_seen_even_when_the_tool_reports_success(
    policy: CompiledPolicy, failing_tests: Path
) -> None:
    command, result = pytest_run("test_totals.py", cwd=failing_tests)
    masked = ToolResult(content=result.content, status="success")  # a tool that swallows exit codes
    diagnosis = diagnose(policy, ToolCall(id="c1", name="bash", args={"command": command}), masked)
    assert diagnosis.signature is not None and diagnosis.signature.ref.name == "PYTEST_FAILED"


def test_pytest_passing_run_matches_nothing(policy: CompiledPolicy, tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    command, result = pytest_run("test_ok.py", cwd=tmp_path)
    assert result.status == "success"
    assert diagnose(policy, ToolCall(id="c1", name="bash", args={"command": command}), result).matches == ()


@needs["git"]
def test_git_error_outside_a_repository(
    policy: CompiledPolicy, tmp_path: Path, git_env: dict[str, str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    ran = run(["git", "status"], cwd=plain, env=git_env)
    expect(policy, ran, "GIT_ERROR", ["not inside a git repository"], not_repo="not a git repository")


@needs["git"]
def test_git_error_pathspec_did_not_match(
    policy: CompiledPolicy, repo: Path, git_env: dict[str, str]
) -> None:
    ran = run(["git", "checkout", "feature/nosuch"], cwd=repo, env=git_env)
    expect(policy, ran, "GIT_ERROR", ["`feature/nosuch`", "git branch -a"], pathspec="feature/nosuch")


def branch_with_their_notes(repo: Path, git_env: dict[str, str]) -> None:
    """A branch `other` whose commit rewrote notes.txt; back on main."""
    git(repo, git_env, "checkout", "-qb", "other")
    (repo / "notes.txt").write_text("theirs\n")
    git(repo, git_env, "commit", "-qam", "theirs")
    git(repo, git_env, "checkout", "-q", "main")


@needs["git"]
def test_git_error_merge_conflict(
    policy: CompiledPolicy, repo: Path, git_env: dict[str, str]
) -> None:
    branch_with_their_notes(repo, git_env)
    (repo / "notes.txt").write_text("ours\n")
    git(repo, git_env, "commit", "-qam", "ours")
    identity = ["-c", "user.name=T", "-c", "user.email=t@example.com"]
    ran = run(["git", *identity, "merge", "other"], cwd=repo, env=git_env)
    expect(policy, ran, "GIT_ERROR", ["`notes.txt`", "git add notes.txt"], conflict="notes.txt")


@needs["git"]
def test_git_error_local_changes_would_be_overwritten(
    policy: CompiledPolicy, repo: Path, git_env: dict[str, str]
) -> None:
    branch_with_their_notes(repo, git_env)
    (repo / "notes.txt").write_text("uncommitted\n")
    ran = run(["git", "checkout", "other"], cwd=repo, env=git_env)
    expect(policy, ran, "GIT_ERROR", ["git stash"],
           overwritten="Your local changes to the following files would be overwritten")


@needs["git"]
def test_git_error_without_an_identity(
    policy: CompiledPolicy, repo: Path, git_env: dict[str, str]
) -> None:
    (repo / "notes.txt").write_text("changed\n")
    ran = run(["git", "commit", "-qam", "change"], cwd=repo, env=git_env)
    expect(policy, ran, "GIT_ERROR", ["git config user.email"], identity="Please tell me who you are")


# --- agent edit tools (their messages, verbatim) -------------------------------------------------


def test_edit_rejected_openhands(policy: CompiledPolicy) -> None:
    # OpenHands' editor, from ../shared/traces/openhands/resolver-mock__Add_a_toggle_for_dark_mode.jsonl
    output = """\
[Your proposed edit has introduced new syntax error(s). Please understand the errors and retry your \
edit command.]
/workspace/src/App.tsx:22
[This is how your edit would have looked if applied]
-------------------------------------------------
(this is the beginning of the file)
1|
Your changes have NOT been applied. Please fix your edit command and try again.
"""
    expect(policy, verbatim(output), "EDIT_REJECTED", ["/workspace/src/App.tsx:22"],
           location="/workspace/src/App.tsx:22")


def test_edit_rejected_swe_agent(policy: CompiledPolicy) -> None:
    # SWE-agent's linting editor, from ../shared/traces/swe-agent/testdata__pydicom__pydicom-1458.jsonl
    def rejection(error: str) -> str:
        return f"""\
Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your \
edit commmand.

ERRORS:
- E999 SyntaxError: {error}

This is how your edit would have looked if applied
-------------------------------------------------
[File: /pydicom__pydicom/pydicom/pixel_data_handlers/numpy_handler.py (373 lines total)]
(281 more lines above)
"""

    path = "/pydicom__pydicom/pydicom/pixel_data_handlers/numpy_handler.py"
    expect(policy, verbatim(rejection("unmatched ']'")), "EDIT_REJECTED", [f"`{path}`", "unmatched ']'"],
           error="E999 SyntaxError: unmatched ']'", file=path)
    # Rejected edits of one file are the same error (for error_streak), whatever the message.
    keys = {diagnose(policy, ToolCall(id="c", name="str_replace"), verbatim(rejection(error))[1]).key
            for error in ("unmatched ']'", "unmatched ')'")}
    assert keys == {ErrorKey("EDIT_REJECTED", (("location", ""), ("file", path)))}


@pytest.mark.parametrize(
    ("output", "path"),
    [
        # DeerFlow's str_replace tool (its message format)
        ("Error: String to replace not found in file: /mnt/user-data/workspace/app.py",
         "/mnt/user-data/workspace/app.py"),
        # Claude Code's Edit tool
        ("<tool_use_error>String to replace not found in file.\nString: def main():</tool_use_error>", None),
        # OpenHands' editor, from ../shared/traces/openhands/multi_swe_bench__ponylang__ponyc-4588.jsonl
        ("ERROR:\nNo replacement was performed, old_str `      return pattern_type;` did not appear "
         "verbatim in /workspace/ponylang__ponyc__0.1/src/libponyc/expr/match.c.",
         "/workspace/ponylang__ponyc__0.1/src/libponyc/expr/match.c"),
    ],
)
def test_old_string_not_found(policy: CompiledPolicy, output: str, path: str | None) -> None:
    expect(policy, verbatim(output), "OLD_STRING_NOT_FOUND", [f"`{path}`" if path else "the file"], path=path)


@pytest.mark.parametrize(
    ("output", "count"),
    [
        # Claude Code's Edit tool
        ("Found 3 matches of the string to replace, but replace_all is false. To replace all occurrences, "
         "set replace_all to true. To replace only one occurrence, please provide more context to uniquely "
         "identify the instance.\nString: return None", "3"),
        # OpenHands' editor, from ../shared/traces/openhands/multi_swe_bench__ponylang__ponyc-4588.jsonl
        ("ERROR:\nNo replacement was performed. Multiple occurrences of old_str `return pattern_type;` "
         "in lines [317, 449]. Please ensure it is unique.", None),
    ],
)
def test_old_string_not_unique(policy: CompiledPolicy, output: str, count: str | None) -> None:
    mention = f"{count} times" if count else "more than once"
    expect(policy, verbatim(output), "OLD_STRING_NOT_UNIQUE", [mention], count=count)


@pytest.mark.parametrize(
    ("output", "parameter"),
    [
        # OpenHands' editor, from ../shared/traces/openhands/multi_swe_bench__ponylang__ponyc-4593.jsonl
        ("ERROR:\nParameter `old_str` is required for command: str_replace.", "old_str"),
        ("Parameter 'command' is expected to be one of ['view', 'create', 'str_replace', 'insert', "
         "'undo_edit'].", "command"),
        ("ERROR:\nInvalid `view_range` parameter: [100, 150]. Its second element `150` should be smaller "
         "than the number of lines in the file: `122`.", "view_range"),
    ],
)
def test_invalid_tool_arguments(policy: CompiledPolicy, output: str, parameter: str) -> None:
    expect(policy, verbatim(output), "INVALID_TOOL_ARGUMENTS", [f"`{parameter}`"], parameter=parameter)


# --- the set as a whole --------------------------------------------------------------------------


def test_every_default_signature_is_tested_on_real_output(policy: CompiledPolicy) -> None:
    import test_signatures_corpus  # the signatures agents meet most, on real commands too

    tests = [name for name in [*globals(), *vars(test_signatures_corpus)] if name.startswith("test_")]
    untested = [rule.ref.name for rule in policy.signatures
                if not any(rule.ref.name.lower() in name for name in tests)]
    assert untested == []


def test_every_default_signature_has_a_hint(policy: CompiledPolicy) -> None:
    assert [rule.ref.name for rule in policy.signatures if rule.hint is None] == []
