"""Smoke runs through a team's Kueue queue (``--team``) against the fake Kubernetes API's Kueue (fake_kube.FakeKueue:
admission, quota, borrowing within the cohort, reclaim), every Kueue object it serves checked against the v0.19.2
CRDs (tests/data/kueue-0.19.2-crds); and on Batch, SubmitJob with the team's share identifier (moto)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import botocore.client
import botocore.session
import jsonschema
import pytest
import yaml

from gpuready.cli import main
from gpuready.errors import UserError
from gpuready.smoke import kubernetes as single
from gpuready.smoke import kubernetes_multinode as gang
from gpuready.smoke import batch as batch_target

from tests.gpuready.conftest import H100

from .fault_proxy import KUBE_ERRORS, FaultProxy, kube_action

CRDS = Path(__file__).resolve().parents[2] / "data" / "kueue-0.19.2-crds"
KUEUE = "kueue.x-k8s.io/v1beta2"
EKS = {"gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "platform": "eks", "maxGpusPerNode": 4, "maxGpus": 16}


def team(name, gpus, borrow=None, lend=None):
    """A ``teams`` output item as a Kubernetes stack exports it (the shared contract's keys)."""
    return {"name": name, "namespace": name, "localQueue": name, "clusterQueue": name, "cohort": "gpuready",
            "gpus": gpus, "borrow": borrow, "lend": lend, "weight": 1, "flavors": ["gpu-h100"],
            "metaflowProfile": {"METAFLOW_KUBERNETES_NAMESPACE": name,
                                "METAFLOW_KUBERNETES_LABELS": f"kueue.x-k8s.io/queue-name={name}"}}


def cluster_queue(name, gpus, borrow=None):
    quota = {"name": "nvidia.com/gpu", "nominalQuota": gpus, **({"borrowingLimit": borrow} if borrow is not None
                                                                 else {})}
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "gpuready", "namespaceSelector": {},
                     "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                     "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                                         "flavors": [{"name": "gpu-h100", "resources": [quota]}]}]}}


def local_queue(name):
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": name, "namespace": name},
            "spec": {"clusterQueue": name}}


def queues(a=4, b=4, a_borrow=None, local=("team-a", "team-b")):
    return {"cluster_queues": [cluster_queue("team-a", a, a_borrow), cluster_queue("team-b", b)],
            "local_queues": [local_queue(n) for n in local]}


def outputs_with(teams):
    return {**EKS, "teams": teams}


TEAMS = [team("team-a", 4), team("team-b", 4)]


def validators():
    found = {}
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
        found[crd["spec"]["names"]["kind"]] = jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])
    return found


def assert_valid(server):
    """Every Kueue object the fake served is valid against its v0.19.2 CRD."""
    checks = validators()
    assert server.kueue.served
    for obj in server.kueue.served:
        checks[obj["kind"]].validate(obj)


def test_the_crd_check_refuses_a_misshapen_workload():
    with pytest.raises(jsonschema.ValidationError):
        validators()["Workload"].validate({"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": "w"},
                                           "spec": {"podSets": [{"name": "main", "count": "two"}]}})


def test_admitted_job_reports_the_time_and_flavor_and_leaves_nothing(fake_kube):
    server, outputs = fake_kube(outputs_with(TEAMS), kueue=queues(), logs="no report\n")
    progress = io.StringIO()
    result = single.run(outputs, team="team-a", timeout=30, progress=progress, admission_poll=0.1)
    admission = result.job["admission"]
    assert admission["flavors"] == ["gpu-h100"] and admission["clusterQueue"] == "team-a"
    assert isinstance(admission["seconds"], float)
    assert {c.name: c.verdict for c in result.checks}["admitted"] == "pass"
    assert "admitted by Kueue after" in progress.getvalue()
    job = server.bodies[("Job", result.job["name"])]
    assert job["metadata"]["namespace"] == "team-a" and job["spec"]["suspend"] is True
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert server.objects == {}
    assert_valid(server)


