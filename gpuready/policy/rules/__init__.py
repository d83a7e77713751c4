"""The gpuready policy rules, grouped by what they protect."""

from . import batch, capacity, kubernetes, nvl72, queues, reservations, scaling, security

RULES = [*batch.RULES, *capacity.RULES, *kubernetes.RULES, *nvl72.RULES, *queues.RULES, *reservations.RULES,
         *scaling.RULES, *security.RULES]
"""Every rule, in the order reports list them."""
