"""A loop layer's verdict, before the detector turns it into a decision."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policy.model.decision import Action, RuleRef
from policy.model.events import ToolCall
from policy.model.hint_template import HintTemplate, truncate_middle
from policy.model.variables import CALL_SUMMARY_LIMIT, call_summary

EXCERPT_LENGTH = 160


@dataclass(slots=True)
class Finding:
    """What a layer found: a warning candidate or a stop, with the facts its hint shows."""

    kind: str
    """The rule kind (``policy.language.hint_variables.RULE_VARIABLES``): repeat, frequency, error_streak,
    oscillation."""
    action: Action
    ref: RuleRef
    hint: HintTemplate | None
    call: ToolCall
    """The call the decision concerns."""
    facts: dict[str, Any]
    """The kind's hint variables (counts, thresholds, what repeated) and any other facts the layer
    adds: a fresh dict per finding, which the detector completes into the decision's metadata
    (a hint sees it all)."""
    describe: Callable[[Finding], str]
    """One plain line: the hint when the rule has no template."""
    mark: Callable[[], None] | None = None
    """Suppress this warning from repeating; called only when this finding is the one selected."""
    summary: str | None = None
    """``call_summary(call)``, once made (``call_text``)."""

    def __str__(self) -> str:
        return self.describe(self)

    def call_text(self, limit: int = CALL_SUMMARY_LIMIT) -> str:
        """``call_summary(call, limit)``: the full summary is made once per finding (for its log
        line, its hint and its metadata alike) and a shorter one cut from it, as ``call_summary``
        cuts (the first ``limit - 1`` characters and "…")."""
        if limit > CALL_SUMMARY_LIMIT:
            return call_summary(self.call, limit)
        summary = self.summary
        if summary is None:
            summary = self.summary = call_summary(self.call)
        return summary if len(summary) <= limit else summary[: limit - 1] + "…"


def excerpt(text: str, length: int = EXCERPT_LENGTH) -> str:
    """A one-line excerpt (start and end) of a possibly huge text, whitespace collapsed."""
    if len(text) > 4 * length:
        text = text[: 2 * length] + " " + text[-2 * length :]
    return truncate_middle(" ".join(text.split()), length)


def tail_excerpt(text: str, length: int = EXCERPT_LENGTH) -> str:
    """The last ``length`` characters of a text on one line (an error's message is at its end)."""
    flat = " ".join(text[-4 * length :].split())
    return flat if len(flat) <= length else "…" + flat[-(length - 1) :]
