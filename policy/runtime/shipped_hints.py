"""The shipped hint templates (``hints/*.j2``) as the texts of rules whose policy names no hint.

A gate without ``hint`` reads like ``syntax_error``, a sweep like ``broken_by_command``, an
incomplete write like ``still_incomplete``: one text per kind of finding, whether or not a
policy chose it.
"""

from __future__ import annotations

import functools

from policy.model.hint_template import HintTemplate, compile_hint
from policy.resources import data_dir


@functools.cache
def shipped_hint(name: str) -> HintTemplate:
    """The shipped template ``hints/<name>.j2``, compiled once per process."""
    return compile_hint(name, (data_dir("hints") / f"{name}.j2").read_text(encoding="utf-8"))
