"""``gpuready plan``'s Queues section (text and ``--json``'s ``queues``) on rendered programs with two teams: read from
the Kueue objects and the Batch fair-share policy the program creates, priced from the catalog's rows."""

from __future__ import annotations

import json

import pytest

from gpuready.cli import main
from gpuready_components import catalog
from tests.gpuready.queue_programs import overcommitted, project, without

L4 = catalog.find("aws", "g6.12xlarge").price_usd_hour / 4
"""$/GPU-hour of the gpu-l4 pool (4 L4 a node)."""
L40S = catalog.find("aws", "g6e.xlarge").price_usd_hour
"""$/GPU-hour of the gpu-l40s pool (1 L40S a node)."""


def _plan(tmp_path, capsys, **changes):
    folder = project(tmp_path / "program", **changes)
    assert main(["plan", "--program", str(folder), "--stack", "queues", "--no-policies"]) == 0
    text = capsys.readouterr().out
    assert main(["plan", "--program", str(folder), "--stack", "queues", "--no-policies", "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)["queues"]


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Queues ("))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_two_teams_within_capacity_show_their_quotas_limits_flavors_and_cost(tmp_path, capsys):
    text, queues = _plan(tmp_path, capsys)
    teams = {t["name"]: t for t in queues["teams"]}
    assert set(teams) == {"research", "inference"}
    research, inference = teams["research"], teams["inference"]
    assert (research["gpus"], research["borrow"], research["lend"], research["weight"]) == (6, 2, None, 2)
    assert research["flavors"] == ["gpu-l4"] and research["pools"] == ["gpu-l4"]
    assert research["queues"] == ["research/research-queue"]
    assert research["usd_per_hour"] == pytest.approx(6 * L4, abs=0.01)
    # inference: 2 GPUs on the L4 flavor (no borrowing there, but none set on the L40S one: no limit), 4 on L40S
    assert (inference["gpus"], inference["borrow"], inference["flavors"]) == (6, None, ["gpu-l4", "gpu-l40s"])
    assert inference["usd_per_hour"] == pytest.approx(2 * L4 + 4 * L40S, abs=0.01)
    assert (queues["quota_gpus"], queues["capacity_gpus"], queues["overcommitted"]) == (12, 12, False)
    section = _section(text)
    assert section[0].startswith("Queues (2 teams; $/h at full use priced at the mean $/GPU-hour")
    # Kueue's arithmetic: research borrows inference's 2 idle L4 GPUs (its limit, 2); inference borrows nothing on L4
    # (limit 0) and has the L40S flavor to itself
    assert (research["most"], inference["most"]) == (8, 6)
    assert research["usd_per_hour_most"] == pytest.approx(8 * L4, abs=0.01)
    assert inference["usd_per_hour_most"] == pytest.approx(2 * L4 + 4 * L40S, abs=0.01)
    assert research["lend"] is None
    assert queues["pools"] == [
        {"flavor": "gpu-l4", "pools": ["gpu-l4"], "gpus": 8, "guaranteed": 8, "cohort": 0, "admissible": 8,
         "unadmittable": 0},
        {"flavor": "gpu-l40s", "pools": ["gpu-l40s"], "gpus": 4, "guaranteed": 4, "cohort": 0, "admissible": 4,
         "unadmittable": 0}]
    assert queues["unadmittable_gpus"] == 0
    assert any(line == ("  research: 6 GPUs guaranteed; may borrow 2 GPUs more; lends all it leaves idle; most it can "
                        "hold while the others idle: 8 GPUs; weight 2; flavors gpu-l4; queues research/research-queue; "
                        f"on gpu-l4; ${6 * L4:,.2f}/h at its guarantee, ${8 * L4:,.2f}/h at its most")
               for line in section), section
    assert "  flavor gpu-l4 (gpu-l4): 8 GPUs at full scale; 8 GPUs guaranteed to queues, 0 GPUs of the cohort's own " \
        "that any may borrow; the queues admit at most 8 GPUs at once; GPUs no queue can admit: 0" in section
    assert section[-1] == ("  total: 12 GPUs of quota against 12 GPUs at full scale: within capacity; GPUs no queue "
                           "can admit: 0")


def test_a_flavor_the_queues_cannot_fill_says_how_many_gpus_no_queue_can_admit(tmp_path, capsys):
    """Without the L40S flavor in inference's queue, nothing admits the gpu-l40s pool's 4 GPUs."""
    text, queues = _plan(tmp_path, capsys, **without("gpu-l40s"))
    assert queues["unadmittable_gpus"] == 4
    assert {p["flavor"]: p["unadmittable"] for p in queues["pools"]} == {"gpu-l4": 0, "gpu-l40s": 4}
    assert _section(text)[-1].endswith("GPUs no queue can admit: 4")


def test_quotas_above_capacity_are_said_overcommitted_and_whether_it_was_declared(tmp_path, capsys):
    text, queues = _plan(tmp_path / "silent", capsys, **overcommitted(extra=4))
    assert (queues["quota_gpus"], queues["capacity_gpus"]) == (16, 12)
    assert queues["overcommitted"] and not queues["overcommit_declared"]
    assert _section(text)[-1] == ("  total: 16 GPUs of quota against 12 GPUs at full scale: overcommitted: quotas "
                                  "promise GPUs the pools cannot reach; GPUs no queue can admit: 0")
    text, queues = _plan(tmp_path / "declared", capsys, **overcommitted(extra=4, declared=True))
    assert queues["overcommitted"] and queues["overcommit_declared"]
    assert "overcommitted (declared" in _section(text)[-1]


def test_no_section_without_teams_even_with_flavors_and_priority_classes(tmp_path, capsys):
    text, queues = _plan(tmp_path, capsys, teams={}, local_queues={})
    assert queues is None
    assert "Queues (" not in text and "Capacity at full scale:" in text


def test_batch_fair_share_shows_each_share_of_the_queue_s_gpus(tmp_path, capsys):
    text, queues = _plan(tmp_path, capsys, pools={}, flavors={}, teams={}, local_queues={},
                         batch={"research": 0.5, "inference": 1.0})
    teams = {t["name"]: t for t in queues["teams"]}
    # 96 vCPUs of g6.12xlarge (48 vCPUs, 4 GPUs) = 8 GPUs; weight factor 0.5 gets twice what 1.0 gets
    assert teams["research"]["share"] == pytest.approx(2 / 3, abs=1e-4)
    assert teams["research"]["gpus"] == pytest.approx(16 / 3, abs=0.01)
    assert teams["inference"]["gpus"] == pytest.approx(8 / 3, abs=0.01)
    assert teams["research"]["weight"] == 0.5 and teams["research"]["queues"] == ["gpu-fair"]
    assert teams["research"]["usd_per_hour"] == pytest.approx(16 / 3 * L4, abs=0.02)
    assert (queues["capacity_gpus"], queues["overcommitted"]) == (8, False)
    assert teams["research"]["most"] == 8  # alone, a share gets every GPU of its queues
    assert any(line.startswith("  research: 66.7% fair share (weight factor 0.5) = 5.33 GPUs; may use idle shares; "
                               "most it can hold while the others idle: 8 GPUs; job queues gpu-fair; on gpu-batch")
               for line in _section(text))


def test_the_operators_queue_is_rendered_but_is_no_team(capsys):
    """The eks reference stack's operators' queue (gpuready.io/role: operators, nominal quota 0) is among the
    rendered ClusterQueues and in the outputs, and the Queues section counts only the teams."""
    assert main(["plan", "--stack", "eks", "--no-policies", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    queues = [r["inputs"]["metadata"] for r in plan["resources"]
              if r["type"] == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"]
    assert {q["name"]: q["labels"].get("gpuready.io/role") for q in queues} == {
        "research": None, "inference": None, "gpuready-operators": "operators"}
    assert sorted(t["name"] for t in plan["queues"]["teams"]) == ["inference", "research"]
    assert plan["outputs"]["operatorsQueue"]["localQueue"] == "gpuready-operators"
