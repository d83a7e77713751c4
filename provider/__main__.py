"""The gpuready component package's provider, as Pulumi runs a Python plugin (``python provider ENGINE``): it prints
its port and serves GetSchema and Construct over gRPC. Schema and construction live in ``gpuready_components.package``.
"""

import sys

from pulumi.provider import main

from gpuready_components.package import GpureadyProvider

main(GpureadyProvider(), sys.argv[1:])
