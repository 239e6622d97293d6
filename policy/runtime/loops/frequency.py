"""``loop frequency``: one tool called too often within the last ``window`` calls.

Each call is one character in the scope's window string (``chr`` of its
tool's slot), so counting a tool is one ``str.count``.  A tool's warning mark
lasts while its count stays at or above its ``warn`` limit: once the burst
decays the tool can warn again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from policy.model.compiled import CompiledPolicy, FrequencyRule
from policy.model.decision import Action
from policy.model.events import ToolCall
from policy.runtime.loops.finding import Finding
from policy.runtime.loops.layer import Fields, Layer, checked_str


@dataclass(slots=True)
class FrequencyState:
    """What ``loop frequency`` remembers of one scope."""

    tools: list[str | None] = field(default_factory=list)
    """Slot → tool name; None is a free slot (its tool left the window)."""
    window: str = ""
    """One character per call, oldest first: ``chr(slot)`` of its tool."""
    warned: str = ""
    """Slot characters of the tools warned about, kept while their count stays at or above ``warn``."""

    def to_json(self) -> dict[str, Any]:
        return {"tools": self.tools, "window": self.window, "warned": self.warned}

    @classmethod
    def from_json(cls, fields: Fields) -> FrequencyState:
        path = fields.name("tools")
        state = cls(
            tools=[None if item is None else checked_str(item, path) for item in fields.get("tools", list)],
            window=fields.get("window", str),
            warned=fields.get("warned", str),
        )
        if any(ord(ch) >= len(state.tools) for ch in state.window):
            raise ValueError("scope state: frequency.window names a tool slot that does not exist")
        return state


class FrequencyLayer(Layer[FrequencyState]):
    kind = "frequency"
    state_name = "frequency"
    state_type = FrequencyState

    def __init__(self, rule: FrequencyRule) -> None:
        self.rule = rule
        self.window = FrequencyRule.window_for(rule.window, rule.stop, rule.overrides)
        """As the compiler makes it; a rule built by hand may have a shorter one."""
        self._default = (rule.warn, rule.stop)
        self._limits = {tool: (limit.warn, limit.stop) for tool, limit in rule.overrides.items()}

    @classmethod
    def from_policy(cls, policy: CompiledPolicy) -> FrequencyLayer | None:
        rule = policy.loop(FrequencyRule)
        return cls(rule) if rule else None

    def on_turn(
        self, state: FrequencyState, calls: Sequence[ToolCall], keys: Sequence[str]
    ) -> Finding | None:
        """Count each call in the model's order: a stop ends the count at once; else the first
        warning candidate, or None.  (Each call is counted here, not in a method of its own: a
        batch is mostly one call, and a Python call per counted call costs more than the count.)"""
        selected = None
        for call in calls:
            tool = call.name
            try:  # a tool already in the window (the common case), else a slot for it
                slot = chr(state.tools.index(tool))
            except ValueError:
                slot = _slot(state, tool)
            window = state.window + slot
            overflow = len(window) - self.window
            if overflow > 0:
                evicted, window = window[:overflow], window[overflow:]
                state.window = window
                for gone in set(evicted):
                    self._after_eviction(state, gone)
            else:
                state.window = window

            count = window.count(slot)
            warn, stop = self._limits.get(tool, self._default)
            if count >= stop:
                return self._finding("stop", call, count, warn, stop)
            if count >= warn and selected is None and slot not in state.warned:
                selected = self._finding("warn", call, count, warn, stop)
                selected.mark = partial(self._mark, state, tool, slot)
        return selected

    def limits(self, tool: str) -> tuple[int, int]:
        """The tool's (warn, stop) limits."""
        return self._limits.get(tool, self._default)

    def _mark(self, state: FrequencyState, tool: str, slot: str) -> None:
        """Suppress the tool's warning, unless its burst already decayed within the batch."""
        if state.tools[ord(slot)] == tool and state.window.count(slot) >= self.limits(tool)[0]:
            state.warned += slot

    def _after_eviction(self, state: FrequencyState, slot: str) -> None:
        if slot not in state.window:
            state.tools[ord(slot)] = None
            state.warned = state.warned.replace(slot, "")
        elif slot in state.warned:
            tool = state.tools[ord(slot)]
            if tool is None or state.window.count(slot) < self.limits(tool)[0]:
                state.warned = state.warned.replace(slot, "")

    def _finding(self, action: Action, call: ToolCall, count: int, warn: int, stop: int) -> Finding:
        facts = {"count": count, "warn": warn, "stop": stop, "window": self.window, "tool": call.name}
        return Finding("frequency", action, self.rule.ref, self.rule.hint, call, facts, _describe)


def _slot(state: FrequencyState, tool: str) -> str:
    """The tool's slot character, taking a free slot for a tool new to the window."""
    tools = state.tools
    try:
        return chr(tools.index(tool))
    except ValueError:
        pass
    try:
        index = tools.index(None)
        tools[index] = tool
    except ValueError:
        index = len(tools)
        tools.append(tool)
    return chr(index)


def _describe(finding: Finding) -> str:
    facts = finding.facts
    return (
        f"`{finding.call.name}` was called {facts['count']} times in the last {facts['window']} calls "
        f"(warn at {facts['warn']}, stop at {facts['stop']})"
    )
