"""Teams on AWS Batch: a fair-share queue beside the FIFO GPU queue, one share per team, and what Batch's fair share
cannot express refused at construction with one line naming the key."""

from __future__ import annotations

import pytest
from pulumi.runtime.sync_await import _sync_await

from gpuready_components.batch_gpu import MultiNodeArgs
from gpuready_components.batch_gpu.shares import identifier
from gpuready_components.errors import ConfigError
from gpuready_components.teams import TeamArgs

from .helpers import CE, POLICY, QUEUE, build

TEAMS = (TeamArgs("ml-research", 12), TeamArgs("inference", 4))
"""Within the default test environment: 16 x g6.xlarge in 64 vCPUs, 16 GPUs on-demand."""


def _named(rendering, type_, name):
    (found,) = [r for r in rendering.of_type(type_) if r.name == name]
    return found


def _orders(queue):
    return [o["computeEnvironment"] for o in queue.inputs["computeEnvironmentOrders"]]


def test_teams_get_a_fair_share_queue_on_the_gpu_environments_and_the_gpu_queue_stays_fifo(render):
    rendering, env = build(render, capacity=["spot", "on-demand"], teams=TEAMS)
    fifo, teams = _named(rendering, QUEUE, "gpu-gpu"), _named(rendering, QUEUE, "gpu-gpu-teams")
    (policy,) = rendering.of_type(POLICY)
    assert "schedulingPolicyArn" not in fifo.inputs  # Metaflow's queue takes jobs with no share identifier
    assert teams.inputs["schedulingPolicyArn"] == policy.outputs["arn"]
    spot, on_demand = _named(rendering, CE, "gpu-gpu-spot"), _named(rendering, CE, "gpu-gpu-on-demand")
    assert _orders(teams) == _orders(fifo) == [spot.outputs["arn"], on_demand.outputs["arn"]]
    assert int(teams.inputs["priority"]) > int(fifo.inputs["priority"])  # the shares govern the environments
    assert teams.inputs["jobStateTimeLimitActions"] == fifo.inputs["jobStateTimeLimitActions"]
    fair = policy.inputs["fairSharePolicy"]
    assert {s["shareIdentifier"]: s["weightFactor"] for s in fair["shareDistributions"]} == \
        {"mlresearch": 1.0, "inference": 3.0}  # 12 GPUs against 4: three times the share
    assert (fair["computeReservation"], fair["shareDecaySeconds"]) == (0, 3600)
    assert env.teams_job_queue_arn is not None and env.multi_node_teams_job_queue_arn is None


def test_without_teams_nothing_changes(render):
    rendering, env = build(render)
    assert not rendering.of_type(POLICY) and [q.name for q in rendering.of_type(QUEUE)] == ["gpu-gpu"]
    assert "teams" not in env.outputs and env.teams_job_queue_arn is None


def test_the_teams_output_names_each_teams_fair_share_queue_and_its_metaflow_queue(render):
    rendering, env = build(render, teams=TEAMS, metaflow_datastore_bucket="ml-data")
    fifo, teams = _named(rendering, QUEUE, "gpu-gpu"), _named(rendering, QUEUE, "gpu-gpu-teams")
    items = _sync_await(env.outputs["teams"].future())
    profile = _sync_await(env.outputs["metaflowProfile"].future())
    assert profile["METAFLOW_BATCH_JOB_QUEUE"] == fifo.outputs["name"]  # unchanged: the FIFO queue
    assert [(t["name"], t["shareIdentifier"], t["gpus"], t["weight"]) for t in items] == \
        [("ml-research", "mlresearch", 12, 1), ("inference", "inference", 4, 1)]
    for team in items:
        assert team["jobQueueArn"] == teams.outputs["arn"] and team["metaflowJobQueueArn"] == fifo.outputs["arn"]
        assert team["metaflowProfile"] == profile and "multiNodeJobQueueArn" not in team


