"""Impossible Batch setups fail when the component is constructed, with the field, the value and the fix."""

from __future__ import annotations

import datetime

import pytest

from gpuready_components import catalog
from gpuready_components.batch_gpu import CpuQueueArgs, GpuJobArgs, MultiNodeArgs
from gpuready_components.batch_gpu.validation import check
from gpuready_components.errors import ConfigError

from .helpers import args, build


def error(**overrides) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        check(args(**overrides), today=datetime.date(2026, 11, 22))
    return e.value


def test_unknown_instance_type_suggests_close_names():
    e = error(instance_types=["g6.xlarge", "g6.xlarg"])
    assert e.field == "instance_types" and e.value == "g6.xlarg"
    assert "unknown instance type" in str(e) and "g6.xlarge" in e.fix


def test_cpu_instance_type_in_gpu_environment_is_refused():
    e = error(instance_types=["m5.xlarge"])
    assert "m5.xlarge" in str(e) and "has no NVIDIA GPU" in str(e) and "cpu_queue" in e.fix


def test_a_bare_string_is_not_a_list_of_types():
    assert "must be a list" in str(error(instance_types="g6.xlarge"))


def test_job_needing_more_gpus_than_any_instance_is_the_runnable_forever_error():
    e = error(instance_types=["g6.xlarge", "g6.2xlarge"], job=GpuJobArgs(gpus=4, vcpus=8, memory_mib=16384))
    assert e.field == "job"
    assert "RUNNABLE forever" in str(e)
    assert "g6.2xlarge (1 GPU, 8 vCPU" in str(e)  # what the queue offers
    assert e.fix.endswith("such as g4dn.12xlarge, g6.12xlarge")  # the cheapest types that do hold it


def test_job_asking_for_the_whole_instance_memory_does_not_fit():
    """ECS keeps part of the memory: a job asking for all 16 GiB of a g6.xlarge never starts."""
    e = error(instance_types=["g6.xlarge"], job=GpuJobArgs(gpus=1, vcpus=4, memory_mib=16384))
    assert "15564 MiB usable" in str(e)
    check(args(instance_types=["g6.xlarge"], job=GpuJobArgs(gpus=1, vcpus=4, memory_mib=15564)))


def test_job_resources_must_fit_one_instance_together_not_separately():
    # g6.12xlarge has the GPUs, g6e.16xlarge the memory: no single instance has both.
    e = error(instance_types=["g6.12xlarge", "g6e.16xlarge"], max_vcpus=128,
              job=GpuJobArgs(gpus=4, vcpus=8, memory_mib=300_000))
    assert e.field == "job"


def test_max_vcpus_below_an_instance_size_is_refused():
    e = error(instance_types=["g6.xlarge", "g6.48xlarge"], max_vcpus=64)
    assert e.field == "max_vcpus" and "g6.48xlarge" in str(e) and "at least 192" in e.fix


def test_min_above_max_is_refused():
    assert error(min_vcpus=128, max_vcpus=64).field == "min_vcpus/max_vcpus"


def test_multi_node_on_spot_is_refused():
    e = error(multi_node=MultiNodeArgs(capacity="spot"))
    assert e.field == "multi_node.capacity" and "on-demand capacity only" in str(e)


def test_spot_single_node_capacity_and_multi_node_go_together():
    """Multi-node jobs get their own on-demand environment, so single-node jobs may use Spot."""
    cap = check(args(capacity=["spot"], multi_node=MultiNodeArgs()))
    assert cap.multi_node.instance_types == ["g6.12xlarge"]


def test_multi_node_in_several_subnets_is_refused():
    e = error(multi_node=MultiNodeArgs(subnet=["subnet-aaaaaaaa", "subnet-bbbbbbbb"]))
    assert e.field == "multi_node.subnet" and "one Availability Zone" in str(e)


