"""The smoke SDK runs a kubeconfig's credential command only when a gpuready stack writes such a command, or when
the user says the file is trusted: a hostile outputs file runs nothing."""

from __future__ import annotations

import dataclasses
import json
import os
import stat

import pytest
import yaml

from gpuready_components.aks_gpu.component import aks_kubeconfig
from gpuready_components.eks_gpu.component import eks_kubeconfig
from gpuready_components import platforms
from gpuready_components.gke_gpu.component import gke_kubeconfig
from gpuready_components.k8s_gpu.kubeconfig import CredentialPlugin
from gpuready.cli import main
from gpuready.errors import UserError
from gpuready.smoke import kubernetes
from gpuready.smoke.kubeconfig import TRUST_FLAG, checked

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"


def _aks_credential() -> str:
    import base64

    config = {"clusters": [{"name": "c", "cluster": {"server": "https://c.hcp.eastus.azmk8s.io:443",
                                                       "certificate-authority-data": CA}}]}
    return base64.b64encode(yaml.safe_dump(config).encode()).decode()


STACK_KUBECONFIGS = {
    "eks": eks_kubeconfig("gpu", "https://GPU.gr7.us-east-1.eks.amazonaws.com", CA, "us-east-1"),
    "gke": gke_kubeconfig("gpu", "203.0.113.10", CA),
    "aks": aks_kubeconfig("gpu", _aks_credential()),
}

UPDATE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: arn:aws:eks:us-east-1:123456789012:cluster/prod
  cluster: {server: 'https://PROD.gr7.us-east-1.eks.amazonaws.com', certificate-authority-data: LS0t}
contexts:
- name: prod
  context: {cluster: 'arn:aws:eks:us-east-1:123456789012:cluster/prod', user: prod}
- name: other
  context: {cluster: 'arn:aws:eks:us-east-1:123456789012:cluster/prod', user: other}
current-context: prod
users:
- name: prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [--region, us-east-1, eks, get-token, --cluster-name, prod, --output, json]
      env: [{name: AWS_PROFILE, value: ml}]
