"""Stable call keys: what counts as "the same call".

A call's key is its tool name and its arguments as compact JSON with sorted
keys, after the policy's rules: free-text arguments (``ignore``) are dropped;
a tool with ``key`` keeps only those arguments (all of them when none is
present, as DeerFlow does); a read's line range is bucketed (200 lines) and
order-normalised, and stays part of the key whatever ``key`` says.  A long
key is replaced by a hash.  A batch's key is the sorted multiset of its
calls' keys.

The loop state stores their fingerprints (``policy.model.fingerprint``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy.model.compiled import CompiledPolicy, ToolSpec
from policy.model.events import ToolCall
from policy.model.jsontext import compact

READ_BUCKET_LINES = 200
"""Reads whose line ranges fall in the same 200-line buckets are the same read."""

MAX_KEY_LENGTH = 256
"""Longer keys are stored as ``tool #<hash>``."""

_UNDECLARED = "\0"
"""A tool name no policy can declare: its spec is the policy's default for undeclared tools."""


@dataclass(frozen=True, slots=True)
class KeyRecipe:
    """How one tool's arguments become its key."""

    only: frozenset[str] | None = None
    """``key`` arguments: only these form the key (all arguments when none of them is present)."""
    ignored: frozenset[str] = frozenset()
    """``ignore`` arguments: left out of the key."""
    line_range: tuple[str | None, str | None, str | None] | None = None
    """A read tool's start line, end line and line count (``limit``) arguments."""

    @classmethod
    def for_tool(cls, spec: ToolSpec) -> KeyRecipe:
        """The spec's ``key`` and ``ignore`` are final: the compiler folds the policy's into them
        (an undeclared tool's spec, from ``CompiledPolicy.tool``, carries the policy's own)."""
        line_range = None
        if spec.role == "read" and any(field in spec.args for field in ("start", "end", "limit")):
            line_range = (spec.args.get("start"), spec.args.get("end"), spec.args.get("limit"))
        only = frozenset(spec.key_args) if spec.key_args is not None else None
        return cls(only, spec.ignore_args, line_range)

    def key(self, call: ToolCall) -> str:
        args: Mapping[str, Any] = call.args
        # The selected arguments in the call's order (the key's JSON sorts them): a call has
        # fewer arguments than a policy names key arguments.
        only = self.only
        selected = None
        if only is not None:
            selected = {}
            for name, value in args.items():  # a loop, not a comprehension: no frame of its own
                if name in only:
                    selected[name] = value
        if selected:
            args = selected
        elif self.ignored and not self.ignored.isdisjoint(args):
            args = dict(args)
            for name in self.ignored:
                args.pop(name, None)
        if self.line_range is not None:
            args = _with_line_buckets(args, call.args, *self.line_range)
        try:
            text = compact(args)
        except (TypeError, ValueError, RecursionError):
            text = stable_json(args)
        if len(text) + len(call.name) >= MAX_KEY_LENGTH:
            text = "#" + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        return f"{call.name} {text}"


class CallKeys:
    """The key recipes of one policy, built once (the detector's fast path)."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.by_tool: dict[str, Callable[[ToolCall], str]] = {
            name: KeyRecipe.for_tool(spec).key for name, spec in policy.tools.items()}
        """Each declared tool's ``KeyRecipe.key``, bound: a call's key in one Python call."""
        self.undeclared: Callable[[ToolCall], str] = KeyRecipe.for_tool(policy.tool(_UNDECLARED)).key
        """The key of a tool the policy does not declare."""

    def call_key(self, call: ToolCall) -> str:
        """The stable key of one call (see the module docstring)."""
        return self.by_tool.get(call.name, self.undeclared)(call)


def batch_key(call_keys: Sequence[str]) -> str:
    """A batch's key from its calls' keys: their sorted multiset, one per line."""
    return call_keys[0] if len(call_keys) == 1 else "\n".join(sorted(call_keys))


def stable_json(value: Any) -> str:
    """Compact JSON with sorted keys; a value JSON cannot sort or encode still gets a deterministic text."""
    try:
        return compact(value)
    except (TypeError, ValueError, RecursionError):
        # Keys of mixed types, or a self-referencing value.
        if isinstance(value, Mapping):
            return repr(sorted((str(name), repr(item)) for name, item in value.items()))
        return repr(value)


def _line_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _with_line_buckets(
    selected: Mapping[str, Any],
    args: Mapping[str, Any],
    start_arg: str | None,
    end_arg: str | None,
    limit_arg: str | None,
) -> Mapping[str, Any]:
    """``selected`` with the read's line range as its 200-line buckets, lower bucket first.

    A missing start reads from line 1; the end is the end line, else start +
    ``limit`` - 1, else the start (DeerFlow's rule: a read without any of them
    is a read of line 1, the same read as one of lines 1-200).  A range that is
    not numeric is kept as written.
    """
    names = (start_arg, end_arg, limit_arg)
    raw = [args.get(name) if name else None for name in names]
    keyed = dict(selected)
    start, end, limit = numbers = [_line_number(value) for value in raw]
    if any(value is not None and number is None for value, number in zip(raw, numbers, strict=True)):
        for name, value in zip(names, raw, strict=True):
            if name and value is not None:
                keyed[name] = value
        return keyed
    first = max(start if start is not None else 1, 1)
    if end is None and limit is not None:
        end = first + max(limit, 1) - 1
    last = max(end if end is not None else first, 1)
    low, high = sorted(((first - 1) // READ_BUCKET_LINES, (last - 1) // READ_BUCKET_LINES))
    if start_arg:
        keyed[start_arg] = low
    if end_arg and limit_arg:
        keyed.pop(limit_arg, None)
    span_arg = end_arg or limit_arg
    if span_arg:
        keyed[span_arg] = high
    return keyed
