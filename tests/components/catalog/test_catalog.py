"""The GPU catalog: integrity of the data, lookups, and agreement with EC2's own instance data."""

from __future__ import annotations

import ast
import dataclasses
import datetime
import gzip
import json
import re
from pathlib import Path
from types import MappingProxyType, ModuleType

import pytest

from gpuready_components import catalog


def test_keys_are_unique_per_cloud():
    keys = [(r.cloud, r.name) for r in catalog.rows()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("row", catalog.rows(), ids=lambda r: r.name)
def test_row_is_sane(row):
    assert catalog.problems(row) == []


def _row(**changes):
    return dataclasses.replace(catalog.lookup("aws", "g6.xlarge"), **changes)


@pytest.mark.parametrize("changes,phrase", [
    ({"gpu_model": "MI300X"}, "GPU model 'MI300X'"), ({"gpus": 0}, "0 GPUs"), ({"gpu_memory_gib": 4.0}, "GiB per GPU"),
    ({"memory_gib": 2.0}, "1 GiB per vCPU"), ({"price_usd_hour": 0.0}, "$/h"), ({"price_date": "2026-1"}, "YYYY-MM"),
    ({"spec_source": "a-blog"}, "'a-blog' is not in sources.csv"), ({"cloud": "oci"}, "cloud 'oci'"),
])
def test_row_checks_catch_a_bad_row(changes, phrase):
    assert any(phrase in p for p in catalog.problems(_row(**changes))), catalog.problems(_row(**changes))


MAX_PRICE_AGE_MONTHS = 24
"""A catalog price older than this fails CI: cloud GPU prices moved by up to 45% within a year (AWS, June 2025), so
no list price is kept past two years. Refresh with `gpuready catalog refresh --cloud CLOUD --write`, or drop a price
that cannot be refreshed. (The GCP and Azure prices of 2025-05 reach the limit in 2027-06.)"""


def _months_old(price_date: str, today: datetime.date) -> int:
    year, month = map(int, price_date.split("-"))
    return (today.year - year) * 12 + today.month - month


@pytest.mark.parametrize("row", [r for r in catalog.rows() if r.price_usd_hour is not None], ids=lambda r: r.name)
def test_prices_are_not_stale(row):
    age = _months_old(row.price_date, datetime.date.today())
    assert age <= MAX_PRICE_AGE_MONTHS, (
        f"{row.cloud} {row.name}: price from {row.price_date} is {age} months old (limit {MAX_PRICE_AGE_MONTHS}): "
        f"run `gpuready catalog refresh --cloud {row.cloud} --write`, or clear the price")


def test_staleness_limit_is_in_months_since_the_price_date():
    assert _months_old("2025-05", datetime.date(2026, 11, 24)) == 18
    assert _months_old("2025-05", datetime.date(2027, 5, 31)) == 24 == MAX_PRICE_AGE_MONTHS
    assert _months_old("2025-05", datetime.date(2027, 6, 1)) == 25 > MAX_PRICE_AGE_MONTHS


@pytest.mark.parametrize("name,price", [
    ("p5.48xlarge", 55.04), ("p4d.24xlarge", 21.957642), ("p4de.24xlarge", 27.44705), ("p5.4xlarge", 6.88),
    ("p5en.48xlarge", 63.296), ("p6-b200.48xlarge", 113.9328),
])
def test_p_family_prices_are_after_the_june_2025_cut(name, price):
    row = catalog.lookup("aws", name)
    assert (row.price_usd_hour, row.price_source) == (price, "aws-price-2026")


@pytest.mark.parametrize("cloud,name,vendor", [
    ("azure", "Standard_ND96isr_MI300X_v5", "AMD Instinct MI300X"), ("aws", "g4ad.xlarge", "AMD Radeon Pro V520"),
    ("aws", "inf2.xlarge", "AWS Inferentia"), ("aws", "trn1.32xlarge", "AWS Trainium"),
    ("aws", "dl1.24xlarge", "Habana Gaudi (Intel)"),
])
def test_accelerators_that_are_not_nvidia_gpus_are_named(cloud, name, vendor):
    with pytest.raises(catalog.UnknownInstanceType) as e:
        catalog.lookup(cloud, name)
    assert e.value.vendor == vendor and f"has {vendor} accelerators, not NVIDIA GPUs" in str(e.value)


def test_not_nvidia_table_agrees_with_ec2_manufacturer():
    """Every moto type with a non-NVIDIA GpuInfo, an Inferentia, Neuron, FPGA or media accelerator is named."""
    for name, record in _moto_instance_types().items():
        gpus = (record.get("GpuInfo") or {}).get("Gpus") or []
        other = any(g["Manufacturer"] != "NVIDIA" for g in gpus) or any(
            key in record for key in ("InferenceAcceleratorInfo", "NeuronInfo", "FpgaInfo", "MediaAcceleratorInfo"))
        if other:
            assert catalog.not_nvidia("aws", name), name
        elif gpus:  # NVIDIA GPUs only
            assert catalog.not_nvidia("aws", name) is None, name


def test_fractional_gpu_types_are_the_ones_ec2_partitions():
    for name, record in _moto_instance_types().items():
        gpus = (record.get("GpuInfo") or {}).get("Gpus") or []
        partitioned = any(g.get("GpuPartitionSize", 1) < 1 for g in gpus)
        assert bool(catalog.fractional("aws", name)) == partitioned, name


def test_a_catalog_with_declared_rows_knows_them_and_the_module_does_not():
    extra = dataclasses.replace(_row(), name="g9.xlarge", price_date="", spec_source="", price_source="")
    types = catalog.Catalog((extra,))
    assert types.lookup("aws", "g9.xlarge") == extra and extra in types.rows() and "g9.xlarge" in types.names("aws")
    assert types.suggest("aws", "g9.xlarg")[0] == "g9.xlarge" and types.find("aws", "g6.xlarge") == _row()
    assert catalog.find("aws", "g9.xlarge") is None and extra not in catalog.rows()
    with pytest.raises(ValueError, match="already in gpuready's catalog"):
        catalog.Catalog((_row(),))
    with pytest.raises(ValueError, match="listed twice"):
        catalog.Catalog((extra, extra))
    with pytest.raises(ValueError, match="0 GPUs"):
        catalog.Catalog((dataclasses.replace(extra, gpus=0),))


def _frozen(value) -> bool:
    if isinstance(value, MappingProxyType):
        return all(_frozen(v) for v in value.values())
    try:
        hash(value)
    except TypeError:
        return False
    return True


def test_the_catalog_module_holds_no_mutable_state():
    """Declared types travel in each component's args (``extra_instance_types``): a module-level list, or a
    ``global`` that rebinds one, would let one render's types reach the next in the same process."""
    tree = ast.parse(Path(catalog.__file__).read_text())
    assert [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal))] == []
    values = {name: value for name, value in vars(catalog).items()
              if not name.startswith("__") and not callable(value) and not isinstance(value, ModuleType)}
    assert "FILE" in values and "NOT_NVIDIA" in values
    assert [name for name, value in values.items() if not _frozen(value)] == []