def test_quota_used_up_names_the_quota_and_the_other_team_using_the_cohort(fake_kube):
    scenario = {**queues(a=2), "admitted": [
        {"name": "train-7", "namespace": "team-a", "queue": "team-a", "gpus": 2},
        {"name": "sweep-3", "namespace": "team-b", "queue": "team-b", "gpus": 4}]}
    server, outputs = fake_kube(outputs_with([team("team-a", 2), team("team-b", 4)]), kueue=scenario)
    result = single.run(outputs, team="team-a", timeout=1.5, progress=io.StringIO(), admission_poll=0.1)
    checks = {c.name: c.verdict for c in result.checks}
    assert checks["admitted"] == "fail" and checks["job_finished"] == "fail"
    (finding,) = result.findings
    assert finding["kind"] == "queue-quota"
    assert "team team-a already uses 2 of its 2 nvidia.com/gpu in flavor gpu-h100" in finding["summary"]
    assert "team-b uses 4" in finding["summary"]
    assert finding["quote"].startswith("couldn't assign flavors to pod set main: insufficient unused quota")
    assert any(f.startswith("wait") for f in finding["fixes"])
    assert not server.pods  # never admitted: no pod ever ran
    assert ("Job", result.job["name"]) in server.deleted and ("Workload", "train-7") in server.objects
    assert_valid(server)


def test_a_missing_local_queue_is_named_with_the_fix(fake_kube):
    server, outputs = fake_kube(outputs_with(TEAMS), kueue=queues(local=("team-b",)))
    result = single.run(outputs, team="team-a", timeout=1, progress=io.StringIO(), admission_poll=0.1)
    (finding,) = result.findings
    assert finding["kind"] == "queue-missing" and "LocalQueue team-a does not exist in namespace team-a" in \
        finding["summary"]
    assert finding["quote"] == "LocalQueue team-a doesn't exist" and "pulumi up" in finding["fixes"][0]


def test_a_job_preempted_by_a_reclaiming_team_says_so(fake_kube):
    """team-a borrows one of team-b's GPUs; team-b then asks for its whole quota and takes it back."""
    scenario = {**queues(a=2, b=4), "arrivals": [
        {"after": 1, "name": "train-b", "namespace": "team-b", "queue": "team-b", "gpus": 4, "priority": 1000}]}
    server, outputs = fake_kube(outputs_with([team("team-a", 2), team("team-b", 4)]), kueue=scenario,
                                phases=("Pending",))
    result = single.run(outputs, team="team-a", gpus=3, timeout=1.5, progress=io.StringIO(), admission_poll=0.1)
    kinds = [f["kind"] for f in result.findings]
    assert kinds[0] == "preempted", kinds
    assert "reclamation within the cohort" in result.findings[0]["quote"]
    assert "took back the GPUs it lends" in result.findings[0]["summary"] and "1 time(s)" in \
        result.findings[0]["summary"]
    assert all(kind != "Job" for kind, _ in server.objects)
    assert_valid(server)


def test_a_job_borrowing_the_cohorts_own_quota_is_admitted(fake_kube):
    """The Cohort's own quota (v1beta2 ``spec.resourceGroups``) is a pool on top of the teams' guarantees: with
    team-b using its own 2, team-a takes its 2 and 2 of the Cohort's 4."""
    cohort = {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "gpuready"}, "spec": {"resourceGroups": [
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "gpu-h100", "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": 4}]}]}]}}
    scenario = {**queues(a=2, b=2), "objects": [cohort], "admitted": [
        {"name": "sweep-3", "namespace": "team-b", "queue": "team-b", "gpus": 2}]}
    server, outputs = fake_kube(outputs_with([team("team-a", 2), team("team-b", 2)]), kueue=scenario,
                                logs="no report\n")
    result = single.run(outputs, team="team-a", gpus=4, timeout=30, progress=io.StringIO(), admission_poll=0.1)
    assert {c.name: c.verdict for c in result.checks}["admitted"] == "pass", result.findings
    assert result.job["admission"]["clusterQueue"] == "team-a" and result.job["admission"]["flavors"] == ["gpu-h100"]
    assert len(server.pods) == 1 and list(server.objects) == [("Workload", "sweep-3")]  # team-b's, still running
    assert_valid(server)


def _rendered_kueue(stack: str) -> tuple[dict, dict]:
    """Stack ``stack``'s outputs and the Kueue it renders (every Kueue object, the controller's Configuration)."""
    from tests.stacks.test_kueue_walk import stack_kueue

    rendered = stack_kueue(stack)
    of = {kind: [o for o in rendered["objects"] if o["kind"] == kind] for kind in ("ClusterQueue", "LocalQueue")}
    return rendered["outputs"], {"cluster_queues": of["ClusterQueue"], "local_queues": of["LocalQueue"],
                                 "objects": [o for o in rendered["objects"] if o["kind"] not in of],
                                 "config": rendered["config"]}


