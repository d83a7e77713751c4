"""The gpuready policy pack. Building a PolicyPack starts its server and blocks, so this file does only that; the rules
are in ``gpuready.policy``."""

from pulumi_policy import PolicyPack

from gpuready.policy import RULES

PolicyPack(name="gpuready", policies=RULES)
