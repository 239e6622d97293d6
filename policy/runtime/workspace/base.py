"""What the guard needs from a workspace, wherever its files live."""

from __future__ import annotations

from typing import Protocol

from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.snapshot import Snapshot


class Workspace(Protocol):
    """The files an agent works on: ``LocalWorkspace`` (this machine's disk) or ``ListedWorkspace``
    (a sandbox elsewhere, seen through a harness's lister and reader)."""

    local_clock: bool
    """File times are this machine's clock: a change older than a command's start is not its doing."""

    def snapshot(self, coverage: Coverage) -> Snapshot:
        """The covered files now."""

    def read(self, path: str) -> str | None:
        """The text of a file (a path relative to the workspace); None when it cannot be read or is
        not a regular file; raises ``policy.runtime.gates.bounds.TooLarge`` past the size bound."""

    def relative(self, path: str) -> str | None:
        """A path as the agent names it, relative to the workspace; None when it lies outside."""

    def staged(self, paths: list[str]) -> dict[str, str | None]:
        """The files' text as version control last recorded it, where it can tell (else nothing)."""
