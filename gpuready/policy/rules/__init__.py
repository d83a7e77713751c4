"""The gpuready policy rules, grouped by what they protect."""

from . import batch, capacity, kubernetes, scaling, security

RULES = [*batch.RULES, *capacity.RULES, *kubernetes.RULES, *scaling.RULES, *security.RULES]
"""Every rule, in the order reports list them."""
