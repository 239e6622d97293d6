"""LangChain/LangGraph agent middleware (needs the ``langchain`` extra).

``middleware`` is ``HarnessGuardMiddleware``; ``messages`` builds and annotates
the ToolMessages and AIMessages it delivers; ``scope`` finds each run's scope.
"""

from policy.hooks.langchain.middleware import HarnessGuardMiddleware

__all__ = ["HarnessGuardMiddleware"]
