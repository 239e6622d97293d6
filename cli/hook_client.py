"""``policyctl hook claude-code``, the fast way: forward the event to a resident process.

Claude Code runs the hook twice per tool call, so this module imports only
``os``, ``sys``, ``socket`` and ``zlib`` (no click, pydantic, Lark or Jinja2).
It sends the event to the user's resident process over a Unix socket and
prints its answer.  When none answers (within ``REPLY_TIMEOUT_SECONDS``), it
answers the event itself, through the same code the resident process runs
(``policy.hooks.respond``) with the compiled policy from the user's cache, and
then starts one in the background
(``python -P -m policy.hooks.resident``) for the next events.

The socket is ``hook-<installation>.sock`` in a folder only this user may
use (0700, owned by the user, no symlink): ``$XDG_RUNTIME_DIR/policyctl``,
else ``$XDG_STATE_HOME/policyctl/run`` (``~/.local/state``).  The resident
process is not used with ``--no-resident``, when ``POLICYCTL_HOOK_RESIDENT``
is ``0``/``false``/``off``/``no``, when ``CI`` is set (unless
``POLICYCTL_HOOK_RESIDENT`` is set to anything else), or when the platform
is not POSIX (no Unix sockets).  ``socket`` is imported only when the socket
file exists, so the event that has to start the resident process does not
pay for it.

Wire format (one connection per event): the request is ``PCH1\\n``, the
policy source, ``\\n``, then the event's bytes; the reply is
``PCH1 <stdout bytes> <stderr bytes>\\n`` and both texts, or ``PCH1 retry\\n``
when the resident process is about to restart (its code changed).
"""

from __future__ import annotations

import os
import sys

MAGIC = b"PCH1"
PREFIX = "policyctl hook claude-code"
"""How the hook's messages start (``policy.hooks.respond`` uses the same)."""
DEFAULT_POLICY = "builtin:claude-code"
RESIDENT_ENV = "POLICYCTL_HOOK_RESIDENT"
IDLE_ENV = "POLICYCTL_HOOK_IDLE"
DEFAULT_IDLE_SECONDS = 900.0
REPLY_TIMEOUT_SECONDS = 10.0
"""How long the resident process may take to answer before this process answers the event itself:
well under the 60 s after which Claude Code kills a hook."""
_OFF = ("0", "false", "off", "no")
_UNIX_PATH_MAX = 107


def run(arguments: list[str]) -> int | None:
    """Answer one event; None when the arguments are for click (``--help``, a mistake)."""
    options = _options(arguments)
    if options is None:
        return None
    policy, resident = options
    stdin = sys.stdin.buffer.read()
    if not policy:  # the guard never switches off silently: the user and the debug log are told
        write(*no_policy())
        return 0
    path = socket_path() if resident and resident_wanted() else None
    reply = forward(path, policy, stdin) if path is not None and os.path.exists(path) else None
    answered_here = reply is None
    write(*(answer_here(policy, stdin) if reply is None else reply))
    if answered_here and path is not None:  # after the answer: its start-up does not delay this event
        start_resident(path, policy)
    return 0


def write(out: bytes, err: bytes) -> None:
    """Print an answer: its JSON on stdout, its report on stderr."""
    if out:
        sys.stdout.buffer.write(out + (b"" if out.endswith(b"\n") else b"\n"))
        sys.stdout.buffer.flush()
    if err:
        sys.stderr.buffer.write(err)
        sys.stderr.buffer.flush()


def no_policy() -> tuple[bytes, bytes]:
    """The answer to every event under ``--policy ""``: a systemMessage, and the same on stderr."""
    import json

    message = f"{PREFIX}: --policy is empty, so no policy is loaded and the call is not guarded"
    return json.dumps({"systemMessage": message}).encode(), f"{message}\n".encode()


def resident_wanted() -> bool:
    """Whether this environment allows a resident process (see the module docstring)."""
    setting = os.environ.get(RESIDENT_ENV, "").strip().lower()
    if setting in _OFF or (not setting and os.environ.get("CI")):
        return False
    return os.name == "posix"  # Unix sockets, checked without importing socket before it is needed


