"""Google Cloud: Compute Engine machineTypes (aggregatedList) and acceleratorTypes, and the Cloud Billing Catalog's
Compute Engine SKUs (service 6F81-5844-456A), us-central1 on demand.

A machine type with its own GPUs (G2, A2, A3, A4) costs its GPUs plus its series' instance core and RAM prices; an
N1 catalog row (``MACHINE:ACCELERATOR:COUNT``) costs N1 predefined core and RAM plus the attached GPUs.

Recorded answers (``--from DIR``): ``compute-machine-types.json``, ``compute-accelerator-types.json`` (an
aggregatedList or list response, or a list of pages) and ``billing-skus.json`` (a services.skus.list response, or a
list of pages). Live: a token from ``GOOGLE_OAUTH_ACCESS_TOKEN`` or ``gcloud auth print-access-token``, the project
from ``GOOGLE_CLOUD_PROJECT`` or ``gcloud config get-value project``.
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse
from typing import Any, Iterable, Optional

from gpuready_components import catalog

from ..errors import UserError
from . import Answers, Fresh, Skipped, get_json, token_from

REGION = "us-central1"
COMPUTE_SERVICE = "6F81-5844-456A"
SPEC_SOURCE, PRICE_SOURCE = "gcp-compute-api", "gcp-billing-api"


def _pages(answer: Any) -> list[dict]:
    return answer if isinstance(answer, list) else [answer]


def _items(pages: Iterable[dict], key: str) -> list[dict]:
    """The resources of list or aggregatedList pages (``items`` a list, or a map of scope -> {key: [...]})."""
    out = []
    for page in pages:
        items = page.get("items", [])
        if isinstance(items, dict):
            for scope in items.values():
                out += scope.get(key, [])
        else:
            out += items
    return out


def _live(path: str, key: str, token: str) -> list[dict]:
    pages, page_token = [], ""
    while True:
        query = urllib.parse.urlencode({"maxResults": 500, **({"pageToken": page_token} if page_token else {})})
        page = get_json(f"https://compute.googleapis.com/compute/v1/projects/{_project()}/{path}?{query}", token)
        pages.append(page)
        page_token = page.get("nextPageToken", "")
        if not page_token:
            return pages


def _skus(token: str) -> list[dict]:
    pages, page_token = [], ""
    while True:
        query = urllib.parse.urlencode({"currencyCode": "USD", "pageSize": 5000,
                                        **({"pageToken": page_token} if page_token else {})})
        page = get_json(f"https://cloudbilling.googleapis.com/v1/services/{COMPUTE_SERVICE}/skus?{query}", token)
        pages.append(page)
        page_token = page.get("nextPageToken", "")
        if not page_token:
            return pages


def _project() -> str:
    project = os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("CLOUDSDK_CORE_PROJECT")
    if not project:
        try:
            project = subprocess.run(["gcloud", "config", "get-value", "project"], capture_output=True, text=True,
                                     timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            project = ""
    if not project:
        raise UserError("no Google Cloud project: set GOOGLE_CLOUD_PROJECT, or give --from DIR with recorded answers")
    return project


def unit_price(sku: dict) -> float:
    """The first tier's unit price of a billing SKU (``units`` + ``nanos`` / 1e9), USD."""
    rate = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][-1]["unitPrice"]
    return int(rate.get("units") or 0) + rate.get("nanos", 0) / 1e9


def model_of(description: str) -> tuple[Optional[str], Optional[float]]:
    """GPU model and memory from an accelerator type's description (``NVIDIA H100 80GB``, ``NVIDIA Tesla T4``): the
    size (vendor GB) the description states, when gpu_models.csv has it, else the model's smallest size there (the
    one Compute Engine's GPU pages give where the name states none), as the GiB figure gpu_models.csv holds for that
    size (:func:`~gpuready_components.catalog.model_gib`: the clouds' APIs' figure, H100 80 GB is 80 GiB, the same
    on every cloud); None for a size the catalog does not have. Compute Engine's APIs report no GPU memory."""
    words = description.replace("NVIDIA", "").replace("Tesla", "").split()
    model = next((w for w in words if w in catalog.GPU_MODELS), None)
    stated = re.search(r"(\d+)\s*GB", description)
    sizes = sorted(catalog.gpu_memories().get(model or "", {}))
    size = float(stated.group(1)) if stated else (sizes[0] if sizes else None)
    return model, catalog.model_gib(model or "", size)