@pytest.mark.parametrize("name, gpus", [("inference", 2), ("research", 4)])
def test_a_team_asking_what_eks_promises_is_admitted(fake_kube, name, gpus):
    """On eks (issue 39), inference is guaranteed 2 GPUs, research 2 and 8 more it may borrow: a smoke through the
    team's queue asking for its guarantee, or for 4 (borrowing), the other team idle, is admitted by the queues eks
    renders (Kueue's own arithmetic, fair sharing as the chart configures it)."""
    outputs, scenario = _rendered_kueue("eks")
    server, outputs = fake_kube({k: v for k, v in outputs.items() if k != "kubeconfig"}, kueue=scenario,
                                logs="no report\n")
    result = single.run(outputs, team=name, gpus=gpus, timeout=3, progress=io.StringIO(), admission_poll=0.1)
    assert {c.name: c.verdict for c in result.checks}["admitted"] == "pass", [f["summary"] for f in result.findings]
    (team_,) = [t for t in outputs["teams"] if t["name"] == name]
    assert result.job["admission"]["clusterQueue"] == team_["clusterQueue"]
    assert set(result.job["admission"]["flavors"]) <= set(team_["flavors"])
    assert_valid(server)


def test_a_gang_is_one_workload_admitted_whole(fake_kube):
    server, outputs = fake_kube(outputs_with(TEAMS), kueue=queues(a=4), logs="no report\n")
    result = gang.run(outputs, nodes=2, gpus=2, team="team-a", timeout=30, progress=io.StringIO(), jobset=False,
                      admission_poll=0.1)
    (pod_set,) = result.job["admission"]["podSets"]
    assert pod_set["count"] == 2 and pod_set["flavors"] == {"nvidia.com/gpu": "gpu-h100"}
    assert [k for k, _ in server.created].count("Workload") == 1 and len(server.pods) == 2
    assert_valid(server)


def test_a_gang_that_does_not_fit_now_starts_no_pod(fake_kube):
    scenario = {**queues(a=4, b=4), "admitted": [
        {"name": "sweep-3", "namespace": "team-b", "queue": "team-b", "gpus": 4},
        {"name": "train-7", "namespace": "team-a", "queue": "team-a", "gpus": 2}]}
    server, outputs = fake_kube(outputs_with(TEAMS), kueue=scenario)
    result = gang.run(outputs, nodes=2, gpus=2, team="team-a", timeout=2, progress=io.StringIO(), jobset=False,
                      admission_poll=0.1)
    assert result.findings[0]["kind"] == "queue-quota" and not server.pods  # none of the gang, not half of it


def test_a_gang_larger_than_quota_and_borrowing_is_refused_before_submit(fake_kube, tmp_path, capsys):
    small = [team("team-a", 2, borrow=1), team("team-b", 4)]
    server, outputs = fake_kube(outputs_with(small), kueue=queues(a=2, a_borrow=1))
    with pytest.raises(UserError, match="admits at most 3 at once"):
        gang.run(outputs, nodes=2, gpus=2, team="team-a", timeout=5, progress=io.StringIO(), jobset=False)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["smoke", "--outputs", str(path), "--nodes", "2", "--gpus", "2", "--team", "team-a"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "4 GPUs" in err and "Pending for ever" in err
    assert server.created == []


@pytest.mark.parametrize("argv, says", [
    (["--team", "team-z"], "--team team-z: no such team on this eks stack; its teams are team-a, team-b"),
    ([], "pass --team NAME (e.g. --team team-a)"),
])
def test_a_team_the_stack_does_not_have_is_one_line(fake_kube, tmp_path, capsys, argv, says):
    server, outputs = fake_kube(outputs_with(TEAMS), kueue=queues())
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["smoke", "--outputs", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and server.created == []


def test_team_on_a_stack_without_teams_is_one_line(fake_kube, tmp_path, capsys):
    server, outputs = fake_kube(EKS)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path), "--team", "team-a"]) == 2
    assert "declares no teams" in capsys.readouterr().err and server.created == []


