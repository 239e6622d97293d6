"""The vocabulary every stage shares: events, decisions, diagnostics, the compiled policy.

Nothing here imports another part of ``policy``: the language builds these
objects, the runtime evaluates them, the hooks and reporters deliver them.
"""
