"""Loop detection: repeated calls, over-used tools, error streaks and oscillation.

``keys`` says what counts as "the same call", ``state`` holds what one scope
remembers, one module per layer (``repeat``, ``frequency``, ``streak``,
``oscillation``) and ``detector`` turns their findings into decisions.
"""