def test_nothing_is_left_when_the_workload_outlives_its_job_at_the_timeout(fake_kube):
    server, outputs = fake_kube(outputs_with(TEAMS), kueue={**queues(local=("team-b",)), "gc": False})
    result = single.run(outputs, team="team-a", timeout=1, progress=io.StringIO(), admission_poll=0.1)
    assert server.objects == {}
    assert [k for k, _ in server.deleted] == ["Job", "Workload", "ConfigMap"], result.job


def test_ctrl_c_while_queued_leaves_nothing(fake_kube):
    server, outputs = fake_kube(outputs_with(TEAMS), kueue={**queues(local=("team-b",)), "gc": False})
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"list-workloads": ["pass", "interrupt"]}
    try:
        result = single.run({**outputs, "kubeconfig": outputs["kubeconfig"].replace(server.url, proxy.url)},
                            team="team-a", timeout=30, progress=io.StringIO(), admission_poll=0.1)
    finally:
        proxy.close()
    assert "interrupted" in [c for c in result.checks if c.name == "job_finished"][0].detail
    assert server.objects == {} and {k for k, _ in server.deleted} == {"Job", "Workload", "ConfigMap"}


def _recorded(monkeypatch):
    """Every (operation, params) boto3 sends, the call itself unchanged."""
    sent = []
    real = botocore.client.BaseClient._make_api_call

    def record(self, operation, params):
        sent.append((operation, params))
        return real(self, operation, params)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    return sent


def batch_teams(aws):
    """A fair-share queue as the aws-batch component makes it (a scheduling policy, one share per team) beside
    the stack's queue, which takes jobs without a share identifier (Metaflow's)."""
    endpoint, outputs = aws
    batch = botocore.session.get_session().create_client("batch", region_name="us-east-1", endpoint_url=endpoint,
                                                         aws_access_key_id="testing", aws_secret_access_key="testing")
    policy = batch.create_scheduling_policy(name="gpu-teams", fairsharePolicy={
        "shareDecaySeconds": 3600, "computeReservation": 0,
        "shareDistribution": [{"shareIdentifier": "teama", "weightFactor": 1.0},
                              {"shareIdentifier": "teamb", "weightFactor": 0.5}]})["arn"]
    (queue,) = batch.describe_job_queues(jobQueues=[outputs["jobQueueArn"]])["jobQueues"]
    fair = batch.create_job_queue(jobQueueName="gpu-fair", state="ENABLED", priority=1,
                                  schedulingPolicyArn=policy,
                                  computeEnvironmentOrder=queue["computeEnvironmentOrder"])["jobQueueArn"]
    teams = [{"name": n, "shareIdentifier": n.replace("-", ""), "jobQueueArn": fair, "gpus": 4, "weight": 1,
              "metaflowProfile": {"METAFLOW_BATCH_JOB_QUEUE": outputs["jobQueueArn"]},
              "metaflowJobQueueArn": outputs["jobQueueArn"]} for n in ("team-a", "team-b")]
    return {**outputs, "teams": teams}, fair


def test_batch_submits_with_the_teams_share_identifier_to_its_queue(aws, jobs_never_start, monkeypatch):
    outputs, fair = batch_teams(aws)
    sent = _recorded(monkeypatch)
    result = batch_target.run(outputs, team="team-b", timeout=0.5, poll=0.05, explain_after=0.2,
                              progress=io.StringIO())
    (submit,) = [params for operation, params in sent if operation == "SubmitJob"]
    assert submit["shareIdentifier"] == "teamb" and submit["jobQueue"] == fair
    model = botocore.session.get_session().get_service_model("batch")
    assert "shareIdentifier" in model.operation_model("SubmitJob").input_shape.members
    (job,) = jobs_never_start.values()
    assert job.job_queue.arn == fair and result.job["shareIdentifier"] == "teamb"


def test_batch_without_team_goes_to_the_queue_for_jobs_without_a_share_and_says_so(aws, jobs_never_start,
                                                                                   monkeypatch):
    outputs, fair = batch_teams(aws)
    sent = _recorded(monkeypatch)
    progress = io.StringIO()
    batch_target.run(outputs, timeout=0.5, poll=0.05, explain_after=0.2, progress=progress)
    (submit,) = [params for operation, params in sent if operation == "SubmitJob"]
    assert "shareIdentifier" not in submit and submit["jobQueue"] == outputs["jobQueueArn"]
    assert "the queue for jobs without a team" in progress.getvalue()


