"""``gpuready catalog refresh``: rebuild the GPU catalog's rows of one cloud from that cloud's own APIs (or from
recorded answers of them), show what changed against the catalog, and write the CSV only when asked.

Each cloud module (:mod:`.aws`, :mod:`.gcp`, :mod:`.azure`: one per cloud of the registered platforms,
:func:`clouds`) turns the API answers into catalog rows and lists the accelerated types it leaves out and why (not
NVIDIA, a fraction of a GPU, a GPU model gpuready does not know).
"""

from __future__ import annotations

import datetime
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from gpuready_components import catalog, platforms

from ..errors import UserError


@dataclass(frozen=True)
class Skipped:
    """An accelerated type the refresh leaves out, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class Fresh:
    """What a cloud's APIs say: its NVIDIA GPU types as catalog rows, and the accelerated types left out."""

    cloud: str
    rows: tuple[catalog.GpuInstanceType, ...]
    skipped: tuple[Skipped, ...]


class Answers:
    """The API answers a refresh reads: from ``recorded`` (a folder of JSON files, one per API, named as each cloud
    module documents), or live through ``live`` when no recorded file is there. A ``recorded`` folder without any
    JSON file is a :class:`UserError`: nothing is asked live then."""

    def __init__(self, recorded: Optional[Path]) -> None:
        if recorded is not None and not recorded.is_dir():
            raise UserError(f"--from {recorded}: not a folder of recorded API answers")
        if recorded is not None and not any(p.is_file() for p in recorded.glob("*.json")):
            raise UserError(f"--from {recorded}: the folder holds no recorded API answers (JSON files named as "
                            "gpuready/refresh/<cloud>.py says): record them there, or drop --from to ask the APIs")
        self.recorded = recorded

    def get(self, name: str, live: Callable[[], Any]) -> Any:
        """The recorded answer ``name`` (a JSON file in the folder) if there is one, else ``live()``."""
        if self.recorded is not None:
            path = self.recorded / name
            if path.is_file():
                try:
                    return json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError) as e:
                    raise UserError(f"--from: cannot read {path}: {e}") from None
        progress(f"asking the API for {name.removesuffix('.json')}")
        return live()


def unknown_memory(model: str, reported: float) -> str:
    """Why a type whose GPUs report ``reported`` GiB is left out: no memory size of ``model`` in the catalog's
    ``gpu_models.csv`` is that figure (:func:`gpuready_components.catalog.gpu_memory`)."""
    return (f"{reported:g} GiB per {model} GPU is no memory size of {model} in the catalog's gpu_models.csv: add it "
            "there with its source")


def progress(text: str) -> None:
    print(f"gpuready: catalog: {text}...", file=sys.stderr, flush=True)


def month(today: Optional[datetime.date] = None) -> str:
    """The price date refreshed rows carry: the month of the refresh (``YYYY-MM``)."""
    return (today or datetime.date.today()).strftime("%Y-%m")


def clouds() -> tuple[str, ...]:
    """The clouds whose catalog rows can be refreshed: those of the registered platforms that bring a refresh."""
    return tuple(dict.fromkeys(p.cloud for p in platforms.every() if p.refresh))


def fetch(cloud: str, recorded: Optional[Path] = None, today: Optional[datetime.date] = None) -> Fresh:
    """The rows ``cloud``'s APIs give (recorded answers in ``recorded`` where present), dated ``today``'s month."""
    if cloud not in clouds():
        raise UserError(f"--cloud {cloud}: use one of {', '.join(clouds())}")
    refresh = next(p.refresh for p in platforms.every() if p.cloud == cloud and p.refresh)
    return refresh().fetch(Answers(recorded), month(today))


def get_json(url: str, token: Optional[str] = None) -> Any:
    """GET ``url`` (with a bearer ``token``) and parse its JSON; a failure is a :class:`UserError` naming the URL."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise UserError(f"GET {url.split('?')[0]}: HTTP {e.code} {e.reason}: check the credentials and project or "
                        "subscription, or give --from DIR with recorded answers") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise UserError(f"GET {url.split('?')[0]} failed: {e}") from None


def token_from(env: str, command: list[str], what: str,
               otherwise: str = ", or give --from DIR with recorded answers") -> str:
    """An access token from the environment variable ``env``, else from ``command``'s output (a cloud CLI); neither:
    a one-line :class:`UserError` saying both ways, then ``otherwise`` (what else the caller accepts)."""
    import os
    import subprocess

    token = os.environ.get(env, "").strip()
    if token:
        return token
    try:
        token = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        token = ""
    if not token:
        raise UserError(f"no {what}: set {env}, or log in so that `{' '.join(command)}` prints one{otherwise}")
    return token
