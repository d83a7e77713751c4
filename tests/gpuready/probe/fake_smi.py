"""A stand-in ``nvidia-smi`` that replays a real capture from tests/data/nvidia-smi.

It answers ``--query-gpu=FIELDS --format=csv`` with the capture's own cells for those fields (rejecting fields the
capture's driver did not print, exactly as nvidia-smi rejects unknown fields), ``-L`` with the capture's own
``nvidia-smi -L`` lines, and the bare command with the capture's table. Environment: FAKE_SMI_CAPTURE (file),
FAKE_SMI_ROW (which row, default the first), FAKE_SMI_SET (``field=value;...`` overrides, to inject faults), FAKE_SMI_FAIL (print this and exit 9).
``--query-compute-apps``, ``nvlink --status``/``--errorcounters`` and ``-q`` print the files FAKE_SMI_APPS,
FAKE_SMI_NVLINK_STATUS/_ERRORS and FAKE_SMI_Q name (of several, the next at each call); run as ``dmesg`` it prints
FAKE_DMESG's, or fails as an unprivileged dmesg does.
"""

import csv
import io
import os
import re
import sys

if os.environ.get("FAKE_SMI_FAIL"):
    print(os.environ["FAKE_SMI_FAIL"])
    sys.exit(9)


def replay(variable):
    """Print the file ``variable`` names; of several (os.pathsep between them), the next one at each call."""
    files = [f for f in os.environ.get(variable, "").split(os.pathsep) if f]
    if not files:
        return
    counter = os.path.join(os.environ["FAKE_SMI_STATE"], variable)
    calls = int(open(counter).read()) if os.path.exists(counter) else 0
    with open(counter, "w") as f:
        f.write(str(calls + 1))
    print(open(files[min(calls, len(files) - 1)]).read())


if os.environ.get("FAKE_SMI_AS") == "dmesg":  # the same replay stands in for dmesg
    if not os.environ.get("FAKE_DMESG"):
        print("dmesg: read kernel buffer failed: Operation not permitted", file=sys.stderr)
        sys.exit(1)
    replay("FAKE_DMESG")
    sys.exit(0)
if sys.argv[1:2] == ["nvlink"]:
    replay("FAKE_SMI_NVLINK_ERRORS" if "--errorcounters" in sys.argv else "FAKE_SMI_NVLINK_STATUS")
    sys.exit(0)
if sys.argv[1:2] == ["-q"]:
    replay("FAKE_SMI_Q")
    sys.exit(0)
if any(a.startswith("--query-compute-apps=") for a in sys.argv):
    print("pid, process_name, used_gpu_memory [MiB], gpu_uuid")
    replay("FAKE_SMI_APPS")
    sys.exit(0)
text = open(os.environ["FAKE_SMI_CAPTURE"]).read()
rows, names = [], []
for line in text.splitlines():
    command = re.search(r"--query-([\w-]+)=([\w.,]+)", line)
    if command:
        names = command.group(2).split(",") if command.group(1) == "gpu" else []
        continue
    if not names or not line.strip() or line.startswith(("#", "$")):
        continue
    cells = next(csv.reader(io.StringIO(line), skipinitialspace=True))
    if len(cells) == len(names) and cells[0].strip() != names[0]:
        rows.append(dict(zip(names, [c.strip() for c in cells])))
row = dict(rows[int(os.environ.get("FAKE_SMI_ROW", "0"))]) if rows else {}
for assignment in filter(None, os.environ.get("FAKE_SMI_SET", "").split(";")):
    key, _, value = assignment.partition("=")
    row[key] = value
gpus = int(os.environ.get("FAKE_SMI_GPUS", "1"))
if "-L" in sys.argv[1:]:
    print("\n".join(line for line in text.splitlines() if re.match(r"GPU \d+: |\s+MIG \S+\s+Device", line)))
    sys.exit(0)
query = next((a for a in sys.argv[1:] if a.startswith("--query-gpu=")), None)
if query is None:
    table = re.search(r"\+-+\+\n\| NVIDIA-SMI.*?\n", text, re.S)
    print(table.group(0) if table else "NVIDIA-SMI has failed")
    sys.exit(0)
fields = query.split("=", 1)[1].split(",")
for field in fields:
    if field not in row and field != "index":
        print(f'Field "{field}" is not a valid field to query.\n')
        sys.exit(2)
print(", ".join(fields))
for i in range(gpus):
    cells = {**row, "index": str(i), "uuid": f"{row.get('uuid', 'GPU')}-{i}", "pci.bus_id": f"0000000{i}:00:09.0"}
    print(", ".join(cells[f] for f in fields))
