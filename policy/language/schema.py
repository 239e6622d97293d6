"""What statements exist, where, and which values each one takes (the vocabulary; how a
value form is written and matched is ``policy.language.value_forms``).

The grammar accepts any ``NAME value… { block }``; this table gives each
statement its meaning.  The reader checks a file against it (unknown names,
wrong values, repeated settings) and the compiler reads the validated
statements.  A ``loop`` declaration's settings depend on its kind: each
kind's module in ``policy.language.loops`` holds them.  ``docs/language.md``
documents the same table.
"""

from __future__ import annotations

from policy.language.loops import LOOP_KINDS
from policy.language.spec import Spec, block
from policy.model.compiled import ROLE_STATEMENTS
from policy.model.decision import ACTIONS
from policy.model.validators import BUILTIN_VALIDATORS

VALIDATORS = tuple(BUILTIN_VALIDATORS)
"""Built-in syntax checkers a gate can name (``check command "…"`` runs an external one)."""

RULE_KINDS = ("tool", "gate", "signature", "loop", "hint", "test")
"""Kinds of named declarations ``disable`` can remove."""


POLICY = block(
    Spec("description", ("STRING",)),
    Spec("scope", block=block(Spec("max_scopes", ("INT",))), block_required=True),
    Spec("scan_limit", ("SIZE", "INT")),
    Spec("max_check_bytes", ("SIZE", "INT")),
    Spec("on_internal_error", ("allow|block",)),
    Spec("deliver_warnings", ("tool_message|next_request",)),
    Spec("ignore", ("ARG+", "")),
    Spec("key", ("ARG+",)),
)

TOOL = block(
    *(Spec(statement, ("PAIR+",), slot="role") for statement in ROLE_STATEMENTS),
    Spec("key", ("ARG+",)),
    Spec("ignore", ("ARG+", "")),
    Spec("mutates_when", ("REGEX",)),
    Spec("fails_when", ("REGEX",)),
)

GATE = block(
    Spec("files", ("STRING+",), required=True),
    Spec("check", ("command STRING", "|".join(VALIDATORS)), required=True, choice_code="E501"),
    Spec("confirm", ("command STRING",)),
    Spec("timeout", ("NUMBER",)),
    Spec("partial", ("allow|block",)),
    Spec("hint", ("NAME",)),
)

SIGNATURE = block(
    Spec("on", ("error|any",)),
    Spec("match", ("REGEX",), required=True),
    Spec("tools", ("ARG+",)),
    Spec("key", ("ARG+",)),
    Spec("hint", ("NAME",)),
)

LOOP_LAYERS = tuple(LOOP_KINDS)
"""The loop layers a ``loop`` declaration can name."""

WORKSPACE = block(
    Spec("sweep", ("on|off",)),
    Spec("shell_writes", ("on|off",)),
    Spec("progress", ("on|off",)),
    Spec("track", ("STRING+",)),
    Spec("max_files", ("INT",)),
    Spec("hint", ("NAME",)),
    Spec("incomplete_hint", ("NAME",)),
)

DECLARATIONS = block(
    Spec("policy", ("STRING",), block=POLICY),
    Spec("extends", ("STRING",)),
    Spec("disable", ("|".join(RULE_KINDS) + " ARG",)),
    Spec("tool", ("ARG",), block=TOOL),
    Spec("gate", ("NAME",), block=GATE),
    Spec("signature", ("NAME",), block=SIGNATURE),
    Spec("normalize", ("REGEX STRING",)),
    Spec("loop", ("NAME",), block={}, variants={name: kind.settings for name, kind in LOOP_KINDS.items()}),
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
