"""The probe's framework view (:func:`core.torch_checks`) and its figures, with a stand-in for PyTorch on a
stand-in clock: each operation on a GPU takes the time the test gives it, so every figure the probe reports is known
exactly. What the real PyTorch and a real H100 give is in tests/data/nvidia-smi/h100-device-2026-11-26 (bench/README.md);
this checks the arithmetic, the verdicts and the words around them."""

from __future__ import annotations

import sys
import types

import pytest

from gpuready.probe import core
from gpuready.probe.core import FAIL, PASS, WARN, check

from .test_core_exact import Smi

H100 = "NVIDIA H100 80GB HBM3"
SMI_ROWS = [{"index": i, "pcie.link.gen.max": 5, "pcie.link.gen.hostmax": 5, "pcie.link.width.max": 16}
            for i in range(8)]


def load(count):
    """What nvidia-smi answers for :data:`core.LOAD_FIELDS` on ``count`` busy GPUs at full link."""
    return "".join(f"{i}, 100 %, 5, 5, 16, 16\n" for i in range(count))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now


class Tensor:
    def __init__(self, torch, device, shape, dtype, value=0.0, pinned=False):
        self.torch, self.device, self.shape, self.dtype, self.value, self.pinned = (torch, device, shape, dtype,
                                                                                     value, pinned)

    def __matmul__(self, other):
        self.torch.spend(self.device, "matmul", self.shape)
        return self

    def copy_(self, src, non_blocking=False):
        self.torch.spend(self.device, "host" if src.device == "cpu" else "copy", self.shape,
                         non_blocking=non_blocking, pinned=src.pinned)
        return self

    def numel(self):
        return self.shape[0]

    def __getitem__(self, i):
        return self.value


class FakeTorch(types.ModuleType):
    """As much of ``torch`` as the probe uses, recording each operation and advancing ``clock`` by ``costs``
    (seconds per operation, by kind, for each GPU)."""

    bfloat16, uint8, float32 = "bfloat16", "uint8", "float32"

    def __init__(self, names, costs, clock, total_memory=80 * 2**30, sums_right=True, nccl=(2, 21, 5), cudnn=True,
                 available=None):
        super().__init__("torch")
        self.__version__ = "2.9.1+cu128"
        self.names, self.costs, self.clock, self.sums_right = names, costs, clock, sums_right
        self.log = []
        self.version = types.SimpleNamespace(cuda="12.8")
        self.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(is_available=lambda: cudnn,
                                                                          version=lambda: 91002))

        def nccl_version():
            if nccl is None:
                raise RuntimeError("NCCL is not available in a CPU build")
            return nccl

        self.cuda = types.SimpleNamespace(
            is_available=lambda: bool(names) if available is None else available, device_count=lambda: len(names),
            get_device_properties=lambda i: types.SimpleNamespace(name=names[i], total_memory=total_memory),
            synchronize=lambda device=None: self.log.append(("synchronize", device)),
            nccl=types.SimpleNamespace(version=nccl_version, all_reduce=self.all_reduce))

    def spend(self, device, kind, shape, **how):
        self.log.append((kind, device, shape, tuple(sorted(how.items()))))
        self.clock.now += self.costs[kind][int(device.split(":")[1])]

    def randn(self, *shape, device, dtype):
        self.log.append(("randn", device, shape, dtype))
        return Tensor(self, device, shape, dtype)

    def empty(self, n, dtype, device="cpu", pin_memory=False):
        self.log.append(("empty", device, n, dtype, pin_memory))
        return Tensor(self, device, (n,), dtype, pinned=pin_memory)

    def ones(self, n, device):
        self.log.append(("ones", device, n))
        return Tensor(self, device, (n,), self.float32, value=1.0)

    def all_reduce(self, tensors):
        total = sum(t.value for t in tensors)
        for t in tensors:
            t.value = total if self.sums_right else 1.0
        self.clock.now += self.costs["all_reduce"]


@pytest.fixture
def torch_with(monkeypatch):
    """Put a stand-in torch in place of ``import torch``, on a stand-in clock; returns a function making it."""
    clock = Clock()
    monkeypatch.setattr(core, "time", clock)

    def make(names, costs, **more):
        fake = FakeTorch(names, costs, clock, **more)
        monkeypatch.setitem(sys.modules, "torch", fake)
        return fake
    return make


