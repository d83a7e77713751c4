"""gpuready's GPU probe inside a Metaflow step, where your @batch(gpu=N) or @kubernetes(gpu=N) steps run.

With a gpuready stack's Metaflow profile saved (`pulumi stack output metaflowProfile --json >
~/.metaflowconfig/config_gpu.json`):

    METAFLOW_PROFILE=gpu GPU_ON=batch python examples/metaflow/gpu_probe_flow.py run        # aws-batch
    METAFLOW_PROFILE=gpu GPU_ON=kubernetes python examples/metaflow/gpu_probe_flow.py run   # eks, gke, aks

`start` and `end` run here, where gpuready is installed; only `probe` runs on a GPU node, as `@batch(gpu=N)` or
`@kubernetes(gpu=N)` (GPU_ON; `local` runs it here). `start` hands the probe's source to `probe` as an artifact, so
the step's image needs Python and nothing of gpuready's; `end` prints the checks and fails the run when one fails.
"""

import os

from metaflow import FlowSpec, Parameter, batch, kubernetes, step

GPUS = int(os.environ.get("GPUS", "1"))
ON_GPU = {"batch": batch(gpu=GPUS), "kubernetes": kubernetes(gpu=GPUS),
          "local": lambda f: f}[os.environ.get("GPU_ON", "batch")]


class GpuProbeFlow(FlowSpec):
    """start (here) -> probe (a GPU node) -> end (here)."""

    full = Parameter("full", default=False, type=bool, help="larger benchmarks (slower, steadier figures)")

    @step
    def start(self):
        from gpuready.probe import core

        with open(core.__file__) as f:
            self.probe_source = f.read()
        self.next(self.probe)

    @ON_GPU
    @step
    def probe(self):
        import subprocess
        import sys
        import tempfile

        path = os.path.join(tempfile.mkdtemp(), "probe.py")
        with open(path, "w") as f:
            f.write(self.probe_source)
        done = subprocess.run([sys.executable, path, "--gpus", str(GPUS), *(["--full"] if self.full else [])],
                              capture_output=True, text=True)
        print(done.stderr, file=sys.stderr)
        self.probe_output = done.stdout
        self.next(self.end)

    @step
    def end(self):
        from gpuready.probe import ProbeReport, core
        from gpuready.smoke.result import SmokeResult, render_text

        found = core.find_report(self.probe_output)
        if found is None:
            raise RuntimeError(f"the probe step printed no report: {self.probe_output[-500:]!r}")
        report = ProbeReport.from_json(found)
        result = SmokeResult(target="a Metaflow step", title="GPU probe", checks=list(report.checks), probe=report)
        print(render_text(result))
        if not result.passed:
            raise RuntimeError("the GPU probe failed: see the checks above")


if __name__ == "__main__":
    GpuProbeFlow()
