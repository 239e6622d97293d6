"""An in-memory file system behind the write gates, and how the corpus tests write into it."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import ToolCall
from policy.runtime.gates import check_write, file_effect


class Sandbox:
    """Files that allowed writes change and blocked ones do not, checked by one policy's gates."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.policy = policy
        self.files: dict[str, str] = {}
        self.calls = 0

    def call(self, name: str, args: dict[str, Any]) -> Decision:
        """Send one call through the gate; an allowed one changes its file."""
        self.calls += 1
        call = ToolCall(id=f"c{self.calls}", name=name, args=args)
        decision = check_write(self.policy, call, self.files.get)
        if decision.action != "block":
            effect = file_effect(self.policy.tool(name), call.args, self.files.get)
            assert effect is not None, f"an allowed `{name}` call changed no file: {args}"
            self.files[effect.path] = effect.after
        return decision

    def write(self, path: str, content: str, append: bool) -> Decision:
        """One ``write_file`` call."""
        return self.call("write_file", {"path": path, "content": content, "append": append})


def chunk_plans(
    lines: int, full: tuple[int | None, ...], windows: dict[int, int], seed: str
) -> Iterator[list[int]]:
    """Prefix lengths (in lines) after each write: the first is an overwrite, the rest appends.

    ``full``: chunk sizes written through the whole file (None: in one write); ``windows``: chunk
    size → how many consecutive chunks to write, from a start the ``seed`` picks."""
    for size in full:
        yield [lines] if size is None else [*range(size, lines, size), lines]
    for size, count in windows.items():
        ends = [*range(size, lines, size), lines]
        if len(ends) > count:
            start = zlib.crc32(f"{seed}:{size}".encode()) % (len(ends) - count)
            ends = ends[start : start + count]
        yield ends


def where(decision: Decision) -> str:
    """Where a block says the problem is, and what it is."""
    meta = decision.metadata
    return f"line {meta.get('line')}, column {meta.get('column')}: {meta.get('message')}"