def _costs(count, matmul=2e-4, copy=2e-4, host=1e-2, all_reduce=2e-3):
    """Seconds per operation: at these an H100 gives 687.2 TFLOP/s, 2,684.4 GB/s memory, 26.8 GB/s from the host."""
    per = lambda cost: [cost] * count if not isinstance(cost, list) else cost  # noqa: E731
    return {"matmul": per(matmul), "copy": per(copy), "host": per(host), "all_reduce": all_reduce}


def test_without_pytorch_the_figures_are_skipped_saying_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert core.torch_checks(1, [{}]) == ({"framework": None}, [check(
        "framework", "skip", detail="PyTorch is not installed: no throughput figures", required=False)])


def test_two_h100s_each_measured_against_what_an_h100_reaches(torch_with):
    torch = torch_with([H100, H100], _costs(2, matmul=[3e-4, 1e-4]))
    smi = Smi(rows=load(2))
    info, checks = core.torch_checks(2, SMI_ROWS[:2], runner=smi, which=lambda name: f"/bin/{name}")
    assert info == {"framework": "torch", "version": "2.9.1+cu128", "cuda": "12.8", "cudnn": 91002,
                    "nccl": "2.21.5", "device_count": 2}
    slow = "below 75% of what this GPU typically reaches"
    assert checks == [
        check("torch_device_count", PASS, 2, 2, ""),
        check("gpu0.bf16_matmul_tflops", FAIL, 458.1, 791.2, slow),
        check("gpu0.memory_bandwidth_gbps", PASS, 2684.4, 2546.0, ""),
        check("gpu0.host_to_device_gbps", WARN, 26.8, 50.4, slow),
        check("gpu1.bf16_matmul_tflops", PASS, 1374.4, 791.2, ""),
        check("gpu1.memory_bandwidth_gbps", PASS, 2684.4, 2546.0, ""),
        check("gpu1.host_to_device_gbps", WARN, 26.8, 50.4, slow),
        check("gpu0.pcie_link", PASS, "gen5 x16", "gen5 x16", "", required=False),
        check("gpu1.pcie_link", PASS, "gen5 x16", "gen5 x16", "", required=False),
        check("nccl_all_reduce", PASS, 134.2, None, f"bus bandwidth GB/s across 2 GPUs; no typical figure for "
                                                    f"2 x {H100}", required=False),
    ]
    assert smi.calls == [[f"--query-gpu={','.join(core.LOAD_FIELDS)}", "--format=csv"], []]
    made = [entry for entry in torch.log if entry[0] in ("randn", "empty")]
    assert made[:4] == [("randn", "cuda:0", (4096, 4096), "bfloat16"), ("randn", "cuda:0", (4096, 4096), "bfloat16"),
                        ("empty", "cuda:0", 256 * 2**20, "uint8", False),
                        ("empty", "cuda:0", 256 * 2**20, "uint8", False)]
    assert made[4] == ("empty", "cpu", 256 * 2**20, "uint8", True)  # pinned: what a data loader copies from
    copies = [entry for entry in torch.log if entry[0] == "host"]
    assert copies and all(dict(entry[3]) == {"non_blocking": True, "pinned": True} for entry in copies)
    matmuls = [entry for entry in torch.log if entry[0] == "matmul" and entry[1] == "cuda:0"]
    assert len(matmuls) == 13 + 200  # 3 to warm up, 10 timed, then 200 queued while nvidia-smi reads the link
    loaded = [entry for entry in torch.log if entry[0] == "randn"][-2:]
    assert loaded == [("randn", f"cuda:{i}", (4096, 4096), "bfloat16") for i in range(2)]


def test_the_full_tier_multiplies_larger_matrices(torch_with):
    torch = torch_with([H100], _costs(1, matmul=8 * 3e-4))
    _, checks = core.torch_checks(1, SMI_ROWS[:1], quick=False, runner=Smi(rows=load(2)), which=lambda n: n)
    assert checks[1] == check("gpu0.bf16_matmul_tflops", FAIL, 458.1, 791.2,
                              "below 75% of what this GPU typically reaches")
    assert ("randn", "cuda:0", (8192, 8192), "bfloat16") in torch.log


def test_eight_nvswitch_gpus_are_held_to_the_typical_all_reduce(torch_with):
    torch_with([H100] * 8, _costs(8, all_reduce=2e-3))
    _, checks = core.torch_checks(8, SMI_ROWS, runner=Smi(rows=load(8)), which=lambda n: n)
    # 256 MiB each, 5 timed: 268,435,456 B / 2 ms x 2 x 7/8 = 234.9 GB/s, under 75% of the 367 an H100 node reaches
    assert checks[-1] == check("nccl_all_reduce", FAIL, 234.9, 367.0, "below 75% of what this GPU typically reaches")


