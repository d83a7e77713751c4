"""``BatchGpuEnvironment``: AWS Batch GPU capacity that scales from zero, with a GPU-only queue."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional, Sequence

import pulumi

from ..aws_instances import efa_layout
from ..aws_network import zones
from . import reservation
from .. import metaflow
from ..errors import ConfigError
from ..sdk import require
from . import facts
from .args import BatchGpuEnvironmentArgs, GpuJobArgs
from .outputs import OUTPUTS
from .validation import BatchCapacity, MultiNodePlan, catalog_of, check, checked_inputs

aws = require("pulumi_aws")


def _assume_role_policy(service: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})


def _datastore_policy(bucket: str) -> str:
    """Read and write on a Metaflow datastore bucket: what Metaflow's steps do with their artifacts."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}"},
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": f"arn:aws:s3:::{bucket}/*"}]})


def _metaflow(queue: pulumi.Output[str], role_arn: pulumi.Output[str],
              args: BatchGpuEnvironmentArgs) -> pulumi.Output[dict[str, str]]:
    """The Metaflow profile of steps on ``queue`` (:func:`~gpuready_components.metaflow.batch_profile`)."""
    return pulumi.Output.all(queue, role_arn).apply(lambda a: metaflow.batch_profile(
        job_queue=a[0], job_role_arn=a[1], image=args.job.image, datastore_bucket=args.metaflow_datastore_bucket))


def _container_properties(job: GpuJobArgs, log_group: pulumi.Output[str],
                          job_role_arn: pulumi.Output[str]) -> dict[str, Any]:
    """Batch ``ContainerProperties`` (the API's own camelCase shape) for a GPU job."""
    return {
        "image": job.image,
        "jobRoleArn": job_role_arn,
        "command": list(job.command),
        "resourceRequirements": [
            {"type": "GPU", "value": str(job.gpus)},
            {"type": "VCPU", "value": str(job.vcpus)},
            {"type": "MEMORY", "value": str(job.memory_mib)},
        ],
        "environment": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}],
        "logConfiguration": {
            "logDriver": "awslogs",
            "options": {"awslogs-group": log_group, "awslogs-stream-prefix": "gpuready"},
        },
    }


class _Roles(NamedTuple):
    """The IAM part: what instances and jobs run as."""

    instance_profile: Any
    spot_fleet: Optional[Any]
    """The Spot fleet role, only with Spot capacity."""
    job: Any
    job_arn: pulumi.Output[str]
    """The job role's ARN from its name, known in a preview (unlike its ``arn`` output)."""


def _time_limits(args: BatchGpuEnvironmentArgs) -> list[Any]:
    """The queue's cancellations of jobs stuck in RUNNABLE: after 10 minutes for a job no instance can hold,
    after ``runnable_timeout_minutes`` for the others."""
    runnable_seconds = args.runnable_timeout_minutes * 60
    return [
        aws.batch.JobQueueJobStateTimeLimitActionArgs(
            action="CANCEL", state="RUNNABLE", reason=reason,
            max_time_seconds=facts.RUNNABLE_SECONDS_RANGE[0]
            if reason == "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT" else runnable_seconds)
        for reason in facts.RUNNABLE_BLOCKED_REASONS]


def _multi_node_container(plan: MultiNodePlan, job: GpuJobArgs, log_group: pulumi.Output[str],
                          job_role_arn: pulumi.Output[str]) -> dict[str, Any]:
    """The container of every node of a multi-node job: the whole instance, EFA devices, NCCL's environment."""
    container = _container_properties(job, log_group, job_role_arn)
    container["resourceRequirements"] = [
        {"type": "GPU", "value": str(plan.gpus)},
        {"type": "VCPU", "value": str(plan.vcpus)},
        {"type": "MEMORY", "value": str(plan.memory_mib)},
    ]
    environment = list(facts.NCCL_ENVIRONMENT)
    if plan.efa_interfaces:
        environment += facts.EFA_ENVIRONMENT
        if plan.rdma:
            environment.append(("FI_EFA_USE_DEVICE_RDMA", "1"))
    container["environment"] = container["environment"] + [{"name": k, "value": v} for k, v in environment]
    container["linuxParameters"] = {
        "devices": [{"hostPath": facts.EFA_DEVICE.format(i)} for i in range(plan.efa_interfaces)],
        "sharedMemorySize": plan.shared_memory_mib,
    }
    container["ulimits"] = [{"name": "memlock", "softLimit": facts.MEMLOCK_UNLIMITED,
                             "hardLimit": facts.MEMLOCK_UNLIMITED}]
    return container


def _efa_interfaces(plan: MultiNodePlan, subnet: pulumi.Input[str], groups: Any) -> list[Any]:
    """The launch template's network interfaces (:func:`~gpuready_components.aws_instances.efa_layout`), each with
    the subnet and security groups: an instance with network interfaces takes neither at its own level."""
    return [aws.ec2.LaunchTemplateNetworkInterfaceArgs(
        network_card_index=card, device_index=device, interface_type=kind, subnet_id=subnet, security_groups=groups,
        delete_on_termination="true") for card, device, kind in efa_layout(plan.instance_types, plan.efa_interfaces)]


class BatchGpuEnvironment(pulumi.ComponentResource):
    """AWS Batch GPU compute environments, a GPU-only job queue and GPU job definitions.

    Inputs are checked before any resource is declared (see :mod:`.validation`); the outputs carry what the smoke
    test and the capacity summary need.

    With ``teams``, a fair-share queue beside the GPU queue, on the same compute environments in the same order
    (and one beside the multi-node queue, on its environment), each with a ``SchedulingPolicy`` of one share per team
    (:mod:`.shares`); the teams' queue has the higher priority, so the shares govern and the FIFO queue's jobs run on
    what the teams leave. Why two queues: SubmitJob on a queue with a fair-share policy must carry a
    ``shareIdentifier`` and Metaflow's ``@batch`` sends none, so a policy on the GPU queue would refuse every Metaflow
    job; and Batch can add no policy to a FIFO queue (only replace one), so putting one on the existing GPU queue
    would replace it. The GPU queue thus stays FIFO, named by ``metaflowProfile`` and every team's profile; a team's
    other jobs go to the teams' queue with its share identifier (the ``teams`` output).
    """

    job_queue_name: pulumi.Output[str]
    job_queue_arn: pulumi.Output[str]
    compute_environment_arns: pulumi.Output[list[str]]
    job_definition_arn: pulumi.Output[str]
    job_role_arn: pulumi.Output[str]
    """The IAM role every job assumes: no permissions unless ``job_role_policy_arns`` attaches some."""
    multi_node_job_definition_arn: Optional[pulumi.Output[str]]
    multi_node_job_queue_arn: Optional[pulumi.Output[str]]
    """The multi-node queue: its own EC2 on-demand environment in one subnet and a cluster placement group."""
    cpu_job_queue_arn: Optional[pulumi.Output[str]]
    teams_job_queue_arn: Optional[pulumi.Output[str]]
    """The GPU fair-share queue (with ``teams`` only): jobs carry their team's share identifier."""
    multi_node_teams_job_queue_arn: Optional[pulumi.Output[str]]
    """The multi-node fair-share queue (with ``teams`` and ``multi_node`` only)."""
    log_group_name: pulumi.Output[str]
    capacity: BatchCapacity
    """Catalog facts of the instance types: largest instance, maximum GPUs and dollars per hour."""
    outputs: dict[str, Any]
    """What the component registered: the ``aws-batch`` output contract (:mod:`.outputs`), for the stack to export."""

    def __init__(self, name: str, args: BatchGpuEnvironmentArgs,
                 opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(facts.TYPE_TOKEN, name, None, opts)
        self.capacity = cap = check(args)
        self._types = catalog_of(args)  # the file's types and the declared ones, whose facts it stamps
        args = checked_inputs(args)
        tags = {"gpuready:component": name, **args.tags}

        roles = self._iam(name, args, tags)
        groups = self._security_groups(name, args, tags)
        template = self._launch_template(f"{name}-gpu", "gpuready Batch GPU instances: IMDSv2 only, encrypted gp3 "
                                         "root volume", args, tags, reserved=args.reservation)
        gpu_subnets, subnet_zones = self._gpu_subnets(args)
        environments = [self._compute_environment(
            f"{name}-gpu-{kind}", roles, tags, capacity=kind, min_vcpus=args.min_vcpus if order == 1 else 0,
            max_vcpus=args.max_vcpus, instance_types=list(args.instance_types), subnets=gpu_subnets,
            security_group_ids=groups, launch_template=template, image_type=args.image_type, image_id=args.image_id,
            stamps=reservation.stamps(args.reservation))
            for order, kind in enumerate(args.capacity, start=1)]
        time_limits = _time_limits(args)
        queue = self._queue(f"{name}-gpu", environments, tags, time_limits)
        log_group = aws.cloudwatch.LogGroup(f"{name}-jobs", retention_in_days=args.log_retention_days, tags=tags,
                                            opts=pulumi.ResourceOptions(parent=self))
        job_definition = self._job_definition(f"{name}-gpu-smoke", args.job, tags, type="container",
                                              container_properties=pulumi.Output.json_dumps(_container_properties(
                                                  args.job, log_group.name, roles.job_arn)))
        teams_queue = self._teams_queue(f"{name}-gpu-teams", environments, args, tags, time_limits) \
            if cap.shares else None
        multi_node_queue = multi_node_definition = multi_node_teams_queue = None
        if cap.multi_node is not None:
            multi_node_queue, multi_node_definition, multi_node_environment = self._multi_node(
                name, args, cap.multi_node, roles, groups, log_group.name, time_limits, tags)
            multi_node_teams_queue = self._teams_queue(
                f"{name}-multi-node-teams", [multi_node_environment], args, tags, time_limits) if cap.shares else None
        if args.cpu_queue and args.reservation is not None:  # CPU instances launch outside the GPU reservation
            template = self._launch_template(f"{name}-cpu", "gpuready Batch CPU instances: IMDSv2 only, encrypted "
                                             "gp3 root volume", args, tags)
        cpu_queue = self._cpu_queue(name, args, roles, groups, template, tags) if args.cpu_queue else None

        self.job_queue_name = queue.name
        self.job_queue_arn = queue.arn
        self.compute_environment_arns = pulumi.Output.all(*[e.arn for e in environments])
        self.job_definition_arn = job_definition.arn
        self.job_role_arn = roles.job.arn
        self.multi_node_job_definition_arn = multi_node_definition.arn if multi_node_definition else None
        self.multi_node_job_queue_arn = multi_node_queue.arn if multi_node_queue else None
        self.cpu_job_queue_arn = cpu_queue.arn if cpu_queue else None
        self.teams_job_queue_arn = teams_queue.arn if teams_queue else None
        self.multi_node_teams_job_queue_arn = multi_node_teams_queue.arn if multi_node_teams_queue else None
        self.log_group_name = log_group.name
        res = args.reservation
        self.gpu_reservations = None if res is None else pulumi.Output.all(
            [e.name for e in environments], subnet_zones).apply(
            lambda a: [reservation.output(res, pool, zones.known_zones(a[1])) for pool in a[0]])
        self._register(args, roles.job_arn, multi_node_queue)

    def _gpu_subnets(self, args: BatchGpuEnvironmentArgs) -> tuple[Any, Any]:
        """The GPU compute environments' subnets and their zones (subnet id to zone): with a reservation whose zone
        is known, read at preview (:mod:`..aws_network.zones`) and the subnets checked against it; else the subnets
        as given and no zones."""
        res = args.reservation
        if res is None or not res.availability_zone:
            return args.subnet_ids, {}
        found = zones.subnet_zones(args.subnet_ids, self)
        return zones.checked_subnets(args.subnet_ids, found, field="subnet_ids", reservation=reservation.describe(res),
                                     zone=res.availability_zone, zone_field="reservation.availability_zone"), found

    def _iam(self, name: str, args: BatchGpuEnvironmentArgs, tags: dict[str, str]) -> _Roles:
        """The instances' role and profile, the Spot fleet's role (with Spot capacity only), and the jobs' own role
        with the policies given and no others (and the Metaflow datastore's, when it names one)."""
        child = pulumi.ResourceOptions(parent=self)
        instance_role, _ = self._role(f"{name}-ecs-instance", "ecs_instance", tags)
        instance_profile = aws.iam.InstanceProfile(f"{name}-ecs-instance", role=instance_role.name, tags=tags,
                                                   opts=child)
        spot_fleet = self._role(f"{name}-spot-fleet", "spot_fleet", tags)[0] if "spot" in args.capacity else None
        job_role = aws.iam.Role(f"{name}-job", assume_role_policy=_assume_role_policy(facts.JOB_ROLE_PRINCIPAL),
                                description="gpuready Batch GPU jobs' role (instance credentials are out of reach)",
                                tags=tags, opts=child)
        for i, policy_arn in enumerate(args.job_role_policy_arns):
            aws.iam.RolePolicyAttachment(f"{name}-job-{i}", role=job_role.name, policy_arn=policy_arn, opts=child)
        if args.metaflow_datastore_bucket:
            aws.iam.RolePolicy(f"{name}-job-metaflow", role=job_role.name,
                               policy=_datastore_policy(args.metaflow_datastore_bucket), opts=child)
        # The ARN from the role's name (known in a preview, unlike its arn output) keeps the job definitions'
        # properties known, so the policy pack can check them before anything exists.
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        job_role_arn = pulumi.Output.all(identity.arn, identity.account_id, job_role.name).apply(
            lambda a: f"arn:{a[0].split(':')[1]}:iam::{a[1]}:role/{a[2]}")
        return _Roles(instance_profile, spot_fleet, job_role, job_role_arn)

    def _role(self, name: str, purpose: str, tags: dict[str, str]):
        """An IAM role for one AWS service principal with exactly one AWS managed policy, and that attachment."""
        role = aws.iam.Role(name, assume_role_policy=_assume_role_policy(facts.SERVICE_PRINCIPALS[purpose]),
                            tags=tags, opts=pulumi.ResourceOptions(parent=self))
        attachment = aws.iam.RolePolicyAttachment(name, role=role.name, policy_arn=facts.MANAGED_POLICIES[purpose],
                                                  opts=pulumi.ResourceOptions(parent=self))
        return role, attachment

    def _security_groups(self, name: str, args: BatchGpuEnvironmentArgs, tags: dict[str, str]) -> Any:
        """The instances' security groups: ``security_group_ids`` as given, else one of their own, egress only."""
        if args.security_group_ids is not None:
            return args.security_group_ids
        if args.vpc_id is None:
            raise ConfigError("vpc_id", None, "needed to create the instances' security group",
                              "give vpc_id, or security_group_ids of your own")
        group = aws.ec2.SecurityGroup(
            f"{name}-instances",
            description="gpuready Batch GPU instances: egress only",
            vpc_id=args.vpc_id,
            egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0,
                                                    cidr_blocks=["0.0.0.0/0"], ipv6_cidr_blocks=["::/0"])],
            ingress=[],
            tags=tags, opts=pulumi.ResourceOptions(parent=self))
        return [group.id]

    def _launch_template(self, name: str, description: str, args: BatchGpuEnvironmentArgs, tags: dict[str, str],
                         network_interfaces: Optional[list[Any]] = None,
                         reserved: Optional[reservation.BatchReservationArgs] = None):
        """A launch template for GPU instances: IMDSv2 only with a hop limit of 1, an encrypted gp3 root volume;
        with ``reserved``, the reservation its instances launch into (:func:`.reservation.specification`)."""
        spec = reservation.specification(reserved) if reserved is not None else None
        return aws.ec2.LaunchTemplate(
            name,
            description=description,
            # Hop limit 1: IMDSv2 token responses do not cross the docker bridge, so job containers cannot read the
            # instance role's credentials; the ECS agent (host network) still can. Jobs get job_role instead.
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=facts.IMDS_HOP_LIMIT),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=facts.ROOT_DEVICE_NAME,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=args.root_volume_gib, volume_type="gp3", encrypted="true",
                    kms_key_id=args.root_volume_kms_key_id, delete_on_termination="true"))],
            network_interfaces=network_interfaces,
            capacity_reservation_specification=None if spec is None else
            aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_preference=spec.get("capacity_reservation_preference"),
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    **spec["capacity_reservation_target"]) if "capacity_reservation_target" in spec else None),
            tags=tags, opts=pulumi.ResourceOptions(parent=self))

    def _compute_environment(self, name: str, roles: _Roles, tags: dict[str, str], *, capacity: str,
                             max_vcpus: int, instance_types: Sequence[str], subnets: Any, security_group_ids: Any,
                             launch_template: Any, image_type: str, image_id: Optional[str] = None,
                             min_vcpus: int = 0, allocation: Optional[str] = None, placement_group: Any = None,
                             stamps: Optional[dict[str, str]] = None):
        """A managed compute environment of ``capacity`` (``on-demand`` or ``spot``: its resource type and, unless
        ``allocation`` is given, its allocation strategy) whose instances run as ``roles``' instance profile and
        launch from ``launch_template``; every GPU, multi-node and CPU environment is one. ``stamps``: the
        reservation's known facts, for the GPU environments on one."""
        resource_type, strategy = facts.CAPACITY[capacity]
        stamps = stamps or {}
        return aws.batch.ComputeEnvironment(
            name,
            type="MANAGED",
            state="ENABLED",
            compute_resources=aws.batch.ComputeEnvironmentComputeResourcesArgs(
                type=resource_type,
                allocation_strategy=allocation or strategy,
                min_vcpus=min_vcpus,
                max_vcpus=max_vcpus,
                instance_types=list(instance_types),
                subnets=subnets,
                security_group_ids=security_group_ids,
                instance_role=roles.instance_profile.arn,
                launch_template=aws.batch.ComputeEnvironmentComputeResourcesLaunchTemplateArgs(
                    launch_template_id=launch_template.id, version=launch_template.latest_version.apply(str)),
                ec2_configurations=[aws.batch.ComputeEnvironmentComputeResourcesEc2ConfigurationArgs(
                    image_type=image_type, image_id_override=image_id)],
                spot_iam_fleet_role=roles.spot_fleet.arn if capacity == "spot" else None,
                placement_group=placement_group,
                tags=tags,
            ),
            # No serviceRole: Batch uses its service-linked role AWSServiceRoleForBatch, the one with which AWS
            # updates an environment in place (instance types, launch template version...) instead of replacing it.
            update_policy=aws.batch.ComputeEnvironmentUpdatePolicyArgs(
                terminate_jobs_on_update=False, job_execution_timeout_minutes=facts.UPDATE_JOB_TIMEOUT_MINUTES),
            # The GPU facts of types the stack declared travel with the environment: the policy pack and the smoke
            # diagnosis read it in processes whose catalog lacks them.
            tags={**tags, **self._types.stamps("aws", instance_types), **stamps},
            # desiredvCpus is Batch's to move as it scales.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["computeResources.desiredVcpus"]))

    def _queue(self, name: str, environments: Sequence[Any], tags: dict[str, str],
               time_limits: Optional[list[Any]] = None, priority: int = facts.QUEUE_PRIORITY,
               scheduling_policy_arn: Optional[pulumi.Output[str]] = None):
        """A job queue over ``environments``, in their order: first-in first-out, or fair share with
        ``scheduling_policy_arn``."""
        return aws.batch.JobQueue(
            name,
            state="ENABLED",
            priority=priority,
            compute_environment_orders=[
                aws.batch.JobQueueComputeEnvironmentOrderArgs(order=i, compute_environment=env.arn)
                for i, env in enumerate(environments, start=1)],
            job_state_time_limit_actions=time_limits,
            scheduling_policy_arn=scheduling_policy_arn,
            tags=tags, opts=pulumi.ResourceOptions(parent=self))

    def _teams_queue(self, name: str, environments: Sequence[Any], args: BatchGpuEnvironmentArgs,
                     tags: dict[str, str], time_limits: list[Any]):
        """A fair-share queue over ``environments`` with a scheduling policy of its own: one share per team
        (:attr:`BatchCapacity.shares`), ``computeReservation`` and ``shareDecaySeconds`` from ``args``."""
        policy = aws.batch.SchedulingPolicy(
            name,
            fair_share_policy=aws.batch.SchedulingPolicyFairSharePolicyArgs(
                compute_reservation=args.fair_share_compute_reservation,
                share_decay_seconds=args.fair_share_decay_seconds,
                share_distributions=[aws.batch.SchedulingPolicyFairSharePolicyShareDistributionArgs(
                    share_identifier=share.identifier, weight_factor=share.weight_factor)
                    for share in self.capacity.shares]),
            tags=tags, opts=pulumi.ResourceOptions(parent=self))
        return self._queue(name, environments, tags, time_limits, priority=facts.TEAMS_QUEUE_PRIORITY,
                           scheduling_policy_arn=policy.arn)

    def _job_definition(self, name: str, job: GpuJobArgs, tags: dict[str, str], **properties: Any):
        """A job definition on EC2 with ``properties`` (its ``type``, its container or node properties): one attempt
        of at most ``job.timeout_seconds``, its tags propagated to its jobs."""
        return aws.batch.JobDefinition(
            name,
            platform_capabilities=["EC2"],
            **properties,
            timeout=aws.batch.JobDefinitionTimeoutArgs(attempt_duration_seconds=job.timeout_seconds),
            retry_strategy=aws.batch.JobDefinitionRetryStrategyArgs(attempts=1),
            propagate_tags=True,
            tags=tags, opts=pulumi.ResourceOptions(parent=self))

    def _multi_node(self, name: str, args: BatchGpuEnvironmentArgs, plan: MultiNodePlan, roles: _Roles,
                    groups: Any, log_group_name: pulumi.Output[str], time_limits: list[Any], tags: dict[str, str]):
        """The multi-node queue and job definition: an on-demand environment in one subnet and a cluster placement
        group, with the EFA interfaces of ``plan`` in its launch template."""
        mn_args = args.multi_node
        subnet = mn_args.subnet if mn_args.subnet is not None else \
            pulumi.Output.from_input(args.subnet_ids).apply(lambda ids: ids[0])
        groups, placement_group = self._multi_node_network(name, args, groups, tags)
        template = self._launch_template(
            f"{name}-multi-node", f"gpuready Batch multi-node instances: {plan.efa_interfaces} EFA interfaces, "
            "IMDSv2 only, encrypted gp3 root volume", args, tags,
            network_interfaces=_efa_interfaces(plan, subnet, groups) if plan.efa_interfaces else None)
        environment = self._compute_environment(
            f"{name}-multi-node", roles, tags, capacity="on-demand", allocation=facts.MULTI_NODE_ALLOCATION,
            max_vcpus=plan.max_vcpus, instance_types=plan.instance_types, subnets=[subnet],
            # With network interfaces in the launch template, the groups ride on each interface: the compute
            # environment's would be put on the instance, which EC2 refuses beside interfaces.
            security_group_ids=None if plan.efa_interfaces else groups,
            launch_template=template, image_type=args.image_type, image_id=args.image_id,
            placement_group=placement_group.name)
        queue = self._queue(f"{name}-multi-node", [environment], tags, time_limits)
        definition = self._job_definition(
            f"{name}-gpu-multi-node", args.job, tags, type="multinode", node_properties=pulumi.Output.json_dumps({
                "numNodes": plan.nodes,
                "mainNode": 0,
                "nodeRangeProperties": [{"targetNodes": "0:", "container": _multi_node_container(
                    plan, args.job, log_group_name, roles.job_arn)}],
            }))
        return queue, definition, environment

    def _multi_node_network(self, name: str, args: BatchGpuEnvironmentArgs, groups: Any, tags: dict[str, str]):
        """The multi-node instances' security groups (with ``vpc_id``, one of their own open to itself, before the
        ones given) and their cluster placement group."""
        if args.vpc_id is not None:
            # EFA's own rule: all traffic in AND out between members of the group (EC2 EFA user guide); an
            # egress rule to 0.0.0.0/0 does not cover EFA's non-IP traffic.
            own = aws.ec2.SecurityGroup(
                f"{name}-multi-node",
                description="gpuready Batch multi-node instances: all traffic between nodes (EFA), egress",
                vpc_id=args.vpc_id,
                ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
                egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True),
                        aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0,
                                                        cidr_blocks=["0.0.0.0/0"], ipv6_cidr_blocks=["::/0"])],
                tags=tags, opts=pulumi.ResourceOptions(parent=self))
            groups = pulumi.Output.all(own.id, pulumi.Output.from_input(args.security_group_ids or [])).apply(
                lambda a: [a[0], *a[1]]) if args.security_group_ids is not None else [own.id]
        placement_group = aws.ec2.PlacementGroup(f"{name}-multi-node", strategy="cluster", tags=tags,
                                                 opts=pulumi.ResourceOptions(parent=self))
        return groups, placement_group

    def _cpu_queue(self, name: str, args: BatchGpuEnvironmentArgs, roles: _Roles, groups: Any, template: Any,
                   tags: dict[str, str]):
        """The CPU queue and its on-demand environment of CPU instances on the plain ECS image."""
        environment = self._compute_environment(
            f"{name}-cpu", roles, tags, capacity="on-demand", max_vcpus=args.cpu_queue.max_vcpus,
            instance_types=args.cpu_queue.instance_types, subnets=args.subnet_ids, security_group_ids=groups,
            launch_template=template, image_type=facts.CPU_IMAGE_TYPE)
        return self._queue(f"{name}-cpu", [environment], tags)

    def _teams(self, profile: pulumi.Output[dict[str, str]]) -> Optional[pulumi.Output[list[dict[str, Any]]]]:
        """The ``teams`` output: per team its share identifier and the fair-share queue its jobs go to with it, and
        the FIFO GPU queue and Metaflow profile for its jobs as Metaflow submits them (no share identifier)."""
        if not self.capacity.shares:
            return None
        multi_node = self.multi_node_teams_job_queue_arn

        def items(a: list[Any]) -> list[dict[str, Any]]:
            queue, fifo, metaflow_profile, multi_node_queue = a
            return [{"name": s.team.name, "shareIdentifier": s.identifier, "jobQueueArn": queue,
                     "gpus": s.team.gpus, "weight": s.team.weight, "weightFactor": s.weight_factor,
                     "metaflowProfile": metaflow_profile, "metaflowJobQueueArn": fifo,
                     **({"multiNodeJobQueueArn": multi_node_queue} if multi_node_queue else {})}
                    for s in self.capacity.shares]

        return pulumi.Output.all(self.teams_job_queue_arn, self.job_queue_arn, profile,
                                 multi_node if multi_node is not None else None).apply(items)

    def _register(self, args: BatchGpuEnvironmentArgs, job_role_arn: pulumi.Output[str],
                  multi_node_queue: Optional[Any]) -> None:
        """Register exactly the outputs of the ``aws-batch`` contract, kept as :attr:`outputs` for the stack."""
        cap, mn = self.capacity, self.capacity.multi_node
        profile = _metaflow(self.job_queue_name, job_role_arn, args)
        self.outputs = OUTPUTS.values({
            "platform": OUTPUTS.platform,
            "jobQueueName": self.job_queue_name,
            "jobQueueArn": self.job_queue_arn,
            "jobDefinitionArn": self.job_definition_arn,
            "jobVcpus": args.job.vcpus,
            "jobMemoryMib": args.job.memory_mib,
            "jobRoleArn": self.job_role_arn,
            "multiNodeJobQueueArn": self.multi_node_job_queue_arn,
            "multiNodeJobDefinitionArn": self.multi_node_job_definition_arn,
            "multiNodeNodes": mn.nodes if mn else None,
            "multiNodeGpusPerNode": mn.gpus if mn else None,
            "multiNodeInstanceTypes": mn.instance_types if mn else None,
            "multiNodeEfaInterfaces": mn.efa_interfaces if mn else None,
            "cpuJobQueueArn": self.cpu_job_queue_arn,
            "computeEnvironmentArns": self.compute_environment_arns,
            "logGroupName": self.log_group_name,
            "gpuModels": list(cap.gpu_models),
            "maxGpusPerInstance": cap.max_gpus_per_instance,
            "maxVcpusPerInstance": cap.max_vcpus_per_instance,
            "maxMemoryMibPerInstance": cap.max_memory_mib_per_instance,
            "maxTotalGpus": cap.max_total_gpus,
            "maxUsdPerHour": cap.max_usd_per_hour,
            "metaflowProfile": profile,
            "metaflowMultiNodeProfile": _metaflow(multi_node_queue.name, job_role_arn, args) if multi_node_queue
            else None,
            "teams": self._teams(profile),
            "gpuReservations": self.gpu_reservations,
        })
        self.register_outputs(self.outputs)
