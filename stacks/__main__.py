"""gpuready reference stacks: ``pulumi up -s NAME`` builds the platform named by ``gpuready:platform``."""

import pathlib
import sys

# Pulumi runs this file from stacks/; the project root holds the `stacks` package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from stacks import main  # noqa: E402

main()
