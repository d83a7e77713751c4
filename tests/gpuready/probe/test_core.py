"""The probe's parsing on real nvidia-smi outputs, and its verdicts on faults: no nvidia-smi, no driver, zero GPUs,
fewer GPUs than promised, ECC errors, throttling, fields an older driver does not know."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpuready.probe import analyse_capture, core
from tests.conftest import DATA
from tests.gpuready.conftest import CAPTURES, H100, h100_idle
L40S = CAPTURES / "l40s_driver-595.80.txt"
H200_MIG = CAPTURES / "h200-mig-enabled_constructed.txt"


def _verdicts(report):
    return {c["name"]: c["verdict"] for c in report["checks"]}


def test_h100_capture_parses_with_units_and_header():
    rows = core.parse_query_csv(H100.read_text())
    assert len(rows) == 2  # idle and load; the retired-pages query is not a GPU
    idle, load = rows
    assert idle["name"] == "NVIDIA H100 80GB HBM3" and idle["memory.total"] == 81559
    assert idle["driver_version"] == "590.48.01" and idle["serial"] == "0000000000000"
    assert idle["clocks_event_reasons.active"] == 0x1 and load["clocks_event_reasons.active"] == 0
    assert idle["pcie.link.gen.max"] == 5 and idle["vgpu_driver_capability.heterogenous_multivGPU"] is None
    assert core.parse_versions(H100.read_text()) == {"driver": "590.48.01", "cuda": "13.1"}


def test_l40s_capture_keeps_versions_as_text():
    (idle, _) = core.parse_query_csv(L40S.read_text())
    assert idle["driver_version"] == "595.80" and idle["name"] == "NVIDIA L40S"
    assert core.parse_versions(L40S.read_text())["cuda"] == "13.2"


def test_r535_table_and_legacy_markers():
    text = (CAPTURES / "h100-80gb-hbm3_driver-535_table_plus_nvcc.txt").read_text()
    assert core.parse_versions(text) == {"driver": "535.161.08", "cuda": "12.2"}
    rows = core.parse_query_csv((CAPTURES / "legacy_na_vs_not_supported.txt").read_text())
    assert rows[0]["fan.speed"] is None and rows[1]["fan.speed"] is None  # [N/A] and [Not Supported]
    assert rows[2]["utilization.gpu"] is None and rows[2]["gpu_name"] == "GeForce GTX 770"
    assert rows[2]["fan.speed"] == 52  # "52 %"


def test_r610_header_names():
    header = "| NVIDIA-SMI 610.10   KMD Version: 610.10   CUDA UMD Version: 13.4 |"
    assert core.parse_versions(header) == {"driver": "610.10", "cuda": "13.4"}


def test_noheader_nounits_needs_the_field_list():
    text = "0, NVIDIA L4, 23034, 0x0000000000000008\n"
    (row,) = core.parse_query_csv(text, ["index", "name", "memory.total", "clocks_event_reasons.active"])
    assert row["memory.total"] == 23034 and core.active_reasons(row["clocks_event_reasons.active"]) == ["hw_slowdown"]


def test_capture_analysis_passes_healthy_gpus_and_counts_gpus_not_snapshots():
    report = analyse_capture(h100_idle(), gpus_expected=1)
    assert report.verdict == "pass"
    assert [c.measured for c in report.checks if c.name == "gpu_count"] == [1]
    assert analyse_capture(H100.read_text(), gpus_expected=8).verdict == "fail"


def test_several_snapshots_of_one_gpu_are_one_set_of_rows_judged_on_the_latest():
    """The real capture: idle at 08:12:38, then under load at 08:12:53 (46 then 26 degrees of thermal margin)."""
    report = analyse_capture(H100.read_text(), gpus_expected=1)
    names = [c.name for c in report.checks]
    assert not [n for n in names if "#" in n] and len(names) == len(set(names))
    checks = {c.name: c for c in report.checks}
    assert checks["gpu_count"].measured == 1 and "latest of its 2 snapshots" in checks["gpu_count"].detail
    assert checks["gpu0.thermal_margin"].measured == 26  # the loaded snapshot's, as memory's below
    assert checks["gpu0.memory_in_use"].measured == "19818 of 81559 MiB (24%)"
    assert [g["timestamp"] for g in report.gpus] == ["2026/07/14 08:12:53.353"]


def test_probe_on_a_replayed_h100(fake_smi):
    fake_smi(H100, row=0)
    report = core.probe(gpus_expected=1)
    verdicts = _verdicts(report)
    assert report["verdict"] == "pass", report["checks"]
    assert verdicts["nvidia_driver"] == "pass" and verdicts["gpu0.ecc_uncorrected"] == "pass"
    assert report["versions"] == {"driver": "590.48.01", "cuda": "13.1"}
    assert report["gpus"][0]["memory.total"] == 81559


def test_a_gpu_with_mig_on_carries_the_instances_nvidia_smi_lists(fake_smi):
    fake_smi(H200_MIG)
    gpu = core.probe()["gpus"][0]
    assert gpu["mig.mode.current"] == "Enabled"
    assert gpu["mig.devices"] == [{"profile": "3g.71gb", "uuid": "MIG-00000000-0000-0000-0000-000000000001"},
                                  {"profile": "3g.71gb", "uuid": "MIG-00000000-0000-0000-0000-000000000002"}]
    fake_smi(H100)
    assert "mig.devices" not in core.probe()["gpus"][0]  # MIG off: no instances, and no nvidia-smi -L run


def test_mig_listing_matches_gpus_by_uuid_then_index():
    listing = ("GPU 0: NVIDIA H200 (UUID: GPU-a)\n  MIG 1g.18gb     Device  0: (UUID: MIG-1)\n"
               "GPU 1: NVIDIA H200 (UUID: GPU-b)\n"
               "  MIG 7g.141gb    Device  0: (UUID: MIG-2)\n")
    devices = core.parse_mig_devices(listing)
    rows = [{"index": 0, "uuid": "GPU-b", "mig.mode.current": "Enabled"},
            {"index": 1, "mig.mode.current": "Enabled"}, {"index": 0, "mig.mode.current": "Disabled"}]
    assert [r.get("mig.devices") for r in core.with_mig_devices(rows, devices)] == [
        [{"profile": "7g.141gb", "uuid": "MIG-2"}], [{"profile": "7g.141gb", "uuid": "MIG-2"}], None]


def test_fields_the_driver_does_not_know_are_dropped(fake_smi):
    fake_smi(H100)  # a field newer than the capture's driver: the probe asks for it and must carry on without it
    rows, versions, error = core.run_nvidia_smi((*core.QUERY_FIELDS, "gpu.field_of_a_later_driver"))
    assert error is None and "gpu.field_of_a_later_driver" not in rows[0]
    assert rows[0]["name"] == "NVIDIA H100 80GB HBM3"


def test_every_field_asked_for_comes_back_under_the_name_asked_for():
    """nvidia-smi heads each column with the field's canonical name (``clocks.sm`` comes back as
    ``clocks.current.sm``): the probe asks by those names, or it would never find the values it asked for."""
    from gpuready.probe import burn

    for capture in (H100, CAPTURES / "l40s_driver-595.80.txt"):
        rows = core.parse_query_csv(capture.read_text())
        asked = set(core.QUERY_FIELDS) | set(burn.BURN_FIELDS)
        assert asked - set(rows[0]) == set(), capture.name
        assert isinstance(rows[0]["clocks.current.sm"], int)


def test_renamed_throttle_reasons_on_older_drivers(fake_smi, tmp_path):
    old = tmp_path / "old.txt"
    old.write_text("$ nvidia-smi --query-gpu=index,name,clocks_throttle_reasons.active --format=csv\n"
                   "index, name, clocks_throttle_reasons.active\n0, Tesla T4, 0x0000000000000040\n")
    fake_smi(old)
    rows, _, error = core.run_nvidia_smi(fields=("index", "name", "clocks_event_reasons.active"))
    assert error is None and rows[0]["clocks_throttle_reasons.active"] == 0x40
    assert _verdicts({"checks": core.gpu_checks(rows[0])})["gpu0.clock_event_reasons"] == "fail"


def test_no_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    report = core.probe()
    assert report["verdict"] == "fail" and "no NVIDIA driver" in report["checks"][0]["detail"]


def test_driver_not_loaded(fake_smi, monkeypatch):
    fake_smi(H100)
    monkeypatch.setenv("FAKE_SMI_FAIL", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                        "driver. Make sure that the latest NVIDIA driver is installed and running.")
    report = core.probe()
    assert report["verdict"] == "fail" and "couldn't communicate" in report["checks"][0]["detail"]


def test_zero_gpus_and_fewer_than_promised(fake_smi):
    fake_smi(H100, gpus=0)
    assert _verdicts(core.probe())["gpu_count"] == "fail"
    fake_smi(H100, gpus=2)
    report = core.probe(gpus_expected=4)
    check = next(c for c in report["checks"] if c["name"] == "gpu_count")
    assert (check["verdict"], check["measured"], check["expected"]) == ("fail", 2, 4)


def test_ecc_errors_and_remapping_fail(fake_smi):
    fake_smi(H100, **{"ecc.errors.uncorrected.volatile.total": "3", "remapped_rows.failure": "Yes"})
    verdicts = _verdicts(core.probe())
    assert verdicts["gpu0.ecc_uncorrected"] == "fail" and verdicts["gpu0.row_remap_failure"] == "fail"


def test_thermal_slowdown_fails_and_power_cap_warns(fake_smi):
    fake_smi(H100, **{"clocks_event_reasons.active": "0x0000000000000040"})
    report = core.probe()
    assert report["verdict"] == "fail" and _verdicts(report)["gpu0.clock_event_reasons"] == "fail"
    fake_smi(H100, **{"clocks_event_reasons.active": "0x0000000000000004"})
    assert _verdicts(core.probe())["gpu0.clock_event_reasons"] == "warn"


def test_degraded_pcie_link_under_load_warns(fake_smi):
    fake_smi(H100, row=0, **{"pcie.link.gen.current": "3", "utilization.gpu": "100 %"})
    assert _verdicts(core.probe())["gpu0.pcie_link"] == "warn"


def test_lost_gpu(fake_smi):
    fake_smi(H100, **{"temperature.gpu": "[GPU is lost]"})
    assert _verdicts(core.probe())["gpu0.lost"] == "fail"


def test_environment_that_hides_gpus(fake_smi, monkeypatch):
    fake_smi(H100)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("NVIDIA_DRIVER_CAPABILITIES", "utility")
    verdicts = _verdicts(core.probe())
    assert verdicts["cuda_visible_devices"] == "fail" and verdicts["nvidia_driver_capabilities"] == "fail"


@pytest.mark.parametrize("driver,built,verdict", [("12.2", "12.4", "warn"), ("12.2", "13.0", "fail"),
                                                  ("13.1", "12.4", "pass"), ("12.4", "12.4", "pass")])
def test_framework_cuda_against_the_driver(driver, built, verdict):
    (found,) = core.compatibility_checks(driver, "torch", built)
    assert found["verdict"] == verdict


def test_report_line_round_trips_through_logs():
    report = core.probe()
    logs = f"starting\n{core.report_line(report)}\ndone\n"
    assert core.find_report(logs) == __import__("json").loads(core.report_line(report)[len(core.REPORT_MARKER):])
    assert core.find_report("no report here") is None


def test_expected_figures_follow_gpu_specs():
    specs = (DATA / "gpu-specs.md").read_text()
    assert "| H100 SXM | 989 |" in specs and "| L4 | 121 |" in specs and "| L40S | 362 |" in specs
    assert core.expected_for("NVIDIA H100 80GB HBM3") == core.EXPECTED["H100 SXM"]
    assert core.expected_for("NVIDIA H100 PCIe") == core.EXPECTED["H100 PCIe"]
    assert core.expected_for("NVIDIA L40S") == core.EXPECTED["L40S"]
    assert core.expected_for("NVIDIA A100-SXM4-80GB", 81920) == core.EXPECTED["A100 80GB"]
    assert core.expected_for("NVIDIA A100-SXM4-40GB", 40960) == core.EXPECTED["A100 40GB"]
    assert core.expected_for("NVIDIA L4") == core.EXPECTED["L4"] and core.expected_for("Tesla T4") == core.EXPECTED["T4"]
    assert core.expected_for("NVIDIA A10G") == core.EXPECTED["A10G"] and core.expected_for("NVIDIA RTX A6000") is None


def test_the_probe_file_runs_alone_with_only_the_standard_library(tmp_path):
    """What jobs run: the core file copied anywhere, no gpuready installed."""
    copy = tmp_path / "probe.py"
    copy.write_text(open(core.__file__).read())
    done = subprocess.run([sys.executable, "-I", "-S", str(copy)], capture_output=True, text=True,
                          env={"PATH": str(tmp_path)})
    assert done.returncode == 1
    assert core.find_report(done.stdout)["verdict"] == "fail"


def test_pcie_under_load_reads_the_link_while_the_gpus_work(fake_smi):
    """With a stand-in for torch that records the queued work: the link is judged as under load."""
    fake_smi(H100, row=0, **{"pcie.link.gen.current": "4"})
    queued = []

    class Tensor:
        def __matmul__(self, other):
            queued.append(1)
            return self

    class FakeTorch:
        bfloat16 = "bf16"

        class cuda:
            @staticmethod
            def synchronize():
                queued.append("sync")

        @staticmethod
        def randn(*shape, device, dtype):
            return Tensor()

    (link,) = core.pcie_under_load(FakeTorch, 1)
    assert link["verdict"] == "warn" and link["measured"] == "gen4 x16" and link["expected"] == "gen5 x16"
    assert queued[-1] == "sync" and len(queued) == 201


@pytest.mark.parametrize("name,expected", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA B200", "B200"),
])
def test_nvl_gpus_are_held_to_their_own_figures(name, expected):
    """An H100 NVL (Azure NC H100 v5) peaks at 835 dense BF16 TFLOP/s: held to the SXM's 989 it would fail."""
    assert core.expected_for(name) == core.EXPECTED[expected]