def socket_path() -> str | None:
    """This installation's socket in the user's private runtime folder; None when there is none."""
    folder = _private_folder()
    if folder is None:
        return None
    import zlib

    here = os.path.dirname(os.path.abspath(__file__))
    # The interpreter's folder (a virtual environment's bin/, python and python3 alike), not
    # sys.prefix: without site (-S) that is the base interpreter's, and the console script and
    # the fast command must find the same resident process.
    interpreter = os.path.dirname(os.path.abspath(sys.executable))
    installation = f"{interpreter}\0{here}".encode("utf-8", "replace")
    path = os.path.join(folder, f"hook-{zlib.crc32(installation):08x}.sock")
    return path if len(path.encode("utf-8", "replace")) <= _UNIX_PATH_MAX else None


def forward(path: str, policy: str, stdin: bytes) -> tuple[bytes, bytes] | None:
    """The resident process's answer; None when none answered (absent, dead, restarting)."""
    import socket

    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(REPLY_TIMEOUT_SECONDS)
        client.connect(path)
        client.sendall(MAGIC + b"\n" + policy.encode("utf-8", "surrogateescape") + b"\n" + stdin)
        client.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := client.recv(1 << 16):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        client.close()
    return parse_reply(b"".join(chunks))


def parse_reply(data: bytes) -> tuple[bytes, bytes] | None:
    """``(stdout, stderr)`` of a whole reply; None for a retry or a cut-off reply."""
    header, _, body = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 3 or parts[0] != MAGIC or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    out_size, err_size = int(parts[1]), int(parts[2])
    if len(body) != out_size + err_size:
        return None
    return body[:out_size], body[out_size:]


def start_resident(path: str, policy: str) -> None:
    """Start the resident process in its own session, detached from this one (errors are ignored:
    this event is answered here anyway)."""
    idle = os.environ.get(IDLE_ENV, "")
    arguments = [sys.executable, "-P", "-m", "policy.hooks.resident", "--socket", path, "--warm", policy]
    if idle:
        arguments += ["--idle", idle]
    devnull = os.devnull
    actions = [(os.POSIX_SPAWN_OPEN, fd, devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:  # noqa: SIM105 - not contextlib.suppress: this module imports as little as it can
        os.posix_spawn(sys.executable, arguments, os.environ, file_actions=actions, setsid=True)
    except (OSError, AttributeError, NotImplementedError):
        pass


def answer_here(policy: str, stdin: bytes) -> tuple[bytes, bytes]:
    """Answer the event in this process (the fallback), with the compiled policy from the cache."""
    _enable_site()
    from policy.hooks.respond import Responder

    return Responder().respond(policy, stdin).encoded()


def _options(arguments: list[str]) -> tuple[str, bool] | None:
    """``(policy source, use the resident process)``; None for anything but ``--policy P`` and
    ``--no-resident``.  An empty ``P`` stays empty (``run`` reports it)."""
    policy, resident = DEFAULT_POLICY, True
    rest = list(arguments)
    while rest:
        argument = rest.pop(0)
        if argument == "--no-resident":
            resident = False
        elif argument == "--policy" and rest:
            policy = rest.pop(0)
        elif argument.startswith("--policy="):
            policy = argument.partition("=")[2]
        else:
            return None
    if not policy or policy.startswith("builtin:"):
        return policy, resident
    return os.path.abspath(policy), resident


def _private_folder() -> str | None:
    """The user's runtime folder for policyctl, created 0700; None when it is not private."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        folder = os.path.join(runtime, "policyctl")
    else:
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        folder = os.path.join(state, "policyctl", "run")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    is_folder = (info.st_mode & 0o170000) == 0o040000
    return folder if is_folder and info.st_uid == os.geteuid() and not info.st_mode & 0o077 else None


def main(arguments: list[str]) -> int:
    """``policyctl ARGUMENTS``: a hook event answered here, anything else through click.

    Also run as a file, ``python -S -P …/cli/hook_client.py hook claude-code [options]`` (the
    command ``policyctl install claude-code`` writes): no site initialisation and no
    console-script wrapper for an event the resident process answers; the site directories are
    added only when this process needs the rest of policyctl (to answer by itself, or for click).
    """
    if arguments[:2] == ["hook", "claude-code"]:
        status = run(arguments[2:])
        if status is not None:
            # The answer is written and flushed, the session state is on disk and the resident
            # process is started: tearing the interpreter down (every module a self-answered event
            # imported) would only delay the exit Claude Code waits for.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    _enable_site()
    from cli.commands import policyctl

    policyctl(prog_name="policyctl", args=arguments)
    return 0


def _enable_site() -> None:
    """Add the site directories when this interpreter started without them (``-S``)."""
    if sys.flags.no_site:
        import site

        site.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