@pytest.mark.parametrize("name", ["NVIDIA H100 NVL", "NVIDIA H100 PCIe", "NVIDIA L4"])
def test_eight_gpus_without_nvswitch_figures_are_shown_not_judged(torch_with, name):
    torch_with([name] * 8, _costs(8))
    _, checks = core.torch_checks(8, SMI_ROWS, runner=Smi(rows=load(8)), which=lambda n: n)
    assert checks[-1] == check("nccl_all_reduce", PASS, 234.9, None, f"bus bandwidth GB/s across 8 GPUs; no typical "
                                                                     f"figure for 8 x {name}", required=False)


def test_an_a100_pcie_node_has_no_nvswitch_figure_though_its_model_has(torch_with):
    torch_with(["NVIDIA A100 80GB PCIe"] * 8, _costs(8))
    _, checks = core.torch_checks(8, SMI_ROWS, runner=Smi(rows=load(8)), which=lambda n: n)
    assert checks[-1] == check("nccl_all_reduce", PASS, 234.9, None, "bus bandwidth GB/s across 8 GPUs; no typical "
                                                                     "figure for 8 x NVIDIA A100 80GB PCIe",
                               required=False)


def test_the_all_reduce_sums_a_quarter_gib_on_each_gpu(torch_with):
    torch = torch_with([H100] * 2, _costs(2))
    core.all_reduce_check(torch, 2, H100)
    assert [e for e in torch.log if e[0] == "ones"] == [("ones", "cuda:0", 64 * 2**20), ("ones", "cuda:1", 64 * 2**20)]


def test_an_all_reduce_with_wrong_sums_fails(torch_with):
    torch_with([H100] * 2, _costs(2), sums_right=False)
    _, checks = core.torch_checks(2, SMI_ROWS[:2], runner=Smi(rows=load(2)), which=lambda n: n)
    assert checks[-1] == check("nccl_all_reduce", FAIL, 134.2, None, "all-reduce returned wrong sums")


def test_one_gpu_makes_no_all_reduce_and_a_cpu_build_reports_no_nccl(torch_with):
    torch_with([H100], _costs(1), nccl=None)
    info, checks = core.torch_checks(1, SMI_ROWS[:1], runner=Smi(rows=load(2)), which=lambda n: n)
    assert info["nccl"] is None and not [c for c in checks if c["name"] == "nccl_all_reduce"]


def test_a_gpu_with_no_typical_figures_or_link_shows_its_figures_unjudged(torch_with):
    torch_with(["NVIDIA RTX PRO 6000"], _costs(1))
    _, checks = core.torch_checks(1, [], runner=Smi(fail=("no", "")), which=lambda n: n)
    unjudged = "no typical figure for this GPU"
    assert checks == [
        check("torch_device_count", PASS, 1, 1, ""),
        check("gpu0.bf16_matmul_tflops", PASS, 687.2, None, unjudged, required=False),
        check("gpu0.memory_bandwidth_gbps", PASS, 2684.4, None, unjudged, required=False),
        check("gpu0.host_to_device_gbps", PASS, 26.8, None, unjudged, required=False),
    ]  # and nvidia-smi failing under load: no link reading rather than a wrong one


@pytest.mark.parametrize("names,expected,verdict,words", [
    ([], 2, FAIL, "torch sees fewer GPUs than nvidia-smi or the stack promised"),
    ([H100], 2, FAIL, "torch sees fewer GPUs than nvidia-smi or the stack promised"),
    ([H100, H100], 2, PASS, ""),
    ([H100, H100], 0, PASS, ""),
])
def test_torch_seeing_fewer_gpus_than_promised_fails(torch_with, names, expected, verdict, words):
    torch_with(names, _costs(len(names)))
    info, checks = core.torch_checks(expected, SMI_ROWS[:2], runner=Smi(rows=load(2)), which=lambda n: n)
    assert checks[0] == check("torch_device_count", verdict, len(names), 2, words)
    assert info["device_count"] == len(names)
    if not names:
        assert checks == checks[:1]


