"""gpuready's policy rules: CrossGuard policies that ``policies/`` packs for ``pulumi preview --policy-pack``, and
that :func:`run` applies offline to a stack rendered by ``gpuready plan``."""

from .offline import PolicyReport, Violation, run
from .rules import RULES

__all__ = ["PolicyReport", "RULES", "Violation", "run"]
