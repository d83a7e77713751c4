"""Each of the probe's check and parse functions, called directly, with its whole answer on each branch: the check's
name, verdict, figures, expected value and the words a user reads, exactly. In-process and fast (no nvidia-smi,
stand-in or real): the tests a mutation run leans on (bench/mutation.py)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import types

import pytest

from gpuready.probe import core
from gpuready.probe.core import FAIL, PASS, SKIP, WARN, check
from tests.gpuready.conftest import CAPTURES

# --- one GPU's --query-gpu row --------------------------------------------------------------------------------------


def test_a_gpu_failing_every_query_check_says_each_fault_and_its_fix():
    row = {"index": 3, "ecc.errors.uncorrected.volatile.total": 1, "remapped_rows.failure": "Yes",
           "remapped_rows.pending": "Yes", "retired_pages.pending": "Yes",
           "clocks_event_reasons.active": 0x1 | 0x4 | 0x40, "pcie.link.gen.current": 4, "pcie.link.gen.max": 5,
           "pcie.link.width.current": 16, "pcie.link.width.max": 16, "utilization.gpu": 50,
           "temperature.gpu.tlimit": 4.5}
    assert core.gpu_checks(row) == [
        check("gpu3.ecc_uncorrected", FAIL, 1, 0, "uncorrected ECC errors since the driver loaded: results may be "
                                                  "wrong"),
        check("gpu3.row_remap_failure", FAIL, "Yes", "No", "row remapping failed: replace the GPU"),
        check("gpu3.row_remap_pending", WARN, "Yes", "No", "a GPU reset is needed to remap rows"),
        check("gpu3.retired_pages_pending", WARN, "Yes", "No", "pages wait for retirement: reset"),
        check("gpu3.clock_event_reasons", FAIL, "sw_power_cap,hw_thermal_slowdown", "none",
              "clocks held down by sw_power_cap, hw_thermal_slowdown"),
        check("gpu3.pcie_link", WARN, "gen4 x16", "gen5 x16", "link below its maximum under load", required=False),
        check("gpu3.thermal_margin", WARN, 4.5, ">= 5 C", "close to thermal slowdown", required=False),
    ]


def test_a_healthy_idle_gpu_passes_each_check_without_words():
    row = {"index": 0, "ecc.errors.uncorrected.volatile.total": 0, "remapped_rows.failure": "No",
           "remapped_rows.pending": "No", "retired_pages.pending": "No", "clocks_event_reasons.active": 0x1,
           "pcie.link.gen.current": 5, "pcie.link.gen.max": 5, "pcie.link.width.current": 16,
           "pcie.link.width.max": 16, "utilization.gpu": 99, "temperature.gpu.tlimit": 5}
    assert core.gpu_checks(row) == [
        check("gpu0.ecc_uncorrected", PASS, 0, 0, ""),
        check("gpu0.clock_event_reasons", PASS, "none", "none"),
        check("gpu0.pcie_link", PASS, "gen5 x16", "gen5 x16", "", required=False),
        check("gpu0.thermal_margin", PASS, 5, ">= 5 C", "", required=False),
    ]


@pytest.mark.parametrize("link,utilization,verdict,words", [
    ((5, 5, 8, 16), 50, WARN, "link below its maximum under load"),  # narrower, busy
    ((4, 5, 16, 16), 49.9, PASS, "idle GPUs lower their link speed"),  # slower, idle
    ((4, 5, 16, 16), None, PASS, "idle GPUs lower their link speed"),  # not said: not judged busy
    ((5, 5, 16, 16), 100, PASS, ""),
])
def test_the_pcie_link_below_its_maximum_warns_only_under_load(link, utilization, verdict, words):
    gen, gen_max, width, width_max = link
    row = {"pcie.link.gen.current": gen, "pcie.link.gen.max": gen_max, "pcie.link.width.current": width,
           "pcie.link.width.max": width_max, "utilization.gpu": utilization}
    assert core.gpu_checks(row) == [check("gpu?.pcie_link", verdict, f"gen{gen} x{width}",
                                          f"gen{gen_max} x{width_max}", words, required=False)]


def test_a_pcie_figure_missing_leaves_the_link_unjudged():
    row = {"pcie.link.gen.current": 4, "pcie.link.gen.max": 5, "pcie.link.width.current": None,
           "pcie.link.width.max": 16, "utilization.gpu": 100}
    assert core.gpu_checks(row) == []


@pytest.mark.parametrize("row,expected", [
    ({"clocks_throttle_reasons.active": 0x4}, check("gpu1.clock_event_reasons", WARN, "sw_power_cap", "none",
                                                    "clocks held down by sw_power_cap")),
    ({"clocks_throttle_reasons.active": 0}, check("gpu1.clock_event_reasons", PASS, "none", "none")),
    ({"clocks_event_reasons.active": 0x8, "clocks_throttle_reasons.active": 0},
     check("gpu1.clock_event_reasons", FAIL, "hw_slowdown", "none", "clocks held down by hw_slowdown")),
])
def test_clock_reasons_by_the_new_name_or_an_older_drivers(row, expected):
    """R535 and older call them throttle reasons; a power cap alone warns, a slowdown fails; the new name wins."""
    assert core.gpu_checks({"index": 1, **row}) == [expected]


def test_no_clock_reasons_field_no_clock_check():
    assert core.gpu_checks({"index": 1, "clocks_event_reasons.active": None}) == [
        check("gpu1.clock_event_reasons", PASS, "none", "none")]
    assert core.gpu_checks({"index": 1}) == []
    assert core.active_reasons("0x4") == [] and core.active_reasons(0x101) == ["gpu_idle", "display_clock_setting"]


def test_a_lost_gpu_is_one_check_and_nothing_else():
    assert core.gpu_checks({"index": 2, "ecc.errors.uncorrected.volatile.total": 9, "name": core.LOST}) == [
        check("gpu2.lost", FAIL, detail="nvidia-smi reports the GPU is lost (fell off the bus): the node needs a "
                                        "reset or repair")]


# --- states a real job trips on ---------------------------------------------------------------------------------


@pytest.mark.parametrize("action,words", [
    ("Reset", "the driver asks to reset the GPU or reboot"), ("Reboot", "the driver asks to reboot the node"),
    ("Drain P2P", "the driver asks to drain the node, then reset"),
    ("Drain and Reset", "the driver asks to drain the node, then reset the GPU"),
    ("Something New", "the driver asks to act: see nvidia-smi -q"),
])
def test_each_recovery_action_fails_with_what_the_operator_does(action, words):
    assert core.state_checks({"gpu_recovery_action": action}, "gpu4") == [
        check("gpu4.recovery_action", FAIL, action, "None", words)]


@pytest.mark.parametrize("action", [None, "None"])
def test_no_recovery_action_no_check(action):
    assert core.state_checks({"gpu_recovery_action": action}, "gpu4") == []


@pytest.mark.parametrize("state,status,ready", [
    ("Completed", "Success", True), ("Completed", None, True), (None, "Success", True),
    ("In Progress", "N/A", False), ("Completed", "Failure", False), (None, "Failure", False),
    ("Not Started", None, False),
])
def test_the_nvswitch_fabric_is_ready_only_completed_and_successful(state, status, ready):
    assert core.state_checks({"fabric.state": state, "fabric.status": status}, "gpu0") == [check(
        "gpu0.fabric", PASS if ready else FAIL, f"{state}/{status}", "Completed/Success",
        "" if ready else "NVSwitch fabric not ready, CUDA cannot start: run nvidia-fabricmanager of the driver's "
                         "version")]


def test_no_fabric_fields_no_fabric_check():
    assert core.state_checks({"fabric.state": None, "fabric.status": None, "name": "NVIDIA L4"}, "gpu0") == []


@pytest.mark.parametrize("name,verdict", [("NVIDIA H100 80GB HBM3", FAIL), ("Tesla V100-SXM2-16GB", FAIL),
                                          ("NVIDIA L4", WARN), ("NVIDIA RTX PRO 6000", WARN), (None, WARN)])
def test_ecc_off_fails_on_hbm_and_warns_on_gddr(name, verdict):
    assert core.state_checks({"name": name, "ecc.mode.current": "Disabled", "ecc.mode.pending": "Disabled"},
                             "gpu0") == [
        check("gpu0.ecc_mode", verdict, "Disabled", "Enabled", "memory errors go unseen: nvidia-smi -e 1, then "
                                                               "reboot")]


def test_an_ecc_change_pending_the_next_reboot_warns_compute_prohibited_fails_persistence_off_warns():
    gpu = {"name": "NVIDIA L4", "ecc.mode.current": "Enabled", "ecc.mode.pending": "Disabled",
           "compute_mode": "Prohibited", "persistence_mode": "Disabled"}
    assert core.state_checks(gpu, "gpu7") == [
        check("gpu7.ecc_mode_pending", WARN, "Disabled", "Enabled", "changes at the next reboot"),
        check("gpu7.compute_mode", FAIL, "Prohibited", "Default", "no CUDA context allowed"),
        check("gpu7.persistence_mode", WARN, "Disabled", "Enabled", "run nvidia-persistenced", required=False),
    ]
    assert core.state_checks({"ecc.mode.current": "Enabled", "ecc.mode.pending": "Enabled",
                              "compute_mode": "Default", "persistence_mode": "Enabled"}, "gpu7") == []
    assert core.state_checks({"ecc.mode.current": None, "ecc.mode.pending": "Enabled"}, "gpu7") == []


# --- processes, memory held ---------------------------------------------------------------------------------------

APPS_CSV = """\
pid, process_name, used_gpu_memory [MiB], gpu_uuid
4242, python3, 40000 MiB, GPU-aaaa
77, nvidia-cuda-mps-server, 30 MiB, GPU-bbbb
9, /usr/bin/x, [N/A], GPU-aaaa
"""


def test_compute_apps_csv_parses_each_process_with_its_memory_and_gpu():
    assert core.parse_apps(APPS_CSV) == [
        {"gpu": "GPU-aaaa", "pid": 4242, "name": "python3", "used": 40000},
        {"gpu": "GPU-bbbb", "pid": 77, "name": "nvidia-cuda-mps-server", "used": 30},
        {"gpu": "GPU-aaaa", "pid": 9, "name": "/usr/bin/x", "used": None},
    ]


def test_compute_apps_by_bus_id_and_the_older_memory_field():
    text = "pid, process_name, used_memory [MiB], gpu_bus_id\n12, a.out, 100 MiB, 00000000:3B:00.0\n"
    assert core.parse_apps(text) == [{"gpu": "00000000:3B:00.0", "pid": 12, "name": "a.out", "used": 100}]


@pytest.mark.parametrize("between", ["", "   ", "# a note", "$ nvidia-smi -L"])
def test_a_blank_line_comment_or_prompt_ends_the_csv(between):
    """A saved terminal session: what follows the next prompt is another command's output, not processes."""
    text = APPS_CSV.splitlines()[0] + "\n5, kept, 1 MiB, GPU-x\n" + between + "\n6, orphan, 1 MiB, GPU-x\n"
    assert core.parse_apps(text) == [{"gpu": "GPU-x", "pid": 5, "name": "kept", "used": 1}]