def test_efa_and_non_efa_types_mixed_are_refused():
    e = error(instance_types=["g6.4xlarge", "g6.8xlarge"], multi_node=MultiNodeArgs(
        instance_types=["g6.4xlarge", "g6.8xlarge"]))
    assert e.field == "multi_node.instance_types" and "g6.8xlarge" in str(e) and "without EFA (g6.4xlarge)" in str(e)


def test_more_efa_interfaces_than_the_type_has_are_refused():
    e = error(instance_types=["p4d.24xlarge"], max_vcpus=96, multi_node=MultiNodeArgs(efa_interfaces=8))
    assert e.field == "multi_node.efa_interfaces" and e.value == 8 and "p4d.24xlarge has (4)" in str(e)
    assert "4 or less" in e.fix
    assert error(multi_node=MultiNodeArgs(efa_interfaces=-1)).field == "multi_node.efa_interfaces"


def test_efa_on_a_type_without_efa_is_refused():
    e = error(instance_types=["g6.xlarge"], multi_node=MultiNodeArgs(efa_interfaces=1))
    assert e.field == "multi_node.efa_interfaces" and "g6.xlarge has (0)" in str(e)


def test_multi_node_that_cannot_fit_under_its_max_vcpus_is_refused():
    e = error(instance_types=["g6.12xlarge"], multi_node=MultiNodeArgs(nodes=3, max_vcpus=96))
    assert e.field == "multi_node.max_vcpus" and "144 vCPUs" in str(e) and "at least 144" in e.fix


def test_multi_node_max_vcpus_defaults_to_one_job_of_the_largest_type():
    cap = check(args(instance_types=["g6.12xlarge", "g6.24xlarge"], max_vcpus=96,
                     multi_node=MultiNodeArgs(nodes=3, instance_types=["g6.12xlarge", "g6.24xlarge"])))
    assert cap.multi_node.max_vcpus == 3 * 96
    assert (cap.multi_node.gpus, cap.multi_node.vcpus) == (4, 48)  # what every type holds


def test_a_node_that_fits_no_instance_is_refused():
    e = error(multi_node=MultiNodeArgs(memory_mib=192 * 1024))
    assert e.field == "multi_node.memory_mib" and "RUNNABLE forever" in str(e) and "g6.12xlarge" in str(e)
    assert error(multi_node=MultiNodeArgs(vcpus=64)).field == "multi_node.vcpus"


def test_types_with_different_gpu_counts_are_refused():
    e = error(multi_node=MultiNodeArgs(instance_types=["g6.12xlarge", "g6.48xlarge"], max_vcpus=384))
    assert e.field == "multi_node.instance_types" and "same number of ranks" in str(e)


def test_p6_b300_and_a_card_0_efa_type_need_different_launch_templates():
    e = error(instance_types=["p6-b300.48xlarge", "p5en.48xlarge"], max_vcpus=192, multi_node=MultiNodeArgs(
        efa_interfaces=16))
    assert e.field == "multi_node.instance_types" and "card 0 is ENA only" in str(e)


def test_shared_memory_must_fit_the_container():
    e = error(multi_node=MultiNodeArgs(shared_memory_mib=10**7))
    assert e.field == "multi_node.shared_memory_mib"


def test_multi_node_capacity_counts_in_the_totals():
    cap = check(args(instance_types=["p5.48xlarge"], max_vcpus=192, multi_node=MultiNodeArgs()))
    assert cap.max_total_gpus == 8 + 16
    assert cap.max_usd_per_hour == pytest.approx(3 * catalog.lookup("aws", "p5.48xlarge").price_usd_hour, abs=0.01)


def test_single_node_multi_node_is_refused():
    assert error(multi_node=MultiNodeArgs(nodes=1)).field == "multi_node.nodes"


def test_non_nvidia_image_type_is_refused():
    e = error(image_type="ECS_AL2023")
    assert e.field == "image_type" and "no driver" in str(e)


