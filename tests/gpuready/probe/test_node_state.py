"""What --query-gpu alone does not show: memory others hold, Xid events, NVLink, fabric and recovery state, modes.

Captures under tests/data/nvidia-smi: the real H100 one (590.48.01) and, in constructed/, outputs built in the
formats NVIDIA's tools print (PROVENANCE.md says which); each check is also run live through the replaying
nvidia-smi and dmesg of tests/gpuready/conftest.py.
"""

from __future__ import annotations

import os

import pytest

from gpuready.cli import main
from gpuready.probe import analyse_capture, core
from tests.gpuready.conftest import CAPTURES, H100, h100_idle

MADE = CAPTURES / "constructed"


def _verdicts(checks):
    return {c["name"] if isinstance(c, dict) else c.name: c["verdict"] if isinstance(c, dict) else c.verdict
            for c in checks}


def _held_h100_capture(tmp_path, apps=True):
    """The real H100 capture's idle snapshot with 72,207 of 81,559 MiB held (as measured on a lent H100), and the
    compute process nvidia-smi lists."""
    lines = H100.read_text().splitlines()
    idle = next(i for i, line in enumerate(lines) if line.startswith("2026/07/14 08:12:38"))
    assert ", 81559 MiB, 479 MiB, 0 MiB, 81081 MiB," in lines[idle]
    lines[idle] = lines[idle].replace(", 479 MiB, 0 MiB, 81081 MiB,", ", 479 MiB, 72207 MiB, 8873 MiB,")
    text = "\n".join(lines[:idle + 1]) + "\n"
    if apps:
        text += "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv\n" + \
            "pid, process_name, used_gpu_memory [MiB], gpu_uuid\n" + (MADE / "compute-apps_h100_stray.csv").read_text()
    path = tmp_path / "held.txt"
    path.write_text(text)
    return path


def test_memory_held_by_a_stray_process_fails_and_names_it(tmp_path):
    report = analyse_capture(_held_h100_capture(tmp_path).read_text(), gpus_expected=1)
    held = next(c for c in report.checks if c.name == "gpu0.memory_in_use")
    assert report.verdict == "fail" and held.verdict == "fail"
    assert held.measured == "72207 of 81559 MiB (89%)" and "pid 9021 python3 (72200 MiB)" in held.detail


def test_memory_held_where_gpus_are_shared_on_purpose_warns_and_says_how(tmp_path):
    report = analyse_capture(_held_h100_capture(tmp_path).read_text(), gpus_expected=1, sharing="time-slicing")
    held = next(c for c in report.checks if c.name == "gpu0.memory_in_use")
    assert held.verdict == "warn" and "time-slicing" in held.detail and report.verdict == "warn"


def test_the_cli_reads_a_capture_with_sharing(tmp_path, capsys):
    assert main(["probe", "--nvidia-smi-output", str(_held_h100_capture(tmp_path, apps=False))]) == 1
    assert "pid 11345 ./gpu_burn (15690 MiB)" in capsys.readouterr().out  # from the capture's own table
    assert main(["probe", "--nvidia-smi-output", str(_held_h100_capture(tmp_path)), "--sharing", "mps"]) == 0


@pytest.mark.parametrize("argv,words", [(["--seconds", "60"], "add --full"),
                                        (["--full", "--nvidia-smi-output", str(H100)], "a capture is only read")])
