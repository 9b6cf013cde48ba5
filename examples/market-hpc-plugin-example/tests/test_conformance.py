"""The plugin's policies pass market_hpc's conformance suite (run: pytest tests/)."""

from market_hpc.testing import parametrize_with_checks


@parametrize_with_checks([("saf", "first-fit"), ("saf", "best-fit")])
def test_conformance(policy, check):
    check(policy)
