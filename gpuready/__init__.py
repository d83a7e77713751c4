"""gpuready: see what a GPU stack creates before deploying it, and prove its GPUs work after."""

__version__ = "0.1.0"
