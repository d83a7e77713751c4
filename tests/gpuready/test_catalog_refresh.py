"""`gpuready catalog refresh` against recorded API answers (tests/data/catalog) and moto's EC2 (DescribeInstanceTypes
from moto's own copy of EC2's data): the rows it builds, the diff it prints, and what it writes."""

from __future__ import annotations

import dataclasses
import datetime
import json
import socket
from pathlib import Path

import pytest

from gpuready import cli
from gpuready.refresh import fetch
from gpuready.refresh.diff import compare
from gpuready_components import catalog

DATA = Path(__file__).parent.parent / "data" / "catalog"
TODAY = datetime.date(2026, 11, 24)


@pytest.fixture(scope="module")
def moto_ec2():
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="module")
def aws_fresh(moto_ec2):
    """The AWS refresh: EC2 from moto's server, prices from the recorded GetProducts answer (read once)."""
    with pytest.MonkeyPatch.context() as env:
        for key, value in {"AWS_ENDPOINT_URL": moto_ec2, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY":
                           "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
            env.setenv(key, value)
        env.delenv("AWS_PROFILE", raising=False)
        return fetch("aws", DATA / "aws", TODAY)


def _without(names, **changed_prices):
    """The catalog's rows less ``names``, with some prices changed: the catalog a refresh compares with."""
    return tuple(dataclasses.replace(r, price_usd_hour=changed_prices.get(r.name, r.price_usd_hour))
                 for r in catalog.file_rows() if r.name not in names)


def test_aws_rows_come_from_describe_instance_types_and_the_price_list(aws_fresh):
    fresh = aws_fresh
    rows = {r.name: r for r in fresh.rows}
    p5 = rows["p5.48xlarge"]
    assert (p5.gpu_model, p5.gpus, p5.gpu_memory_gib, p5.vcpus, p5.memory_gib) == ("H100", 8, 80.0, 192, 2048.0)  # EC2: 81,920 MiB
    assert (p5.efa_interfaces, p5.network_gbps, p5.price_usd_hour) == (32, 3200.0, 55.04)  # Linux, not Windows
    assert (p5.price_date, p5.spec_source, p5.price_source) == ("2026-11", "aws-ec2-api", "aws-price-list-api")
    assert rows["g5g.xlarge"].gpu_model == "T4g" and rows["p6-b200.48xlarge"].price_usd_hour == 113.9328
    assert rows["p5e.48xlarge"].price_usd_hour is None  # the Price List answer has no on-demand price for it
    assert all(catalog.problems(r) == [] for r in fresh.rows)


def test_aws_skips_what_is_not_a_whole_nvidia_gpu(aws_fresh):
    skipped = {s.name: s.reason for s in aws_fresh.skipped}
    assert skipped["inf2.xlarge"] == "not NVIDIA: AWS Inferentia"
    assert skipped["trn1.32xlarge"] == "not NVIDIA: AWS Trainium"
    assert skipped["g6f.large"].startswith("fractional GPU: a fraction of one L4")
    assert not {"g5.xlarge", "p5.48xlarge", "m7i.large", "g7.2xlarge", "g7e.48xlarge"} & set(skipped)


def test_aws_refresh_writes_gpu_memory_in_the_catalogs_unit(aws_fresh):
    """The refresh writes EC2's GiB (SizeInMiB / 1024) as the catalog holds it: the same figure for every type both
    have, so a refresh never turns GiB back into GB (the L4's 22,888 MiB stays 22.35 GiB, not 24)."""
    fresh = {r.name: r.gpu_memory_gib for r in aws_fresh.rows}
    held = {r.name: r.gpu_memory_gib for r in catalog.file_rows() if r.cloud == "aws" and r.name in fresh}
    assert len(held) >= 50 and held == {name: fresh[name] for name in held}
    assert (fresh["g6.xlarge"], fresh["g7.2xlarge"], fresh["g7e.2xlarge"]) == (22.3515625, 32.0, 96.0)


def test_aws_diff_names_added_rows_and_price_moves(aws_fresh):
    current = _without({"p5en.48xlarge", "g5g.xlarge"}, **{"p5.48xlarge": 98.32, "p4d.24xlarge": 32.7726})
    diff = compare(current, aws_fresh)
    assert {"p5en.48xlarge", "g5g.xlarge"} <= {r.name for r in diff.added}
    moves = {m.name: m for m in diff.price_moves}
    assert (moves["p5.48xlarge"].old, moves["p5.48xlarge"].new, moves["p5.48xlarge"].percent) == (98.32, 55.04, -44.0)
    assert moves["p4d.24xlarge"].percent == -33.0
    # not in moto's copy of EC2's data (EC2 lists them): kept, not dropped
    assert [r.name for r in diff.missing] == ["p3.2xlarge", "p3.8xlarge", "p3.16xlarge", "p6e-gb200.36xlarge"]
    assert "p6e-gb200.36xlarge" in {r.name for r in diff.rows}
    assert [r.name for r in diff.rows if r.name.startswith("p3.")] == ["p3.2xlarge", "p3.8xlarge", "p3.16xlarge"]


def test_gcp_rows_price_machines_from_their_billing_skus():
    rows = {r.name: r for r in fetch("gcp", DATA / "gcp", TODAY).rows}
    # machine price = GPUs + series core x vCPUs + series RAM x GiB, as the catalog's cited us-central1 prices
    assert rows["n1-standard-8:nvidia-tesla-t4:1"].price_usd_hour == pytest.approx(0.729998)
    assert rows["n1-standard-8:nvidia-tesla-v100:1"].price_usd_hour == pytest.approx(2.859998)
    assert rows["a3-highgpu-8g"].price_usd_hour == pytest.approx(88.253719)
    ultra, a4 = rows["a3-ultragpu-8g"], rows["a4-highgpu-8g"]
    # GPU memory as gpu_models.csv holds the model (EC2's figure): 141 GB is 141 GiB, 180 GB 183,359 MiB
    assert (ultra.gpu_model, ultra.gpu_memory_gib, ultra.vcpus, ultra.memory_gib) == ("H200", 141.0, 224, 2952.0)
    assert (a4.gpu_model, a4.gpu_memory_gib, a4.accelerator, a4.price_usd_hour) == (
        "B200", 183359 / 1024, "nvidia-b200", None)
    assert "e2-standard-4" not in rows and "n1-standard-8" not in rows


def test_azure_rows_and_skips():
    fresh = fetch("azure", DATA / "azure", TODAY)
    rows = {r.name: r for r in fresh.rows}
    nvl = rows["Standard_NC80adis_H100_v5"]
    assert (nvl.gpu_model, nvl.gpus, nvl.gpu_memory_gib, nvl.vcpus, nvl.memory_gib) == ("H100", 2, 87.54, 80, 640.0)  # 94 GB in GiB
    assert rows["Standard_NC24ads_A100_v4"].price_usd_hour == 3.673  # Linux pay-as-you-go, not Windows/Spot/RI
    assert rows["Standard_ND96isr_H200_v5"].gpu_model == "H200"
    skipped = {s.name: s.reason for s in fresh.skipped}
    assert skipped == {"Standard_ND96isr_MI300X_v5": "not NVIDIA: AMD Instinct MI300X",
                       "Standard_NV6ads_A10_v5": "fractional GPU: a sixth to a half of one A10 (NVIDIA GRID vGPU), "
                                                 "not supported"}


@pytest.mark.parametrize("cloud", ["gcp", "azure"])
def test_gcp_and_azure_refresh_write_each_models_gib_as_the_catalog_holds_it(cloud):
    """Neither API reports GPU memory: a refreshed row takes its model size's GiB figure of gpu_models.csv (EC2's
    figure, H100 80 GB is 80 GiB), the same as the catalog's row of that type, never its own GB conversion."""
    fresh = {r.name: r for r in fetch(cloud, DATA / cloud, TODAY).rows}
    held = {r.name: r.gpu_memory_gib for r in catalog.file_rows() if r.cloud == cloud and r.name in fresh}
    assert held and held == {name: fresh[name].gpu_memory_gib for name in held}
    assert all(row.gpu_memory_gib == catalog.model_gib(row.gpu_model, catalog.memory_size(row.gpu_model,
                                                                                           row.gpu_memory_gib))
               for row in fresh.values())


def test_cli_prints_the_diff_and_writes_only_with_write(tmp_path, capsys):
    path = tmp_path / "gpu_instances.csv"
    catalog.write_csv(path, _without({"Standard_NC40ads_H100_v5"}, Standard_NC24ads_A100_v4=3.4))
    before = path.read_text()
    assert cli.main(["catalog", "refresh", "--cloud", "azure", "--from", str(DATA / "azure"),
                     "--catalog", str(path)]) == 0
    out = capsys.readouterr().out
    assert "+ Standard_NC40ads_H100_v5: 1x H100 87.54 GiB, 40 vCPUs, 320 GiB, no on-demand price" in out
    assert "$ Standard_NC24ads_A100_v4: 3.4 -> 3.673 $/h (+8.0%)" in out
    assert "- Standard_ND96isr_MI300X_v5: skipped, not NVIDIA: AMD Instinct MI300X" in out
    assert path.read_text() == before and "nothing written" in out

    assert cli.main(["catalog", "refresh", "--cloud", "azure", "--from", str(DATA / "azure"), "--catalog", str(path),
                     "--write", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == str(path) and report["price_moves"][0]["percent"] == 8.0
    rows = {r.name: r for r in catalog.read_csv(path)}
    assert rows["Standard_NC40ads_H100_v5"].price_source == "azure-retail-api"
    assert rows["Standard_NC24ads_A100_v4"].price_usd_hour == 3.673
    assert rows["Standard_NC24ads_A100_v4"].price_date == datetime.date.today().strftime("%Y-%m")
    assert rows["Standard_NC4as_T4_v3"] == catalog.find("azure", "Standard_NC4as_T4_v3")  # not in the answer: kept
    assert len(rows) == len(catalog.file_rows())


def test_cli_names_what_is_missing_without_a_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AZURE_ACCESS_TOKEN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `az` to ask for a token
    (tmp_path / "notes.json").write_text("{}")  # a recording of another API: the Azure ones are asked live
    assert cli.main(["catalog", "refresh", "--cloud", "azure", "--from", str(tmp_path)]) == 2
    assert "no Azure access token: set AZURE_ACCESS_TOKEN" in capsys.readouterr().err
    assert cli.main(["catalog", "refresh", "--cloud", "gcp", "--from", str(tmp_path / "nowhere")]) == 2
    assert "not a folder of recorded API answers" in capsys.readouterr().err


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_from_a_folder_without_recordings_is_refused_without_asking_the_api(cloud, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # were an API asked, it would fail otherwise
    (tmp_path / "README").write_text("recordings go here")
    assert cli.main(["catalog", "refresh", "--cloud", cloud, "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no recorded API answers" in err and "asking the API" not in err, err
