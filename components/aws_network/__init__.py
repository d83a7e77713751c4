"""A VPC for GPU instances: private subnets behind one NAT gateway, so instances need no public IP."""

from .args import AwsNetworkArgs

__all__ = ["AwsNetwork", "AwsNetworkArgs"]


def __getattr__(name: str):
    """``AwsNetwork`` on first use: it imports the AWS SDK; the args, facts and validation do not (the policy
    pack and ``gpuready plan`` of other platforms read them)."""
    if name == "AwsNetwork":
        from .component import AwsNetwork

        return AwsNetwork
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