def _declared(**changes):
    from gpuready_components.k8s_gpu.args import ExtraInstanceTypeArgs

    return ExtraInstanceTypeArgs(**{"name": "g9.xlarge", "gpu_model": "L4", "gpus": 1, "gpu_memory_gib": 22.35,
                                    "vcpus": 4, "memory_gib": 16, **changes})


def test_declared_types_become_unpriced_rows():
    row = catalog.declared("aws", [_declared(efa_interfaces=0)]).lookup("aws", "g9.xlarge")
    assert (row.gpu_model, row.gpus, row.gpu_memory_gib, row.vcpus, row.memory_gib, row.price_usd_hour) == \
        ("L4", 1, 22.35, 4, 16, None)
    assert catalog.declared("aws", []) == catalog.FILE


@pytest.mark.parametrize("items,field,phrase", [
    ([_declared(gpus=0)], "extra_instance_types[0]", "0 GPUs: a whole number from 1 to 16"),
    ([_declared(), _declared(name="g6.xlarge")], "extra_instance_types[1].name", "already in gpuready's catalog"),
    ([_declared(), _declared()], "extra_instance_types[1].name", "listed twice"),
])
def test_a_declared_type_that_fails_the_checks_names_its_item(items, field, phrase):
    from gpuready_components.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        catalog.declared("aws", items)
    assert error.value.field == field and phrase in error.value.problem


AWS_TAG_VALUE = re.compile(r"[\w\s+\-=.:/@]*")
"""What every AWS service takes in a tag value (letters, digits, spaces and ``+ - = . _ : / @``: EKS's TagMap
documentation in botocore's model; Batch points to the same general rules)."""
ANNOTATION_KEY = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
"""A Kubernetes annotation key: a DNS subdomain prefix, then a name of at most 63 characters."""


