"""Stack files as ``gpuready plan`` reads them: what Pulumi would read, and one paragraph naming the key for what it
cannot (never an internal error)."""

from __future__ import annotations

import codecs
import json

import pytest

from gpuready.cli import main
from gpuready.errors import printable
from gpuready.project import load_stack_config
from tests.conftest import ROOT

REFERENCE = (ROOT / "stacks" / "Pulumi.aws-batch.yaml").read_text()


def _plan(tmp_path, content: bytes) -> int:
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_bytes(content)
    return main(["plan", "--stack-file", str(path), "--no-policies"])


@pytest.mark.parametrize("extra,expected", [
    ("  gpuready:maxVcpus: 128\n", "gpuready:maxVcpus is given twice in one map (line 14 and line {n1} of"),
    ("  gpuready:cpuQueue: {maxVcpus: .inf}\n", "gpuready:cpuQueue.maxVcpus = inf in"),
    ("  gpuready:imageId: .nan\n", "gpuready:imageId = nan in"),
    ("  7: 1\n", "config key 7 is not text"),
    ("  gpuready:network: {1: subnet-1}\n", "gpuready:network: key 1 in"),
    ("  gpuready:imageId: !!binary aGk=\n", "gpuready:imageId in"),
    ("  gpuready:network: " + "[" * 2000 + "]" * 2000 + "\n", "nests maps or lists too deeply"),
    ("  gpuready:multiNode:\n    nodes: 2\n    nodes: 3\n", "nodes is given twice in one map (line {n2} and line {n3}"),
    ("  gpuready:multiNode: {nodes: 1, nodes: 2}\n",
     "nodes is given twice in one map (line {n1} column 24 and line {n1} column 34"),
    ("  gpuready:multiNode:\n    placement: {a: {gpus: 1, gpus: 2}}\n", "gpus is given twice in one map (line {n2}"),
])
def test_what_config_cannot_hold_is_refused_naming_the_key(tmp_path, capsys, extra, expected):
    assert _plan(tmp_path, (REFERENCE + extra).encode()) == 2
    err = capsys.readouterr().err
    end = REFERENCE.count("\n")  # the lines added come after the reference stack's
    expected = expected.format(n1=end + 1, n2=end + 2, n3=end + 3)
    assert expected in err and "Pulumi.custom.yaml" in err and "Traceback" not in err, err


def test_a_stack_file_that_is_not_utf8(tmp_path, capsys):
    assert _plan(tmp_path, REFERENCE.replace("ml-platform", "ml-plätform").encode("latin-1")) == 2
    assert "is not UTF-8 (byte 0xe4 at offset" in capsys.readouterr().err


def test_utf8_with_bom_and_dates_read_as_pulumi_reads_them(tmp_path):
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_bytes(codecs.BOM_UTF8 + (REFERENCE + "  gpuready:tags:\n    since: 2026-01-02\n").encode())
    with pytest.raises(Exception, match="twice"):  # tags is already in the reference stack
        load_stack_config(path, "gpuready")
    path.write_bytes(codecs.BOM_UTF8 + REFERENCE.replace("cost-center: gpu", "since: 2026-01-02").encode())
    assert json.loads(load_stack_config(path, "gpuready")["gpuready:tags"])["since"] == "2026-01-02"


def test_printable_escapes_what_a_terminal_would_obey():
    assert printable("gpuready:\x1b]0;owned\x07x\u202e") == "gpuready:\\x1b]0;owned\\x07x\\u202e"
    assert printable("g6.xlarge ü") == "g6.xlarge ü" and printable(["\x1b"]) == "['\\x1b']"
    assert printable("x" * 500, limit=10) == "xxxxxxx..."
