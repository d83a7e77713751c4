"""What ``gpuready plan`` answers offline to the invokes stack programs make, by cloud: each platform's descriptor
carries the answers of its cloud (``answers``), so a platform registered later brings its own."""

from __future__ import annotations

import base64
from types import MappingProxyType
from typing import Any, Mapping

from ..resources.base import ec2_id
from .render import ACCOUNT_ID, AZURE_CLIENT, PlanMocks


def _zones(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    zones = [f"{mocks.region}{z}" for z in "abc"]
    return {"names": zones, "zoneIds": [f"use1-az{i}" for i in range(1, 4)], "id": mocks.region}


def _region(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    return {"name": mocks.region, "region": mocks.region, "id": mocks.region}


def _caller(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    return {"accountId": ACCOUNT_ID, "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/plan", "userId": "plan"}


def _eks_cluster(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    """An existing cluster's network, as EKS describes it."""
    name = args.get("name", "cluster")
    return {"name": name, "id": name,
            "vpcConfig": {"vpcId": ec2_id("vpc", name),
                          "clusterSecurityGroupId": ec2_id("sg", f"eks-cluster-{name}")}}


def _subnet(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    """A subnet the stack was given, as far as it is known offline: its id, and no Availability Zone (only EC2 knows
    it), so a reservation's zone check waits for ``pulumi preview`` rather than pass on an invented zone."""
    return {"id": args.get("id", "")}


def _capacity_block(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    """A Capacity Block the stack named, as far as it is known offline: its id and none of its facts (only EC2 knows
    its type, zone, count and window), so the checks of them wait for ``pulumi preview`` and the plan says so."""
    return {"id": args.get("id", "")}


def _aks_credentials(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    name = args.get("resourceName", "cluster")
    config = (f"apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n"
              f"    server: https://{name}-dns.hcp.{mocks.azure_location}.azmk8s.io:443\n"
              f"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n")
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(config.encode()).decode()}]}


def _azure_client(args: Mapping[str, Any], mocks: PlanMocks) -> dict:
    return dict(AZURE_CLIENT)


AWS = MappingProxyType({
    "aws:index/getAvailabilityZones:getAvailabilityZones": _zones,
    "aws:index/getRegion:getRegion": _region,
    "aws:index/getCallerIdentity:getCallerIdentity": _caller,
    "aws:eks/getCluster:getCluster": _eks_cluster,
    "aws:ec2/getSubnet:getSubnet": _subnet,
    "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation": _capacity_block,
})
"""The AWS invokes the AWS platforms' programs make."""
AZURE = MappingProxyType({
    "azure-native:containerservice:listManagedClusterUserCredentials": _aks_credentials,
    "azure-native:authorization:getClientConfig": _azure_client,
})
"""The Azure invokes the AKS program makes."""
