"""Hooks that put a policy guard into an agent harness.

- ``policy.hooks.langchain``: ``HarnessGuardMiddleware`` for agents built with
  ``langchain.agents.create_agent`` (needs the ``langchain`` extra).
- ``policy.hooks.claude_code``: the Claude Code command-hook protocol, used by
  ``policyctl hook claude-code``.

Nothing is imported here, so the optional LangChain dependency is only
needed by those who use the middleware.
"""
