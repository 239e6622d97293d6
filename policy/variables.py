"""Hint variables: the ones every rule provides, and a mapping that computes each on first read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from policy.decision import Action, RuleRef
from policy.events import ToolCall
from policy.jsontext import readable

CALL_SUMMARY_LIMIT = 160


def call_summary(call: ToolCall, limit: int = CALL_SUMMARY_LIMIT) -> str:
    """A short, readable ``tool {"arg": …}`` form of a call."""
    try:
        args = readable(call.args)
    except (TypeError, ValueError, RecursionError):
        args = str(call.args)
    text = f"{call.name} {args}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class HintVariables(dict[str, Any]):
    """The variables of one hint: ``policy.hints.COMMON_VARIABLES`` for one rule firing on
    one call, plus the rule's own ``values``, which win over the common ones.

    A common variable, or one of the ``lazy`` ones (a function each), is computed
    when first read and then kept, so a template pays only for the variables it
    shows.  ``in`` and ``get`` see every variable; iterating shows those
    computed so far.
    """

    __slots__ = ("_action", "_call", "_lazy", "_policy", "_rule")

    def __init__(
        self,
        policy: str,
        rule: RuleRef,
        action: Action,
        call: ToolCall,
        values: Mapping[str, Any] | None = None,
        lazy: Mapping[str, Callable[[], Any]] | None = None,
    ) -> None:
        super().__init__(values or ())
        self._policy = policy
        self._rule = rule
        self._action = action
        self._call = call
        self._lazy = lazy or {}

    def __missing__(self, name: str) -> Any:
        compute = self._lazy.get(name)
        if compute is not None:
            value = compute()
        elif name in _COMMON:
            value = _COMMON[name](self._policy, self._rule, self._action, self._call)
        else:
            raise KeyError(name)
        self[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self._lazy or name in _COMMON

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


_COMMON: dict[str, Callable[[str, RuleRef, Action, ToolCall], Any]] = {
    "rule": lambda policy, rule, action, call: str(rule),
    "rule_kind": lambda policy, rule, action, call: rule.kind,
    "rule_name": lambda policy, rule, action, call: rule.name,
    "action": lambda policy, rule, action, call: action,
    "tool": lambda policy, rule, action, call: call.name,
    "args": lambda policy, rule, action, call: dict(call.args),
    "call": lambda policy, rule, action, call: call_summary(call),
    "call_id": lambda policy, rule, action, call: call.id,
    "policy": lambda policy, rule, action, call: policy,
}
"""How each common variable is computed (``COMMON_VARIABLES`` names them; a test checks both agree)."""
