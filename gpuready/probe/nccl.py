"""NCCL across nodes: the launcher every node of a gang job runs, the all-reduce worker, and the verdicts.

Standard library only at import (torch is imported inside the worker); shipped beside ``core.py`` as plain files.
See /work/INTERFACES.md section 3 (branch ``nccl`` implements :func:`main`, :func:`transport` and :func:`checks`).
"""

from __future__ import annotations

import json
import sys

REPORT_MARKER = "GPUREADY_NCCL_REPORT "


def find_report(text):
    """The last NCCL report in ``text`` (the main node's logs), or None."""
    for line in reversed(text.splitlines()):
        index = line.find(REPORT_MARKER)
        if index >= 0:
            try:
                return json.loads(line[index + len(REPORT_MARKER):])
            except json.JSONDecodeError:
                continue
    return None


def transport(log_text):
    """The inter-node transport NCCL chose, read from its INFO lines: efa, ib, socket, tcpx, tcpxo or unknown."""
    raise NotImplementedError("branch nccl")


def checks(report, *, nodes, expected_transport, instance_type=None):
    """The verdicts on a gang job's NCCL report (core.check dicts); ``report`` None is one failing check."""
    raise NotImplementedError("branch nccl")


def main(argv=None):
    """``launch`` on every node of a gang job; ``worker`` under torchrun."""
    raise NotImplementedError("branch nccl")


if __name__ == "__main__":
    sys.exit(main())
