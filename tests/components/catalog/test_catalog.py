"""The GPU catalog: integrity of the data, lookups, and agreement with EC2's own instance data."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from gpuready_components import catalog


def test_keys_are_unique_per_cloud():
    keys = [(r.cloud, r.name) for r in catalog.rows()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("row", catalog.rows(), ids=lambda r: r.name)
def test_row_is_sane(row):
    assert row.cloud in catalog.CLOUDS
    assert 1 <= row.gpus <= 16
    assert 8 <= row.gpu_memory_gib <= 288
    assert 4 <= row.vcpus <= 224
    assert row.memory_gib >= row.vcpus  # every GPU type offers at least 1 GiB per vCPU
    assert row.price_usd_hour is None or 0.1 < row.price_usd_hour < 150
    assert re.fullmatch(r"\d{4}-\d{2}", row.price_date) and row.price_region
    assert row.spec_source in catalog.sources() and row.price_source in catalog.sources()
    assert row.gpu_model in {"T4", "V100", "A10G", "A10", "L4", "L40S", "A100", "H100", "H200", "B200", "B300"}
    assert 0 <= row.efa_interfaces <= 32
    assert row.network_gbps is None or 1 <= row.network_gbps <= 6400
    if row.cloud != "aws":
        assert row.efa_interfaces == 0
    if row.cloud == "gcp":
        assert row.accelerator.startswith("nvidia-")


def test_price_per_gpu_grows_with_gpu_generation():
    """A guard against swapped rows: per GPU, an H100 costs more than an A100, which costs more than a T4."""
    def per_gpu(cloud, name):
        row = catalog.lookup(cloud, name)
        return row.price_usd_hour / row.gpus

    assert per_gpu("aws", "p5.48xlarge") > per_gpu("aws", "p4d.24xlarge") > per_gpu("aws", "g4dn.xlarge")
    assert per_gpu("gcp", "a3-highgpu-8g") > per_gpu("gcp", "a2-highgpu-8g") > per_gpu("gcp", "g2-standard-4")
    assert per_gpu("azure", "Standard_ND96isr_H100_v5") > per_gpu("azure", "Standard_ND96asr_v4")


@pytest.mark.parametrize("cloud,families", [
    ("aws", ["g4dn", "g5", "g6", "g6e", "p3", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300"]),
    ("gcp", ["n1-standard-8:nvidia-tesla-t4", "n1-standard-8:nvidia-tesla-v100", "g2-", "a2-highgpu", "a2-ultragpu",
             "a3-highgpu"]),
    ("azure", ["T4_v3", "ads_A100_v4", "ND96asr_v4", "H100_v5", "A10_v5"]),
])
def test_catalog_covers_the_families_users_run(cloud, families):
    names = catalog.names(cloud)
    for family in families:
        assert any(n.startswith(family + ".") if cloud == "aws" else family in n for n in names), family


def test_gcp_a100_rows_tell_40_from_80_gb():
    assert catalog.lookup("gcp", "a2-highgpu-1g").gpu_memory_gib == 40
    assert catalog.lookup("gcp", "a2-ultragpu-1g").gpu_memory_gib == 80
    assert catalog.lookup("gcp", "n1-standard-16:nvidia-tesla-t4:2").machine_type == "n1-standard-16"


def test_unknown_name_suggests_the_closest():
    with pytest.raises(catalog.UnknownInstanceType) as e:
        catalog.lookup("aws", "g5.xlarg")
    assert e.value.suggestions[0] == "g5.xlarge"
    assert "Did you mean g5.xlarge" in str(e.value)


def test_unknown_cloud_is_refused():
    with pytest.raises(ValueError, match="cloud must be one of"):
        catalog.lookup("oracle", "BM.GPU4.8")


def _moto_instance_types() -> dict:
    import moto

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))


def test_aws_rows_agree_with_ec2_describe_instance_types():
    """moto ships EC2's own DescribeInstanceTypes records, GpuInfo included: every AWS row must match them."""
    ec2 = _moto_instance_types()
    checked = 0
    for row in (r for r in catalog.rows() if r.cloud == "aws"):
        record = ec2.get(row.name)
        if record is None:
            continue
        gpu = record["GpuInfo"]["Gpus"][0]
        assert row.vcpus == record["VCpuInfo"]["DefaultVCpus"], row.name
        assert row.memory_mib == record["MemoryInfo"]["SizeInMiB"], row.name
        assert row.gpus == gpu["Count"], row.name
        assert row.gpu_model == gpu["Name"], row.name
        assert row.gpu_memory_gib == pytest.approx(gpu["MemoryInfo"]["SizeInMiB"] / 1024, abs=0.01), row.name
        checked += 1
    assert checked >= 38