def test_amazon_linux_2_is_refused_after_batch_blocks_it():
    assert "since 2026-06-30" in str(error(image_type="ECS_AL2_NVIDIA"))
    check(args(image_type="ECS_AL2_NVIDIA"), today=datetime.date(2026, 1, 1))


def test_p3_is_refused_on_al2023_unless_an_ami_is_given():
    e = error(instance_types=["p3.2xlarge"])
    assert e.field == "instance_types" and e.value == ["p3.2xlarge"]
    check(args(instance_types=["p3.2xlarge"], image_id="ami-0123456789abcdef0"))


@pytest.mark.parametrize("capacity", [[], ["on-demand", "on-demand"], ["preemptible"]])
def test_capacity_must_be_on_demand_or_spot(capacity):
    assert error(capacity=capacity).field == "capacity"


@pytest.mark.parametrize("size", [8, 20_000])
def test_root_volume_size_is_bounded(size):
    assert error(root_volume_gib=size).field == "root_volume_gib"


@pytest.mark.parametrize("size, refused", [(29, True), (30, False), (16_384, False), (16_385, True)])
def test_root_volume_size_is_bounded_on_both_sides(size, refused):
    if refused:
        assert error(root_volume_gib=size).field == "root_volume_gib"
    else:
        check(args(root_volume_gib=size))


@pytest.mark.parametrize("minutes", [5, 2000])
def test_runnable_timeout_is_within_what_batch_accepts(minutes):
    assert "10 to 1440" in str(error(runnable_timeout_minutes=minutes))


def test_log_retention_must_be_a_cloudwatch_period():
    assert error(log_retention_days=10).field == "log_retention_days"


def test_gpu_types_in_the_cpu_queue_are_refused():
    e = error(cpu_queue=CpuQueueArgs(instance_types=["m6i.large", "g5.xlarge"]))
    assert e.field == "cpu_queue.instance_types" and e.value == ["g5.xlarge"]


def test_unknown_types_in_the_cpu_queue_are_refused():
    assert error(cpu_queue=CpuQueueArgs(instance_types=["m6i.larg"])).value == ["m6i.larg"]


@pytest.mark.parametrize("field,job", [("job.gpus", GpuJobArgs(gpus=0)), ("job.timeout_seconds",
                                                                          GpuJobArgs(timeout_seconds=10))])
def test_job_figures_have_floors(field, job):
    assert error(job=job).field == field


def test_component_fails_before_declaring_anything(render):
    with pytest.raises(ConfigError, match="RUNNABLE forever"):
        build(render, job=GpuJobArgs(gpus=8))


def test_creating_a_security_group_needs_the_vpc(render):
    with pytest.raises(ConfigError) as e:
        build(render, vpc_id=None)
    assert e.value.field == "vpc_id"


def test_message_names_field_value_and_fix():
    e = error(root_volume_gib=8)
    assert str(e) == "root_volume_gib = 8: must be between 30 and 16384 GiB. Fix: use 100 GiB or more for " \
                     "deep-learning images"


def test_job_role_policies_must_be_managed_policy_arns():
    e = error(job_role_policy_arns=["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "AmazonS3ReadOnlyAccess"])
    assert e.field == "job_role_policy_arns" and e.value == ["AmazonS3ReadOnlyAccess"]
    assert "arn:aws:iam::aws:policy/" in e.fix
    check(args(job_role_policy_arns=["arn:aws-us-gov:iam::123456789012:policy/path/mine"]),
          today=datetime.date(2026, 11, 22))


@pytest.mark.parametrize("bucket", ["s3://ml-data", "ml-data/metaflow", "ML-Data", "ab", "a..b"])
def test_a_metaflow_datastore_that_is_not_a_bucket_name_is_refused(bucket):
    e = error(metaflow_datastore_bucket=bucket)
    assert e.field == "metaflow_datastore_bucket" and "bucket's name alone" in e.fix


def test_a_bucket_name_is_taken():
    check(args(metaflow_datastore_bucket="ml-data.team-1"), today=datetime.date(2026, 11, 22))
