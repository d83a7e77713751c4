"""A stand-in for ``python -m torch.distributed.run`` running ``nccl.py worker``: no torch, no GPU, no network.

Takes torchrun's arguments as the launcher passes them and, driven by its environment:
FAKE_TORCHRUN_ARGS (file): append the arguments it got, one JSON object per run;
FAKE_TORCHRUN_LOG (file): replay that recorded NCCL output on stdout, line by line, as the ranks would print it;
FAKE_TORCHRUN_SLEEP (seconds): wait first (a peer that never arrives, a hung all-reduce);
FAKE_TORCHRUN_EXIT (code): exit with it, writing no result (a failed rank);
FAKE_TORCHRUN_RESULT (JSON): what rank 0 (node rank 0) writes to the worker's --result file.
"""

import json
import os
import sys
import time

argv = sys.argv[1:]
options = {argv[i].lstrip("-"): argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
script = next(a for a in argv if a.endswith(".py"))
worker = argv[argv.index(script) + 1:]
if os.environ.get("FAKE_TORCHRUN_ARGS"):
    with open(os.environ["FAKE_TORCHRUN_ARGS"], "a") as f:
        f.write(json.dumps({"options": options, "script": script, "worker": worker,
                            "NCCL_DEBUG": os.environ.get("NCCL_DEBUG"),
                            "FI_PROVIDER": os.environ.get("FI_PROVIDER")}) + "\n")
time.sleep(float(os.environ.get("FAKE_TORCHRUN_SLEEP", "0")))
if os.environ.get("FAKE_TORCHRUN_LOG"):
    with open(os.environ["FAKE_TORCHRUN_LOG"]) as f:
        for line in f:
            sys.stdout.write(line)
            sys.stdout.flush()
code = int(os.environ.get("FAKE_TORCHRUN_EXIT", "0"))
if code == 0 and options["node-rank"] == "0" and os.environ.get("FAKE_TORCHRUN_RESULT"):
    with open(worker[worker.index("--result") + 1], "w") as f:
        f.write(os.environ["FAKE_TORCHRUN_RESULT"])
sys.exit(code)