def test_no_gpu_promised_and_none_seen_fails_as_none_seen(torch_with):
    torch_with([], _costs(0))
    _, checks = core.torch_checks(0, [], runner=Smi(rows=load(2)), which=lambda n: n)
    assert checks == [check("torch_device_count", FAIL, 0, 0, "torch sees fewer GPUs than nvidia-smi or the stack "
                                                               "promised")]


def test_timed_work_counts_only_the_repetitions_after_three_to_warm_up(torch_with):
    torch = torch_with([H100], _costs(1, matmul=0.5))
    a = torch.randn(2, 2, device="cuda:0", dtype=torch.bfloat16)
    assert core._timed(torch, 0, lambda: a @ a, 4) == 2.0
    assert [e[0] for e in torch.log] == ["randn"] + ["matmul"] * 3 + ["synchronize"] + ["matmul"] * 4 + [
        "synchronize"]
    assert torch.log[4] == torch.log[-1] == ("synchronize", 0)


def test_the_sustained_tier_runs_burn_with_this_probe_and_its_tools(torch_with, monkeypatch):
    from gpuready.probe import burn

    torch = torch_with([H100] * 2, _costs(2))
    calls = []
    monkeypatch.setattr(burn, "burn", lambda *args: calls.append(args) or [check("burn", PASS)])
    runner, which = Smi(), (lambda name: name)
    assert core._burn(2, 30.0, runner, which) == [check("burn", PASS)]
    assert calls == [(torch, 2, 30.0, core, runner, which)]


def test_a_probe_shipped_without_burn_says_the_sustained_tier_cannot_run(torch_with, monkeypatch):
    torch_with([H100], _costs(1))
    monkeypatch.setitem(sys.modules, "gpuready.probe.burn", None)  # neither in the package nor beside the file
    monkeypatch.setitem(sys.modules, "burn", None)
    monkeypatch.delattr("gpuready.probe.burn", raising=False)
    assert core._burn(1, 30.0, Smi(), lambda name: name) == [
        check("burn", FAIL, detail="burn.py is not beside the probe: the sustained tier cannot run")]


def test_a_probe_shipped_as_two_files_finds_burn_beside_it(torch_with, monkeypatch, tmp_path):
    torch_with([H100], _costs(1))
    (tmp_path / "burn.py").write_text("def burn(torch, count, seconds, probe, runner, which):\n"
                                      "    return [{'name': 'beside', 'count': count}]\n")
    monkeypatch.setitem(sys.modules, "gpuready.probe.burn", None)
    monkeypatch.delattr("gpuready.probe.burn", raising=False)
    monkeypatch.setitem(sys.modules, "burn", None)
    monkeypatch.delitem(sys.modules, "burn")  # so that the import below is undone after the test
    monkeypatch.syspath_prepend(str(tmp_path))
    assert core._burn(3, 1.0, Smi(), lambda name: name) == [{"name": "beside", "count": 3}]


def test_a_build_whose_cuda_cannot_start_sees_no_gpu_though_nvml_counts_them(torch_with):
    """``torch.cuda.device_count()`` counts through NVML; only ``is_available()`` says CUDA itself started."""
    torch_with([H100] * 2, _costs(2), available=False, cudnn=False)
    info, checks = core.torch_checks(2, SMI_ROWS[:2], runner=Smi(rows=load(2)), which=lambda n: n)
    assert info["device_count"] == 0 and info["cudnn"] is None
    assert checks == [check("torch_device_count", FAIL, 0, 2, "torch sees fewer GPUs than nvidia-smi or the stack "
                                                               "promised")]


@pytest.mark.parametrize("memory,tflops", [(80 * 2**30, 271.4), (40 * 2**30, 252.7)])
def test_an_a100_named_without_its_memory_is_held_to_the_figures_of_its_memory(torch_with, memory, tflops):
    torch_with(["NVIDIA A100-SXM4"], _costs(1), total_memory=memory)
    _, checks = core.torch_checks(1, SMI_ROWS[:1], runner=Smi(rows=load(1)), which=lambda n: n)
    assert checks[1]["name"] == "gpu0.bf16_matmul_tflops" and checks[1]["expected"] == tflops


def test_each_gpus_timing_waits_for_that_gpu(torch_with):
    torch = torch_with([H100] * 2, _costs(2))
    core.torch_checks(2, SMI_ROWS[:2], runner=Smi(rows=load(2)), which=lambda n: n)
    syncs = [entry[1] for entry in torch.log if entry[0] == "synchronize"]
    assert syncs.count(0) == syncs.count(1) == 6  # before and after the timed runs of each of three figures
