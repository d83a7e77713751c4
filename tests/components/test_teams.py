"""The teams every platform checks the same way, at construction: each mistake one ConfigError naming its key."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.teams import Pool, TeamArgs, check, reachable

POOLS = (Pool("on-demand", 16), Pool("spot", 8))


def test_two_teams_within_the_pools_pass():
    check((TeamArgs("research", 12, borrow=4), TeamArgs("prod", 8, lend=0, weight=2, pools=("on-demand",))), POOLS)


@pytest.mark.parametrize("teams, key, says", [
    ((TeamArgs("ML_Research", 1),), "teams[0].name", "not a DNS-1123 label"),
    ((TeamArgs("a" * 64, 1),), "teams[0].name", "not a DNS-1123 label"),
    ((TeamArgs("a", 1), TeamArgs("a", 2)), "teams[1].name", "named twice (also teams[0])"),
    ((TeamArgs("a", -1),), "teams[0].gpus", "not a whole number of 0 or more"),
    ((TeamArgs("a", 2.5),), "teams[0].gpus", "not a whole number of 0 or more"),
    ((TeamArgs("a", True),), "teams[0].gpus", "not a whole number of 0 or more"),
    ((TeamArgs("a", 1, borrow=-2),), "teams[0].borrow", "not a whole number of 0 or more"),
    ((TeamArgs("a", 1, weight=0),), "teams[0].weight", "not a whole number of 1 or more"),
    ((TeamArgs("a", 2, lend=3),), "teams[0].lend", "more than the team's own 2 GPUs"),
    ((TeamArgs("a", 1, namespace="Team A"),), "teams[0].namespace", "not a DNS-1123 label"),
    ((TeamArgs("a", 1), TeamArgs("b", 1, namespace="a")), "teams[1].namespace", "also the namespace of teams[0]"),
    ((TeamArgs("a", 1, pools=("reserved",)),), "teams[0].pools", "no GPU pool of the stack has this name"),
    ((TeamArgs("a", 10, pools=("spot",)),), "teams[0].gpus", "more GPUs than its pools reach at full scale (8)"),
    ((TeamArgs("a", 16), TeamArgs("b", 16)), "teams", "add up to more GPUs than the stack reaches at full scale (24)"),
])
def test_each_mistake_is_one_line_naming_its_key(teams, key, says):
    with pytest.raises(ConfigError) as raised:
        check(teams, POOLS)
    assert raised.value.field == key and says in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("team, key", [(TeamArgs("a", 1, namespace="kube-system"), "teams[0].namespace"),
                                       (TeamArgs("kube-system", 1), "teams[0].name")])
def test_a_namespace_the_platform_reserves_is_refused_and_none_elsewhere(team, key):
    with pytest.raises(ConfigError) as raised:
        check((team,), POOLS, reserved=("default", "kube-system"))
    assert str(raised.value) == (
        f"{key} = 'kube-system': a namespace of Kubernetes or of what the stack installs (default, kube-system), not "
        f"one for a team. Fix: give the team a namespace of its own (teams[0].namespace: {team.name}-jobs)")
    check((team,), POOLS)  # a platform without namespaces (AWS Batch)


def test_quotas_above_capacity_pass_when_overcommit_is_meant():
    check((TeamArgs("a", 16), TeamArgs("b", 16)), POOLS, overcommit=True)
    with pytest.raises(ConfigError, match="more GPUs than its pools reach"):  # one team alone still cannot
        check((TeamArgs("a", 30),), POOLS, overcommit=True)


def test_a_team_reaches_its_pools_or_all():
    assert reachable(TeamArgs("a", 1, pools=("spot",)), POOLS) == (POOLS[1],)
    assert reachable(TeamArgs("a", 1), POOLS) == POOLS
