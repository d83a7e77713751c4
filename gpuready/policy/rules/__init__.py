"""The gpuready policy rules, grouped by what they protect."""

from . import batch, capacity, kubernetes, queues, reservations, scaling, security

RULES = [*batch.RULES, *capacity.RULES, *kubernetes.RULES, *queues.RULES, *reservations.RULES, *scaling.RULES,
         *security.RULES]
"""Every rule, in the order reports list them."""