- name: other
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: doctl, args: [kubernetes, cluster]}
"""
"""What ``aws eks update-kubeconfig --profile ml`` writes, beside a context gpuready does not use."""


def _hostile(command: str, args: list[str], **user) -> dict:
    data = json.loads(STACK_KUBECONFIGS["eks"])
    data["users"][0]["user"]["exec"].update(command=command, args=args, **user)
    return data


@pytest.mark.parametrize("platform", sorted(STACK_KUBECONFIGS))
def test_what_the_stacks_write_is_trusted(platform):
    data = json.loads(STACK_KUBECONFIGS[platform])
    assert checked(data) is data


def test_what_aws_eks_update_kubeconfig_writes_is_trusted():
    data = yaml.safe_load(UPDATE_KUBECONFIG)
    assert checked(data) is data


def test_a_known_plugin_found_on_path_by_its_full_path_is_trusted(tmp_path, monkeypatch):
    plugin = tmp_path / "gke-gcloud-auth-plugin"
    plugin.write_text("#!/bin/sh\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert checked(_hostile(str(plugin), []))


@pytest.mark.parametrize("command,args,extra,shown", [
    ("sh", ["-c", "touch /tmp/x"], {}, "`sh -c 'touch /tmp/x'`"),
    ("aws", ["s3", "cp", "s3://b/x", "/tmp/x"], {}, "`aws s3 cp s3://b/x /tmp/x`"),
    ("/tmp/elsewhere/aws", ["eks", "get-token"], {}, "`/tmp/elsewhere/aws eks get-token`"),
    ("kubelogin", ["convert-kubeconfig"], {}, "`kubelogin convert-kubeconfig`"),
    ("aws", ["eks", "get-token"], {"env": [{"name": "LD_PRELOAD", "value": "/tmp/x.so"}]}, "with LD_PRELOAD set"),
    ("sh\x1b[2J", [], {}, r"`'sh\x1b[2J'`"),
])
def test_other_commands_are_refused_naming_them_and_the_flag(command, args, extra, shown):
    with pytest.raises(UserError) as refused:
        checked(_hostile(command, args, **extra))
    message = str(refused.value)
    assert shown in message and TRUST_FLAG in message and "\x1b" not in message
    assert checked(_hostile(command, args, **extra), trust_exec=True)


def test_a_registered_platform_s_credential_plugin_is_trusted_while_it_is_registered():
    """The commands let through are the registered platforms' own (their descriptors' ``credentials``): a platform
    added later brings its plugin, and takes it away when it goes."""
    plugin = CredentialPlugin("oke-token", "oke-token get", lambda args: list(args) == ["get"], frozenset({"OCI_CLI"}))
    data = _hostile("oke-token", ["get"], env=[{"name": "OCI_CLI", "value": "x"}])
    with pytest.raises(UserError, match=r"runs `oke-token get`.*\(they run .*`aws eks get-token`"):
        checked(data)
    platforms.register(dataclasses.replace(platforms.require("gke"), name="oke-like", credentials=plugin))
    try:
        assert checked(data) is data
        with pytest.raises(UserError, match="runs `oke-token put`"):
            checked(_hostile("oke-token", ["put"]))
    finally:
        platforms.unregister("oke-like")
    with pytest.raises(UserError):
        checked(data)


def test_a_legacy_auth_provider_command_is_refused():
    data = json.loads(STACK_KUBECONFIGS["gke"])
    data["users"][0]["user"] = {"auth-provider": {"name": "gcp", "config": {"cmd-path": "sh -c id"}}}
    with pytest.raises(UserError, match=r"runs `sh -c id` \(auth-provider cmd-path\)"):
        checked(data)


def test_the_client_refuses_before_running_anything(tmp_path):
    marker = tmp_path / "ran"
    data = _hostile("sh", ["-c", f"touch {marker}"])
    with pytest.raises(UserError, match=TRUST_FLAG):
        kubernetes.api_client(json.dumps(data))
    assert not marker.exists()
    # Trusted, the kubernetes client runs the command as soon as it loads the kubeconfig; no token: one line.
    with pytest.raises(UserError, match="the kubeconfig's credential command failed .exec: failed to decode"):
        kubernetes.api_client(yaml.safe_dump(data), trust_exec=True)
    assert marker.exists()


def test_smoke_cli_refuses_a_hostile_outputs_file(tmp_path, capsys):
    marker = tmp_path / "ran"
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"platform": "eks",
                                   "kubeconfig": json.dumps(_hostile("sh", ["-c", f"touch {marker}"]))}))
    assert main(["smoke", "--outputs", str(outputs), "--timeout", "30"]) == 2
    err = capsys.readouterr().err
    assert f"runs `sh -c 'touch {marker}'` for credentials" in err and "--trust-kubeconfig-exec" in err
    assert not marker.exists()


def _no_current_context() -> dict:
    data = yaml.safe_load(UPDATE_KUBECONFIG)
    del data["current-context"]
    return data


def _unknown_context() -> dict:
    return {**yaml.safe_load(UPDATE_KUBECONFIG), "current-context": "staging"}


@pytest.mark.parametrize("command", ["smoke", "sweep"])
@pytest.mark.parametrize("kubeconfig, says", [
    ("[secret]", "output kubeconfig is [secret]: they were saved without --show-secrets; re-save them with "
                 "`pulumi stack output --json --show-secrets > outputs.json`"),
    (json.dumps(_no_current_context()), "current-context is not set: set it to one of its contexts (prod, other)"),
    (yaml.safe_dump(_unknown_context()), "current-context names 'staging', not one of its contexts: set it to one "
                                         "of its contexts (prod, other)"),
    ("- a\n- b\n", "is not a kubeconfig (a YAML or JSON map)"),
])
def test_a_kubeconfig_the_client_cannot_use_is_one_line_naming_the_fix(command, kubeconfig, says, tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"platform": "eks", "kubeconfig": kubeconfig}))
    assert main([command, "--outputs", str(outputs), "--timeout", "5"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "ConfigException" not in err, err
