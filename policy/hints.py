"""Hint templates: one sandboxed Jinja2 environment, the filters hint authors use,
and the variables each kind of rule provides.

Untrusted text (tool output, arguments) only ever enters a template as a
variable; it is never compiled as a template itself.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from jinja2 import StrictUndefined, Template, meta
from jinja2.sandbox import SandboxedEnvironment

from policy.diagnostics import Span

log = logging.getLogger("policy.hints")

COMMON_VARIABLES = frozenset({"rule", "rule_kind", "rule_name", "action", "tool", "args", "call", "call_id", "policy"})

RULE_VARIABLES: dict[str, frozenset[str]] = {
    "gate": frozenset({"path", "line", "column", "message", "snippet", "validator", "output"}),
    "signature": frozenset({"signature", "captures", "excerpt", "output", "status"}),
    "repeat": frozenset({"count", "warn", "stop", "window", "same_result", "result_excerpt"}),
    "frequency": frozenset({"count", "warn", "stop", "window"}),
    "error_streak": frozenset({"count", "warn", "stop", "signature", "captures", "excerpt"}),
    "oscillation": frozenset({"count", "period", "repeats", "cycle"}),
}
"""Variables a hint may use, by rule kind (signatures add their named groups)."""

_PIP_NAMES = {
    "yaml": "PyYAML",
    "cv2": "opencv-python",
    "PIL": "Pillow",
    "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "serial": "pyserial",
    "usb": "pyusb",
    "magic": "python-magic",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "git": "GitPython",
    "attr": "attrs",
    "google.protobuf": "protobuf",
    "skimage": "scikit-image",
    "fitz": "PyMuPDF",
    "Levenshtein": "python-Levenshtein",
    "zmq": "pyzmq",
    "lxml": "lxml",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "win32api": "pywin32",
}


def pip_name(module: str) -> str:
    """The distribution to install for an import name (``yaml`` → ``PyYAML``)."""
    if module in _PIP_NAMES:
        return _PIP_NAMES[module]
    top = module.split(".", 1)[0]
    return _PIP_NAMES.get(top, top)


def truncate_middle(text: Any, length: int = 200, marker: str = " … ") -> str:
    """Keep the start and the end of a long text, cut out the middle."""
    value = str(text)
    if len(value) <= length:
        return value
    keep = max(length - len(marker), 2)
    head = keep // 2
    return value[:head] + marker + value[len(value) - (keep - head):]


def plain_json(value: Any, indent: int | None = None) -> str:
    """JSON for plain text (Jinja2's ``tojson`` escapes <, >, & for HTML)."""
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=str)


def basename(path: Any) -> str:
    return posixpath.basename(str(path).replace("\\", "/"))


@cache
def environment() -> SandboxedEnvironment:
    """The one environment every hint template is compiled in."""
    env = SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        basename=basename,
        truncate_middle=truncate_middle,
        json=plain_json,
        pip_name=pip_name,
    )
    return env


def template_variables(source: str) -> frozenset[str]:
    """Top-level names a template reads (it must parse; see ``environment().parse``)."""
    env = environment()
    return frozenset(meta.find_undeclared_variables(env.parse(source)))


@dataclass(frozen=True)
class HintTemplate:
    """A named, compiled hint template."""

    name: str
    source: str
    template: Template
    variables: frozenset[str]
    span: Span | None = None

    def render(self, variables: Mapping[str, Any]) -> str:
        """Render; a failure is logged and replaced by a plain one-line hint."""
        try:
            return self.template.render(**variables).strip("\n")
        except Exception as err:  # a hint must never break the agent
            log.warning("hint %s failed to render: %s", self.name, err)
            return fallback_hint(variables)


def compile_hint(name: str, source: str, span: Span | None = None) -> HintTemplate:
    env = environment()
    return HintTemplate(
        name=name,
        source=source,
        template=env.from_string(source),
        variables=template_variables(source),
        span=span,
    )


def fallback_hint(variables: Mapping[str, Any]) -> str:
    rule = variables.get("rule", "policy")
    action = variables.get("action", "hint")
    return f"[policy] {rule}: {action}."
