"""Deterministic JSON text of tool arguments: sorted keys, no ASCII escaping, ``str`` for
anything JSON has no type for.

The encoders are built once.  Where CPython's C encoder is available they call
it directly, skipping ``JSONEncoder.encode``'s per-call set-up (most of the
cost for the small argument dicts of a tool call); without circular-reference
markers, a self-referencing value raises ``RecursionError`` (``ValueError``
with the pure-Python encoder).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _stdlib
from typing import Any

Encode = Callable[[Any], str]


def _encoder(item_separator: str, key_separator: str) -> Encode:
    portable = json.JSONEncoder(
        sort_keys=True, ensure_ascii=False, default=str, separators=(item_separator, key_separator)
    )
    # CPython's C encoder, called directly: 12-14% less time per loop turn (bench/bench_shortcuts.py)
    make = getattr(_stdlib, "c_make_encoder", None)
    if make is None:
        return portable.encode
    try:
        # (markers, default, encoder, indent, key separator, item separator, sort_keys, skipkeys, allow_nan)
        chunks = make(None, str, _stdlib.encode_basestring, None, key_separator, item_separator, True, False,
                      True)
    except TypeError:  # a CPython whose C encoder takes other arguments
        return portable.encode

    quote = _stdlib.encode_basestring

    def encode(value: Any) -> str:
        if type(value) is dict and len(value) == 1:  # one text argument (a command, a path): no sort
            for name, item in value.items():
                if type(name) is str and type(item) is str:
                    return f"{{{quote(name)}{key_separator}{quote(item)}}}"
        return "".join(chunks(value, 0))

    probes = ({"b": [1, 2.5, None, True], "a": {"é": object}}, {"cmd": 'echo "é\\\n\u2028"'})
    return encode if all(encode(probe) == portable.encode(probe) for probe in probes) else portable.encode


compact: Encode = _encoder(",", ":")
"""``{"a":1,"b":[2,3]}``: for keys."""
readable: Encode = _encoder(", ", ": ")
"""``{"a": 1, "b": [2, 3]}``: for people."""