def test_the_tables_processes_rows():
    table = """\
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|=========================================================================================|
|    0   N/A  N/A      4242      C   python3 train.py                           40000MiB |
|    1   N/A  N/A        77    M+C   nvidia-cuda-mps-server                        30MiB |
"""
    assert core.parse_apps(table) == [{"gpu": 0, "pid": 4242, "name": "python3 train.py", "used": 40000},
                                      {"gpu": 1, "pid": 77, "name": "nvidia-cuda-mps-server", "used": 30}]


def test_processes_accounted_after_they_ran_are_not_processes_on_the_gpus():
    """``--query-accounted-apps`` (accounting mode) lists processes that have run, ended ones too: their pid and
    peak memory are no process holding a GPU now; only the compute apps' rows are."""
    text = ("$ nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid --format=csv\n" + APPS_CSV
            + "$ nvidia-smi --query-accounted-apps=pid,gpu_utilization,mem_utilization,max_memory_usage,time "
              "--format=csv\n"
            "pid, gpu_utilization [%], mem_utilization [%], max_memory_usage [MiB], time [ms]\n"
            "4242, 97 %, 41 %, 40000 MiB, 360000 ms\n31337, 88 %, 30 %, 12000 MiB, 5000 ms\n")
    assert core.parse_apps(text) == [
        {"gpu": "GPU-aaaa", "pid": 4242, "name": "python3", "used": 40000},
        {"gpu": "GPU-bbbb", "pid": 77, "name": "nvidia-cuda-mps-server", "used": 30},
        {"gpu": "GPU-aaaa", "pid": 9, "name": "/usr/bin/x", "used": None},
    ]


def _gpu(index, used, total=81559, **more):
    return {"index": index, "uuid": f"GPU-{index}", "pci.bus_id": f"00000000:0{index}:00.0", "memory.used": used,
            "memory.total": total, **more}


def test_memory_held_passes_to_five_percent_and_fails_past_it_naming_each_process():
    apps = [{"gpu": "GPU-1", "pid": 4242, "name": "python3", "used": 40000},
            {"gpu": 1, "pid": 5, "name": "x", "used": None},
            {"gpu": "00000000:01:00.0", "pid": 6, "name": "y", "used": 7},
            {"gpu": "GPU-0", "pid": 8, "name": "elsewhere", "used": 1}]
    assert core.memory_checks([_gpu(0, 5, total=100), _gpu(1, 40010, total=81559)], apps) == [
        check("gpu0.memory_in_use", PASS, "5 of 100 MiB (5%)", "<= 5%"),
        check("gpu1.memory_in_use", FAIL, "40010 of 81559 MiB (49%)", "<= 5%",
              "held by others: pid 4242 python3 (40000 MiB); pid 5 x (None MiB); pid 6 y (7 MiB); stop it or "
              "drain the node"),
    ]


def test_memory_held_with_no_process_visible_says_so():
    assert core.memory_checks([_gpu(0, 6, total=100)], []) == [check(
        "gpu0.memory_in_use", FAIL, "6 of 100 MiB (6%)", "<= 5%",
        "held by others: no process visible from here; stop it or drain the node")]


@pytest.mark.parametrize("gpu,apps,sharing,shown", [
    (_gpu(0, 50, total=100), [], "time-slicing", "time-slicing"),
    (_gpu(0, 50, total=100, **{"mig.mode.current": "Enabled"}), [], None, "mig"),
    (_gpu(0, 50, total=100), [{"gpu": 0, "pid": 77, "name": "nvidia-cuda-mps-server", "used": 30}], None, "mps"),
    (_gpu(0, 50, total=100, **{"mig.mode.current": "Enabled"}), [], "mps", "mps"),
])
def test_memory_held_where_gpus_are_shared_warns_and_names_how(gpu, apps, sharing, shown):
    (found,) = core.memory_checks([gpu], apps, sharing)
    assert found["verdict"] == WARN and found["detail"].endswith(f"; GPUs are shared ({shown})")
    assert found["detail"].startswith("held by others: ")


def test_an_unnamed_process_is_no_mps_server():
    (found,) = core.memory_checks([_gpu(0, 50, total=100)], [{"gpu": 0, "pid": 1, "name": None, "used": 50}])
    assert found["verdict"] == FAIL


# --- kernel log: Xid events -----------------------------------------------------------------------------------------

LOG = """\
[  10.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.
[  11.2] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception
[  12.3] NVRM: Xid (PCI:0001:0a:00): 31
"""


def test_xids_parse_with_their_gpu_and_message():
    assert core.parse_xids(LOG) == [("0:3b:00", 79, "pid=0, GPU has fallen off the bus."),
                                    ("0:3b:00", 13, "Graphics Exception"), ("1:0a:00", 31, "")]
    long = f"NVRM: Xid (PCI:0000:3b:00): 13, {'x' * 300}"
    assert core.parse_xids(long)[0][2] == "x" * 200


@pytest.mark.parametrize("address,bus", [
    ("00000000:3B:00.0", "0:3b:00"), ("0000:3b:00", "0:3b:00"), ("0001:0A:00.0", "1:0a:00"),
    ("000A:0a:00.0", "10:0a:00"), ("0010:0a:00.0", "16:0a:00"), ("3b:00.0", "0:3b:00"), ("3b:00", "0:3b:00"),
])
def test_bus_addresses_of_every_tool_compare_equal(address, bus):
    assert core._bus(address) == bus


def test_xids_per_gpu_by_bus_and_for_a_gpu_no_row_names():
    rows = [{"index": 0, "pci.bus_id": "00000000:3B:00.0"}, {"index": 1, "pci.bus_id": "00000000:5E:00.0"},
            {"index": 2, "pci.bus_id": "00000000:86:00.0"}]
    log = LOG + "NVRM: Xid (PCI:0000:5e:00): 43, Ch 00000010\n"
    assert core.xid_checks(rows, log) == [
        check("gpu0.xid", FAIL, "79 (pid=0, GPU has fallen off the bus.), 13 (Graphics Exception)", "none",
              "hardware Xid since boot: drain and reset"),
        check("pci 1:0a:00.xid", WARN, "31", "none", "application Xids since boot", required=False),
        check("gpu1.xid", WARN, "43 (Ch 00000010)", "none", "application Xids since boot", required=False),
        check("gpu2.xid", PASS, "none", "none", ""),
    ]


