"""A VPC for GPU instances: private subnets behind one NAT gateway, so instances need no public IP."""

from .args import AwsNetworkArgs
from .component import AwsNetwork

__all__ = ["AwsNetwork", "AwsNetworkArgs"]