FAIR_GANG = "arn:aws:batch:us-east-1:123456789012:job-queue/gpu-multi-node-teams"
FIFO_GANG = "arn:aws:batch:us-east-1:123456789012:job-queue/gpu-multi-node"


@pytest.mark.parametrize("team, queue, added, says", [
    ("team-a", FAIR_GANG, {"shareIdentifier": "teama"}, ""),
    (None, FIFO_GANG, {}, ""),
])
def test_a_batch_gang_goes_to_the_team_s_fair_share_multi_node_queue_or_else_the_stack_s(team, queue, added, says):
    """A team's gang carries its share identifier to the team's fair-share multi-node queue (a first-in first-out
    queue refuses a share identifier, a fair-share one its absence: botocore's SubmitJob); without --team it goes to
    the stack's multi-node queue with none, and nothing says it went to Metaflow's."""
    from types import SimpleNamespace

    from gpuready.smoke.outputs import StackOutputs

    teams = [{"name": n, "shareIdentifier": n.replace("-", ""), "jobQueueArn": "arn:...:gpu-gpu-teams",
              "multiNodeJobQueueArn": FAIR_GANG, "metaflowJobQueueArn": "arn:...:gpu-gpu", "gpus": 4, "weight": 1}
             for n in ("team-a", "team-b")]
    stack = StackOutputs({"platform": "aws-batch", "teams": teams}, batch_target.batch_platforms())
    run = object.__new__(batch_target.BatchTarget)
    run.request, run.progress = SimpleNamespace(team=team), io.StringIO()
    assert run.team_queue(stack, FIFO_GANG, gang=True) == (queue, added)
    assert run.progress.getvalue() == says


def _held(state, message):
    """A Workload whose quota is reserved and whose ProvisioningRequest admission check is ``state``, valid against
    Kueue 0.19.2's v1beta2 CRD."""
    when = "2026-11-27T10:00:00Z"
    workload = {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": "job-x", "namespace": "team-a"},
                "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 2, "template": {"spec": {
                    "containers": [{"name": "probe", "image": "busybox"}]}}}]},
                "status": {"conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved "
                     "in ClusterQueue team-a", "lastTransitionTime": when},
                    {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "The workload has "
                     "not all checks ready", "lastTransitionTime": when}],
                    "admissionChecks": [{"name": "dws-prov", "state": state, "message": message,
                                         "lastTransitionTime": when}]}}
    validators()["Workload"].validate(workload)
    return workload


@pytest.mark.parametrize("state, kind, words", [
    ("Pending", "admission-check-waiting", "the Dynamic Workload Scheduler is still getting all of the job's nodes"),
    ("Retry", "admission-check-waiting", "waits on admission check dws-prov (Retry)"),
    ("Rejected", "admission-check-rejected", "admission check dws-prov rejected the job"),
])
def test_a_job_held_by_its_provisioning_check_is_told_so(state, kind, words):
    from gpuready.smoke import kueue

    said = "Waiting for resources. Currently there are not enough resources available to fulfill the request."
    (finding,) = kueue.explain(_held(state, said), team("team-a", 4), local_queue=(True, {}),
                               cluster_queue=(True, {}))
    assert (finding.kind, finding.quote) == (kind, said) and words in finding.summary
    assert "kubectl -n team-a describe provisioningrequests" in " ".join(finding.fixes)


def test_a_ready_check_holds_nothing_back():
    from gpuready.smoke import kueue

    (finding,) = kueue.explain(_held("Ready", ""), team("team-a", 4), local_queue=(True, {}), cluster_queue=(True, {}))
    assert finding.kind == "queue-waiting"


# The operators' queue: on a stack with teams, smoke and sweep without --team go through the queue the stack makes for
# gpuready's own checks (components/k8s_gpu/kueue.py operators_queue), with the objects and outputs the EKS component
# makes for its teams on a pool of 4-GPU nodes.

