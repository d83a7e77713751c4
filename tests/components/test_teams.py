"""The teams every platform checks the same way, at construction: each mistake one ConfigError naming its key."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.teams import Pool, TeamArgs, check, reachable

POOLS = (Pool("on-demand", 16), Pool("spot", 8))


def test_two_teams_within_the_pools_pass():
    check((TeamArgs("research", 12, borrow=4), TeamArgs("prod", 8, lend=0, weight=2, pools=("on-demand",))), POOLS)


LABEL = "use lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters " \
        "(ml-research)"
WHOLE = "give GPUs as a whole number"


@pytest.mark.parametrize("teams, line", [
    ((TeamArgs("ML_Research", 1),), f"teams[0].name = 'ML_Research': not a DNS-1123 label. Fix: {LABEL}"),
    ((TeamArgs("a" * 64, 1),), f"teams[0].name = '{'a' * 64}': not a DNS-1123 label. Fix: {LABEL}"),
    ((TeamArgs("a", 1), TeamArgs("a", 2)),
     "teams[1].name = 'a': named twice (also teams[0]). Fix: give each team one entry"),
    ((TeamArgs("a", -1),), f"teams[0].gpus = -1: not a whole number of 0 or more. Fix: {WHOLE}"),
    ((TeamArgs("a", 2.5),), f"teams[0].gpus = 2.5: not a whole number of 0 or more. Fix: {WHOLE}"),
    ((TeamArgs("a", True),), f"teams[0].gpus = True: not a whole number of 0 or more. Fix: {WHOLE}"),
    ((TeamArgs("a", 1, borrow=-2),), f"teams[0].borrow = -2: not a whole number of 0 or more. Fix: {WHOLE}"),
    ((TeamArgs("a", 1, lend=-1),), f"teams[0].lend = -1: not a whole number of 0 or more. Fix: {WHOLE}"),
    ((TeamArgs("a", 1, weight=0),),
     "teams[0].weight = 0: not a whole number of 1 or more. Fix: give a weight of 1 or more"),
    ((TeamArgs("a", 2, lend=3),), "teams[0].lend = 3: more than the team's own 2 GPUs. Fix: lend at most 2"),
    ((TeamArgs("a", 1, namespace="Team A"),), "teams[0].namespace = 'Team A': not a DNS-1123 label. Fix: use "
                                              "lowercase letters, digits and '-' (a Kubernetes namespace)"),
    ((TeamArgs("a", 1, namespace="n" * 64),), f"teams[0].namespace = '{'n' * 64}': not a DNS-1123 label. Fix: use "
                                              "lowercase letters, digits and '-' (a Kubernetes namespace)"),
    ((TeamArgs("a", 1), TeamArgs("b", 1, namespace="a")),
     "teams[1].namespace = 'a': also the namespace of teams[0]. Fix: give each team a namespace of its own: its "
     "LocalQueue is named after the team"),
    ((TeamArgs("a", 1, pools=("reserved",)),),
     "teams[0].pools = 'reserved': no GPU pool of the stack has this name. Fix: use one of on-demand, spot"),
    ((TeamArgs("a", 10, pools=("spot",)),), "teams[0].gpus = 10: more GPUs than its pools reach at full scale (8). "
                                            "Fix: lower the quota, or raise the pools' maximum size"),
    ((TeamArgs("a", 16), TeamArgs("b", 16)),
     "teams = 32: the teams' quotas add up to more GPUs than the stack reaches at full scale (24). Fix: lower the "
     "quotas, raise the pools' maximum size, or set overcommit_quotas: true if quotas above capacity are meant (jobs "
     "then wait for GPUs their quota allows)"),
])
def test_each_mistake_is_one_line_naming_its_key_value_and_fix(teams, line):
    with pytest.raises(ConfigError) as raised:
        check(teams, POOLS)
    assert str(raised.value) == line


def test_on_a_stack_with_no_gpu_pool_a_named_pool_is_refused_saying_so():
    with pytest.raises(ConfigError) as raised:
        check((TeamArgs("a", 0, pools=("spot",)),), ())
    assert str(raised.value) == ("teams[0].pools = 'spot': no GPU pool of the stack has this name. Fix: use one of "
                                 "(none: the stack makes no GPU pool)")


def test_each_limit_reached_exactly_passes():
    """A 63-character name and namespace, lending all its GPUs, a quota of all its pools reach, quotas adding up to
    all the stack's GPUs."""
    check((TeamArgs("a" * 63, 8, lend=8, namespace="n" * 63, pools=("spot",)), TeamArgs("b", 16)), POOLS)


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
