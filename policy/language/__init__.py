"""The policy language: ``.policy`` text → ``CompiledPolicy`` + located, coded diagnostics.

``parser`` (Lark) → ``ast`` → ``checker`` (schema, value_forms) → ``compose``
(``extends``, ``disable``) → ``compiler`` → ``CompiledPolicy``.  ``loader``
runs the whole pipeline; ``formatter`` prints a policy back in canonical layout.
"""