def _stack_queues(teams=(("research", 8, 8, None, 1), ("inference", 8, None, 0, 2)), topology=None):
    """(outputs, Kueue scenario) of an EKS stack with ``teams`` ((name, gpus, borrow, lend, weight) each) on one pool
    of 16 GPUs (4-GPU nodes), placed by ``topology`` (a Placement) when given: every ClusterQueue and LocalQueue as
    the component renders them."""
    from gpuready_components import catalog
    from gpuready_components.k8s_gpu import facts, kueue as objects
    from gpuready_components.teams import TeamArgs

    row = catalog.declared("aws", ()).find("aws", "g6.12xlarge")
    flavor = objects.flavor("gpu-4x", 16, {"nvidia.com/gpu.present": "true", facts.POOL_LABEL: "gpu-4x"},
                            [facts.Taint("nvidia.com/gpu", "true", "NoSchedule")], [row], topology=topology)
    args = [TeamArgs(n, g, borrow=b, lend=l, weight=w) for n, g, b, l, w in teams]
    made = objects.objects(args, [flavor])
    outputs = {**EKS, "teams": objects.team_outputs(args, [flavor], objects.Profile("gpu-jobs", EKS["gpuNodeLabels"])),
               "operatorsQueue": objects.operators_output([flavor])}
    return outputs, {"cluster_queues": [o for o in made if o["kind"] == "ClusterQueue"],
                     "local_queues": [o for o in made if o["kind"] == "LocalQueue"]}


def _flavor_name():
    (flavor,) = _stack_queues()[0]["teams"][0]["flavors"]
    return flavor


def _busy(*uses):
    """Teams' running work: (team, GPUs) each, admitted before the run."""
    return [{"name": f"train-{team}-{i}", "namespace": team, "queue": team, "gpus": gpus}
            for i, (team, gpus) in enumerate(uses)]


def test_smoke_without_team_goes_through_the_operators_queue_at_the_highest_priority(fake_kube):
    outputs, scenario = _stack_queues()
    # research runs 4 of its 8 and lends the rest; inference runs all of its own (and lends none anyway)
    server, outputs = fake_kube(outputs, kueue={**scenario, "admitted": _busy(("research", 4), ("inference", 8))},
                                logs="no report\n")
    progress = io.StringIO()
    result = single.run(outputs, gpus=4, timeout=30, progress=progress, admission_poll=0.1)
    assert result.job["admission"]["clusterQueue"] == "gpuready-operators"
    assert result.job["namespace"] == "gpuready-system" and "team" not in result.job
    assert result.job["queue"] == "gpuready-system/gpuready-operators"
    job = server.bodies[("Job", result.job["name"])]
    assert job["metadata"]["namespace"] == "gpuready-system"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpuready-operators"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "gpuready-high"
    assert "through the operators' queue gpuready-system/gpuready-operators" in progress.getvalue()
    assert server.objects.keys() == {("Workload", "train-research-0"), ("Workload", "train-inference-1")}
    assert_valid(server)


def test_the_operators_queue_waits_when_the_teams_use_every_gpu_and_says_why(fake_kube):
    outputs, scenario = _stack_queues()
    server, outputs = fake_kube(outputs, kueue={**scenario, "admitted": _busy(("research", 8), ("inference", 8))})
    result = single.run(outputs, gpus=4, timeout=1.5, progress=io.StringIO(), admission_poll=0.1)
    assert {c.name: c.verdict for c in result.checks}["admitted"] == "fail" and not server.pods
    (finding,) = result.findings
    assert finding["kind"] == "queue-quota"
    assert finding["summary"].startswith(
        f"the operators' quota of nvidia.com/gpu in flavor {_flavor_name()} is used up")
    assert "has no quota of its own" in finding["summary"] and "research uses 8" in finding["summary"]
    assert any("--team NAME" in fix for fix in finding["fixes"])


