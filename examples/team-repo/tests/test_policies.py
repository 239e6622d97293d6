"""Our policy's own tests as pytest items, and its hints as reviewed snapshots.

The fixtures come from policyctl's pytest plugin (installed with policyctl).
After changing a hint, run `pytest --snapshot-update`, read the diff of
tests/__snapshots__/, and commit it with the change.
"""

import pytest

pytestmark = pytest.mark.policyctl("../policies/team.policy")


def test_policy(policy_test):
    policy_test.check()


def test_hints(policy_hints, policy_snapshot):
    assert policy_hints == policy_snapshot
