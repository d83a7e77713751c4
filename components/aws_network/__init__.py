"""A VPC for GPU instances: private subnets behind one NAT gateway, so instances need no public IP."""

from ..sdk import lazy_components
from .args import AwsNetworkArgs

__all__ = ["AwsNetwork", "AwsNetworkArgs"]

__getattr__ = lazy_components(__name__, "AwsNetwork")
