"""gpuready reference stacks: ``pulumi up -s NAME`` builds the platform named by ``gpuready:platform``.

This folder installs as the package ``gpuready_stacks`` (``pip install -e .`` in a checkout, or the wheel), so the
program imports it by that name wherever it runs: ``pulumi up`` from the checkout (``main: stacks/``) or ``gpuready
plan`` on the copy an installed gpuready ships.
"""

from gpuready_stacks import main

main()