def _series(machine: str) -> list[str]:
    """Billing's names of a machine's series, most specific first (``a3-megagpu-8g``: ``a3 mega``, ``a3``)."""
    family, kind = machine.split("-")[:2]
    specific = {"megagpu": "mega", "ultragpu": "ultra", "edgegpu": "edge"}.get(kind)
    return ([f"{family} {specific}"] if specific else []) + [family] + (["n1 predefined"] if family == "n1" else [])


class Prices:
    """On-demand us-central1 prices of GPU, instance core and instance RAM SKUs, by description."""

    def __init__(self, pages: Iterable[dict]) -> None:
        self.skus = [s for page in pages for s in page.get("skus", [])
                     if s.get("category", {}).get("usageType") == "OnDemand" and REGION in s.get("serviceRegions", [])]

    def _find(self, pattern: str) -> Optional[float]:
        for sku in self.skus:
            text = sku.get("description", "").lower()
            if re.match(pattern, text) and not re.search(r"spot|preemptible|commitment|dws|calendar", text):
                return unit_price(sku)
        return None

    def gpu(self, description: str) -> Optional[float]:
        words = description.lower().replace("nvidia", " ").replace("tesla", " ").split()
        return self._find(rf"nvidia (tesla )?{re.escape(' '.join(words))} gpu running in ")

    def machine(self, machine: str, vcpus: int, memory_gib: float) -> Optional[float]:
        for series in _series(machine):
            core = self._find(rf"{series} instance core running in ")
            ram = self._find(rf"{series} instance ram running in ")
            if core is not None and ram is not None:
                return core * vcpus + ram * memory_gib
        return None


def fetch(answers: Answers, date: str) -> Fresh:
    token: list[str] = []

    def live_token() -> str:
        if not token:
            token.append(token_from("GOOGLE_OAUTH_ACCESS_TOKEN", ["gcloud", "auth", "print-access-token"],
                                    "Google Cloud access token"))
        return token[0]

    machines = {m["name"]: m for m in _items(_pages(answers.get(
        "compute-machine-types.json", lambda: _live("aggregated/machineTypes", "machineTypes", live_token()))),
        "machineTypes")}
    accelerators = {a["name"]: a for a in _items(_pages(answers.get(
        "compute-accelerator-types.json", lambda: _live("aggregated/acceleratorTypes", "acceleratorTypes",
                                                        live_token()))), "acceleratorTypes")}
    price = Prices(_pages(answers.get("billing-skus.json", lambda: _skus(live_token()))))
    rows, skipped = [], []

    def row(name: str, machine: dict, accelerator: str, count: int) -> None:
        description = accelerators.get(accelerator, {}).get("description", accelerator)
        model, memory = model_of(description)
        if not accelerator.startswith("nvidia-") or model is None or memory is None:
            skipped.append(Skipped(name, f"accelerator {accelerator} ({description}) is not an NVIDIA GPU model "
                                         "gpuready knows"))
            return
        vcpus, memory_gib = machine["guestCpus"], machine["memoryMb"] / 1024
        gpu, base = price.gpu(description), price.machine(machine["name"], vcpus, memory_gib)
        total = None if gpu is None or base is None else round(base + gpu * count, 8)
        rows.append(catalog.GpuInstanceType(
            cloud="gcp", name=name, accelerator=accelerator, gpu_model=model, gpus=count, gpu_memory_gib=memory,
            vcpus=vcpus, memory_gib=memory_gib, price_usd_hour=total, price_region=REGION, price_date=date,
            spec_source=SPEC_SOURCE, price_source=PRICE_SOURCE))

    for name, machine in sorted(machines.items()):
        for attached in machine.get("accelerators", [])[:1]:
            row(name, machine, attached["guestAcceleratorType"], attached["guestAcceleratorCount"])
    for known in (r for r in catalog.file_rows() if r.cloud == "gcp" and ":" in r.name):
        base, accelerator, count = known.name.split(":")
        if base in machines:
            row(known.name, machines[base], accelerator, int(count))
    return Fresh("gcp", tuple(rows), tuple(skipped))
