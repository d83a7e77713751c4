"""Container images every platform runs the GPU probe in: the Batch job definitions, the Kubernetes smoke jobs and
the burn-in daemonset. Declared once, beside no platform."""

SMOKE_IMAGE = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
"""Public CUDA image with Python and PyTorch for the smoke-test job (about 3 GB compressed). CUDA 12.4 needs driver
550 or newer, which every ECS_AL2023_NVIDIA AMI and every supported GKE and AKS GPU node image ships."""