@pytest.mark.parametrize("row", [r for r in catalog.file_rows() if r.cloud == "aws"], ids=lambda r: r.name)
def test_a_stamp_carries_a_types_gpu_facts_in_a_tag_every_aws_service_takes(row):
    declared = dataclasses.replace(row, price_usd_hour=None, price_region="", price_date="", spec_source="",
                                   price_source="", network_gbps=None)
    key, value = catalog.stamp(declared)
    assert key == f"gpu-facts.gpuready.io/{row.name}" and len(key) <= 128 and ANNOTATION_KEY.fullmatch(key)
    assert len(value) <= catalog.STAMP_MOST and AWS_TAG_VALUE.fullmatch(value), value
    assert catalog.stamped("aws", row.name, value) == declared


def test_the_largest_declared_type_fits_a_tag_value():
    widest = dataclasses.replace(_row(), name="p9-x999.48xlarge", gpu_model="H200 NVL", gpus=16,
                                 gpu_memory_gib=141.123456789, vcpus=512, memory_gib=32767.987654321,
                                 efa_interfaces=32, price_usd_hour=None, network_gbps=None)
    key, value = catalog.stamp(widest)
    assert len(value) <= catalog.STAMP_MOST and AWS_TAG_VALUE.fullmatch(value), value
    assert catalog.stamped("aws", widest.name, value).gpu_memory_gib == widest.gpu_memory_gib


@pytest.mark.parametrize("value", [None, 1, "", "L4", "gpuModel=L4:gpus=one:gpuMemoryGiB=22.35:vcpus=4:memoryGiB=16",
                                   "gpuModel=L4:gpus=0:gpuMemoryGiB=22.35:vcpus=4:memoryGiB=16",
                                   "gpuModel=MI300X:gpus=8:gpuMemoryGiB=192:vcpus=192:memoryGiB=2048",
                                   "gpuModel=L4:gpuMemoryGiB=22.35:vcpus=4:memoryGiB=16"])
def test_a_value_that_is_no_stamp_gives_no_gpu_facts(value):
    assert catalog.stamped("aws", "g9.xlarge", value) is None


def test_only_declared_types_are_stamped():
    extra = dataclasses.replace(_row(), name="g9.xlarge", price_usd_hour=None, price_date="", spec_source="",
                                price_source="")
    types = catalog.Catalog((extra,))
    assert types.stamps("aws", ["g6.xlarge", "g9.xlarge", "m6i.large"]) == dict([catalog.stamp(extra)])
    assert types.stamps("aws", ["g6.xlarge"]) == {} and types.stamps("gcp", ["g9.xlarge"]) == {}
    assert catalog.FILE.stamps("aws", ["g9.xlarge"]) == {}



def test_write_then_read_gives_the_same_rows(tmp_path):
    catalog.write_csv(tmp_path / "c.csv", catalog.file_rows())
    assert catalog.read_csv(tmp_path / "c.csv") == catalog.file_rows()
    assert (tmp_path / "c.csv").read_text() == catalog.CATALOG_CSV.read_text()


def test_price_per_gpu_grows_with_gpu_generation():
    """A guard against swapped rows: per GPU, an H100 costs more than an A100, which costs more than a T4."""
    def per_gpu(cloud, name):
        row = catalog.lookup(cloud, name)
        return row.price_usd_hour / row.gpus

    assert per_gpu("aws", "p5.48xlarge") > per_gpu("aws", "p4d.24xlarge") > per_gpu("aws", "g4dn.xlarge")
    assert per_gpu("gcp", "a3-highgpu-8g") > per_gpu("gcp", "a2-highgpu-8g") > per_gpu("gcp", "g2-standard-4")
    assert per_gpu("azure", "Standard_ND96isr_H100_v5") > per_gpu("azure", "Standard_ND96asr_v4")


@pytest.mark.parametrize("cloud,families", [
    ("aws", ["g4dn", "g5", "g5g", "g6", "g6e", "g7", "g7e", "p3", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200",
             "p6-b300", "p6e-gb200"]),
    ("gcp", ["n1-standard-8:nvidia-tesla-t4", "n1-standard-8:nvidia-tesla-v100", "g2-", "a2-highgpu", "a2-ultragpu",
             "a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g", "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g",
             "a4-highgpu-8g", "a4x-highgpu-4g", "a4x-maxgpu-4g-metal", "g4-standard-48", "g4-standard-384"]),
    ("azure", ["T4_v3", "ads_A100_v4", "ND96asr_v4", "ND96isr_H100_v5", "NC40ads_H100_v5", "NC80adis_H100_v5",
               "ND96isr_H200_v5", "A10_v5", "ND128isr_NDR_GB200_v6", "ND128isr_GB300_v6", "ds_xl_RTXPRO6000BSE_v6",
               "lds_xl_RTXPRO6000BSE_v6"]),
])
def test_catalog_covers_the_families_users_run(cloud, families):
    names = catalog.names(cloud)
    for family in families:
        assert any(n.startswith(family + ".") if cloud == "aws" else family in n for n in names), family


