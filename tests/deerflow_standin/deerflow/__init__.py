"""Stand-ins for the parts of DeerFlow (bytedance/deer-flow) that policyctl's DeerFlow helper meets.

DeerFlow is not on the package index, so the tests put this package on ``sys.path`` in its
place.  Each module is written for these tests and reproduces only the shapes policyctl relies
on: module paths, class names, chain order, ordering decorators, context keys, tool output
format and the ``deerflow_tool_meta`` contract.  Each module names the DeerFlow file it mirrors
(paths under ``backend/packages/harness/deerflow/``).
"""
