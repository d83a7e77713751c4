"""AWS: EC2 DescribeInstanceTypes (GpuInfo, VCpuInfo, MemoryInfo, NetworkInfo) and the Price List API's GetProducts
(AmazonEC2, us-east-1, Linux, shared tenancy, on demand).

Recorded answers (``--from DIR``): ``ec2-describe-instance-types.json`` (a DescribeInstanceTypes response, or a list
of its pages) and ``pricing-get-products.json`` (a GetProducts response, or a list of its pages). A file that is not
there is asked of the API through boto3 (its usual credentials and endpoint settings, ``AWS_ENDPOINT_URL`` too).
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional

from gpuready_components import catalog

from ..errors import UserError
from . import Answers, Fresh, Skipped, unknown_memory

REGION = "us-east-1"
PRICE_FILTERS = {"regionCode": REGION, "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA",
                 "capacitystatus": "Used"}
"""The GetProducts product attributes of a plain on-demand Linux instance in us-east-1."""
SPEC_SOURCE, PRICE_SOURCE = "aws-ec2-api", "aws-price-list-api"


def _pages(answer: Any) -> list[dict]:
    return answer if isinstance(answer, list) else [answer]


def _client(service: str):
    from gpuready_components.sdk import require

    boto3 = require("boto3")
    return boto3.session.Session(region_name=REGION).client(service)


def _call(what: str, pages: Iterable[dict]) -> list[dict]:
    from gpuready_components.sdk import require

    exceptions = require("botocore.exceptions")
    try:
        return list(pages)
    except exceptions.NoCredentialsError:
        raise UserError(f"{what}: no AWS credentials: set AWS_PROFILE or run `aws configure`, or give --from DIR "
                        "with recorded answers") from None
    except (exceptions.ClientError, exceptions.BotoCoreError) as e:
        raise UserError(f"{what} failed: {e}") from None


def _describe() -> list[dict]:
    ec2 = _client("ec2")
    return _call("EC2 DescribeInstanceTypes", ec2.get_paginator("describe_instance_types").paginate())


def _products(names: Iterable[str]) -> list[dict]:
    pricing = _client("pricing")
    pages = []
    for name in sorted(names):
        filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in {**PRICE_FILTERS,
                                                                              "instanceType": name}.items()]
        pages += _call("Price List GetProducts", pricing.get_paginator("get_products").paginate(
            ServiceCode="AmazonEC2", Filters=filters, FormatVersion="aws_v1"))
    return pages


def gbps(performance: str) -> Optional[float]:
    """EC2's ``NetworkPerformance`` in Gbit/s (``4x 100 Gigabit`` 400, ``Up to 10 Gigabit`` 10), or ``None``."""
    found = re.fullmatch(r"(?:Up to )?(?:(\d+)x )?([\d.]+) Gigabit", performance or "")
    return float(found.group(2)) * int(found.group(1) or 1) if found else None


def prices(pages: Iterable[dict]) -> dict[str, float]:
    """Instance type -> on-demand $/h from GetProducts pages (each ``PriceList`` entry a JSON string)."""
    out: dict[str, float] = {}
    for page in pages:
        for text in page.get("PriceList", []):
            item = json.loads(text) if isinstance(text, str) else text
            attributes = item.get("product", {}).get("attributes", {})
            if any(attributes.get(k, v) != v for k, v in PRICE_FILTERS.items()):
                continue
            for term in item.get("terms", {}).get("OnDemand", {}).values():
                for dimension in term.get("priceDimensions", {}).values():
                    usd = float(dimension.get("pricePerUnit", {}).get("USD", 0) or 0)
                    if dimension.get("unit") == "Hrs" and usd > 0:
                        out[attributes["instanceType"]] = usd
    return out


def _skip_reason(name: str, record: dict) -> Optional[str]:
    gpus = (record.get("GpuInfo") or {}).get("Gpus") or []
    vendor = catalog.not_nvidia("aws", name)
    if vendor or any(g.get("Manufacturer") != "NVIDIA" for g in gpus):
        makers = vendor or ", ".join(sorted({f"{g.get('Manufacturer')} {g.get('Name')}" for g in gpus}))
        return f"not NVIDIA: {makers}"
    if any(g.get("GpuPartitionSize", 1) < 1 or not g.get("Count") for g in gpus):
        return "fractional GPU: " + (catalog.fractional("aws", name) or "part of one GPU") + ", not supported"
    if len({g.get("Name") for g in gpus}) > 1:
        return "more than one GPU model in one instance"
    if gpus and gpus[0].get("Name") not in catalog.GPU_MODELS:
        return (f"GPU model {gpus[0].get('Name')!r} is not one gpuready knows: add it to catalog.GPU_MODELS and "
                "the probe's typical figures first")
    return None


def fetch(answers: Answers, date: str) -> Fresh:
    pages = _pages(answers.get("ec2-describe-instance-types.json", _describe))
    records = {r["InstanceType"]: r for page in pages for r in page.get("InstanceTypes", [])}
    accelerated = {n: r for n, r in records.items() if "GpuInfo" in r or catalog.not_nvidia("aws", n)}
    skipped = {n: reason for n, r in accelerated.items() if (reason := _skip_reason(n, r))}
    nvidia = sorted(n for n in accelerated if n not in skipped)
    price = prices(_pages(answers.get("pricing-get-products.json", lambda: _products(nvidia))))
    rows = []
    for name in nvidia:
        record = accelerated[name]
        gpu = record["GpuInfo"]["Gpus"][0]
        network = record.get("NetworkInfo", {})
        memory = catalog.gib_of_mib(gpu["MemoryInfo"]["SizeInMiB"])  # EC2's figure: the L4's 24 GB as 22,888 MiB
        if catalog.memory_size(gpu["Name"], memory) is None:
            skipped[name] = unknown_memory(gpu["Name"], memory)
            continue
        rows.append(catalog.GpuInstanceType(
            cloud="aws", name=name, accelerator="", gpu_model=gpu["Name"], gpus=gpu["Count"],
            gpu_memory_gib=memory, vcpus=record["VCpuInfo"]["DefaultVCpus"],
            memory_gib=record["MemoryInfo"]["SizeInMiB"] / 1024, price_usd_hour=price.get(name), price_region=REGION,
            price_date=date, spec_source=SPEC_SOURCE, price_source=PRICE_SOURCE,
            efa_interfaces=(network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0),
            network_gbps=gbps(network.get("NetworkPerformance", ""))))
    return Fresh("aws", tuple(rows), tuple(Skipped(n, skipped[n]) for n in sorted(skipped)))