def test_gcp_a100_rows_tell_40_from_80_gb():
    assert catalog.lookup("gcp", "a2-highgpu-1g").gpu_memory_gib == 40.0  # 40 GB, 40,960 MiB as EC2 reports it
    assert catalog.lookup("gcp", "a2-ultragpu-1g").gpu_memory_gib == 80.0  # 80 GB
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
        assert row.gpu_memory_gib == gpu["MemoryInfo"]["SizeInMiB"] / 1024, row.name  # GiB, as EC2 reports it
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
    assert missing == ["p3.2xlarge", "p3.8xlarge", "p3.16xlarge", "p6e-gb200.36xlarge"]
    assert set(missing) <= ec2_types
    assert all(r.spec_source == "aws-ec2-page" for r in catalog.rows() if r.name in missing[:3])
    assert catalog.lookup("aws", "p6e-gb200.36xlarge").spec_source == "aws-p6e-gb200"


@pytest.mark.parametrize("cloud,name,gpus,vcpus,memory", [
    ("aws", "p6e-gb200.36xlarge", 4, 144, 960.0), ("gcp", "a4x-highgpu-4g", 4, 140, 884.0),
    ("gcp", "a4x-maxgpu-4g-metal", 4, 144, 960.0), ("azure", "Standard_ND128isr_NDR_GB200_v6", 4, 128, 900.0),
    ("azure", "Standard_ND128isr_GB300_v6", 4, 128, 864.0),
])
def test_nvl72_rack_members_are_four_gpu_grace_hosts(cloud, name, gpus, vcpus, memory):
    """Each NVL72 member type is one tray of the rack: 4 GPUs of the rack's model, as each cloud's page says."""
    row = catalog.lookup(cloud, name)
    assert (row.gpus, row.vcpus, row.memory_gib) == (gpus, vcpus, memory)
    assert row.gpu_model in ("GB200", "GB300") and row.price_usd_hour is None


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


def test_each_gpu_models_gib_figure_is_the_one_ec2_reports_or_its_vendors_gb_converted():
    """gpu_models.csv holds, per model size, the GiB figure the clouds' APIs report: EC2's own ``SizeInMiB`` / 1024
    (the L4's 24 GB is 22,888 MiB, 22.35 GiB; the H100's 80 GB 81,920 MiB, 80 GiB) wherever EC2's records have the
    model at that size; else the vendor's GB converted as decimal, under the source that says so. Every figure names
    a source in sources.csv."""
    ec2: dict[tuple[str, float], set[float]] = {}
    for record in _moto_instance_types().values():
        for gpu in (record.get("GpuInfo") or {}).get("Gpus") or []:
            if gpu.get("GpuPartitionSize", 1) >= 1:
                ec2.setdefault((gpu["Name"], gpu["MemoryInfo"]["SizeInMiB"] / 1024), set()).add(gpu["Name"])
    reported = {model: {gib for m, gib in ec2 if m == model} for model, _ in ec2}
    gibs = catalog.gpu_memory_gibs()
    assert set(gibs) == {(m, gb) for m, sizes in catalog.gpu_memories().items() for gb in sizes}
    for (model, gb), (gib, source) in gibs.items():
        assert model in catalog.GPU_MODELS and source in catalog.sources(), (model, gb)
        assert catalog.gpu_memories()[model][gb] in catalog.sources(), (model, gb)
        nearest = [g for g in reported.get(model, ()) if catalog.memory_size(model, g) == gb]
        if source == "aws-ec2-api":
            assert nearest == [gib], (model, gb, nearest)
        else:
            assert (source, nearest, gib) == ("gib-from-vendor-gb", [], catalog.gib_of_gb(gb)), (model, gb)
    assert {m: s for (m, _), (_, s) in gibs.items() if s != "aws-ec2-api"} == {
        "V100": "gib-from-vendor-gb", "A10": "gib-from-vendor-gb", "H100": "gib-from-vendor-gb",
        "GB200": "gib-from-vendor-gb", "GB300": "gib-from-vendor-gb"}
    assert "not read from an api" in catalog.sources()["gib-from-vendor-gb"]["what"].lower()
    for model, sizes in catalog.gpu_memories().items():
        assert all(abs(a - b) > catalog.MEMORY_TOLERANCE * max(a, b) for a in sizes for b in sizes if a < b), model


