"""Which target runs where: the platform registry's, by mode, and nothing else. Every built-in platform has a complete
target for every mode; a platform registered from outside runs its own target, or the Kubernetes ones, through the
CLI."""

from __future__ import annotations

import inspect
import json
from types import MappingProxyType

import pytest

from gpuready.cli import main
from gpuready.errors import UserError
from gpuready.probe import core
from gpuready.smoke import batch, batch_multinode, kubernetes, kubernetes_multinode, sweep_batch, sweep_kubernetes
from gpuready.smoke.dispatch import target_class
from gpuready.smoke.result import SmokeResult
from gpuready.smoke.target import SmokeTarget
from gpuready_components import platforms
from gpuready_components.platforms import GANG, SINGLE, SWEEP, Platform
from tests.gpuready.conftest import H100

EXPECTED = {
    ("aws-batch", SINGLE): batch.BatchTarget, ("aws-batch", GANG): batch_multinode.BatchGangTarget,
    ("aws-batch", SWEEP): sweep_batch.BatchSweepTarget,
    **{(name, SINGLE): kubernetes.KubernetesTarget for name in ("eks", "gke", "aks")},
    **{(name, GANG): kubernetes_multinode.KubernetesGangTarget for name in ("eks", "gke", "aks")},
    **{(name, SWEEP): sweep_kubernetes.KubernetesSweepTarget for name in ("eks", "gke", "aks")},
}


@pytest.mark.parametrize("platform, mode", sorted(EXPECTED))
def test_each_builtin_platform_runs_each_mode_on_a_complete_target(platform, mode):
    found = target_class(platform, mode)
    assert found is EXPECTED[platform, mode]
    assert issubclass(found, SmokeTarget) and not inspect.isabstract(found)


@pytest.mark.parametrize("platform", ["openshift", ["eks"]])
def test_a_platform_gpuready_does_not_know_is_one_line_naming_it(platform):
    with pytest.raises(UserError, match=r"no platform gpuready knows \(" + repr(platform).replace("[", r"\[")):
        target_class(platform, SINGLE)


@pytest.mark.parametrize("command", ["smoke", "sweep"])
def test_json_given_as_the_outputs_file_says_what_to_give(command, capsys):
    assert main([command, "--outputs", "{}"]) == 2
    err = capsys.readouterr().err
    assert err == ("gpuready: --outputs takes a file, not JSON: save the outputs with `pulumi stack output --json "
                   "--show-secrets > outputs.json` and pass --outputs outputs.json\n")


@pytest.mark.parametrize("command", ["smoke", "sweep"])
def test_outputs_without_a_platform_name_the_missing_output_and_the_fix(command, tmp_path, capsys):
    (tmp_path / "o.json").write_text("{}")
    assert main([command, "--outputs", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "None" not in err
    assert "lack the `platform` output" in err and "pulumi stack output --json --show-secrets" in err


class Fake(SmokeTarget):
    """The smoke target of a platform gpuready does not ship: it only says it ran."""

    def preflight(self) -> bool:
        self.result = SmokeResult(target="fake", job={"gpus": self.request.gpus, "stack": self.outputs["platform"]})
        return True

    def submit(self) -> None:
        self.result.job["submitted"] = True

    def follow(self) -> bool:
        return True

    def collect(self) -> None:
        self.result.job["collected"] = True

    def cleanup(self, reason: str) -> None:
        self.result.job["cleaned"] = reason


@pytest.fixture
def fake_platform(tmp_path):
    """A platform with a single-node target only, registered as any package would; its outputs file."""
    batch = platforms.require("aws-batch")
    platform = Platform("fake-vm", "aws", ("aws",), batch.stack, batch.contract,
                        targets=MappingProxyType({SINGLE: lambda: Fake}),
                        lacks=MappingProxyType({SWEEP: "one VM is one node: gpuready smoke probes it"}))
    platforms.register(platform)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"platform": "fake-vm"}))
    yield path
    platforms.unregister(platform.name)


def test_a_registered_platform_runs_its_own_target_through_the_cli(fake_platform, capsys):
    assert main(["smoke", "--outputs", str(fake_platform), "--gpus", "3", "--json"]) == 0
    job = json.loads(capsys.readouterr().out)["job"]
    assert job == {"gpus": 3, "stack": "fake-vm", "submitted": True, "collected": True, "cleaned": "finished"}


@pytest.mark.parametrize("argv, says", [(["smoke", "--nodes", "2"], "smoke test on several nodes (--nodes)"),
                                        (["sweep"], "sweep")])
def test_a_mode_the_platform_has_no_target_for_is_one_line(fake_platform, capsys, argv, says):
    assert main([*argv, "--outputs", str(fake_platform)]) == 2
    why = ": one VM is one node: gpuready smoke probes it" if argv == ["sweep"] else ""  # the reason it declares
    assert capsys.readouterr().err == f"gpuready: fake-vm: gpuready runs no {says} there{why}\n"


def test_a_kubernetes_platform_registered_from_outside_smokes_on_the_kubernetes_target(fake_kube, fake_smi, tmp_path,
                                                                                        capsys):
    """A new Kubernetes platform names the Kubernetes targets and runs on them as eks does (here: eks's contract and
    node facts under another name)."""
    eks = platforms.require("eks")
    platforms.register(Platform("oke", "aws", eks.extras, eks.stack, eks.contract, targets=eks.targets,
                                node=eks.node))
    try:
        fake_smi(H100, row=0)
        server, outputs = fake_kube({"platform": "oke", "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}},
                                    logs=f"{core.report_line(core.probe(gpus_expected=1))}\n")
        path = tmp_path / "outputs.json"
        path.write_text(json.dumps(outputs))
        assert main(["smoke", "--outputs", str(path), "--timeout", "30"]) == 0, capsys.readouterr()
    finally:
        platforms.unregister("oke")
    assert [kind for kind, _ in server.created] == ["ConfigMap", "Job"] and sorted(server.deleted) == sorted(
        server.created)
