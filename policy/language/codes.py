"""Every diagnostic code, with its severity and a one-line meaning.

Codes are stable: tools and CI configurations match on them.  ``docs/language.md``
shows an example that triggers each one (and a test checks that it does).
"""

from __future__ import annotations

from typing import NamedTuple

from policy.model.diagnostics import Severity


class Code(NamedTuple):
    code: str
    severity: Severity
    title: str


_E = Severity.ERROR
_W = Severity.WARNING

CODES: dict[str, Code] = {
    c.code: c
    for c in [
        # reading and syntax
        Code("E001", _E, "file cannot be read as UTF-8 text"),
        Code("E002", _E, "syntax error: unexpected token"),
        Code("E003", _E, "syntax error: unexpected character"),
        Code("E004", _E, "syntax error: unterminated string"),
        Code("E005", _E, "blocks nested too deeply"),
        Code("E006", _E, "invalid escape in string"),
        Code("E007", _E, "number too large"),
        # structure
        Code("E101", _E, "unknown declaration"),
        Code("E102", _E, "unknown setting"),
        Code("E103", _E, "wrong values for a setting"),
        Code("E104", _E, "missing required setting"),
        Code("E105", _E, "duplicate name"),
        Code("E106", _E, "setting given twice"),
        Code("E107", _E, "invalid value"),
        # patterns
        Code("E201", _E, "invalid regular expression"),
        Code("E202", _E, "pattern not supported by the linear-time engine"),
        Code("E203", _E, "invalid file glob"),
        Code("E204", _E, "pattern has too many capture groups"),
        Code("E205", _E, "pattern too large"),
        # hints
        Code("E301", _E, "unknown hint"),
        Code("E302", _E, "unknown template variable"),
        Code("E303", _E, "template syntax error"),
        Code("E304", _E, "hint file not found"),
        # thresholds
        Code("E401", _E, "warn threshold not below stop threshold"),
        Code("E402", _E, "threshold out of range"),
        # gates and tools
        Code("E501", _E, "unknown validator"),
        Code("E502", _E, "unknown tool argument role"),
        # composition
        Code("E601", _E, "extended policy not found"),
        Code("E602", _E, "extends cycle"),
        Code("E603", _E, "disable names no such rule"),
        Code("E604", _E, "file outside the policy's folder"),
        Code("E605", _E, "extends chain too deep"),
        # tests
        Code("E701", _E, "unknown tool in test"),
        Code("E702", _E, "invalid JSON literal"),
        Code("E703", _E, "invalid test step"),
        # warnings
        Code("W101", _W, "named capture group not used by any hint"),
        Code("W102", _W, "gate can never run: no tool writes files"),
        Code("W103", _W, "hint declared but never used"),
    ]
}


def severity_of(code: str) -> Severity:
    return CODES[code].severity