def test_gpu_memory_is_the_same_gib_for_a_model_on_every_cloud():
    """A GPU's memory is the chip's, not the cloud's: every AWS row EC2's records hold is EC2's ``SizeInMiB`` / 1024
    (test_aws_rows_agree_with_ec2_describe_instance_types), and every row, on every cloud, carries exactly its model
    size's GiB figure of gpu_models.csv."""
    for row in catalog.file_rows():
        size = catalog.memory_size(row.gpu_model, row.gpu_memory_gib)
        assert size in catalog.gpu_memories()[row.gpu_model], (row.cloud, row.name, row.gpu_memory_gib)
        assert row.gpu_memory_gib == catalog.model_gib(row.gpu_model, size), (row.cloud, row.name)
    by_cloud = {(r.gpu_model, r.cloud, r.gpu_memory_gib) for r in catalog.file_rows()
                if r.gpu_model in ("L4", "H100", "H200", "RTX PRO Server 6000")}
    assert by_cloud == {("L4", "aws", 22.3515625), ("L4", "gcp", 22.3515625), ("H100", "aws", 80.0),
                        ("H100", "gcp", 80.0), ("H100", "azure", 80.0), ("H100", "azure", 87.54),
                        ("H200", "aws", 141.0), ("H200", "gcp", 141.0), ("H200", "azure", 141.0),
                        ("RTX PRO Server 6000", "aws", 96.0), ("RTX PRO Server 6000", "azure", 96.0),
                        ("RTX PRO Server 6000", "gcp", 96.0)}
    assert catalog.gib_text(22.3515625) == "22.35 GiB" and catalog.gib_text(16.0) == "16 GiB"


def test_a_row_whose_gpu_memory_is_not_its_models_is_a_problem():
    row = dataclasses.replace(catalog.find("aws", "g6.xlarge"), gpu_memory_gib=24.0 * 1.15)  # GB taken for GiB, +15%
    assert catalog.problems(row) == ["27.6 GiB per L4: no memory size of gpu_models.csv (24 GB): give the cloud's "
                                     "figure in GiB, or add the model's memory size there with its source"]
    assert catalog.problems(row, provenance=False) == []  # a stack's own type: its figure as declared


@pytest.mark.parametrize("cloud,name,facts", [
    ("aws", "g7e.2xlarge", ("RTX PRO Server 6000", 1, 96.0, 8, 64.0, "aws-ec2-api")),  # EC2: 98,304 MiB
    ("aws", "g7e.48xlarge", ("RTX PRO Server 6000", 8, 96.0, 192, 2048.0, "aws-ec2-api")),
    ("aws", "g7.48xlarge", ("RTX PRO 4500", 8, 32.0, 192, 768.0, "aws-ec2-api")),  # EC2: 32,768 MiB
    ("azure", "Standard_ND128isr_NDR_GB200_v6", ("GB200", 4, 178.81, 128, 900.0, "azure-ndgb200v6")),  # 192 GB
    ("azure", "Standard_ND128isr_GB300_v6", ("GB300", 4, 268.22, 128, 864.0, "azure-ndgb300v6")),  # 288 GB
    ("azure", "Standard_NC320lds_xl_RTXPRO6000BSE_v6", ("RTX PRO Server 6000", 2, 96.0, 320, 640.0,
                                                        "azure-ncrtxpro6000bsev6")),  # 96 GB, as EC2 reports it
])
def test_nvl72_and_rtx_pro_types_carry_their_sources_figures(cloud, name, facts):
    """The NVL72 and RTX PRO Blackwell types as their sources state them, GPU memory in GiB, unpriced until a
    refresh reads the cloud's price API (no citable price was at hand)."""
    row = catalog.lookup(cloud, name)
    assert (row.gpu_model, row.gpus, row.gpu_memory_gib, row.vcpus, row.memory_gib, row.spec_source) == facts
    assert row.price_usd_hour is None and row.price_source in catalog.sources()
    if cloud == "aws":
        assert name in _moto_instance_types()  # EC2's own record: the figures test_aws_rows_agree_... compares
    else:
        assert catalog.sources()[row.spec_source]["url"].startswith("https://learn.microsoft.com/azure/")
