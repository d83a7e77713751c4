"""gpuready: see what a GPU stack creates before deploying it, and prove its GPUs work after."""


def __getattr__(name: str) -> str:
    if name == "__version__":  # pyproject.toml's, from the installed metadata: read when asked for, not on import
        from gpuready_components.sdk import installed

        distribution = installed()
        return distribution.version if distribution else "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
