"""Security rules: IMDSv2 and encrypted volumes, instance credentials out of containers' reach on GPU capacity, volumes big enough for deep-learning images, no public IPs on GPU
nodes, no open API endpoint (EKS, GKE, AKS), no wildcard or administrator IAM."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gpuready.resources import aws, azure, gcp, gpu_pools, read, tokens

from ..gpu import facts, of_kind
from ..rule import ADVISORY, MANDATORY, dependencies, each, known, resource_rule, stack_rule


def _check_imdsv2(resource_type, name, props, config):
    if read(resource_type, props).http_tokens != "required":
        yield ("instances accept IMDSv1, so any process that can make a request (an SSRF in a notebook) reads the "
               "instance role's credentials"), "set metadataOptions.httpTokens to required"


launch_template_imdsv2 = resource_rule(
    "launch-template-imdsv2", "Launch templates require IMDSv2 (metadata tokens).", MANDATORY,
    tokens(aws.LaunchTemplate), _check_imdsv2)


def _gpu_launch_templates(pool):
    """The launch templates a GPU compute environment or EKS node group launches its instances with."""
    reader = facts(pool)
    if not reader.is_gpu:
        return []
    return dependencies(pool, reader.LAUNCH_TEMPLATE_INPUT, aws.LaunchTemplate)


def _check_hop_limit(resources, config):
    templates = {}
    for pool in of_kind(resources, aws.BatchComputeEnvironment, aws.EksNodeGroup):
        templates.update((t.urn, t) for t in _gpu_launch_templates(pool))
    yield from each(templates.values(), _container_credentials)


def _container_credentials(template):
    reader = facts(template)
    if reader.http_tokens != "required":
        yield template, ("GPU instances answer IMDSv1, which no hop limit stops: every container on them reads the "
                         "instance role's credentials"), "set metadataOptions.httpTokens to required"
    hops = reader.hop_limit
    if hops is None or hops != 1:
        now = "not set (Amazon Linux 2023 AMIs then allow 2)" if hops is None else f"{hops}"
        yield template, (f"metadataOptions.httpPutResponseHopLimit is {now}, so job containers and pods behind a "
                         f"bridge network get IMDSv2 tokens and the instance role's credentials"), \
            ("set metadataOptions.httpPutResponseHopLimit to 1 and give jobs their own role (Batch jobRoleArn, "
             "EKS Pod Identity or IRSA)")


imds_hop_limit = stack_rule(
    "imds-hop-limit", "Launch templates of GPU capacity (Batch, EKS) require IMDSv2 with hop limit 1, so containers "
    "cannot read the instance role's credentials.", MANDATORY, _check_hop_limit)


def _check_encrypted(resource_type, name, props, config):
    plain = read(resource_type, props).unencrypted_devices
    if plain:
        yield f"volumes {', '.join(map(str, plain))} are not encrypted", "set ebs.encrypted to true"


launch_template_encrypted = resource_rule(
    "launch-template-encrypted", "Launch templates encrypt every EBS volume they define.", MANDATORY,
    tokens(aws.LaunchTemplate), _check_encrypted)


def _volume_gib(pool) -> tuple[int, str]:
    reader = facts(pool)
    templates = dependencies(pool, reader.LAUNCH_TEMPLATE_INPUT, aws.LaunchTemplate) \
        if reader.LAUNCH_TEMPLATE_INPUT else []
    sizes = [size for t in templates for size in facts(t).volume_sizes]
    if sizes:
        return max(sizes), f"launch template {templates[0].name}"
    if not templates and reader.own_volume:
        return reader.own_volume
    return 30, "the AMI's default root volume"


def _check_volume_size(resources, config):
    minimum = int(config.get("minGiB", 100))

    def check(pool):
        if not facts(pool).is_gpu:
            return
        size, where = _volume_gib(pool)
        if size < minimum:
            yield pool, (f"GPU nodes get a {size} GiB volume ({where}); a 10 GB deep-learning image and its layers "
                         f"fill it, and pods stay in ContainerCreating or jobs in STARTING"), \
                f"give them {minimum} GiB or more"

    yield from each(of_kind(resources, *gpu_pools()), check)


gpu_root_volume_size = stack_rule(
    "gpu-root-volume-size",
    "GPU nodes have a volume big enough for deep-learning images (size from config).",
    ADVISORY, _check_volume_size, {"minGiB": {"type": "integer", "minimum": 8, "default": 100}})


def _check_public_ips(resources, config):
    yield from each(of_kind(resources, *gpu_pools()), _public_ips)


def _public_ips(pool):
    reader = facts(pool)
    if not reader.is_gpu:
        return
    if reader.public_node_ips:
        yield pool, "GPU nodes with public IPs", "set enableNodePublicIP to false"
    if reader.CLUSTER_INPUT:
        for cluster in dependencies(pool, reader.CLUSTER_INPUT):
            if not facts(cluster).private_nodes:
                yield pool, f"GPU nodes of cluster {cluster.name} get public IPs (no private nodes)", \
                    "set privateClusterConfig.enablePrivateNodes to true"
    if reader.SUBNET_INPUT:
        public = [s.name for s in dependencies(pool, reader.SUBNET_INPUT, aws.Subnet) if facts(s).public_ips]
        if public:
            yield pool, f"GPU instances launch in subnets that give public IPs: {', '.join(public)}", \
                "use private subnets behind a NAT gateway"
        for template in dependencies(pool, reader.LAUNCH_TEMPLATE_INPUT, aws.LaunchTemplate):
            if facts(template).public_ip:
                yield pool, f"launch template {template.name} gives GPU instances a public IP", \
                    "remove associatePublicIpAddress"


gpu_nodes_no_public_ip = stack_rule(
    "gpu-nodes-no-public-ip", "GPU nodes and instances get no public IP address.", MANDATORY, _check_public_ips)


def _anywhere(cidrs) -> bool:
    """Whether an endpoint allow-list lets in the whole internet: empty, or with a /0."""
    return not cidrs or any(str(c).endswith("/0") for c in cidrs)


def _check_endpoint(resource_type, name, props, config):
    cluster = read(resource_type, props)
    if cluster.public_endpoint and _anywhere(cluster.authorized_networks):
        yield "the Kubernetes API endpoint is public to the whole internet", \
            ("set vpcConfig.publicAccessCidrs to your networks (gpuready:apiAllowedCidrs in the reference stacks), "
             "or endpointPublicAccess to false")


eks_endpoint_allow_list = resource_rule(
    "eks-endpoint-allow-list", "An EKS API endpoint is not public without an allow-list.", ADVISORY,
    tokens(aws.EksCluster), _check_endpoint)


def _check_api_allow_list(resource_type, name, props, config):
    cluster = read(resource_type, props)
    public, cidrs = cluster.public_endpoint, cluster.authorized_networks
    fix = cluster.ALLOW_LIST_FIX
    if public and _anywhere(cidrs):
        yield "the Kubernetes API endpoint is public to the whole internet, with no allow-list", \
            f"{fix} (gpuready:apiAllowedCidrs in the reference stacks), or make the endpoint private"


api_endpoint_allow_list = resource_rule(
    "api-endpoint-allow-list", "A GKE or AKS API endpoint is not public without an allow-list (CIS GKE and AKS "
    "benchmarks: authorized networks / authorized IP ranges).", ADVISORY, tokens(gcp.GkeCluster, azure.AksCluster),
    _check_api_allow_list)

def _statements(document):
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return []
    statements = (document or {}).get("Statement") or []
    return [statements] if isinstance(statements, Mapping) else statements


def _check_wildcards(resource_type, name, props, config):
    def check(holder):
        for statement in _statements(holder.get("policy")):
            actions = statement.get("Action")
            actions = [actions] if isinstance(actions, str) else actions or []
            if statement.get("Effect") == "Allow" and "*" in actions:
                yield "an inline policy allows every action (\"Action\": \"*\")", "list the actions the role needs"

    # Each document on its own: one built from another resource's output (an ARN) is unknown in a preview.
    yield from each(read(resource_type, props).documents(), check)


iam_no_wildcard_actions = resource_rule(
    "iam-no-wildcard-actions", "Inline IAM policies allow no `*` action.", MANDATORY,
    tokens(*aws.INLINE_POLICIES, aws.IamRole), _check_wildcards)

ADMIN_POLICY = "arn:aws:iam::aws:policy/AdministratorAccess"
GCP_BASIC_ROLES = ("roles/owner", "roles/editor")


def _check_admin(resource_type, name, props, config):
    grant = read(resource_type, props)
    if isinstance(grant, gcp.PROJECT_ROLES):
        if grant.role in GCP_BASIC_ROLES:
            yield f"basic role {grant.role} granted", "grant the predefined roles the member needs"
        return
    # An ARN built from another resource's output (a policy of the stack) is unknown in a preview.
    listed = grant.managed_policy_arns
    arns, unknown = known(range(len(listed)), listed.__getitem__)
    if ADMIN_POLICY in [grant.policy_arn, *arns]:
        yield "AdministratorAccess attached", "attach the AWS managed policies the role needs, and no others"
    elif unknown:
        raise unknown


iam_no_administrator = resource_rule(
    "iam-no-administrator", "No AdministratorAccess attached (AWS) and no basic owner/editor role granted (GCP).",
    MANDATORY, tokens(*aws.POLICY_ATTACHMENTS, aws.IamRole, *gcp.PROJECT_ROLES), _check_admin)

RULES = [launch_template_imdsv2, imds_hop_limit, launch_template_encrypted, gpu_root_volume_size, gpu_nodes_no_public_ip,
         eks_endpoint_allow_list, api_endpoint_allow_list, iam_no_wildcard_actions, iam_no_administrator]
