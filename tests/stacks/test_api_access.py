"""Who can reach a Kubernetes stack's API: an allow-list the user sets (no made-up default), said by the plan."""

from __future__ import annotations

import json

import pytest

from gpuready_components.errors import ConfigError
from gpuready.cli import main
from gpuready.plan.describe import API_ACCESS, describe
from tests.conftest import ROOT

from .test_gke_aks_stacks import _render

CLUSTERS = {"eks": "aws:eks/cluster:Cluster", "gke": "gcp:container/cluster:Cluster",
            "aks": "azure-native:containerservice:ManagedCluster"}
OLD_KEYS = {"eks": "publicAccessCidrs", "gke": "masterAuthorizedNetworks", "aks": "authorizedIpRanges"}


def _allowed(stack: str, inputs: dict) -> list[str]:
    if stack == "eks":
        return inputs["vpcConfig"]["publicAccessCidrs"]
    if stack == "gke":
        return [c["cidrBlock"] for c in (inputs.get("masterAuthorizedNetworksConfig") or {}).get("cidrBlocks", [])]
    return (inputs.get("apiServerAccessProfile") or {}).get("authorizedIPRanges", [])


@pytest.mark.parametrize("stack", sorted(CLUSTERS))
def test_reference_stacks_reach_their_api_and_say_how_to_narrow_it(stack):
    """No documentation or private range that would leave pulumi up's Helm releases unable to reach the API."""
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    assert "203.0.113." not in text and "checkip.amazonaws.com" in text
    (cluster,) = _render(stack).of_type(CLUSTERS[stack])
    # EKS takes 0.0.0.0/0 as is; GKE and AKS express "anywhere" by leaving the restriction off.
    assert _allowed(stack, cluster.inputs) == (["0.0.0.0/0"] if stack == "eks" else [])


@pytest.mark.parametrize("stack", sorted(CLUSTERS))
@pytest.mark.parametrize("value", [None, []])
def test_a_new_cluster_with_a_public_endpoint_needs_the_allow_list(stack, value):
    with pytest.raises(ConfigError) as error:
        _render(stack, **{"gpuready:apiAllowedCidrs": value})
    assert error.value.field == "gpuready:apiAllowedCidrs"
    assert "pulumi config set --path 'gpuready:apiAllowedCidrs[0]' $(curl -s https://checkip.amazonaws.com)/32" \
        in error.value.fix and "0.0.0.0/0" in error.value.fix


@pytest.mark.parametrize("stack", sorted(CLUSTERS))
def test_anywhere_is_accepted_when_asked_for(stack):
    (cluster,) = _render(stack, **{"gpuready:apiAllowedCidrs": ["0.0.0.0/0"]}).of_type(CLUSTERS[stack])
    # EKS takes 0.0.0.0/0 as is; GKE and AKS express "anywhere" by leaving the restriction off.
    assert _allowed(stack, cluster.inputs) == (["0.0.0.0/0"] if stack == "eks" else [])


def test_a_private_eks_endpoint_needs_no_allow_list():
    rendering = _render("eks", **{"gpuready:apiAllowedCidrs": None, "gpuready:endpointPublicAccess": False})
    (cluster,) = rendering.of_type(CLUSTERS["eks"])
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is False
    assert describe(cluster, rendering)[API_ACCESS] == "inside the cluster's network only (private endpoint)"


@pytest.mark.parametrize("stack", sorted(CLUSTERS))
def test_an_existing_cluster_reads_no_allow_list(stack):
    changes = {"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "apiVersion: v1"}
    with pytest.raises(ConfigError) as error:
        _render(stack, **changes)
    assert error.value.field == "gpuready:apiAllowedCidrs" and "creates the cluster" in error.value.problem
    assert not _render(stack, **changes, **{"gpuready:apiAllowedCidrs": None}).of_type(CLUSTERS[stack])


@pytest.mark.parametrize("stack", sorted(CLUSTERS))
def test_the_old_per_platform_keys_name_the_new_one(stack):
    with pytest.raises(ConfigError) as error:
        _render(stack, **{f"gpuready:{OLD_KEYS[stack]}": ["8.20.30.40/32"]})
    assert error.value.field == f"gpuready:{OLD_KEYS[stack]}"
    assert "renamed to gpuready:apiAllowedCidrs" in error.value.problem


@pytest.mark.parametrize("stack", sorted(CLUSTERS))
def test_plan_says_who_can_reach_the_api(stack, tmp_path, capsys):
    assert main(["plan", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert f"Kubernetes API reachable from:\n  {stack}: anywhere (0.0.0.0/0)" in out
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    stack_file.write_text(text.replace("    - 0.0.0.0/0\n", "    - 8.20.30.40/32\n    - 81.2.69.0/24\n"))
    assert main(["plan", "--stack-file", str(stack_file), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (cluster,) = [r for r in plan["resources"] if r["type"] == CLUSTERS[stack]]
    assert cluster["facts"]["Kubernetes API reachable from"] == "8.20.30.40/32, 81.2.69.0/24"
    stack_file.write_text(text.replace("    - 0.0.0.0/0\n", "    - 10.0.0.0/8\n"))
    assert main(["plan", "--stack-file", str(stack_file), "--no-policies"]) == 0
    assert f"  {stack}: 10.0.0.0/8 (private or reserved ranges only" in capsys.readouterr().out
