"""Burn-in admission of one GPU node, run inside the burn-in daemonset's pod (standard library only: it is shipped
as a file in a ConfigMap, beside the probe's ``core.py``).

``check``: exits at once, writing ``skip``, when the node no longer carries the burn-in taint (it passed before,
and may be running work: no diagnostics then). ``admit``: runs the probe (expecting the GPU count of the node's
instance type in the catalog, shipped as ``gpus.json``; else what the node advertises; within
``BURN_IN_PROBE_TIMEOUT`` seconds), reads the DCGM diagnostics' exit status and output, and on pass removes the taint from its own node and labels it ``passed``; on fail labels it ``failed``
with the reason as an annotation, and leaves the taint. The node is named by ``NODE_NAME`` (the downward API); the
pod's service account may only get and patch nodes.
"""

import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

TAINT_KEY = os.environ.get("BURN_IN_TAINT_KEY", "gpuready.io/burn-in")
"""The burn-in taint's key: its platform's ``burn_in_taint`` (components/k8s_gpu/facts.py), set by the daemonset."""
LABEL = "gpuready.io/burn-in"
REASON = "gpuready.io/burn-in-reason"
ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
RESULTS = os.environ.get("BURN_IN_RESULTS", "/results")
PROBE = os.environ.get("BURN_IN_PROBE", "/gpuready/core.py")
GPUS_BY_TYPE = os.environ.get("BURN_IN_GPUS_BY_TYPE", "/gpuready/gpus.json")
PROBE_TIMEOUT = float(os.environ.get("BURN_IN_PROBE_TIMEOUT", "900"))
MARKER = "GPUREADY_PROBE_REPORT "
DRIVER_BIN = os.environ.get("BURN_IN_DRIVER_BIN", "/usr/local/nvidia/bin")
"""Where a driver mounted from the host keeps nvidia-smi (burn_in.DRIVER_MOUNT), put first on the probe's PATH."""


def _api(method, path, body=None, content_type="application/json"):
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    with open(f"{ACCOUNT}/token") as f:
        token = f.read().strip()
    request = urllib.request.Request(
        f"https://{host}:{port}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type, "Accept": "application/json"})
    context = ssl.create_default_context(cafile=f"{ACCOUNT}/ca.crt")
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def node(name):
    return _api("GET", f"/api/v1/nodes/{name}")


def tainted(obj):
    return any(t.get("key") == TAINT_KEY for t in (obj.get("spec") or {}).get("taints") or [])


def expected_gpus(obj, by_type):
    """The GPUs the node must show: its instance type's count in ``by_type`` (the catalog), else GPU feature
    discovery's ``nvidia.com/gpu.count`` label, else its ``nvidia.com/gpu`` capacity over the time-slicing
    replicas (``nvidia.com/gpu.replicas``); 0 (count not checked) when none says."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    kind = labels.get("node.kubernetes.io/instance-type") or labels.get("beta.kubernetes.io/instance-type")
    if kind in by_type:
        return int(by_type[kind])
    if str(labels.get("nvidia.com/gpu.count", "")).isdigit():
        return int(labels["nvidia.com/gpu.count"])
    advertised = str(((obj.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu") or "")
    replicas = str(labels.get("nvidia.com/gpu.replicas", "1"))
    return int(advertised) // max(1, int(replicas) if replicas.isdigit() else 1) if advertised.isdigit() else 0


def run_probe(gpus, timeout=PROBE_TIMEOUT):
    """``(report, output, missing)``: the probe's report (None: it printed none, and ``missing`` says why) and what
    it printed; a probe still running after ``timeout`` seconds is killed."""
    env = dict(os.environ)
    if os.path.isdir(DRIVER_BIN):  # a driver mounted from the host (GKE's): its nvidia-smi
        env["PATH"] = os.pathsep.join(filter(None, (DRIVER_BIN, env.get("PATH"))))
    try:
        probe = subprocess.run([sys.executable, PROBE, "--gpus", str(gpus)], capture_output=True, text=True,
                               timeout=timeout, env=env)
    except subprocess.TimeoutExpired as stopped:
        output = "\n".join(_text(part) for part in (stopped.stdout, stopped.stderr))
        return None, output, f"the probe did not finish in {timeout:g} s (killed)"
    for line in reversed(probe.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):]), probe.stdout + probe.stderr, ""
    return None, probe.stdout + probe.stderr, f"the probe printed no report (exit status {probe.returncode})"


def _text(part):
    return part.decode(errors="replace") if isinstance(part, bytes) else (part or "")


def verdict(report, dcgm_status, dcgm_output, missing="the probe printed no report"):
    """``(passed, reason)`` from the probe report (None: none, for the reason ``missing``) and the DCGM
    diagnostics' exit status (124: killed at its time limit) and output."""
    problems = []
    if report is None:
        problems.append(missing)
    elif report.get("verdict") == "fail":
        failed = [c["name"] for c in report.get("checks", []) if c.get("verdict") == "fail" and c.get("required")]
        problems.append("probe failed: " + ", ".join(failed or ["(no check named)"]))
    if dcgm_status != 0:
        failing = [line.strip() for line in dcgm_output.splitlines() if "fail" in line.lower()]
        killed = " (did not finish in time: killed)" if dcgm_status == 124 else ""
        problems.append(f"dcgmi diag exited {dcgm_status}{killed}" + (": " + "; ".join(failing[:5]) if failing else ""))
    return not problems, "; ".join(problems)[:1000]


def patch(name, before, passed, reason):
    """One merge patch of the node, conditional on the version read (a concurrent change makes it fail: retry)."""
    metadata = {"resourceVersion": before["metadata"]["resourceVersion"],
                "labels": {LABEL: "passed" if passed else "failed"},
                "annotations": {REASON: reason or None}}
    body = {"metadata": metadata}
    if passed:
        body["spec"] = {"taints": [t for t in before["spec"].get("taints") or [] if t.get("key") != TAINT_KEY]}
    return _api("PATCH", f"/api/v1/nodes/{name}", body, "application/merge-patch+json")


def _read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    name = os.environ["NODE_NAME"]
    if argv[:1] == ["check"]:
        if not tainted(node(name)):
            open(os.path.join(RESULTS, "skip"), "w").close()
            print(f"{name}: not tainted {TAINT_KEY}: admitted before, nothing to do", flush=True)
        return 0
    if os.path.exists(os.path.join(RESULTS, "skip")):
        return 0
    report, output, missing = run_probe(expected_gpus(node(name), json.loads(_read(GPUS_BY_TYPE, "{}"))))
    print(output, flush=True)
    status = _read(os.path.join(RESULTS, "dcgm.rc"), "missing").strip()
    passed, reason = verdict(report, int(status) if status.lstrip("-").isdigit() else -1,
                             _read(os.path.join(RESULTS, "dcgm.txt")), missing)
    for attempt in range(5):
        try:
            patch(name, node(name), passed, reason)
            break
        except urllib.error.HTTPError as e:
            if e.code != 409 or attempt == 4:
                raise
    print(f"{name}: burn-in {'passed' if passed else 'failed: ' + reason}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