def test_team_still_goes_through_the_team_s_queue(fake_kube):
    outputs, scenario = _stack_queues()
    server, outputs = fake_kube(outputs, kueue=scenario, logs="no report\n")
    result = single.run(outputs, team="research", timeout=30, progress=io.StringIO(), admission_poll=0.1)
    assert result.job["admission"]["clusterQueue"] == "research" and result.job["team"] == "research"
    labels = server.bodies[("Job", result.job["name"])]["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "research" and "kueue.x-k8s.io/priority-class" not in labels
    assert result.job["namespace"] == "research"


def test_a_gang_without_team_is_one_workload_of_the_operators_queue(fake_kube):
    outputs, scenario = _stack_queues()
    server, outputs = fake_kube(outputs, kueue=scenario, logs="no report\n")
    result = gang.run(outputs, nodes=2, gpus=4, timeout=30, progress=io.StringIO(), jobset=False, admission_poll=0.1)
    assert result.job["admission"]["clusterQueue"] == "gpuready-operators"
    assert [k for k, _ in server.created].count("Workload") == 1 and len(server.pods) == 2


@pytest.mark.parametrize("command", ["smoke", "sweep"])
def test_an_older_stack_without_the_operators_queue_keeps_asking_for_team(fake_kube, tmp_path, capsys, command):
    outputs, scenario = _stack_queues()
    del outputs["operatorsQueue"]
    server, outputs = fake_kube(outputs, kueue=scenario)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main([command, "--outputs", str(path)]) == 2
    err = capsys.readouterr().err
    assert "pass --team NAME (e.g. --team research)" in err and err.count("\n") == 1 and server.created == []


@pytest.mark.parametrize("placed", [False, True])
def test_the_sweep_without_team_gets_each_whole_node_through_the_operators_queue(fake_kube, fake_smi, tmp_path,
                                                                                capsys, placed):
    """Each node's Job asks for all 4 GPUs of its node; the operators' queue borrows them from what the teams leave
    idle (Kueue starts a queued Job's pods only once it admits it), and each Job selects its node's pool, so Kueue
    can only give it that pool's flavor (test_sweep_kubernetes)."""
    from gpuready.probe import core
    from gpuready_components.k8s_gpu import facts
    fake_smi(H100, row=0)
    healthy = f"starting probe\n{core.report_line(core.probe(gpus_expected=1))}\n"
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "resourceVersion": "1", "labels": {
        "nvidia.com/gpu.present": "true", facts.POOL_LABEL: "gpu-4x",
        "node.kubernetes.io/instance-type": "g6.12xlarge"}}, "spec": {"taints": [dict(EKS["gpuTaint"])]},
        "status": {"allocatable": {"nvidia.com/gpu": "4"}}} for name in ("gpu-a", "gpu-b")]
    outputs, scenario = _stack_queues(topology=_placement() if placed else None)
    server, outputs = fake_kube({**outputs, "gpuNodeTaints": [EKS["gpuTaint"]]}, nodes=nodes,
                                node_logs={"gpu-a": healthy, "gpu-b": healthy},
                                kueue={**scenario, "admitted": _busy(("inference", 8))})  # research idles: 8 to lend
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["verdict"] for r in result["rows"]] == ["pass", "pass"]
    assert result["job"]["queue"] == "gpuready-system/gpuready-operators"
    assert sorted((p["metadata"]["namespace"], p["spec"]["nodeName"]) for p in server.pods) == [
        ("gpuready-system", "gpu-a"), ("gpuready-system", "gpu-b")]
    for job in (b for (kind, _), b in server.bodies.items() if kind == "Job"):
        spec = job["spec"]["template"]["spec"]
        assert spec["nodeSelector"][facts.POOL_LABEL] == "gpu-4x"
        assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
        assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "gpuready-high"
        # on a pool with a Topology, each pinned Job asks for TAS with no domain (Kueue gives a Job that asks for
        # none only the flavors without one, in a queue that has both)
        assert job["spec"]["template"]["metadata"].get("annotations") == (
            {"kueue.x-k8s.io/podset-unconstrained-topology": "true"} if placed else None)


def test_the_eks_stack_s_refusal_is_kueue_s_arithmetic():
    """On the eks reference stack research reaches 12 GPUs over both node groups but 10 on one (Kueue gives a job's
    pods one flavor): a job of 4 or 10 GPUs is submitted, one of 11 refused with that number. (Outputs of a gpuready
    older than mostGpusPerJob: test_a_gang_larger_than_quota_and_borrowing_is_refused_before_submit.)"""
    from gpuready.smoke import kueue
    from tests.stacks.test_real_charts import rendered

    teams = rendered("eks").outputs["teams"]
    research = next(t for t in teams if t["name"] == "research")
    assert (research["mostGpus"], research["mostGpusPerJob"]) == (12, 10)
    assert kueue.too_large(research, teams, 4, "a job of 4 GPUs") is None
    assert kueue.too_large(research, teams, 10, "a job of 10 GPUs") is None
    refused = kueue.too_large(research, teams, 11, "a job of 11 GPUs")
    assert refused.startswith("--team research: a job of 11 GPUs asks for 11 GPUs, and team research's queue admits "
                              "at most 10 at once for one job (its quota of 4 GPUs, borrowing at most 8 more")


