"""Tests of each module of gpuready.policy.rules on edits of the reference stacks, fast enough for mutation testing
(bench/mutation.py runs each module against its file here)."""

CE = "aws:batch/computeEnvironment:ComputeEnvironment"
QUEUE = "aws:batch/jobQueue:JobQueue"
JOBDEF = "aws:batch/jobDefinition:JobDefinition"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"


def setting(key, value, within=None):
    """An edit (for ``edited``) setting input ``key`` (of the object input ``within``) to ``value``."""
    def change(inputs):
        (inputs[within] if within else inputs)[key] = value
        return inputs
    return change