def _gbps(performance: str) -> float:
    """EC2's ``NetworkPerformance`` in Gbit/s: ``4x 100 Gigabit`` 400, ``Up to 10 Gigabit`` 10."""
    found = re.fullmatch(r"(?:Up to )?(?:(\d+)x )?([\d.]+) Gigabit", performance)
    assert found, performance
    return float(found.group(2)) * int(found.group(1) or 1)


def test_aws_rows_network_agrees_with_ec2_describe_instance_types():
    """EFA interfaces and bandwidth of every AWS row are EC2's own (NetworkInfo as moto ships it)."""
    ec2 = _moto_instance_types()
    for row in (r for r in catalog.rows() if r.cloud == "aws" and r.name in ec2):
        network = ec2[row.name]["NetworkInfo"]
        assert row.efa_interfaces == (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0), row.name
        assert bool(row.efa_interfaces) == network["EfaSupported"], row.name
        efa_cards = [c for c in network["NetworkCards"] if "efa" in c.get("InterfaceTypes", ["efa"])]
        assert row.efa_interfaces <= len(efa_cards) or not network["EfaSupported"], row.name
        assert row.network_gbps == _gbps(network["NetworkPerformance"]), row.name


@pytest.mark.parametrize("name,efa,gbps", [
    ("p4d.24xlarge", 4, 400), ("p4de.24xlarge", 4, 400), ("p5.48xlarge", 32, 3200), ("p5e.48xlarge", 32, 3200),
    ("p5en.48xlarge", 16, 3200), ("p6-b200.48xlarge", 8, 3200), ("p6-b300.48xlarge", 16, 6400),
    ("g6e.48xlarge", 4, 400), ("g5.12xlarge", 1, 40), ("g6.48xlarge", 1, 100), ("g6.xlarge", 0, 10),
    ("g4dn.xlarge", 0, 25),
])
def test_efa_counts_users_plan_for(name, efa, gbps):
    """The figures the multi-node issue names (a guard against a column shifted by one)."""
    row = catalog.lookup("aws", name)
    assert (row.efa_interfaces, row.network_gbps) == (efa, gbps)


def test_p6_b300_has_one_network_card_more_than_efa_interfaces():
    """Card 0 of a p6-b300 is ENA only: 17 network cards, 16 EFA interfaces on cards 1 to 16."""
    network = _moto_instance_types()["p6-b300.48xlarge"]["NetworkInfo"]
    assert len(network["NetworkCards"]) == 17 and catalog.lookup("aws", "p6-b300.48xlarge").efa_interfaces == 16
    assert "efa" not in network["NetworkCards"][0]["InterfaceTypes"]


def test_gcp_and_azure_rows_have_no_efa():
    assert all(r.efa_interfaces == 0 for r in catalog.rows() if r.cloud != "aws")


def test_aws_rows_missing_from_moto_are_real_ec2_types():
    import botocore.session

    ec2_types = set(botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)
    missing = [r.name for r in catalog.rows() if r.cloud == "aws" and r.name not in _moto_instance_types()]
    assert missing == ["p3.2xlarge", "p3.8xlarge", "p3.16xlarge"]
    assert set(missing) <= ec2_types
    assert all(r.spec_source == "aws-ec2-page" for r in catalog.rows() if r.name in missing)


def test_every_ec2_gpu_type_in_moto_of_our_families_is_in_the_catalog():
    """A new size in a family we carry (EC2 adds them) shows up here rather than as 'unknown instance type'."""
    ec2 = _moto_instance_types()
    families = {r.name.split(".")[0] for r in catalog.rows() if r.cloud == "aws"}
    ours = set(catalog.names("aws"))
    absent = sorted(name for name, rec in ec2.items()
                    if name.split(".")[0] in families and "GpuInfo" in rec and name not in ours)
    assert absent == []


def test_gcp_machines_as_node_configs_name_them():
    from gpuready_components import catalog

    attached = catalog.find_gcp("n1-standard-16", [{"type": "nvidia-tesla-t4", "count": 2.0}])
    assert (attached.name, attached.gpus) == ("n1-standard-16:nvidia-tesla-t4:2", 2)
    assert catalog.find_gcp("g2-standard-24").gpus == 2
    assert catalog.find_gcp("n1-standard-16", [{"type": "nvidia-tesla-t4", "count": 3}]) is None
    assert catalog.find_gcp("e2-standard-4") is None
