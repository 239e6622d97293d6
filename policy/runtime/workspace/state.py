"""What a scope remembers about its workspace's files between events.

- ``latest``: the key of the last snapshot, the "before" of the next command (one walk per
  command); the snapshot itself is kept beside the store (``policy.runtime.workspace.kept``).
- ``checked``: the gate's last verdict on a file, with the file's stat at the time, so a sweep
  knows whether a file a command broke parsed before it.
- ``digests``/``fingerprint``/``seen``: the content fingerprint of the files changed in this run,
  and the fingerprints it has reached (progress is reaching a new one).
- ``incomplete``: files left as an incomplete prefix, until an append completes them or the
  model has been told.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

CHECKED_LIMIT = 512
TRACKED_LIMIT = 4096
SEEN_LIMIT = 256
DIGEST_BYTES = 8


@dataclass(slots=True)
class WorkspaceState:
    """What the workspace watch remembers of one scope (``state.files``)."""

    latest: str | None = None
    checked: dict[str, list[int]] = field(default_factory=dict)
    """Path → [size, mtime_ns, ctime_ns, 1 if it passed its gate else 0]."""
    digests: dict[str, str] = field(default_factory=dict)
    """Path → hex digest of its content ("" once deleted), for every file changed in this run."""
    fingerprint: int = 0
    seen: bytes = bytes(DIGEST_BYTES)
    """Fingerprints reached in this run, packed (the empty run's is the first)."""
    incomplete: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Path as the agent named it → {"gate": name, "validator": name}."""

    def to_json(self) -> dict[str, Any]:
        return {
            "latest": self.latest,
            "checked": self.checked,
            "digests": self.digests,
            "fingerprint": self.fingerprint,
            "seen": self.seen.hex(),
            "incomplete": self.incomplete,
        }

    @classmethod
    def from_json(cls, data: Any) -> WorkspaceState:
        """Parse ``to_json`` output; anything else raises ``ValueError``."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValueError("scope state: files must be an object")
        latest = data.get("latest")
        checked, digests, incomplete = data.get("checked"), data.get("digests"), data.get("incomplete")
        fingerprint, seen = data.get("fingerprint"), data.get("seen")
        if not (isinstance(checked, dict) and isinstance(digests, dict) and isinstance(incomplete, dict)
                and _is_int(fingerprint) and isinstance(seen, str)):
            raise ValueError("scope state: files has a field of the wrong type")
        if not 0 <= fingerprint < 1 << (8 * DIGEST_BYTES):
            raise ValueError("scope state: files.fingerprint is out of range")
        try:
            packed = bytes.fromhex(seen)
        except ValueError:
            raise ValueError("scope state: files.seen must be hex") from None
        if len(packed) % DIGEST_BYTES:
            raise ValueError("scope state: files.seen must hold whole fingerprints")
        if any(not (isinstance(v, list) and len(v) == 4 and all(_is_int(n) for n in v))
               for v in checked.values()):
            raise ValueError("scope state: files.checked must hold [size, mtime, ctime, ok]")
        if not all(isinstance(v, str) for v in digests.values()):
            raise ValueError("scope state: files.digests must hold hex digests")
        return cls(
            latest=latest if isinstance(latest, str) else None,  # (older states held the snapshot)
            checked={str(k): list(v) for k, v in checked.items()},
            digests={str(k): v for k, v in digests.items()},
            fingerprint=fingerprint,
            seen=packed,
            incomplete={str(k): v for k, v in incomplete.items() if isinstance(v, dict)},
        )


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
