"""Answer one Claude Code hook event: the text the hook prints on stdout and on stderr.

The resident process and a hook process that answers by itself both call
:meth:`Responder.respond`, so an event gets the same answer whichever path
serves it.  Nothing raises out of it and nothing is silent: a malformed
event, a broken policy or a fault inside the guard is reported on stderr
(Claude Code's debug log), and a fault that lets a call through is also
reported in a ``systemMessage`` the user sees.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from policy.hooks.claude_code import HookEventError, answer, file_reader, parse_event
from policy.hooks.policy_cache import PolicyCache, Watch
from policy.model.compiled import CompiledPolicy
from policy.model.diagnostics import PolicyError
from policy.runtime.guard import Guard
from policy.stores.file import FileStore
from policy.stores.lru import LruDict
from policy.stores.memory import Store

if TYPE_CHECKING:
    from policy.runtime.workspace.coverage import Coverage
    from policy.runtime.workspace.local import LocalWorkspace
    from policy.runtime.workspace.snapshot import Snapshot

PREFIX = "policyctl hook claude-code"
WORKSPACES = 16
"""Project folders whose walk caches a resident process keeps."""


class Reply(NamedTuple):
    """What the hook prints."""

    stdout: str = ""
    stderr: str = ""

    def encoded(self) -> tuple[bytes, bytes]:
        """Both texts as UTF-8.  A lone surrogate (an event's JSON may hold one as a ``\\ud800``
        escape, and a denial quotes the path it named) is written as that escape again: valid
        JSON with the same string on stdout, readable on stderr."""
        return (self.stdout.encode("utf-8", "backslashreplace"),
                self.stderr.encode("utf-8", "backslashreplace"))


class Responder:
    """Answers events; keeps each compiled policy until a file it was built from changes."""

    def __init__(self, store: Store | None = None, cache: PolicyCache | None = None) -> None:
        self._store = store
        self._cache = cache if cache is not None else PolicyCache()
        self._policies: dict[str, tuple[CompiledPolicy, Watch]] = {}
        self._workspaces: LruDict[tuple[str, int, int], LocalWorkspace] = LruDict(WORKSPACES)
        """(cwd, max_files, max_check_bytes) → the workspace of the events from there, kept so its
        folder listings are not made again for every event of a resident process."""
        self._lock = threading.Lock()

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = FileStore()
        return self._store

    def respond(self, policy_source: str, stdin: bytes) -> Reply:
        """The answer to one event read from ``stdin`` under the policy ``policy_source``."""
        try:
            return self._respond(policy_source, stdin)
        except Exception as err:  # the agent is never broken by the guard, and is told
            message = f"{PREFIX}: internal error, the call is not guarded: {type(err).__name__}: {err}"
            return Reply(stdout=json.dumps({"systemMessage": message}), stderr=message + "\n")

    def policy(self, source: str) -> CompiledPolicy:
        """The compiled policy, compiled again (through the cache) when one of its files changed."""
        with self._lock:
            known = self._policies.get(source)
            if known is None or not known[1].unchanged():
                policy, deps = self._cache.load(source)
                known = self._policies[source] = (policy, Watch(deps))
            return known[0]

    def workspace(self, cwd: Path, policy: CompiledPolicy) -> LocalWorkspace:
        """The event's ``cwd`` as the guard's workspace (the sweep checks what a ``Bash`` call changed)."""
        from policy.runtime.workspace.local import DEFAULT_MAX_FILES, LocalWorkspace

        limit = policy.workspace.max_files if policy.workspace is not None else DEFAULT_MAX_FILES
        size = policy.max_check_bytes
        with self._lock:
            return self._workspaces.get_or_put((str(cwd), limit, size),
                                               lambda: LocalWorkspace(cwd, max_files=limit, max_bytes=size))

    def _respond(self, policy_source: str, stdin: bytes) -> Reply:
        text = stdin.decode("utf-8", "replace")
        try:
            event = parse_event(text)
        except HookEventError as err:
            return Reply(stderr=f"{PREFIX}: malformed event, no decision: {err}\n")
        try:
            policy = self.policy(policy_source)
        except (PolicyError, OSError) as err:
            message = f"{PREFIX}: policy {policy_source} cannot be used, the call is not guarded:\n{err}"
            return Reply(stdout=json.dumps({"systemMessage": message}), stderr=message + "\n")
        with _FaultLog() as faults:
            cwd = event.cwd
            workspace = _EventWorkspace(lambda: self.workspace(cwd, policy)) if cwd is not None else None
            guard = Guard(policy, read_file=file_reader(event.cwd, policy.max_check_bytes), store=self.store,
                          workspace=workspace)
            reply = answer(guard, event)
        lines = faults.lines + ([reply["systemMessage"]] if reply and "systemMessage" in reply else [])
        stderr = "".join(f"{PREFIX}: {line}\n" for line in lines)
        if reply is None:
            return Reply(stderr=stderr)
        return Reply(stdout=json.dumps(reply, ensure_ascii=False), stderr=stderr)


class _EventWorkspace:
    """The event's project folder as the guard sees it: ``Responder.workspace``, built (and its
    module imported) when the guard first looks at it; the gate of a write never does."""

    local_clock = True  # a LocalWorkspace's files

    def __init__(self, build: Callable[[], LocalWorkspace]) -> None:
        self._build = build
        self._built: LocalWorkspace | None = None

    def _local(self) -> LocalWorkspace:
        if self._built is None:
            self._built = self._build()
        return self._built

    def snapshot(self, coverage: Coverage) -> Snapshot:
        return self._local().snapshot(coverage)

    def read(self, path: str) -> str | None:
        return self._local().read(path)

    def relative(self, path: str) -> str | None:
        return self._local().relative(path)

    def staged(self, paths: list[str]) -> dict[str, str | None]:
        return self._local().staged(paths)


class _FaultLog(logging.Handler):
    """Collects the guard's warnings and errors of one event (this thread only), for stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self._thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._thread:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                message += f": {type(error).__name__}: {error}"
            self.lines.append(message)

    def __enter__(self) -> _FaultLog:
        logging.getLogger("policy").addHandler(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        logging.getLogger("policy").removeHandler(self)
