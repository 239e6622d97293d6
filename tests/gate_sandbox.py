"""An in-memory file system behind the write gates, for the corpus tests."""

from __future__ import annotations

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
