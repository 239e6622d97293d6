"""What statements exist, where, and which values each one takes (the vocabulary; how a
value form is written and matched is ``policy.language.value_forms``).

The grammar accepts any ``NAME value… { block }``; this table gives each
statement its meaning.  The reader checks a file against it (unknown names,
wrong values, repeated settings) and the compiler reads the validated
statements.  ``docs/language.md`` documents the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policy.model.compiled import ROLE_STATEMENTS
from policy.model.decision import ACTIONS
from policy.model.validators import BUILTIN_VALIDATORS

VALIDATORS = tuple(BUILTIN_VALIDATORS)
"""Built-in syntax checkers a gate can name (``check command "…"`` runs an external one)."""

RULE_KINDS = ("tool", "gate", "signature", "loop", "hint", "test")
"""Kinds of named declarations ``disable`` can remove."""


@dataclass(frozen=True)
class Spec:
    """One statement: its value forms, its block, and how it combines with its siblings."""

    name: str
    forms: tuple[str, ...] = ("",)
    """Accepted value forms (``policy.language.value_forms``); ``""`` is a bare flag."""
    block: Mapping[str, Spec] | None = None
    """The settings its ``{ … }`` block may hold; None: it takes no block."""
    block_required: bool = False
    slot: str | None = None
    """Settings sharing a slot are alternatives (a tool's role): at most one, and an overlay's replaces."""
    keyed: bool = False
    """Repeatable, once per first value (``tool bash { … }`` inside ``loop frequency``)."""
    required: bool = False
    choice_code: str = "E107"
    """The code for a word outside the form's choices."""
    variants: Mapping[str, Mapping[str, Spec]] = field(default_factory=dict)
    """For ``loop``: the block's settings depend on the declaration's name."""
    steps: bool = False
    """The block holds ordered test steps, checked by the test compiler, not settings."""

    @property
    def slot_key(self) -> str:
        return self.slot or self.name


def _block(*specs: Spec) -> dict[str, Spec]:
    return {s.name: s for s in specs}


def _thresholds() -> tuple[Spec, Spec]:
    return Spec("warn", ("INT",), required=True), Spec("stop", ("INT",), required=True)


POLICY = _block(
    Spec("description", ("STRING",)),
    Spec("scope", block=_block(Spec("max_scopes", ("INT",))), block_required=True),
    Spec("scan_limit", ("SIZE", "INT")),
    Spec("max_check_bytes", ("SIZE", "INT")),
    Spec("on_internal_error", ("allow|block",)),
    Spec("deliver_warnings", ("tool_message|next_request",)),
    Spec("ignore", ("ARG+", "")),
    Spec("key", ("ARG+",)),
)

TOOL = _block(
    *(Spec(statement, ("PAIR+",), slot="role") for statement in ROLE_STATEMENTS),
    Spec("key", ("ARG+",)),
    Spec("ignore", ("ARG+", "")),
    Spec("mutates_when", ("REGEX",)),
    Spec("fails_when", ("REGEX",)),
)

GATE = _block(
    Spec("files", ("STRING+",), required=True),
    Spec("check", ("command STRING", "|".join(VALIDATORS)), required=True, choice_code="E501"),
    Spec("confirm", ("command STRING",)),
    Spec("timeout", ("NUMBER",)),
    Spec("partial", ("allow|block",)),
    Spec("hint", ("NAME",)),
)

SIGNATURE = _block(
    Spec("on", ("error|any",)),
    Spec("match", ("REGEX",), required=True),
    Spec("tools", ("ARG+",)),
    Spec("key", ("ARG+",)),
    Spec("hint", ("NAME",)),
)

LOOPS: dict[str, dict[str, Spec]] = {
    "repeat": _block(
        Spec("window", ("INT",)),
        *_thresholds(),
        Spec("until_progress"),
        Spec("hint", ("NAME",)),
    ),
    "frequency": _block(
        Spec("window", ("INT",)),
        *_thresholds(),
        Spec("tool", ("ARG",), block=_block(*_thresholds()), block_required=True, keyed=True),
        Spec("hint", ("NAME",)),
    ),
    "error_streak": _block(
        *_thresholds(),
        Spec("same", ("captures|signature",)),
        Spec("hint", ("NAME",)),
    ),
    "oscillation": _block(
        Spec("period", ("RANGE",), required=True),
        Spec("repeats", ("INT",), required=True),
        Spec("no_progress"),
        Spec("warn", slot="action"),
        Spec("stop", slot="action"),
        Spec("hint", ("NAME",)),
    ),
}

LOOP_LAYERS = tuple(LOOPS)
"""The loop layers a ``loop`` declaration can name."""

WORKSPACE = _block(
    Spec("sweep", ("on|off",)),
    Spec("shell_writes", ("on|off",)),
    Spec("progress", ("on|off",)),
    Spec("track", ("STRING+",)),
    Spec("max_files", ("INT",)),
    Spec("hint", ("NAME",)),
    Spec("incomplete_hint", ("NAME",)),
)

DECLARATIONS = _block(
    Spec("policy", ("STRING",), block=POLICY),
    Spec("extends", ("STRING",)),
    Spec("disable", ("|".join(RULE_KINDS) + " ARG",)),
    Spec("tool", ("ARG",), block=TOOL),
    Spec("gate", ("NAME",), block=GATE),
    Spec("signature", ("NAME",), block=SIGNATURE),
    Spec("normalize", ("REGEX STRING",)),
    Spec("loop", ("NAME",), block={}, variants=LOOPS),
    Spec("hint", ("NAME STRING", "NAME file STRING")),
    Spec("workspace", ("",), block=WORKSPACE, block_required=True),
    Spec("test", ("STRING",), block={}, block_required=True, steps=True),
)
"""Top-level statements."""

CALL_STEP = Spec("call", ("ARG JSON", "ARG"), block={})
"""``call TOOL {JSON}``; ``call TOOL {}`` is an empty block, read as no arguments."""

EXPECTED_RULE_KINDS = ("gate", "signature", "loop", "sweep", "incomplete")
STEPS: dict[str, Spec] = {
    "file": Spec("file", ("STRING STRING",)),
    "call": CALL_STEP,
    "turn": Spec("turn", block={"call": CALL_STEP}, block_required=True),
    "result": Spec("result", ("ok|error STRING",)),
    "expect": Spec(
        "expect",
        (
            "|".join(ACTIONS),
            "|".join(ACTIONS) + " " + "|".join(EXPECTED_RULE_KINDS) + " ARG",
            "hint contains STRING",
            "hint matches REGEX",
        ),
    ),
}
"""The steps of a ``test`` block, in the order they run."""
STEPS["repeat"] = Spec("repeat", ("INT",), block=STEPS, block_required=True)
