"""What a refresh changes in the catalog: rows added, rows the API no longer lists, hardware or price changes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from gpuready_components import catalog

from . import Fresh

FACTS = ("accelerator", "gpu_model", "gpus", "gpu_memory_gib", "vcpus", "memory_gib", "efa_interfaces",
         "network_gbps")
"""Hardware columns compared between the catalog and the API (prices are compared as price moves)."""


@dataclass(frozen=True)
class PriceMove:
    name: str
    old: Optional[float]
    new: Optional[float]

    @property
    def percent(self) -> Optional[float]:
        """The move in percent of the old price; ``None`` when either side has no price."""
        if self.old is None or self.new is None:
            return None
        return round((self.new - self.old) / self.old * 100, 1)


@dataclass(frozen=True)
class CatalogDiff:
    cloud: str
    added: tuple[catalog.GpuInstanceType, ...]
    missing: tuple[catalog.GpuInstanceType, ...]
    """Catalog rows the API did not list: reported, kept when writing (an API answer may be partial)."""
    changed: tuple[tuple[str, dict[str, tuple[Any, Any]]], ...]
    """(name, {column: (catalog, API)}) for hardware columns that differ."""
    price_moves: tuple[PriceMove, ...]
    skipped: tuple[Any, ...]
    refreshed: int
    """Catalog rows the API confirmed, now carrying the refresh's date and the API's source keys."""
    rows: tuple[catalog.GpuInstanceType, ...]
    """The whole catalog after the refresh, every cloud, in file order (new rows after their cloud's last row)."""

    def to_json(self) -> dict:
        def row(r):
            return dataclasses.asdict(r)

        return {"cloud": self.cloud, "added": [row(r) for r in self.added],
                "missing": [r.name for r in self.missing],
                "changed": [{"name": n, "fields": {k: list(v) for k, v in f.items()}} for n, f in self.changed],
                "price_moves": [{"name": m.name, "old": m.old, "new": m.new, "percent": m.percent}
                                for m in self.price_moves],
                "skipped": [{"name": s.name, "reason": s.reason} for s in self.skipped],
                "refreshed": self.refreshed}


def compare(current: Sequence[catalog.GpuInstanceType], fresh: Fresh) -> CatalogDiff:
    """``fresh`` (one cloud's API rows) against ``current`` (the catalog's rows, every cloud)."""
    ours = {r.name: r for r in current if r.cloud == fresh.cloud}
    theirs = {r.name: r for r in fresh.rows}
    added = tuple(r for r in fresh.rows if r.name not in ours)
    missing = tuple(r for r in ours.values() if r.name not in theirs)
    changed, moves = [], []
    for name, old in ours.items():
        new = theirs.get(name)
        if new is None:
            continue
        fields = {c: (getattr(old, c), getattr(new, c)) for c in FACTS if getattr(old, c) != getattr(new, c)}
        if fields:
            changed.append((name, fields))
        if old.price_usd_hour != new.price_usd_hour:
            moves.append(PriceMove(name, old.price_usd_hour, new.price_usd_hour))
    rows, last = [], None
    for i, r in enumerate(current):
        rows.append(theirs.get(r.name, r) if r.cloud == fresh.cloud else r)
        if r.cloud == fresh.cloud:
            last = i
    at = len(rows) if last is None else last + 1
    rows[at:at] = added
    return CatalogDiff(fresh.cloud, added, missing, tuple(changed), tuple(moves), fresh.skipped,
                       len(ours) - len(missing), tuple(rows))


def _price(value: Optional[float]) -> str:
    return "none" if value is None else f"{value:g}"


def render_text(d: CatalogDiff, written: Optional[str] = None) -> str:
    """The diff as a person reads it."""
    out = [f"{d.cloud}: {len(d.added)} added, {len(d.changed)} changed, {len(d.price_moves)} price moves, "
           f"{len(d.missing)} not listed by the API, {len(d.skipped)} skipped, {d.refreshed} confirmed"]
    for r in d.added:
        price = f", {_price(r.price_usd_hour)} $/h" if r.price_usd_hour is not None else ", no on-demand price"
        out.append(f"  + {r.name}: {r.gpus}x {r.gpu_model} {catalog.gib_text(r.gpu_memory_gib)}, {r.vcpus} vCPUs, "
                   f"{r.memory_gib:g} GiB{price}")
    for name, fields in d.changed:
        out.append(f"  ~ {name}: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in fields.items()))
    for m in d.price_moves:
        pct = f" ({m.percent:+.1f}%)" if m.percent is not None else ""
        out.append(f"  $ {m.name}: {_price(m.old)} -> {_price(m.new)} $/h{pct}")
    for r in d.missing:
        out.append(f"  ? {r.name}: in the catalog, not in the API's answer (kept)")
    for s in d.skipped:
        out.append(f"  - {s.name}: skipped, {s.reason}")
    out.append(f"written to {written}" if written else "nothing written (add --write to update the catalog)")
    return "\n".join(out) + "\n"
