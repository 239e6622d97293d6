"""Loop detection: repeated calls, over-used tools, error streaks and oscillation.

``keys`` says what counts as "the same call" (and the same result), ``state``
holds what one scope remembers, one module per layer (``repeat``,
``frequency``, ``streak``, ``oscillation``) reports ``finding``s, and
``detector`` decides between them and turns the selected one into a decision.
"""