def test_multi_node_gets_its_own_fair_share_queue_and_counts_as_a_pool(render):
    # on-demand reaches 16 GPUs, the multi-node environment 8 (2 x g6.12xlarge): 24 in all
    teams = (TeamArgs("research", 20), TeamArgs("prod", 4, weight=5))
    rendering, env = build(render, multi_node=MultiNodeArgs(nodes=2), teams=teams)
    multi = _named(rendering, CE, "gpu-multi-node")
    queue, fifo = _named(rendering, QUEUE, "gpu-multi-node-teams"), _named(rendering, QUEUE, "gpu-multi-node")
    policies = {p.name: p for p in rendering.of_type(POLICY)}
    assert set(policies) == {"gpu-gpu-teams", "gpu-multi-node-teams"}
    assert _orders(queue) == [multi.outputs["arn"]] and "schedulingPolicyArn" not in fifo.inputs
    assert queue.inputs["schedulingPolicyArn"] == policies["gpu-multi-node-teams"].outputs["arn"]
    assert policies["gpu-multi-node-teams"].inputs["fairSharePolicy"]["shareDistributions"] == \
        policies["gpu-gpu-teams"].inputs["fairSharePolicy"]["shareDistributions"] == \
        [{"shareIdentifier": "research", "weightFactor": 1.0}, {"shareIdentifier": "prod", "weightFactor": 1.0}]
    (item, _) = _sync_await(env.outputs["teams"].future())
    assert item["multiNodeJobQueueArn"] == queue.outputs["arn"]
    with pytest.raises(ConfigError, match="more GPUs than the stack reaches at full scale \\(24\\)"):
        build(render, multi_node=MultiNodeArgs(nodes=2), teams=(TeamArgs("research", 21), TeamArgs("prod", 4)))


def test_a_team_with_no_quota_gets_batchs_least_share_and_policy_knobs_reach_the_policy(render):
    rendering, _ = build(render, teams=(TeamArgs("research", 16), TeamArgs("scavenger", 0)),
                         fair_share_compute_reservation=25, fair_share_decay_seconds=0)
    (policy,) = rendering.of_type(POLICY)
    fair = policy.inputs["fairSharePolicy"]
    assert [s["weightFactor"] for s in fair["shareDistributions"]] == [1.0, 999.9999]
    assert (fair["computeReservation"], fair["shareDecaySeconds"]) == (25, 0)


def test_overcommit_lets_quotas_exceed_capacity(render):
    teams = (TeamArgs("research", 16), TeamArgs("prod", 16))
    with pytest.raises(ConfigError, match="add up to more GPUs"):
        build(render, teams=teams)
    rendering, _ = build(render, teams=teams, overcommit_quotas=True)
    assert len(rendering.of_type(POLICY)) == 1


@pytest.mark.parametrize("overrides, key, says", [
    ({"teams": (TeamArgs("ml-a", 1), TeamArgs("mla", 1))}, "teams[1].name",
     "its share identifier mla is also that of teams[0] (ml-a)"),
    ({"teams": (TeamArgs("a", 1, borrow=2),)}, "teams[0].borrow", "no per-team borrowing or lending limit"),
    ({"teams": (TeamArgs("a", 1, lend=0),)}, "teams[0].lend", "no per-team borrowing or lending limit"),
    ({"teams": (TeamArgs("a", 1, pools=("spot",)),), "capacity": ["spot", "on-demand"]}, "teams[0].pools",
     "cannot keep a team off a compute environment"),
    ({"teams": (TeamArgs("a", 1, pools=("reserved",)),)}, "teams[0].pools", "no GPU pool of the stack has this name"),
    ({"teams": (TeamArgs("big", 15, weight=100), TeamArgs("tiny", 1))}, "teams[1].gpus",
     "over 1000 times smaller than the largest (1500)"),
    ({"teams": (TeamArgs("a", 17),)}, "teams[0].gpus", "more GPUs than its pools reach at full scale (16)"),
    ({"teams": (TeamArgs("A", 1),)}, "teams[0].name", "not a DNS-1123 label"),
    ({"teams": (TeamArgs("a", 1),), "fair_share_compute_reservation": 100}, "fair_share_compute_reservation",
     "from 0 to 99"),
    ({"teams": (TeamArgs("a", 1),), "fair_share_decay_seconds": 604_801}, "fair_share_decay_seconds",
     "from 0 to 604800"),
])
def test_what_batch_fair_share_cannot_do_is_refused_naming_the_key(render, overrides, key, says):
    with pytest.raises(ConfigError) as caught:
        build(render, **overrides)
    assert caught.value.field == key and says in str(caught.value) and "\n" not in str(caught.value)


def test_share_identifiers_drop_the_dash_and_nothing_else():
    assert identifier("ml-research-2") == "mlresearch2" and identifier("prod") == "prod"