def test_only_the_last_five_xids_of_a_gpu_are_shown():
    log = "".join(f"NVRM: Xid (PCI:0000:3b:00): {x}\n" for x in (13, 31, 43, 45, 13, 31, 43))
    (found,) = core.xid_checks([{"index": 0, "pci.bus_id": "0000:3b:00.0"}], log)
    assert found["measured"] == "43, 45, 13, 31, 43"


def test_xids_new_since_an_earlier_read_fail_as_under_load():
    rows = [{"index": 0, "pci.bus_id": "00000000:3B:00.0"}]
    before = "NVRM: Xid (PCI:0000:3b:00): 79, old\n"
    assert core.xid_checks(rows, before + "NVRM: Xid (PCI:0000:3b:00): 13, new\n", before=before) == [
        check("gpu0.xid_under_load", FAIL, "13 (new)", "none", "Xid under load: drain and reset")]
    assert core.xid_checks(rows, before, before=before) == [check("gpu0.xid_under_load", PASS, "none", "none", "")]
    assert core.xid_checks(rows, "", before="") == [check("gpu0.xid_under_load", PASS, "none", "none", "")]


def test_an_unreadable_kernel_log_is_one_skip_naming_why():
    assert core.xid_checks([{"index": 0}], None, "dmesg: Operation not permitted") == [
        check("xid", SKIP, detail="kernel log not readable here (dmesg: Operation not permitted)", required=False)]


# --- NVLink ---------------------------------------------------------------------------------------------------------

NVLINK = """\
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)
\t Link 0: 26.562 GB/s
\t Link 1: <inactive>
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)
\t Link 0: 26.562 GB/s
\t Link 0: Replay Errors: 3
\t Link 0: Recovery Errors: 0
\t Link 0: CRC Errors: 2
\t Link 0: Tx packets: 99
"""


def test_nvlink_status_and_counters_parse_per_gpu():
    assert core.parse_nvlink("\t Link 0: 1 GB/s\n" + NVLINK) == {
        0: {"links": {0: 26.562, 1: None}, "errors": {}},
        1: {"links": {0: 26.562}, "errors": {(0, "Replay Errors"): 3, (0, "Recovery Errors"): 0,
                                             (0, "CRC Errors"): 2}},
    }


def test_nvlink_links_down_fail_and_counters_warn():
    rows = [{"index": 0}, {"index": 1}, {"index": 2}]
    assert core.nvlink_checks(rows, core.parse_nvlink(NVLINK)) == [
        check("gpu0.nvlink", FAIL, "1 of 2 links up", "2 up", "links 1 down: drain and reset"),
        check("gpu1.nvlink", PASS, "1 links up", "1 up"),
        check("gpu1.nvlink_errors", WARN, "link 0 CRC Errors 2, link 0 Recovery Errors 0, link 0 Replay Errors 3",
              0, "since the driver loaded", required=False),
    ]


def test_nvlink_counters_shown_at_most_six():
    errors = {(n, "Replay Errors"): n + 1 for n in range(8)}
    assert core._counts(errors) == ", ".join(f"link {n} Replay Errors {n + 1}" for n in range(6))


def test_every_link_of_a_gpu_down_fails_only_beside_other_gpus():
    state = {0: {"links": {0: None, 1: None}, "errors": {}}}
    assert core.nvlink_checks([{"index": 0}], state) == []
    assert core.nvlink_checks([{"index": 0}, {"index": 1}], state) == [
        check("gpu0.nvlink", FAIL, "0 of 2 links up", "2 up", "links 0,1 down: drain and reset")]


def test_nvlink_counters_that_rose_under_load_fail_with_the_rise():
    before = {0: {"links": {0: 26.5}, "errors": {(0, "CRC Errors"): 2, (0, "Replay Errors"): 5}}}
    after = {0: {"links": {0: 26.5}, "errors": {(0, "CRC Errors"): 9, (0, "Replay Errors"): 5,
                                                (1, "Recovery Errors"): 1}}}
    assert core.nvlink_checks([{"index": 0}], after, before=before) == [
        check("gpu0.nvlink_errors_under_load", FAIL, "link 0 CRC Errors 7, link 1 Recovery Errors 1", "no increase",
              "rose under load: drain and reset")]
    assert core.nvlink_checks([{"index": 0}], before, before=before) == []
    assert core.nvlink_checks([{"index": 0}], after, before={}) == [
        check("gpu0.nvlink_errors_under_load", FAIL, "link 0 CRC Errors 9, link 0 Replay Errors 5, "
              "link 1 Recovery Errors 1", "no increase", "rose under load: drain and reset")]


# --- nvidia-smi -q, for older drivers -------------------------------------------------------------------------------

Q = """\
==============NVSMI LOG==============
Driver Version                            : 535.183.01
    Reset Required                        : Yes
GPU 00000000:3b:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Fabric
        State                             : In Progress
        Status                            : Failure
    Another Section
        State                             : Other
        Status                            : Other
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : Yes
GPU 00000000:5E:00.0
    Fabric
        State                             : Completed
        Status                            : Success
    GPU Reset Status
        Reset Required                    : Yes
        Drain and Reset Recommended       : No
GPU 00000000:86:00.0
    GPU Recovery Action                   : Reboot
"""


def test_nvidia_smi_q_gives_the_fabric_and_reset_status_per_bus():
    """Only the Fabric section's State and Status, only under a GPU."""
    assert core.parse_q(Q) == {
        "0:3b:00": {"fabric.state": "In Progress", "fabric.status": "Failure",
                    "gpu_recovery_action": "Drain and Reset"},
        "0:5e:00": {"fabric.state": "Completed", "fabric.status": "Success", "gpu_recovery_action": "Reset"},
        "0:86:00": {"gpu_recovery_action": "Reboot"},
    }


def test_nvidia_smi_q_fills_only_what_the_query_left_unanswered():
    rows = [{"index": 0, "pci.bus_id": "00000000:3B:00.0", "fabric.state": "Completed", "fabric.status": None},
            {"index": 1}]
    assert core.with_q(rows, core.parse_q(Q)) == [
        {"index": 0, "pci.bus_id": "00000000:3B:00.0", "fabric.state": "Completed", "fabric.status": "Failure",
         "gpu_recovery_action": "Drain and Reset"},
        {"index": 1}]


# --- MIG listing ----------------------------------------------------------------------------------------------------

def test_mig_devices_listed_under_their_gpu_by_uuid_and_index():
    text = ("  MIG 1g.10gb     Device  0: (UUID: MIG-orphan)\n"
            "GPU 0: NVIDIA H200 (UUID: GPU-aaa)  \n"
            "  MIG 3g.71gb     Device  0: (UUID: MIG-111)\n"
            "  MIG 1g.18gb     Device  1: (UUID: MIG-222)\n"
            "GPU 1: NVIDIA H200 (UUID: GPU-bbb)\n")
    listed = [{"profile": "3g.71gb", "uuid": "MIG-111"}, {"profile": "1g.18gb", "uuid": "MIG-222"}]
    assert core.parse_mig_devices(text) == {0: listed, "GPU-aaa": listed, 1: [], "GPU-bbb": []}


def test_mig_devices_join_the_rows_whose_mode_is_on():
    devices = {"GPU-a": [{"profile": "7g.80gb", "uuid": "MIG-1"}], 1: [], 2: [{"profile": "1g", "uuid": "MIG-2"}]}
    rows = [{"uuid": "GPU-a", "index": 0, "mig.mode.current": "Enabled"},
            {"uuid": "GPU-x", "index": 1, "mig.mode.current": "Enabled"},
            {"uuid": "GPU-y", "index": 2, "mig.mode.current": "Disabled"},
            {"uuid": "GPU-z", "index": 3, "mig.mode.current": "Enabled"}]
    assert core.with_mig_devices(rows, devices) == [
        {"uuid": "GPU-a", "index": 0, "mig.mode.current": "Enabled", "mig.devices": devices["GPU-a"]},
        {"uuid": "GPU-x", "index": 1, "mig.mode.current": "Enabled", "mig.devices": []},
        rows[2], rows[3]]


# --- cells, versions, models ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,field,expected", [
    (" 81559 MiB ", "memory.total", 81559), ("-3", "x", -3), ("1.5 W", "power.draw", 1.5), ("0x1F", "x", 31),
    ("0x000000000000000A", "clocks_event_reasons.active", 10), ("12 C", "t", 12), ("2 us", "t", 2),
    ("3 GiB", "t", 3), ("4 KiB", "t", 4), ("1395 MHz", "clocks.max.sm", 1395), ("7 %", "fan.speed", 7),
    ("595.80", "driver_version", "595.80"), ("12 GB", "x", "12 GB"), ("P0", "pstate", "P0"),
    ("[N/A]", "x", None), ("N/A", "x", None), ("", "x", None), ("[Some New Marker]", "x", None),
    (core.LOST, "memory.used", core.LOST), ("1" * 40, "x", float("1" * 40)), ("Enabled", "x", "Enabled"),
    ("1" * 29, "x", int("1" * 29)), ("1" * 30, "x", float("1" * 30)),
])
def test_a_query_cell_as_python(text, field, expected):
    got = core.value(text, field)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("header,field", [
    ("memory.total [MiB]", "memory.total"), (" power.draw [W] ", "power.draw"), ("index", "index"),
    ("odd [a]b]", "odd [a]b]"), ("name [x", "name [x"), ("x]", "x]"), ("[MiB]", ""), ("x [a] [b]", "x [a]"),
    ("x [a]]", "x [a]]"),
])
def test_a_header_cell_without_its_unit(header, field):
    assert core._field(header) == field


