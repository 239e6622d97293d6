"""The per-user resident process behind ``policyctl hook claude-code`` (see ``cli.hook_client``).

It keeps the compiled policies and the imported guard in memory and answers
each event that a hook process forwards over its Unix socket, one thread per
connection, through :class:`policy.hooks.respond.Responder` (the same code a
hook process runs when it answers by itself).  Session state stays in the
file store, so it is shared with hook processes that answer by themselves
and no update is lost between them.

- One per socket: the first to take the lock file beside the socket serves,
  any other exits at once.  The socket is created 0600 in the user's private
  folder.
- A changed policy file or hint template is picked up on the next event (the
  responder compares their content).  A changed policyctl (an upgrade, an
  edit) is not served by old code: the process asks that event's hook to
  answer it itself, stops listening and exits, and the next event starts a
  new one.
- It exits after ``--idle`` seconds without an event.

Run as ``python -P -m policy.hooks.resident --socket PATH [--idle SECONDS]``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import socket
import threading
import time
from collections.abc import Iterator

from policy.hooks.policy_cache import code_identity
from policy.hooks.respond import Responder

MAGIC = b"PCH1"
RETRY = MAGIC + b" retry\n"
DEFAULT_IDLE_SECONDS = 900.0


class Resident:
    """Serves one socket until it has been idle for ``idle`` seconds (or its code changed)."""

    def __init__(self, path: str, idle: float = DEFAULT_IDLE_SECONDS, responder: Responder | None = None,
                 warm: str | None = None) -> None:
        self.path = path
        self.idle = idle
        self.warm = warm
        self.responder = responder if responder is not None else Responder()
        self._identity = code_identity()
        self._inode: int | None = None
        self._active = 0
        self._last_event = time.monotonic()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def serve(self) -> None:
        """Listen and answer until idle; returns at once when another process serves this socket."""
        with self._exclusive() as mine:
            if not mine:
                return
            listener = self._listen()
            if self.warm is not None:
                with contextlib.suppress(Exception):  # a broken policy is reported on its first event
                    self.responder.policy(self.warm)
            try:
                self._accept_until_idle(listener)
            finally:
                listener.close()
                self._unlink_own_socket()

    # --- implementation ---------------------------------------------------------

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[bool]:
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield True
        finally:
            os.close(fd)

    def _listen(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a dead resident's socket: nobody listens on it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)
        try:
            listener.bind(self.path)
        finally:
            os.umask(previous)
        os.chmod(self.path, 0o600)
        self._inode = os.stat(self.path).st_ino
        listener.listen(128)
        listener.settimeout(min(self.idle, 1.0))
        return listener

    def _accept_until_idle(self, listener: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                with self._lock:
                    if self._active == 0 and time.monotonic() - self._last_event >= self.idle:
                        return
                continue
            with self._lock:
                self._active += 1
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()
        self._wait_for_handlers()

    def _wait_for_handlers(self) -> None:
        while True:
            with self._lock:
                if self._active == 0:
                    return
            self._stopping.wait(0.05)

    def _handle(self, connection: socket.socket) -> None:
        try:
            with connection:
                connection.settimeout(max(self.idle, 60.0))
                request = _read_all(connection)
                header, _, rest = request.partition(b"\n")
                policy, _, stdin = rest.partition(b"\n")
                if header != MAGIC or self._code_changed():
                    connection.sendall(RETRY)
                    return
                reply = self.responder.respond(policy.decode("utf-8", "surrogateescape"), stdin)
                out, err = reply.encoded()
                connection.sendall(MAGIC + f" {len(out)} {len(err)}\n".encode() + out + err)
        except OSError:
            pass  # the hook process went away; it answers by itself
        finally:
            with self._lock:
                self._active -= 1
                self._last_event = time.monotonic()

    def _code_changed(self) -> bool:
        code_identity.cache_clear()
        if code_identity() == self._identity:
            return False
        self._stopping.set()
        self._unlink_own_socket()
        return True

    def _unlink_own_socket(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)


def _read_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="policy.hooks.resident", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="the Unix socket to serve")
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_SECONDS,
                        help="exit after this many idle seconds")
    parser.add_argument("--warm", metavar="POLICY", help="compile this policy before the first event")
    options = parser.parse_args(argv)
    os.chdir("/")
    Resident(options.socket, idle=max(options.idle, 0.1), warm=options.warm).serve()


if __name__ == "__main__":
    main()
