"""A VPC for GPU instances: private subnets behind one NAT gateway, so instances need no public IP."""

from .args import AwsNetworkArgs

__all__ = ["AwsNetwork", "AwsNetworkArgs"]


def __getattr__(name: str):
    # The component imports the cloud SDK; args, facts and validation do not need it (the policy pack reads them).
    if name == "AwsNetwork":
        from .component import AwsNetwork

        return AwsNetwork
    raise AttributeError(name)
