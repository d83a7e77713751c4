"""How much a pool of instances can hold at most, for capacity summaries and cost caps."""

from __future__ import annotations

from typing import Sequence


def best_fill(budget: int, items: Sequence[tuple[int, float]]) -> float:
    """The largest total value of instances whose costs fit in ``budget``, any mix and any number of each.

    ``items`` are ``(cost, value)`` pairs, for example ``(vcpus, gpus)`` of each instance type of a Batch compute
    environment whose ``max_vcpus`` is ``budget``. Unbounded knapsack; budgets are vCPU counts, so this stays small.
    """
    best = [0.0] * (budget + 1)
    for spent in range(1, budget + 1):
        for cost, value in items:
            if 0 < cost <= spent:
                best[spent] = max(best[spent], best[spent - cost] + value)
    return best[budget]