def test_versions_missing_are_none():
    assert core.parse_versions("no table") == {"driver": None, "cuda": None}
    assert core.parse_versions("DRIVER version : 1.2") == {"driver": "1.2", "cuda": None}


@pytest.mark.parametrize("name,memory,model", [
    ("NVIDIA A100-SXM4", 81920, "A100 80GB"), ("NVIDIA A100-SXM4", 40960, "A100 40GB"),
    ("NVIDIA A100-SXM4", None, "A100 40GB"), ("NVIDIA A100-SXM4", 50_000, "A100 40GB"),
    ("NVIDIA A100-SXM4", 50_001, "A100 80GB"), ("NVIDIA A100-PCIE-40GB", 81920, "A100 40GB"),
    ("NVIDIA A100 80GB PCIe", 1, "A100 80GB"), ("NVIDIA H100 80GB HBM3", None, "H100 SXM"), (None, None, None),
])
def test_an_a100_without_its_memory_in_the_name_is_told_by_its_memory(name, memory, model):
    assert core.model_of(name, memory) == model
    assert core.expected_for(name, memory) == (core.EXPECTED[model] if model else None)


@pytest.mark.parametrize("gpu,typical", [
    ({"pcie.link.gen.max": 5, "pcie.link.gen.hostmax": 4, "pcie.link.width.max": 16}, 1.969 * 16 * 0.8),
    ({"pcie.link.gen.max": 4, "pcie.link.width.max": 8}, 1.969 * 8 * 0.8),
    ({"pcie.link.gen.max": 5, "pcie.link.width.max": None}, None), ({"pcie.link.width.max": 16}, None),
    ({"pcie.link.gen.max": 7, "pcie.link.width.max": 16}, None),
])
def test_host_to_device_typical_needs_both_generations_and_the_width(gpu, typical):
    assert core.host_to_device_typical(gpu) == typical


# --- figures, CUDA, environment -------------------------------------------------------------------------------------

@pytest.mark.parametrize("measured,typical,soft,required,expected", [
    (123.456, None, False, True, check("f", PASS, 123.5, None, "no typical figure for this GPU", required=False)),
    (75.0, 100.0, False, True, check("f", PASS, 75.0, 100.0, "", required=True)),
    (75.03, 100.04, False, True, check("f", FAIL, 75.0, 100.0, "below 75% of what this GPU typically reaches")),
    (74.94, 100.0, False, True, check("f", FAIL, 74.9, 100.0, "below 75% of what this GPU typically reaches")),
    (74.94, 100.0, True, False, check("f", WARN, 74.9, 100.0, "below 75% of what this GPU typically reaches",
                                      required=False)),
    (80.0, 100.0, True, False, check("f", PASS, 80.0, 100.0, "", required=False)),
])
def test_a_figure_against_what_the_gpu_typically_reaches(measured, typical, soft, required, expected):
    assert core._figure("f", measured, typical, required=required, soft=soft) == expected


def test_a_figure_is_required_and_hard_unless_told():
    assert core._figure("f", 1.0, 100.0) == check("f", FAIL, 1.0, 100.0, "below 75% of what this GPU typically "
                                                                          "reaches", required=True)


@pytest.mark.parametrize("driver,built,verdict,words", [
    ("12.2", "13.0", FAIL, "a torch built for CUDA 13 sees no GPU on a driver for CUDA 12: upgrade the driver or use "
                           "a CUDA 12.x build"),
    ("12.2", "12.4", WARN, "minor-version compatibility: runs, but kernels that need JIT (PTX) or newer driver "
                           "features fail; prefer a build for the driver's CUDA or a newer driver"),
    ("12.4", "12.4", PASS, ""), ("13.0", "12.8", PASS, ""),
])
def test_the_frameworks_cuda_against_the_drivers(driver, built, verdict, words):
    assert core.compatibility_checks(driver, "torch", built) == [check(
        "torch_cuda_vs_driver", verdict, f"torch built for CUDA {built}", f"driver supports CUDA {driver}", words)]


@pytest.mark.parametrize("driver,built", [(None, "12.4"), ("12.4", None), ("x", "12.4"), ("12", "12.4")])
def test_no_cuda_version_on_either_side_no_check(driver, built):
    assert core.compatibility_checks(driver, "torch", built) == []


@pytest.mark.parametrize("env,expected", [
    ({"CUDA_VISIBLE_DEVICES": v}, [check("cuda_visible_devices", FAIL, repr(v), "unset or device ids",
                                         "CUDA_VISIBLE_DEVICES hides every GPU from CUDA: frameworks see 0 devices")])
    for v in ("", " ", "-1", "none", "NoDevFiles")
] + [
    ({"NVIDIA_VISIBLE_DEVICES": v}, [check("nvidia_visible_devices", FAIL, v, "all or device ids",
                                           "the container runtime mounted no GPU")]) for v in ("void", " none")
] + [
    ({"NVIDIA_DRIVER_CAPABILITIES": "utility,video"}, [check(
        "nvidia_driver_capabilities", FAIL, "utility,video", "compute,utility",
        "without 'compute' the runtime mounts no CUDA libraries")]),
    ({"CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "all",
      "NVIDIA_DRIVER_CAPABILITIES": "utility, compute"}, []),
    ({"NVIDIA_DRIVER_CAPABILITIES": "all"}, []), ({"CUDA_VISIBLE_DEVICES": None, "NVIDIA_VISIBLE_DEVICES": None}, []),
])
def test_an_environment_that_hides_the_gpus_fails_naming_the_variable(env, expected):
    assert core.environment_checks(env) == expected