# Topology-aware gangs (components/k8s_gpu/topology.py): the gang asks for one network domain only on a stack whose
# pool has a Topology; a pinned sweep Job asks for TAS with no domain there.

LAYERS = ("topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
          "topology.k8s.aws/network-node-layer-3")


def _placement():
    from gpuready_components.k8s_gpu.topology import Placement

    return Placement(LAYERS, LAYERS[-1], "https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html")


@pytest.mark.parametrize("jobset", [False, True])
def test_a_gang_on_a_pool_with_a_topology_asks_for_one_domain_preferably(fake_kube, jobset):
    outputs, scenario = _stack_queues(topology=_placement())
    server, outputs = fake_kube(outputs, kueue=scenario, logs="no report\n")
    result = gang.run(outputs, nodes=2, gpus=4, timeout=30, progress=io.StringIO(), jobset=jobset, admission_poll=0.1)
    kind = "JobSet" if jobset else "Job"
    body = server.bodies[(kind, result.job["name"])]
    template = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] if jobset else body["spec"]["template"]
    assert template["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-preferred-topology": LAYERS[-1]}
    assert "kueue.x-k8s.io/podset-required-topology" not in template["metadata"]["annotations"]


def test_a_gang_of_part_nodes_asks_for_no_topology_which_would_put_two_of_its_pods_on_one_node(fake_kube):
    """Kueue's TAS ignores pod anti-affinity: a gang of 2-GPU pods on 4-GPU nodes placed by it could be given one node
    for two pods, which the anti-affinity then keeps pending; so it asks for no domain."""
    outputs, scenario = _stack_queues(topology=_placement())
    server, outputs = fake_kube(outputs, kueue=scenario, logs="no report\n")
    result = gang.run(outputs, nodes=2, gpus=2, timeout=30, progress=io.StringIO(), jobset=False, admission_poll=0.1)
    assert "annotations" not in server.bodies[("Job", result.job["name"])]["spec"]["template"]["metadata"]


def test_a_gang_on_a_pool_without_a_topology_asks_for_none(fake_kube):
    outputs, scenario = _stack_queues()
    server, outputs = fake_kube(outputs, kueue=scenario, logs="no report\n")
    result = gang.run(outputs, nodes=2, gpus=4, timeout=30, progress=io.StringIO(), jobset=False, admission_poll=0.1)
    template = server.bodies[("Job", result.job["name"])]["spec"]["template"]
    assert "annotations" not in template["metadata"]


def test_placed_leaves_a_job_alone_without_a_topology_and_marks_a_pinned_one_on_a_pool_with_one():
    from gpuready.smoke import kueue

    job = {"kind": "Job", "spec": {"template": {"metadata": {}, "spec": {}}}}
    levels = {"gangLevels": {"gpu-4x": list(reversed(LAYERS))}}
    assert kueue.placed(json.loads(json.dumps(job)), {"name": "q"}) == job
    assert kueue.placed(json.loads(json.dumps(job)), None) == job
    assert kueue.placed(json.loads(json.dumps(job)), levels, "gpu")["spec"]["template"]["metadata"] == {}
    pinned = kueue.placed(json.loads(json.dumps(job)), levels, "gpu-4x")
    assert pinned["spec"]["template"]["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-unconstrained-topology": "true"}


def test_the_admission_carries_where_kueue_placed_a_gang_by_its_topology():
    from gpuready.smoke import kueue

    placed = {"levels": list(LAYERS) + ["kubernetes.io/hostname"],
              "slices": [{"domainCount": 2, "podCounts": {"universal": 1},
                          "valuesPerLevel": [{"universal": "nn-1"}, {"universal": "nn-2"}, {"universal": "nn-3"},
                                             {"individual": {"roots": ["ip-10-0-0-1", "ip-10-0-0-2"]}}]}]}
    workload = {"status": {"admission": {"clusterQueue": "research", "podSetAssignments": [
        {"name": "main", "count": 2, "flavors": {"nvidia.com/gpu": "gpu"}, "topologyAssignment": placed}]}}}
    (pod_set,) = kueue.admission(workload)["podSets"]
    assert pod_set["topologyAssignment"] == placed
    del workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert "topologyAssignment" not in kueue.admission(workload)["podSets"][0]