def test_options_that_do_not_go_together_are_a_clear_error(argv, words, capsys):
    assert main(["probe", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_the_real_idle_and_loaded_h100_snapshots(tmp_path):
    """The capture's own table lists gpu_burn and memhog under load: the processes parse, and name who holds the
    memory of the latest snapshot; the idle one passes."""
    apps = core.parse_apps(H100.read_text())
    assert {(a["pid"], a["name"], a["used"]) for a in apps} >= {(11345, "./gpu_burn", 15690),
                                                                 (11327, "/root/tools/memhog", 2566)}
    report = analyse_capture(H100.read_text(), gpus_expected=1)
    held = next(c for c in report.checks if c.name == "gpu0.memory_in_use")  # the latest snapshot: under load
    assert held.verdict == "fail" and "pid 11345 ./gpu_burn (15690 MiB)" in held.detail
    assert _verdicts(analyse_capture(h100_idle(), gpus_expected=1).checks)["gpu0.memory_in_use"] == "pass"


def test_memory_held_live_fails_with_the_process(fake_smi, monkeypatch, tmp_path):
    fake_smi(H100, **{"memory.used": "72207 MiB"})
    apps = tmp_path / "apps.csv"  # the replaying nvidia-smi numbers its GPUs' UUIDs -0, -1...
    apps.write_text((MADE / "compute-apps_h100_stray.csv").read_text().replace("000000000000\n", "000000000000-0\n"))
    monkeypatch.setenv("FAKE_SMI_APPS", str(apps))
    report = core.probe(gpus_expected=1)
    held = next(c for c in report["checks"] if c["name"] == "gpu0.memory_in_use")
    assert report["verdict"] == "fail" and held["verdict"] == "fail" and "python3" in held["detail"]
    fake_smi(H100, **{"memory.used": "72207 MiB", "mig.mode.current": "Enabled"})
    assert _verdicts(core.probe(gpus_expected=1)["checks"])["gpu0.memory_in_use"] == "warn"


@pytest.mark.parametrize("field,value,check,verdict,words", [
    ("fabric.state", "In Progress", "gpu0.fabric", "fail", "nvidia-fabricmanager"),
    ("fabric.status", "Failure", "gpu0.fabric", "fail", "CUDA cannot start"),
    ("gpu_recovery_action", "Drain and Reset", "gpu0.recovery_action", "fail", "drain the node"),
    ("gpu_recovery_action", "Reboot", "gpu0.recovery_action", "fail", "reboot the node"),
    ("ecc.mode.current", "Disabled", "gpu0.ecc_mode", "fail", "nvidia-smi -e 1"),
    ("ecc.mode.pending", "Disabled", "gpu0.ecc_mode_pending", "warn", "next reboot"),
    ("compute_mode", "Prohibited", "gpu0.compute_mode", "fail", "no CUDA context"),
    ("persistence_mode", "Disabled", "gpu0.persistence_mode", "warn", "nvidia-persistenced"),
])
def test_states_that_stop_a_real_job(fake_smi, field, value, check, verdict, words):
    fake_smi(H100, **{field: value})
    report = core.probe(gpus_expected=1)
    found = next(c for c in report["checks"] if c["name"] == check)
    assert found["verdict"] == verdict and words in found["detail"]
    assert report["verdict"] == verdict


def test_a_healthy_h100_reads_fabric_complete_and_no_recovery_action(fake_smi):
    fake_smi(H100)
    verdicts = _verdicts(core.probe(gpus_expected=1)["checks"])
    assert verdicts["gpu0.fabric"] == "pass" and "gpu0.recovery_action" not in verdicts
    assert "gpu0.ecc_mode" not in verdicts and "gpu0.persistence_mode" not in verdicts


def test_ecc_off_warns_on_a_gddr_board():
    checks = core.gpu_checks({"index": 0, "name": "NVIDIA L4", "ecc.mode.current": "Disabled"})
    assert _verdicts(checks)["gpu0.ecc_mode"] == "warn"


def test_an_older_driver_shows_the_fabric_through_nvidia_smi_q(fake_smi, monkeypatch):
    """R535's --query-gpu lacks fabric.state: the probe reads nvidia-smi -q for it."""
    fake_smi(H100)
    monkeypatch.setenv("FAKE_SMI_SET", "fabric.state=;fabric.status=;gpu_recovery_action=")
    monkeypatch.setenv("FAKE_SMI_Q", str(MADE / "q_fabric_in_progress_r535.txt"))
    monkeypatch.setenv("FAKE_SMI_GPUS", "1")
    rows, _, _ = core.run_nvidia_smi()
    rows[0]["pci.bus_id"] = "00000000:00:09.0"
    rows, _ = core.node_state(rows)
    assert rows[0]["fabric.state"] == "In Progress"
    assert _verdicts(core.gpu_checks(rows[0]))["gpu0.fabric"] == "fail"


def test_reset_required_in_nvidia_smi_q():
    q = core.parse_q("GPU 00000000:3B:00.0\n    GPU Reset Status\n        Reset Required    : Yes\n")
    assert q == {"0:3b:00": {"gpu_recovery_action": "Reset"}}


def test_xid_classes_per_gpu_and_for_a_gpu_not_in_this_container(fake_smi, monkeypatch):
    fake_smi(H100)
    monkeypatch.setenv("FAKE_DMESG", str(MADE / "dmesg_xids.txt"))
    checks = {c["name"]: c for c in core.probe(gpus_expected=1)["checks"]}
    assert checks["gpu0.xid"]["verdict"] == "warn" and checks["gpu0.xid"]["measured"].startswith("13 (")
    assert checks["gpu0.xid"]["required"] is False
    other = checks["pci 0:00:0a.xid"]
    assert other["verdict"] == "fail" and "79 (pid=0, name=none, GPU has fallen off the bus.)" == other["measured"]
    assert "drain and reset" in other["detail"]


def test_xid_unreadable_kernel_log_is_said_not_guessed(fake_smi):
    fake_smi(H100)
    check = next(c for c in core.probe(gpus_expected=1)["checks"] if c["name"] == "xid")
    assert check["verdict"] == "skip" and "Operation not permitted" in check["detail"]
    capture = analyse_capture(H100.read_text(), gpus_expected=1)
    assert "holds no kernel log" in next(c for c in capture.checks if c.name == "xid").detail


def test_a_new_xid_under_load_fails_even_an_application_one():
    before = (MADE / "dmesg_none.txt").read_text()
    after = (MADE / "dmesg_after_load.txt").read_text()
    rows = [{"index": 0, "pci.bus_id": "00000000:00:09.0"}]
    assert _verdicts(core.xid_checks(rows, before)) == {"gpu0.xid": "pass"}
    assert _verdicts(core.xid_checks(rows, after, before=before)) == {"gpu0.xid_under_load": "fail"}
    assert _verdicts(core.xid_checks(rows, after)) == {"gpu0.xid": "warn"}


def test_nvlink_down_and_errors(fake_smi, monkeypatch):
    fake_smi(H100, gpus=2)
    monkeypatch.setenv("FAKE_SMI_NVLINK_STATUS", str(MADE / "nvlink-status_8x_h100_one_down.txt"))
    monkeypatch.setenv("FAKE_SMI_NVLINK_ERRORS", str(MADE / "nvlink-errors_before.txt"))
    checks = {c["name"]: c for c in core.probe(gpus_expected=2)["checks"]}
    assert checks["gpu0.nvlink"]["verdict"] == "fail" and checks["gpu0.nvlink"]["measured"] == "3 of 4 links up"
    assert checks["gpu1.nvlink"]["verdict"] == "pass"
    assert checks["gpu0.nvlink_errors"]["verdict"] == "warn" and "link 1 Replay Errors 2" in \
        checks["gpu0.nvlink_errors"]["measured"]


def test_nvlink_errors_rising_under_load_fail():
    rows = [{"index": 0}]
    before = core.parse_nvlink((MADE / "nvlink-errors_before.txt").read_text() +
                               (MADE / "nvlink-status_8x_h100_one_down.txt").read_text())
    after = core.parse_nvlink((MADE / "nvlink-errors_after.txt").read_text() +
                              (MADE / "nvlink-status_8x_h100_one_down.txt").read_text())
    rose = {c["name"]: c for c in core.nvlink_checks(rows, after, before=before)}["gpu0.nvlink_errors_under_load"]
    assert rose["verdict"] == "fail" and rose["measured"] == "link 0 CRC Errors 17"


def test_every_link_down_on_a_multi_gpu_node_fails_but_a_single_gpu_without_links_is_left_alone():
    down = core.parse_nvlink("GPU 0: X (UUID: a)\n\t Link 0: <inactive>\n\t Link 1: <inactive>\n")
    assert _verdicts(core.nvlink_checks([{"index": 0}, {"index": 1}], down)) == {"gpu0.nvlink": "fail"}
    assert core.nvlink_checks([{"index": 0}], down) == []
    assert core.nvlink_checks([{"index": 0}], {}) == []


def test_no_check_is_reported_twice_when_the_link_is_read_under_load(fake_smi, monkeypatch):
    fake_smi(H100)
    load = core.check("gpu0.pcie_link", core.PASS, "gen5 x16", "gen5 x16")
    monkeypatch.setattr(core, "torch_checks", lambda *a, **k: ({"framework": "torch", "device_count": 0}, [load]))
    names = [c["name"] for c in core.probe(gpus_expected=1)["checks"]]
    assert names.count("gpu0.pcie_link") == 1 and len(names) == len(set(names))


def test_host_to_device_typical_from_the_link_both_ends_support():
    assert core.host_to_device_typical({"pcie.link.gen.max": 5, "pcie.link.width.max": 16}) == \
        pytest.approx(3.938 * 16 * 0.8)
    assert core.host_to_device_typical({"pcie.link.gen.max": 5, "pcie.link.gen.hostmax": 4,
                                        "pcie.link.width.max": 16}) == pytest.approx(1.969 * 16 * 0.8)
    assert core.host_to_device_typical({"pcie.link.gen.max": None, "pcie.link.width.max": 16}) is None
    slow = core._figure("gpu0.host_to_device_gbps", 20.0, 50.4, soft=True)
    assert slow["verdict"] == "warn"  # the host shapes it as much as the GPU: never a failure


def test_the_kernel_log_is_not_read_where_dmesg_is_refused_and_kmsg_absent(monkeypatch, tmp_path):
    monkeypatch.setattr(core, "KMSG", str(tmp_path / "absent"))
    log, why = core.read_kernel_log(which=lambda name: None)
    assert log is None and "dmesg is not installed" in why and "absent" in why
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,0,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    monkeypatch.setattr(core, "KMSG", str(kmsg))
    log, why = core.read_kernel_log(which=lambda name: None)
    assert why is None and core.parse_xids(log) == [("0:3b:00", 79, "pid=0, GPU has fallen off the bus.")]
    assert os.path.exists(kmsg)


CATALOG_NAMES = {
    ("A10", "24.0"): "NVIDIA A10", ("A100", "40.0"): "NVIDIA A100-SXM4-40GB",
    ("A100", "80.0"): "NVIDIA A100-SXM4-80GB", ("A10G", "24.0"): "NVIDIA A10G",
    ("B200", "180.0"): "NVIDIA B200", ("B300", "288.0"): "NVIDIA B300 SXM6 AC",
    ("H100", "80.0"): "NVIDIA H100 80GB HBM3", ("H100", "94.0"): "NVIDIA H100 NVL", ("H200", "141.0"): "NVIDIA H200",
    ("L4", "24.0"): "NVIDIA L4", ("L40S", "48.0"): "NVIDIA L40S",
    ("T4", "16.0"): "Tesla T4", ("T4g", "16.0"): "NVIDIA T4G", ("V100", "16.0"): "Tesla V100-SXM2-16GB",
    ("V100", "32.0"): "Tesla V100-SXM2-32GB",
}
"""The name nvidia-smi gives each GPU of the catalog (model, memory size GB as gpu_models.csv has it)."""


NO_TYPICAL_FIGURES = {"GB200", "GB300", "RTX PRO Server 6000", "RTX PRO 4500"}
"""Catalog GPUs with no sourced peak figures in tests/data/gpu-specs.md yet: the probe shows what it measures on them
without a verdict (:func:`core.expected_for` is None for a GPU it does not know)."""


def test_every_catalog_gpu_has_typical_figures_or_is_listed_as_having_none():
    import csv

    from tests.conftest import ROOT

    with open(ROOT / "components" / "catalog" / "gpu_models.csv") as f:
        models = {(r["gpu_model"], r["gpu_memory_gb"]) for r in csv.DictReader(f)}
    assert {m for m, _ in models} >= NO_TYPICAL_FIGURES
    for model in NO_TYPICAL_FIGURES:  # no verdict rather than another model's figures
        assert core.model_of(f"NVIDIA {model}") is None and core.model_of(f"NVIDIA {model} Blackwell") is None, model
    models = {(m, size) for m, size in models if m not in NO_TYPICAL_FIGURES}
    assert models <= set(CATALOG_NAMES), f"name the new GPUs in CATALOG_NAMES: {sorted(models - set(CATALOG_NAMES))}"
    for (model, _), name in CATALOG_NAMES.items():
        key = core.model_of(name)
        assert key and key.split()[0].upper() == model.upper(), (name, key)
        matmul, share, memory, memory_share = core.EXPECTED[key]
        assert memory and 0.5 < memory_share <= 1, key  # every model has a memory figure
        assert (matmul is None and share == 0) or 0.5 < share <= 1, key
    listed_without_matmul = {k for k, v in core.EXPECTED.items() if v[0] is None}
    assert listed_without_matmul == {"V100", "T4", "T4G", "A10", "B300"}


@pytest.mark.parametrize("name,model", [("NVIDIA L40", None), ("NVIDIA RTX A6000", None),
                                        ("NVIDIA A100 80GB PCIe", "A100 80GB"), ("NVIDIA H200 NVL", "H200 NVL")])
def test_models_are_matched_by_whole_words(name, model):
    assert core.model_of(name) == model


def test_a_one_rank_nccl_run_skips_what_crosses_no_link():
    from gpuready.probe import nccl

    report = {"version": 1, "nodes": 1, "world_size": 1, "hosts": ["a"], "correct": True, "bytes": 2**30,
              "algbw_gbps": 10.0, "busbw_gbps": 0.0, "transport": "socket", "error": None}
    found = {c["name"]: c for c in nccl.checks(report, nodes=1, expected_transport=None)}
    assert found["nccl_bus_bandwidth"]["verdict"] == "skip" and "nothing crosses a link" in \
        found["nccl_bus_bandwidth"]["detail"]
    assert found["nccl_transport"]["verdict"] == "skip"
    assert nccl.checks(report, nodes=1, expected_transport=None)[1]["verdict"] == "pass"  # the sums still count


def test_xids_and_nvlink_errors_that_appear_while_the_probe_loads_the_gpus_fail(fake_smi, monkeypatch):
    """The probe reads the kernel log and the NVLink counters before and after its load (PyTorch's part, stood in
    for here: the CPU build sees no GPU); what appeared in between fails."""
    fake_smi(H100)
    monkeypatch.setenv("FAKE_DMESG", os.pathsep.join(str(MADE / f) for f in ("dmesg_none.txt",
                                                                             "dmesg_after_load.txt")))
    monkeypatch.setenv("FAKE_SMI_NVLINK_STATUS", str(MADE / "nvlink-status_8x_h100_one_down.txt"))
    monkeypatch.setenv("FAKE_SMI_NVLINK_ERRORS", os.pathsep.join(str(MADE / f) for f in ("nvlink-errors_before.txt",
                                                                                        "nvlink-errors_after.txt")))
    monkeypatch.setattr(core, "torch_checks", lambda *a, **k: ({"framework": "torch", "device_count": 1}, []))
    report = core.probe(gpus_expected=1)
    names = [c["name"] for c in report["checks"]]
    assert len(names) == len(set(names))
    checks = [c for c in report["checks"] if c["name"].startswith(("gpu0.xid", "gpu0.nvlink_errors"))]
    assert [(c["name"], c["verdict"]) for c in checks] == [
        ("gpu0.nvlink_errors", "warn"), ("gpu0.xid", "pass"),  # before: counters since the driver loaded, no Xid
        ("gpu0.nvlink_errors_under_load", "fail"), ("gpu0.xid_under_load", "fail")]  # CRC errors rose, Xid 31
    assert checks[2]["measured"] == "link 0 CRC Errors 17" and checks[3]["detail"].startswith("Xid under load")


def test_the_known_query_fields_are_the_real_drivers():
    import re

    from gpuready import probe

    listed = {n for line in (CAPTURES / "help-query-gpu_driver-590.48.01.txt").read_text().splitlines()
              if line.startswith('"') for n in re.findall(r'"([\w.]+)"', line)}
    newer = {n for line in (CAPTURES / "l40s_driver-595.80.txt").read_text().splitlines()
             if "--query-gpu=" in line for n in line.split("--query-gpu=")[1].split()[0].split(",")}
    assert probe.QUERY_FAMILIES == {n.split(".")[0] for n in listed | newer}
    assert {f.split(".")[0] for f in core.QUERY_FIELDS} <= probe.QUERY_FAMILIES


@pytest.mark.parametrize("text,words", [
    ("name,age\nalice,30\nbob,41\n", "(age)"),
    ("name, colour, age\nalice, red, 30\n", "(age, colour)"),
    ("index, name\nzero, NVIDIA H100 80GB HBM3\n", "an index that is not a number"),
])
def test_a_csv_of_another_tool_is_a_clear_error(tmp_path, capsys, text, words):
    capture = tmp_path / "people.csv"
    capture.write_text(text)
    assert main(["probe", "--nvidia-smi-output", str(capture)]) == 2
    err = capsys.readouterr().err
    assert words in err and "another tool's" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["probe", "--nvidia-smi-output", str(H100)],
                                     ["plan", "--stack", "aws-batch"]])