def test_the_environment_read_is_the_three_variables(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.delenv("NVIDIA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("NVIDIA_DRIVER_CAPABILITIES", "compute")
    assert core.environment() == {"CUDA_VISIBLE_DEVICES": "1", "NVIDIA_VISIBLE_DEVICES": None,
                                  "NVIDIA_DRIVER_CAPABILITIES": "compute"}


# --- the report -----------------------------------------------------------------------------------------------------

def test_the_verdict_is_the_worst_required_failure_or_any_warning():
    passed, warned = check("a", PASS), check("b", WARN, required=False)
    failed_optional, failed = check("c", FAIL, required=False), check("d", FAIL)
    assert core.verdict([]) == PASS and core.verdict([passed]) == PASS
    assert core.verdict([passed, warned]) == WARN and core.verdict([failed_optional]) == PASS
    assert core.verdict([warned, failed]) == FAIL and core.verdict([check("e", SKIP)]) == PASS


def test_latest_snapshots_keep_each_gpus_last_in_first_seen_order():
    rows = [{"uuid": "a", "n": 1}, {"gpu_uuid": "b", "n": 1}, {"pci.bus_id": "c", "n": 1}, {"index": 4, "n": 1},
            {"n": 1}, {"uuid": "a", "n": 2}, {"index": 4, "n": 2}, {"gpu_uuid": "b", "n": 2}, {"n": 2},
            {"pci.bus_id": "c", "n": 2}, {"uuid": "a", "n": 3}]
    latest, most = core.latest_snapshots(rows)
    assert latest == [{"uuid": "a", "n": 3}, {"gpu_uuid": "b", "n": 2}, {"pci.bus_id": "c", "n": 2},
                      {"index": 4, "n": 2}, {"n": 1}, {"n": 2}]  # a row naming no GPU is one of its own
    assert most == 3 and core.latest_snapshots([]) == ([], 0)


def test_gpu_zero_known_by_its_index_alone_is_one_gpu_across_snapshots():
    """A capture of ``--query-gpu=index,...`` only: index 0 is a GPU like any other, not a missing identity."""
    rows = [{"index": 0, "n": 1}, {"index": 1, "n": 1}, {"index": 0, "n": 2}, {"index": 1, "n": 2}]
    assert core.latest_snapshots(rows) == ([{"index": 0, "n": 2}, {"index": 1, "n": 2}], 2)


def test_the_capture_state_holds_a_kernel_log_only_when_the_capture_has_one():
    assert core.capture_state(LOG + NVLINK)["log"] == LOG + NVLINK
    state = core.capture_state(APPS_CSV)
    assert state == {"apps": core.parse_apps(APPS_CSV), "nvlink": {}, "log": None,
                     "log_why": "the capture holds no kernel log: append `dmesg` output to see Xid events"}
    assert core.capture_state(NVLINK)["nvlink"] == core.parse_nvlink(NVLINK)


def test_a_report_with_infinite_figures_is_strict_json_naming_them():
    report = {"Xval": math.inf, "checks": [{"measured": math.nan}, (1.5, -math.inf)], "when": {1, 2} and None}
    line = core.report_line(report)
    assert line == (core.REPORT_MARKER + '{"Xval":null,"checks":[{"measured":null},[1.5,null]],"when":null,'
                    '"notes":["Xval was inf, written as null","checks[0].measured was nan, written as null",'
                    '"checks[1][1] was -inf, written as null"]}')
    assert core.report_line({"host": b"n1"}) == core.REPORT_MARKER + '{"host":"b\'n1\'"}'
    assert core.report_line({"a": 1}) == core.REPORT_MARKER + '{"a":1}'


def test_the_last_readable_report_in_the_logs_is_found():
    good, broken = core.report_line({"n": 1}), core.REPORT_MARKER + '{"n": 2, trunc'
    assert core.find_report(f"x\n{good}\n{broken}\n") == {"n": 1}
    assert core.find_report(f"pod-1 | {core.report_line({'n': 3})}\n") == {"n": 3}
    assert core.find_report("MARK {\"n\": 4}", marker="MARK ") == {"n": 4}


# --- nvidia-smi itself, through a runner that answers as the real one does -----------------------------------------

class Smi:
    """Answers nvidia-smi's command lines from recorded text (a runner for :func:`core.run_nvidia_smi`): a
    ``--query-gpu`` naming a field in ``unknown`` is refused as the real one refuses it."""

    def __init__(self, rows="", table="", listing="", unknown=(), fail=None):
        self.rows, self.table, self.listing, self.unknown, self.fail = rows, table, listing, set(unknown), fail
        self.calls = []

    def __call__(self, argv, **kwargs):
        assert kwargs == {"capture_output": True, "text": True, "timeout": 60}
        self.calls.append(argv[1:])
        if self.fail:
            return subprocess.CompletedProcess(argv, 9, *self.fail)
        if argv[1:] == ["-L"]:
            return subprocess.CompletedProcess(argv, 0, self.listing, "")
        if len(argv) == 1:
            return subprocess.CompletedProcess(argv, 0, self.table, "")
        fields = argv[1].partition("=")[2].split(",")
        for field in fields:
            if field in self.unknown:
                return subprocess.CompletedProcess(argv, 2, "", f'Field "{field}" is not a valid field to query.\n')
        return subprocess.CompletedProcess(argv, 0, ",".join(fields) + "\n" + self.rows, "")


def _which(name):
    return f"/opt/bin/{name}"


def test_nvidia_smi_missing_is_the_driver_missing():
    assert core.run_nvidia_smi(runner=Smi(), which=lambda name: None) == ([], {}, (
        "nvidia-smi not found: no NVIDIA driver here (none installed, or the container runtime mounted none), so no "
        "GPU can be used"))


def test_fields_an_older_driver_does_not_know_are_renamed_then_dropped():
    smi = Smi(rows="0, NVIDIA L4, 4\n", table="Driver Version: 535.1   CUDA Version: 12.2",
              unknown={"clocks_event_reasons.active", "fabric.state"})
    fields = ("index", "name", "fabric.state", "clocks_event_reasons.active")
    rows, versions, error = core.run_nvidia_smi(fields, runner=smi, which=_which)
    assert error is None and versions == {"driver": "535.1", "cuda": "12.2"}
    assert rows == [{"index": 0, "name": "NVIDIA L4", "clocks_throttle_reasons.active": 4}]
    assert smi.calls == [
        ["--query-gpu=index,name,fabric.state,clocks_event_reasons.active", "--format=csv"],
        ["--query-gpu=index,name,clocks_event_reasons.active", "--format=csv"],
        ["--query-gpu=index,name,clocks_throttle_reasons.active", "--format=csv"], []]


def test_a_renamed_field_already_asked_for_is_dropped_not_doubled():
    smi = Smi(rows="0, 4\n", unknown={"clocks_event_reasons.active"})
    rows, _, error = core.run_nvidia_smi(("index", "clocks_throttle_reasons.active", "clocks_event_reasons.active"),
                                         runner=smi, which=_which)
    assert error is None and rows == [{"index": 0, "clocks_throttle_reasons.active": 4}]
    assert smi.calls[1] == ["--query-gpu=index,clocks_throttle_reasons.active", "--format=csv"]


def test_a_driver_that_refuses_every_field_or_fails_says_so():
    smi = Smi(unknown={"index", "name"})
    assert core.run_nvidia_smi(("index", "name"), runner=smi, which=_which) == (
        [], {}, "nvidia-smi rejected every field")
    assert len(smi.calls) == 2  # no query of no field
    failing = Smi(fail=("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", ""))
    assert core.run_nvidia_smi(("index",), runner=failing, which=_which) == (
        [], {}, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    assert core.run_nvidia_smi(("index",), runner=Smi(fail=("", " ")), which=_which) == (
        [], {}, "nvidia-smi exited 9")
    refusing = Smi(fail=("", 'Field "other" is not a valid field to query.'))
    assert core.run_nvidia_smi(("index",), runner=refusing, which=_which)[2] == (
        'Field "other" is not a valid field to query.')


def test_mig_devices_are_listed_only_when_a_gpu_runs_mig():
    listing = "GPU 0: NVIDIA H200 (UUID: GPU-a)\n  MIG 7g.141gb     Device  0: (UUID: MIG-1)\n"
    smi = Smi(rows="0, GPU-a, Enabled\n", listing=listing)
    rows, _, _ = core.run_nvidia_smi(("index", "uuid", "mig.mode.current"), runner=smi, which=_which)
    assert rows[0]["mig.devices"] == [{"profile": "7g.141gb", "uuid": "MIG-1"}] and ["-L"] in smi.calls
    smi = Smi(rows="0, GPU-a, Disabled\n", listing=listing)
    rows, _, _ = core.run_nvidia_smi(("index", "uuid", "mig.mode.current"), runner=smi, which=_which)
    assert "mig.devices" not in rows[0] and ["-L"] not in smi.calls


# --- the whole probe on a node, in-process: nvidia-smi and dmesg answered from recorded text ----------------------

class Node:
    """nvidia-smi and dmesg of a node with two H100s, as a runner: each command line answered with what the real
    tools print (``answers``: the arguments after the binary -> texts, the next at each call, the last repeated)."""

    ROW = {"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04", "memory.total": "81559 MiB",
           "memory.used": "0 MiB", "utilization.gpu": "0 %", "pcie.link.gen.current": "1", "pcie.link.gen.max": "5",
           "pcie.link.width.current": "16", "pcie.link.width.max": "16", "pcie.link.gen.hostmax": "5",
           "clocks_event_reasons.active": "0x0000000000000001", "ecc.mode.current": "Enabled"}

    def __init__(self, row=None, **answers):
        row = {**self.ROW, **(row or {})}
        rows = "".join(", ".join(f"00000000:0{i}:00.0" if f == "pci.bus_id" else str(i) if f == "index" else
                                 f"GPU-{i}" if f == "uuid" else row.get(f, "[N/A]") for f in core.QUERY_FIELDS)
                       + "\n" for i in range(2))
        self.answers = {"--query-gpu": [rows], "": ["| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA "
                                                   "Version: 13.0 |"], "-q": [""], "nvlink --status": [""],
                        "nvlink --errorcounters": [""], "--query-compute-apps": [""], "dmesg": [""], **answers}
        self.calls, self.argvs = [], []

    def __call__(self, argv, capture_output, text, timeout):
        assert argv[0] in ("/opt/bin/nvidia-smi", "/opt/bin/dmesg"), argv  # found by the probe's ``which``
        self.argvs.append(argv)
        tool, args = argv[0].rsplit("/", 1)[-1], argv[1:]
        key = "dmesg" if tool == "dmesg" else (args[0].split("=")[0] if args and args[0].startswith("--query")
                                              else " ".join(args))
        self.calls.append(key)
        if key == "--query-gpu":
            header = args[0].partition("=")[2]
            assert header == ",".join(core.QUERY_FIELDS) and timeout == 60, args
            return subprocess.CompletedProcess(argv, 0, header + "\n" + self.answers[key][0], "")
        texts = self.answers[key]
        out = texts[min(self.calls.count(key) - 1, len(texts) - 1)]
        assert timeout == (30 if tool == "dmesg" else 60)
        return subprocess.CompletedProcess(argv, *(out if isinstance(out, tuple) else (0, out, "")))


FABRIC_Q = ("GPU 00000000:00:00.0\n    Fabric\n        State : Completed\n        Status : Success\n"
            "GPU 00000000:01:00.0\n    Fabric\n        State : In Progress\n        Status : N/A\n")
LINKS = "GPU 0: H100 (UUID: GPU-0)\n\t Link 0: 26.562 GB/s\nGPU 1: H100 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n"


def _errors(crc):
    return f"GPU 0: H100 (UUID: GPU-0)\n\t Link 0: CRC Errors: {crc}\nGPU 1: H100 (UUID: GPU-1)\n\t Link 0: CRC Errors: 0\n"


def test_node_state_reads_processes_links_kernel_log_and_q_where_the_query_lacks_the_fabric():
    node = Node(**{"-q": [FABRIC_Q], "nvlink --status": [LINKS], "nvlink --errorcounters": [_errors(1)],
                   "--query-compute-apps": ["pid, process_name, used_memory [MiB], gpu_uuid\n7, x, 5 MiB, GPU-1\n"],
                   "dmesg": ["NVRM: Xid (PCI:0000:01:00): 13, x\n"]})
    rows = [{"index": i, "pci.bus_id": f"00000000:0{i}:00.0", "fabric.state": None} for i in range(2)]
    rows, state = core.node_state(rows, runner=node, which=_which)
    assert [(r["fabric.state"], r["fabric.status"]) for r in rows] == [("Completed", "Success"), ("In Progress", None)]
    assert state == {"apps": [{"gpu": "GPU-1", "pid": 7, "name": "x", "used": 5}],
                     "nvlink": core.parse_nvlink(LINKS + "\n" + _errors(1)),
                     "log": "NVRM: Xid (PCI:0000:01:00): 13, x\n", "log_why": None}
    assert node.calls == ["-q", "dmesg", "--query-compute-apps", "nvlink --status", "nvlink --errorcounters"]
    assert node.argvs[2] == ["/opt/bin/nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
                             "--format=csv"]
    _, again = core.node_state(rows, runner=node, which=_which, q=False)
    assert node.calls.count("-q") == 1 and again["log"] == state["log"]


def test_what_a_failing_nvidia_smi_printed_is_not_read_as_the_node():
    node = Node(**{"nvlink --status": [(3, LINKS, "")], "--query-compute-apps": [
        (1, "pid, process_name, used_memory [MiB], gpu_uuid\n7, x, 5 MiB, GPU-1\n", "")]})
    _, state = core.node_state([{"index": 0, "fabric.state": "Completed"}], runner=node, which=_which)
    assert state["nvlink"] == {} and state["apps"] == []


def test_node_state_asks_q_only_where_no_row_answers_the_fabric_or_recovery():
    node = Node()
    core.node_state([{"index": 0, "fabric.state": "Completed"}, {"index": 1}], runner=node, which=_which)
    core.node_state([{"index": 0, "gpu_recovery_action": "None"}], runner=node, which=_which)
    core.node_state([], runner=node, which=_which)
    assert "-q" not in node.calls


def test_a_tool_that_fails_or_cannot_start_reads_as_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "KMSG", str(tmp_path / "kmsg"))
    def runner(argv, **kwargs):
        if argv[1:] == ["-q"]:
            raise subprocess.TimeoutExpired(argv, 60)
        if "dmesg" in argv[0]:
            raise OSError("exec format error")
        return subprocess.CompletedProcess(argv, 3, "half written", "")
    rows = [{"index": 0, "pci.bus_id": "00000000:00:00.0"}]
    got, state = core.node_state(rows, runner=runner, which=_which)
    assert got == rows and state["apps"] == [] and state["nvlink"] == {}
    assert state["log"] is None and state["log_why"].startswith("exec format error; ")


@pytest.mark.parametrize("answer,why", [
    ((1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"),
     "dmesg: read kernel buffer failed: Operation not permitted"),
    ((1, "only stdout said it\n", ""), "only stdout said it"), ((4, "", ""), "dmesg exited 4"),
    ((1, "", "e" * 300), "e" * 120),
])
def test_the_kernel_log_refused_says_why_and_what_else_was_tried(answer, why, tmp_path, monkeypatch):
    monkeypatch.setattr(core, "KMSG", str(tmp_path / "kmsg"))
    assert core.read_kernel_log(runner=Node(dmesg=[answer]), which=_which) == (
        None, f"{why}; {tmp_path / 'kmsg'}: No such file or directory")


def test_without_dmesg_the_kernel_log_is_read_from_kmsg_to_its_end(tmp_path, monkeypatch):
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,2,-;NVRM: Xid (PCI:0000:01:00): 79, fallen off the bus\n")
    monkeypatch.setattr(core, "KMSG", str(kmsg))
    text, why = core.read_kernel_log(runner=Node(), which=lambda name: None)
    assert why is None and "Xid (PCI:0000:01:00): 79" in text
    monkeypatch.setattr(core, "KMSG", str(tmp_path / "absent"))
    assert core.read_kernel_log(runner=Node(), which=lambda name: None) == (
        None, f"dmesg is not installed; {tmp_path / 'absent'}: No such file or directory")


def test_the_probe_reads_the_node_loads_it_and_fails_what_rose_under_its_load(monkeypatch):
    for variable in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"):
        monkeypatch.delenv(variable, raising=False)
    _, node, runner = _probe_node(monkeypatch, **{
        "-q": [FABRIC_Q.replace("In Progress", "Completed").replace("N/A", "Success")],
        "nvlink --status": [LINKS], "nvlink --errorcounters": [_errors(0), _errors(4)],
        "dmesg": ["", "NVRM: Xid (PCI:0000:01:00): 13, under load\n"]})

    report = core.probe(gpus_expected=2, quick=False, seconds=0, runner=runner, which=_which, sharing="mps")
    names = [c["name"] for c in report["checks"]]
    assert len(names) == len(set(names))  # the link read under load replaced the idle reading
    by = {c["name"]: c for c in report["checks"]}
    assert by["gpu0.pcie_link"]["measured"] == "gen5 x16" and by["gpu0.pcie_link"]["verdict"] == PASS
    assert by["gpu0.nvlink_errors_under_load"] == check("gpu0.nvlink_errors_under_load", FAIL, "link 0 CRC Errors 4",
                                                        "no increase", "rose under load: drain and reset")
    assert by["gpu1.xid_under_load"] == check("gpu1.xid_under_load", FAIL, "13 (under load)", "none",
                                              "Xid under load: drain and reset")
    assert "gpu0.xid_under_load" not in by  # only what failed under load is added
    assert by["torch_cuda_vs_driver"]["verdict"] == PASS and by["gpu0.fabric"]["verdict"] == PASS
    assert by["gpu0.bf16_matmul_tflops"]["measured"] == 5497.6  # the full tier: 8192 x 8192 in 0.2 ms
    assert report["verdict"] == FAIL and report["version"] == 1
    assert report["framework"]["device_count"] == 2 and report["versions"] == {"driver": "580.159.04",
                                                                                "cuda": "13.0"}
    assert [g["index"] for g in report["gpus"]] == [0, 1] and report["gpus"][0]["fabric.status"] == "Success"
    assert report["environment"] == {"CUDA_VISIBLE_DEVICES": None, "NVIDIA_VISIBLE_DEVICES": None,
                                     "NVIDIA_DRIVER_CAPABILITIES": None}
    assert report["host"] == os.uname().nodename
    assert node.calls.count("-q") == 1 and node.calls.count("dmesg") == 2 and node.calls.count("load") == 1


def test_a_kernel_log_readable_only_after_the_load_judges_no_xid(tmp_path, monkeypatch):
    """dmesg refused before the load, answered after it: the Xid it shows may be from before the load (here the
    GPU fell off the bus at some earlier time), so the probe says only that the log was not readable."""
    monkeypatch.setattr(core, "KMSG", str(tmp_path / "kmsg"))
    _, node, runner = _probe_node(monkeypatch, dmesg=[
        (1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"),
        "[  10.1] NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.\n"])
    report = core.probe(gpus_expected=2, runner=runner, which=_which)
    assert [c for c in report["checks"] if "xid" in c["name"]] == [check(
        "xid", SKIP, detail="kernel log not readable here (dmesg: read kernel buffer failed: Operation not "
                            f"permitted; {tmp_path / 'kmsg'}: No such file or directory)", required=False)]
    assert report["verdict"] == WARN  # the stand-in PyTorch's host copies warn; no Xid fails the node
    assert node.calls.count("dmesg") == 2

def test_the_probe_without_a_driver_stops_at_the_driver_and_touches_no_framework(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    report = core.probe(gpus_expected=1, runner=Node(), which=lambda name: None)
    assert [c["name"] for c in report["checks"]] == ["nvidia_driver", "cuda_visible_devices"]
    assert report["checks"][0]["verdict"] == FAIL and report["verdict"] == FAIL
    assert report["framework"] == {"framework": None} and report["gpus"] == [] and report["versions"] == {}


def test_a_probe_whose_framework_sees_no_gpu_reads_nothing_again(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    node = Node()
    report = core.probe(gpus_expected=2, runner=node, which=_which)
    assert node.calls.count("dmesg") == 1 and node.calls.count("nvlink --status") == 1
    assert report["verdict"] == PASS, report["checks"]
    assert {c["name"]: c["verdict"] for c in report["checks"]}["framework"] == SKIP


@pytest.mark.parametrize("argv,called,code", [
    ([], {"gpus_expected": 0, "quick": True, "seconds": 300, "sharing": None}, 0),
    (["--gpus", "8", "--full", "--seconds", "30.5", "--sharing", "mig"],
     {"gpus_expected": 8, "quick": False, "seconds": 30.5, "sharing": "mig"}, 0),
    (["--full", "--gpus"], {"gpus_expected": 0, "quick": False, "seconds": 300, "sharing": None}, 0),
])
def test_main_passes_its_options_to_the_probe_and_prints_one_report_line(argv, called, code, monkeypatch, capsys):
    seen = {}

    def probe(**kwargs):
        seen.update(kwargs)
        return {"verdict": WARN, "checks": []}
    monkeypatch.setattr(core, "probe", probe)
    assert core.main(argv) == code and seen == called
    assert capsys.readouterr().out == core.report_line({"verdict": WARN, "checks": []}) + "\n"


def test_main_exits_1_when_the_probe_fails(monkeypatch, capsys):
    monkeypatch.setattr(core, "probe", lambda **kwargs: {"verdict": FAIL})
    seen = {}
    monkeypatch.setattr(core, "probe", lambda **kwargs: seen.update(kwargs) or {"verdict": FAIL})
    monkeypatch.setattr(core.sys, "argv", ["probe.py", "--gpus", "2"])  # no argv given: the command line's
    assert core.main() == 1 and core.find_report(capsys.readouterr().out) == {"verdict": FAIL}
    assert seen["gpus_expected"] == 2


def test_a_driver_with_no_gpu_behind_it_fails_on_what_was_seen_not_on_a_promise(monkeypatch):
    from .test_core_torch import Clock, FakeTorch, _costs

    monkeypatch.setitem(sys.modules, "torch", FakeTorch([], _costs(0), Clock()))
    node = Node(**{"--query-gpu": [""]})
    report = core.probe(runner=node, which=_which)
    by = {c["name"]: c for c in report["checks"]}
    assert by["gpu_count"] == check("gpu_count", FAIL, 0, 1, "no GPU visible")
    assert by["torch_device_count"]["measured"] == by["torch_device_count"]["expected"] == 0
    assert report["verdict"] == FAIL and "nvlink --status" in node.calls


def _probe_node(monkeypatch, names=("NVIDIA H100 80GB HBM3",) * 2, **node):
    """A node of two H100s (:class:`Node`) and a PyTorch seeing ``names``, on a stand-in clock."""
    from .test_core_torch import Clock, FakeTorch, _costs

    torch = FakeTorch(list(names), _costs(len(names)), Clock())
    monkeypatch.setattr(core, "time", torch.clock)
    monkeypatch.setitem(sys.modules, "torch", torch)
    node = Node(**node)
    load = "".join(f"{i}, 100 %, 5, 5, 16, 16\n" for i in range(2))
    original = node.__call__

    def runner(argv, **kwargs):
        if argv[1:2] == [f"--query-gpu={','.join(core.LOAD_FIELDS)}"]:  # the load's own query
            node.calls.append("load")
            return subprocess.CompletedProcess(argv, 0, ",".join(core.LOAD_FIELDS) + "\n" + load, "")
        return original(argv, **kwargs)
    return torch, node, runner


@pytest.mark.parametrize("quick,seconds,burns", [(False, 30.0, True), (False, 0.5, True), (False, 0, False),
                                                 (True, 30.0, False)])
def test_the_sustained_tier_runs_on_the_full_probe_only_for_the_seconds_asked(monkeypatch, quick, seconds, burns):
    from gpuready.probe import burn

    torch, node, runner = _probe_node(monkeypatch)
    calls = []
    monkeypatch.setattr(burn, "burn", lambda *args: calls.append(args) or [check("burn_gpu0", FAIL, detail="hot")])
    report = core.probe(quick=quick, seconds=seconds, runner=runner, which=_which)
    names = [c["name"] for c in report["checks"]]
    assert ("burn_gpu0" in names) is burns and names.count("burn_gpu0") <= 1
    assert calls == ([(torch, 2, seconds, core, runner, _which)] if burns else [])
    assert "gpu0.bf16_matmul_tflops" in names and (report["verdict"] == FAIL) is burns
    size = 4096 if quick else 8192
    assert [e for e in torch.log if e[0] == "randn"][0] == ("randn", "cuda:0", (size, size), "bfloat16")
    assert node.calls.count("-q") == 1  # read again after the load without -q: its rows are not used


def test_the_probe_passes_how_gpus_are_shared_to_the_memory_check(monkeypatch):
    _, _, runner = _probe_node(monkeypatch, row={"memory.used": "40000 MiB"})
    by = {c["name"]: c for c in core.probe(runner=runner, which=_which, sharing="time-slicing")["checks"]}
    assert by["gpu1.memory_in_use"]["verdict"] == WARN
    assert by["gpu1.memory_in_use"]["detail"].endswith("; GPUs are shared (time-slicing)")


def test_memory_of_a_gpu_without_an_index_or_of_a_single_mib_is_still_judged():
    assert core.memory_checks([{"memory.used": 0, "memory.total": 1}], []) == [
        check("gpu?.memory_in_use", PASS, "0 of 1 MiB (0%)", "<= 5%")]


def test_a_gpu_without_nvlink_does_not_hide_the_links_of_the_gpus_after_it():
    state = {1: {"links": {0: 26.5}, "errors": {}}}
    assert core.nvlink_checks([{"index": 0}, {"index": 1}], state) == [check("gpu1.nvlink", PASS, "1 links up",
                                                                             "1 up")]


# --- analyse: what a capture or a probe's readings give ------------------------------------------------------------

def _row(index, uuid, **more):
    return {"index": index, "uuid": uuid, "driver_version": "580.159.04", **more}


@pytest.mark.parametrize("rows,expected,gpu_count", [
    ([_row(0, "a")], 2, check("gpu_count", FAIL, 1, 2, "fewer GPUs than the stack promised")),
    ([_row(0, "a"), _row(0, "a")], 2, check("gpu_count", FAIL, 1, 2, "fewer GPUs than the stack promised; each GPU "
                                                                      "judged on the latest of its 2 snapshots in the "
                                                                      "capture")),
    ([_row(0, "a"), _row(1, "b"), _row(0, "a")], 2, check(
        "gpu_count", PASS, 2, 2, "each GPU judged on the latest of its 2 snapshots in the capture")),
    ([_row(0, "a")], 0, check("gpu_count", PASS, 1, 1, "")),
    ([], 0, check("gpu_count", FAIL, 0, 1, "no GPU visible")),
    ([], 4, check("gpu_count", FAIL, 0, 4, "no GPU visible")),
])
def test_the_gpu_count_against_the_promise_says_how_snapshots_were_judged(rows, expected, gpu_count):
    checks = core.analyse(rows, {}, gpus_expected=expected)
    assert checks[:2] == [check("nvidia_driver", PASS, "580.159.04" if rows else None), gpu_count]


def test_the_driver_version_from_the_table_else_from_the_first_row():
    assert core.analyse([_row(0, "a", driver_version="1"), _row(1, "b", driver_version="2")], {})[0]["measured"] == "1"
    assert core.analyse([_row(0, "a")], {"driver": "595.80"})[0]["measured"] == "595.80"
    assert core.analyse([_row(0, "a")], {"driver": None})[0]["measured"] == "580.159.04"


def test_a_driver_error_is_the_first_check_and_the_last_but_the_environments():
    assert core.analyse([], {}, error="nvidia-smi not found", env={"NVIDIA_VISIBLE_DEVICES": "void"}) == [
        check("nvidia_driver", FAIL, detail="nvidia-smi not found"),
        check("nvidia_visible_devices", FAIL, "void", "all or device ids", "the container runtime mounted no GPU")]


def test_analyse_reads_the_node_state_it_is_given_and_only_that():
    rows = [_row(0, "a", **{"pci.bus_id": "00000000:3B:00.0", "memory.used": 50, "memory.total": 100})]
    state = {"apps": [{"gpu": "a", "pid": 1, "name": "x", "used": 50}],
             "nvlink": {0: {"links": {0: None, 1: 26.5}, "errors": {}}},
             "log": "NVRM: Xid (PCI:0000:3b:00): 79, gone\n", "log_why": None}
    names = [c["name"] for c in core.analyse(rows, {}, state=state, sharing="mps")]
    assert names == ["nvidia_driver", "gpu_count", "gpu0.memory_in_use", "gpu0.nvlink", "gpu0.xid"]
    by = {c["name"]: c for c in core.analyse(rows, {}, state=state, sharing="mps")}
    assert by["gpu0.memory_in_use"]["verdict"] == WARN and by["gpu0.xid"]["verdict"] == FAIL
    without_log = {k: v for k, v in state.items() if k not in ("log", "log_why")}
    assert [c["name"] for c in core.analyse(rows, {}, state=without_log)][-1] == "gpu0.nvlink"
    assert core.analyse(rows, {}, state={"log": None, "log_why": "no dmesg"})[-1] == check(
        "xid", SKIP, detail="kernel log not readable here (no dmesg)", required=False)


def test_an_xid_of_a_gpu_without_an_index_is_labelled_by_its_row():
    assert core.xid_checks([{"pci.bus_id": "0000:3b:00.0"}], "NVRM: Xid (PCI:0000:3b:00): 31\n") == [
        check("gpu?.xid", WARN, "31", "none", "application Xids since boot", required=False)]


def test_compute_apps_without_a_memory_column_or_with_a_memory_nvidia_smi_cannot_read():
    text = "pid, process_name, gpu_uuid\n5, a, GPU-x\n"
    assert core.parse_apps(text) == [{"gpu": "GPU-x", "pid": 5, "name": "a", "used": None}]
    text = "pid, process_name, used_gpu_memory [MiB], gpu_uuid\n5, a, unknown, GPU-x\n"
    assert core.parse_apps(text) == [{"gpu": "GPU-x", "pid": 5, "name": "a", "used": None}]


def test_a_stray_line_inside_the_compute_apps_csv_does_not_end_it():
    text = APPS_CSV.splitlines()[0] + "\nWARNING: infoROM is corrupted at gpu 0000:3B:00.0\n5, kept, 1 MiB, GPU-x\n"
    assert core.parse_apps(text) == [{"gpu": "GPU-x", "pid": 5, "name": "kept", "used": 1}]


def test_a_kernel_log_tool_that_cannot_start_is_named_in_at_most_120_characters(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "KMSG", str(tmp_path / "kmsg"))

    def runner(argv, **kwargs):
        raise OSError("e" * 300)
    assert core.read_kernel_log(runner=runner, which=_which) == (
        None, f"{'e' * 120}; {tmp_path / 'kmsg'}: No such file or directory")


def test_kmsg_read_whole_across_reads_with_bytes_that_are_not_utf8(tmp_path, monkeypatch):
    """A record split across two reads stays one line; bytes that are not UTF-8 are replaced, not fatal."""
    kmsg = tmp_path / "kmsg"
    xid = b"NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
    kmsg.write_bytes(b"x" * 8180 + b"\n" + b"\xff\xfe\n" + xid)
    monkeypatch.setattr(core, "KMSG", str(kmsg))
    text, why = core.read_kernel_log(runner=Node(), which=lambda name: None)
    assert why is None and text.endswith("\n\ufffd\ufffd\n" + xid.decode())
    assert core.parse_xids(text) == [("0:3b:00", 79, "pid=0, GPU has fallen off the bus.")]


def test_kmsg_opened_without_waiting_for_a_writer(tmp_path, monkeypatch):
    """/dev/kmsg is read without blocking: a reader that waited would hang the probe (a FIFO shows it here)."""
    fifo = tmp_path / "kmsg"
    os.mkfifo(fifo)
    monkeypatch.setattr(core, "KMSG", str(fifo))
    assert core.read_kernel_log(runner=Node(), which=lambda name: None) == ("", None)


def test_nvlink_counters_of_any_case_are_read():
    text = "GPU 0: H100 (UUID: GPU-0)\n\t Link 3: crc errors: 4\n\t Link 3: data rx: 9\n"
    assert core.parse_nvlink(text) == {0: {"links": {}, "errors": {(3, "crc errors"): 4}}}


def test_comment_prompt_and_unreadable_lines_of_a_capture_are_skipped_not_the_end():
    text = ("index, name, memory.total [MiB]\n"
            "# a, note, here\n  # an, indented, note\n$ echo a,b,c\n"
            + "x" * 200_000 + ", y, z\n"  # past csv's field limit: no cell of nvidia-smi's
            + "0, NVIDIA L4, 23034 MiB\n")
    assert core.parse_query_csv(text) == [{"index": 0, "name": "NVIDIA L4", "memory.total": 23034}]


# --- which line of a capture is a header ----------------------------------------------------------------------------

def test_the_legacy_capture_parses_whole_with_a_header_of_one_dotted_field():
    """SOURCE 3's header, ``utilization.gpu [%]``, names no field without a dot: still a header, not a GPU."""
    rows = core.parse_query_csv((CAPTURES / "legacy_na_vs_not_supported.txt").read_text())
    laptop = {"memory.total": 2004, "memory.free": 2004, "memory.used": 0, "temperature.gpu": 44, "fan.speed": None,
              "utilization.gpu": 0, "utilization.memory": 0}
    assert rows == [laptop, laptop, {
        "gpu_name": "GeForce GTX 770", "utilization.gpu": None, "utilization.memory": None, "temperature.gpu": 52,
        "power.draw": None, "power.limit": None, "fan.speed": 52, "pstate": "P0", "clocks.current.graphics": None,
        "clocks.current.memory": None, "power.max_limit": None, "power.default_limit": None},
        {"utilization.gpu": None}]


# the real H100's outputs of 2026-11-26 (tests/data/nvidia-smi/h100-device-2026-11-26), as saved: no command line
IDLE = """\
index, clocks.current.sm [MHz], clocks.max.sm [MHz], power.draw [W], power.limit [W], enforced.power.limit [W], \
temperature.gpu, clocks_event_reasons.active
0, 345 MHz, 1980 MHz, 72.96 W, 700.00 W, 700.00 W, 37, 0x0000000000000001
"""
IDLE_ROW = {"index": 0, "clocks.current.sm": 345, "clocks.max.sm": 1980, "power.draw": 72.96, "power.limit": 700.0,
            "enforced.power.limit": 700.0, "temperature.gpu": 37, "clocks_event_reasons.active": 1}
BURN = """\
timestamp, index, clocks.current.sm [MHz], power.draw.instant [W], power.draw.average [W], temperature.gpu, \
clocks_event_reasons.active
2026/11/26 15:31:24.465, 0, 345 MHz, 73.58 W, 72.97 W, 37, 0x0000000000000001
"""
BURN_ROW = {"timestamp": "2026/11/26 15:31:24.465", "index": 0, "clocks.current.sm": 345,
            "power.draw.instant": 73.58, "power.draw.average": 72.97, "temperature.gpu": 37,
            "clocks_event_reasons.active": 1}
NAMES = "name, memory.total [MiB], memory.used [MiB]\nNVIDIA H100 80GB HBM3, 81559 MiB, 0 MiB\n"
NAMES_ROW = {"name": "NVIDIA H100 80GB HBM3", "memory.total": 81559, "memory.used": 0}


def test_a_saved_query_without_its_command_line_is_read_by_its_header():
    """``nvidia-smi --query-gpu=memory.used,memory.total --format=csv > file``: the header alone names the fields,
    whichever field comes first."""
    text = "memory.used [MiB], memory.total [MiB]\n19818 MiB, 81559 MiB\n"
    assert core.parse_query_csv(text) == [{"memory.used": 19818, "memory.total": 81559}]


@pytest.mark.parametrize("first,second", [((BURN, BURN_ROW), (IDLE, IDLE_ROW)), ((IDLE, IDLE_ROW), (BURN, BURN_ROW)),
                                          ((IDLE, IDLE_ROW), (NAMES, NAMES_ROW))])
def test_queries_saved_one_after_another_each_start_at_their_header(first, second):
    """Outputs appended to one file without their command lines: a header led by index, timestamp or name starts
    the next section, its rows read by its own fields."""
    assert core.parse_query_csv(first[0] + second[0]) == [first[1], second[1]]


def test_processes_saved_after_the_gpus_without_their_command_line_are_not_gpus():
    """``--query-compute-apps`` output (its header as the real H100 printed it) appended to the GPUs' query."""
    apps = "pid, process_name, used_gpu_memory [MiB], gpu_uuid\n4242, python3, 40000 MiB, GPU-0a1b\n"
    assert core.parse_query_csv(IDLE + apps) == [IDLE_ROW]


def test_a_field_asked_by_another_name_comes_back_under_its_own():
    """``clocks.sm`` is headed ``clocks.current.sm`` (the real H100's header): the header is the command's, not a
    GPU, and its names are the fields' own."""
    text = ("$ nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu --format=csv\n"
            "clocks.current.sm [MHz], clocks.max.sm [MHz], temperature.gpu\n345 MHz, 1980 MHz, 37\n")
    assert core.parse_query_csv(text) == [{"clocks.current.sm": 345, "clocks.max.sm": 1980, "temperature.gpu": 37}]
