"""Progress: did a call bring the workspace to a state it has not been in during this run?

The fingerprint is a sum (mod 2**64) of one hash per file changed in this
run, of its path and content digest, so a change to one file updates it in
constant time.  A file counts from the first time the guard sees it change:
until then it is the same in every state of the run and leaves the sum alone.
Reaching a fingerprint already seen in this run (a restored backup, an edit
undone and redone) is not progress.

Without a workspace, ``mutates_when`` decides from the command's text, read
without the redirections that change no file (``2>&1``, ``>&2``, ``>/dev/null``).
"""

from __future__ import annotations

import hashlib
import re

from policy.model.compiled import ToolSpec
from policy.runtime.workspace.state import DIGEST_BYTES, SEEN_LIMIT, TRACKED_LIMIT, WorkspaceState

DELETED = ""
_MODULUS = 1 << 64
NEUTRAL_REDIRECTION = re.compile(
    r"(?:\d*|&)>>?\|?[ \t]*/dev/(?:null|stdout|stderr|tty)\b|\d*[<>]&(?:\d+|-)")
"""Redirections that duplicate or close a descriptor, or write to a device: no file changes."""


def content_digest(text: str | None) -> str:
    """The hex digest of a file's text; ``DELETED`` for a missing file."""
    if text is None:
        return DELETED
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=DIGEST_BYTES).hexdigest()


def record(state: WorkspaceState, path: str, digest: str) -> None:
    """``path`` now has content ``digest``: update the fingerprint."""
    previous = state.digests.get(path)
    if previous == digest:
        return
    total = state.fingerprint + _term(path, digest)
    if previous is not None:
        total -= _term(path, previous)
    elif len(state.digests) >= TRACKED_LIMIT:
        # Too many files changed to follow each: this one only moves the sum, never back.
        state.fingerprint = total % _MODULUS
        return
    state.digests[path] = digest
    state.fingerprint = total % _MODULUS


def advance(state: WorkspaceState, before: int) -> bool:
    """Whether the fingerprint moved from ``before`` to one not seen in this run (and note it)."""
    if state.fingerprint == before:
        return False
    packed = state.fingerprint.to_bytes(DIGEST_BYTES, "big")
    seen = state.seen
    for offset in range(0, len(seen), DIGEST_BYTES):
        if seen[offset : offset + DIGEST_BYTES] == packed:
            return False
    state.seen = (seen + packed)[-SEEN_LIMIT * DIGEST_BYTES :]
    return True


def command_mutates(spec: ToolSpec, command: str) -> bool:
    """``mutates_when`` on the command's text, its neutral redirections removed."""
    if spec.mutates_when is None:
        return False
    return spec.mutates_when.search(NEUTRAL_REDIRECTION.sub(" ", command)) is not None


def _term(path: str, digest: str) -> int:
    data = f"{path}\0{digest}".encode("utf-8", "surrogateescape")
    return int.from_bytes(hashlib.blake2b(data, digest_size=DIGEST_BYTES).digest(), "big")