def test_junit_into_a_directory_that_does_not_exist_is_refused_before_any_work(tmp_path, capsys, command):
    missing = tmp_path / "no-such-dir" / "out.xml"
    assert main([*command, "--junit", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and str(missing.parent) in err and "Traceback" not in err
    assert main([*command, "--junit", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


# --- guards: each test below fails when the rule it names is weakened (issue 29's audit) --------------------------

def _holding(tmp_path, used_mib, apps=""):
    """The real H100 capture's idle snapshot with ``used_mib`` of its 81,559 MiB held, and ``apps`` (rows of
    ``--query-compute-apps``) as nvidia-smi lists them."""
    text = _held_h100_capture(tmp_path, apps=False).read_text()
    text = text.replace(", 72207 MiB, 8873 MiB,", f", {used_mib} MiB, {81559 - 479 - used_mib} MiB,")
    if apps:
        text += "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv\n" + \
            "pid, process_name, used_gpu_memory [MiB], gpu_uuid\n" + apps
    return text


def test_a_tenth_of_the_memory_held_fails_and_a_driver_few_mib_pass(tmp_path):
    """8 GiB held by another job leaves the next one short: it fails; the few MiB a driver holds on an idle GPU
    pass. (The limit is 5% of the GPU's memory: 4,077 MiB on an H100.)"""
    held = next(c for c in analyse_capture(_holding(tmp_path, 8192), gpus_expected=1).checks
                if c.name == "gpu0.memory_in_use")
    assert held.verdict == "fail" and held.measured == "8192 of 81559 MiB (10%)" and held.expected == "<= 5%"
    idle = analyse_capture(_holding(tmp_path, 4000), gpus_expected=1)
    assert _verdicts(idle.checks)["gpu0.memory_in_use"] == "pass"


def test_memory_held_by_the_mps_server_warns_without_being_told_gpus_are_shared(tmp_path):
    """An MPS control daemon's server holds memory for its clients on purpose: the probe sees it by name."""
    mps = "4411, nvidia-cuda-mps-server, 30 MiB, GPU-00000000-0000-0000-0000-000000000000\n"
    report = analyse_capture(_holding(tmp_path, 20480, mps), gpus_expected=1)
    held = next(c for c in report.checks if c.name == "gpu0.memory_in_use")
    assert held.verdict == "warn" and "GPUs are shared (mps)" in held.detail and report.verdict == "warn"
    stray = mps.replace("nvidia-cuda-mps-server", "python3")
    assert _verdicts(analyse_capture(_holding(tmp_path, 20480, stray), gpus_expected=1).checks)[
        "gpu0.memory_in_use"] == "fail"


@pytest.mark.parametrize("xid,what", [
    (48, "double-bit ECC error"), (61, "internal micro-controller breakpoint"),
    (62, "internal micro-controller halt"), (63, "ECC page retirement or row remapping"),
    (64, "ECC page retirement or row remapping failure"), (74, "NVLink error"), (79, "fallen off the bus"),
    (92, "high single-bit ECC error rate"), (94, "contained ECC error"), (95, "uncontained ECC error"),
    (119, "GSP RPC timeout"), (120, "GSP error"), (140, "unrecovered ECC error"),
])
def test_each_hardware_xid_of_nvidias_catalog_fails_and_says_drain(xid, what):
    log = f"[ 9311.090417] NVRM: Xid (PCI:0000:00:09): {xid}, pid=0, name=none, {what}.\n"
    (found,) = core.xid_checks([{"index": 0, "pci.bus_id": "00000000:00:09.0"}], log)
    assert (found["name"], found["verdict"], found["required"]) == ("gpu0.xid", "fail", True)
    assert found["measured"].startswith(f"{xid} (") and found["detail"] == "hardware Xid since boot: drain and reset"


@pytest.mark.parametrize("xid", [13, 31, 43, 45])
def test_an_applications_xid_warns_the_gpu_is_fine(xid):
    log = f"[ 8123.442100] NVRM: Xid (PCI:0000:00:09): {xid}, pid=4182, name=python3, an application's fault\n"
    (found,) = core.xid_checks([{"index": 0, "pci.bus_id": "00000000:00:09.0"}], log)
    assert (found["verdict"], found["required"], found["detail"]) == ("warn", False, "application Xids since boot")


def test_an_nvlink_counter_that_falls_under_load_is_not_a_rise():
    """A counter lower after the load than before (the driver reloaded, or someone reset the counters) is not an
    error that rose; a counter that did rise beside it is reported alone, by how much."""
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n\t Link 0: 26.562 GB/s\n\t Link 1: 26.562 GB/s\n"
    before = core.parse_nvlink(text + "\t Link 0: CRC Errors: 17\n\t Link 1: Replay Errors: 2\n")
    fell = core.parse_nvlink(text + "\t Link 0: CRC Errors: 0\n\t Link 1: Replay Errors: 2\n")
    assert core.nvlink_checks([{"index": 0}], fell, before=before) == []
    rose = core.parse_nvlink(text + "\t Link 0: CRC Errors: 0\n\t Link 1: Replay Errors: 5\n")
    (found,) = core.nvlink_checks([{"index": 0}], rose, before=before)
    assert (found["verdict"], found["measured"]) == ("fail", "link 1 Replay Errors 3")


@pytest.mark.parametrize("margin,verdict", [(3, "warn"), (4.5, "warn"), (5, "pass"), (12, "pass")])
def test_a_gpu_a_few_degrees_from_thermal_slowdown_warns(margin, verdict):
    """``temperature.gpu.tlimit``: degrees left before the GPU slows itself; under 5 C the next load throttles it."""
    checks = core.gpu_checks({"index": 0, "temperature.gpu.tlimit": margin})
    (found,) = [c for c in checks if c["name"] == "gpu0.thermal_margin"]
    assert (found["verdict"], found["measured"], found["expected"]) == (verdict, margin, ">= 5 C")
    assert found["detail"] == ("close to thermal slowdown" if verdict == "warn" else "") and not found["required"]
    assert core.verdict(checks) == verdict


def test_memory_is_judged_per_gpu_past_one_without_figures_and_names_processes_by_bus_id():
    """A GPU whose memory reads N/A (or 0 MiB in all) is passed over, not the GPUs after it; a process listed by
    ``gpu_bus_id`` (``--query-compute-apps=pid,process_name,used_memory,gpu_bus_id``) is named on its GPU."""
    rows = [{"index": 0, "memory.used": None, "memory.total": 81559},
            {"index": 1, "memory.used": 0, "memory.total": 0},
            {"index": 2, "memory.used": 40960, "memory.total": 81559, "pci.bus_id": "00000000:3B:00.0"}]
    apps = core.parse_apps("pid, process_name, used_gpu_memory [MiB], gpu_bus_id\n"
                           "9021, python3, 40950 MiB, 00000000:3B:00.0\n")
    (held,) = core.memory_checks(rows, apps)
    assert (held["name"], held["verdict"]) == ("gpu2.memory_in_use", "fail")
    assert held["detail"] == "held by others: pid 9021 python3 (40950 MiB); stop it or drain the node"
