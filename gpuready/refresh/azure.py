"""Azure: Resource SKUs (Microsoft.Compute/skus: virtual machines with capabilities vCPUs, MemoryGB, GPUs) and the
public Retail Prices API (pay-as-you-go, Linux, eastus).

The SKU API gives a VM's GPU count but not the GPU model: it comes from the size's name (each NVIDIA GPU series has
its pattern below, from the series' Azure pages); a size whose GPUs are AMD's is skipped as not NVIDIA.

Recorded answers (``--from DIR``): ``resource-skus.json`` (a Resource SKUs list response, or a list of pages) and
``retail-prices.json`` (a Retail Prices response, or a list of pages). Live: a token from ``AZURE_ACCESS_TOKEN`` or
``az account get-access-token``, the subscription from ``AZURE_SUBSCRIPTION_ID`` or ``az account show``.
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse
from typing import Any, Iterable, Optional

from gpuready_components import catalog

from ..errors import UserError
from . import Answers, Fresh, Skipped, get_json, token_from, unknown_memory

REGION = "eastus"
SPEC_SOURCE, PRICE_SOURCE = "azure-skus-api", "azure-retail-api"
RETAIL = "https://prices.azure.com/api/retail/prices"
SERIES = (
    (r"Standard_NC\d+as_T4_v3", "T4", 16.0), (r"Standard_NC\d+s_v3", "V100", 16.0),
    (r"Standard_ND40rs_v2", "V100", 32.0), (r"Standard_NC\d+ads_A100_v4", "A100", 80.0),
    (r"Standard_ND96asr_v4", "A100", 40.0), (r"Standard_ND96amsr_A100_v4", "A100", 80.0),
    (r"Standard_ND96isr_H100_v5", "H100", 80.0), (r"Standard_NC\d+adi?s_H100_v5", "H100", 94.0),
    (r"Standard_ND96isr_H200_v5", "H200", 141.0), (r"Standard_NV\d+ads_A10_v5", "A10", 24.0),
    (r"Standard_ND128isr_NDR_GB200_v6", "GB200", 192.0), (r"Standard_ND128isr_GB300_v6", "GB300", 288.0),
    (r"Standard_NC\d+l?ds_xl_RTXPRO6000BSE_v6", "RTX PRO Server 6000", 96.0),
)
"""NVIDIA GPU VM sizes: name pattern, GPU model as the catalog names it, GPU memory in decimal GB as the series'
size page states it (the H100 NVL of NC H100 v5 is an H100 with 94 GB), a memory size of gpu_models.csv; the rows
carry that size's GiB figure there (:func:`~gpuready_components.catalog.model_gib`: the clouds' APIs' figure, H100
80 GB is 80 GiB, the same on every cloud). Resource SKUs report no GPU memory."""


def _pages(answer: Any) -> list[dict]:
    return answer if isinstance(answer, list) else [answer]


def _follow(url: str, token: Optional[str] = None) -> list[dict]:
    pages = []
    while url:
        page = get_json(url, token)
        pages.append(page)
        url = page.get("nextLink") or page.get("NextPageLink") or ""
    return pages


def _subscription() -> str:
    found = os.environ.get("AZURE_SUBSCRIPTION_ID", "")
    if not found:
        try:
            found = subprocess.run(["az", "account", "show", "--query", "id", "-o", "tsv"], capture_output=True,
                                   text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            found = ""
    if not found:
        raise UserError("no Azure subscription: set AZURE_SUBSCRIPTION_ID, or give --from DIR with recorded answers")
    return found


def _skus() -> list[dict]:
    token = token_from("AZURE_ACCESS_TOKEN", ["az", "account", "get-access-token", "--query", "accessToken", "-o",
                                              "tsv"], "Azure access token")
    query = urllib.parse.urlencode({"api-version": "2021-07-01", "$filter": f"location eq '{REGION}'"})
    return _follow(f"https://management.azure.com/subscriptions/{_subscription()}/providers/Microsoft.Compute/skus?"
                   f"{query}", token)


def _retail(names: Iterable[str]) -> list[dict]:
    pages = []
    for name in sorted(names):
        where = (f"serviceName eq 'Virtual Machines' and armRegionName eq '{REGION}' and priceType eq 'Consumption' "
                 f"and armSkuName eq '{name}'")
        pages += _follow(f"{RETAIL}?{urllib.parse.urlencode({'$filter': where})}")
    return pages


def prices(pages: Iterable[dict]) -> dict[str, float]:
    """VM size -> pay-as-you-go Linux $/h in eastus from Retail Prices pages (Windows, Spot, Low Priority and
    reservation items left out)."""
    out: dict[str, float] = {}
    for page in pages:
        for item in page.get("Items", []):
            if (item.get("type") != "Consumption" or item.get("unitOfMeasure") != "1 Hour"
                    or item.get("armRegionName") != REGION or "Windows" in item.get("productName", "")
                    or re.search(r"Spot|Low Priority", item.get("skuName", "") + item.get("meterName", ""))):
                continue
            price = float(item["retailPrice"])
            if price > 0:
                out[item["armSkuName"]] = min(price, out.get(item["armSkuName"], price))
    return out


def _capabilities(sku: dict) -> dict[str, str]:
    return {c["name"]: c["value"] for c in sku.get("capabilities", [])}


def fetch(answers: Answers, date: str) -> Fresh:
    skus = [s for page in _pages(answers.get("resource-skus.json", _skus)) for s in page.get("value", [])
            if s.get("resourceType") == "virtualMachines"
            and REGION in [x.lower() for x in s.get("locations", [])] and int(_capabilities(s).get("GPUs", 0)) > 0]
    found, skipped = {}, []
    for sku in skus:
        name = sku["name"]
        vendor, part = catalog.not_nvidia("azure", name), catalog.fractional("azure", name)
        series = next((s for s in SERIES if re.fullmatch(s[0], name)), None)
        if vendor:
            skipped.append(Skipped(name, f"not NVIDIA: {vendor}"))
        elif part:
            skipped.append(Skipped(name, f"fractional GPU: {part}, not supported"))
        elif series is None:
            skipped.append(Skipped(name, "a GPU size of a series gpuready does not know: add its pattern, model and "
                                         "GPU memory to gpuready/refresh/azure.py SERIES"))
        else:
            found[name] = (sku, series)
    price = prices(_pages(answers.get("retail-prices.json", lambda: _retail(found))))
    rows = []
    for name in sorted(found):
        sku, (_, model, size) = found[name]
        caps, memory = _capabilities(sku), catalog.model_gib(model, size)
        if memory is None:
            skipped.append(Skipped(name, unknown_memory(model, catalog.gib_of_gb(size))))
            continue
        rows.append(catalog.GpuInstanceType(
            cloud="azure", name=name, accelerator="", gpu_model=model, gpus=int(caps["GPUs"]), gpu_memory_gib=memory,
            vcpus=int(caps["vCPUs"]), memory_gib=float(caps["MemoryGB"]), price_usd_hour=price.get(name),
            price_region=REGION, price_date=date, spec_source=SPEC_SOURCE, price_source=PRICE_SOURCE))
    return Fresh("azure", tuple(rows), tuple(sorted(skipped, key=lambda s: s.name)))
