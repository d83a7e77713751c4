"""Security rules: IMDSv2 and encrypted volumes, instance credentials out of containers' reach on GPU capacity, volumes big enough for deep-learning images, no public IPs on GPU
nodes, no open API endpoint (EKS, GKE, AKS), no wildcard or administrator IAM."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..gpu import (AKS_AGENT_POOL, AKS_CLUSTER, BATCH_CE, EKS_CLUSTER, EKS_NODE_GROUP, GKE_CLUSTER, GKE_NODE_POOL,
                   GPU_CAPACITY_TYPES, LAUNCH_TEMPLATE, get, is_gpu_capacity)
from ..rule import ADVISORY, MANDATORY, dependencies, each, known, of_type, resource_rule, stack_rule


def _check_imdsv2(resource_type, name, props, config):
    if get(props, "metadataOptions.httpTokens", "optional") != "required":
        yield ("instances accept IMDSv1, so any process that can make a request (an SSRF in a notebook) reads the "
               "instance role's credentials"), "set metadataOptions.httpTokens to required"


launch_template_imdsv2 = resource_rule(
    "launch-template-imdsv2", "Launch templates require IMDSv2 (metadata tokens).", MANDATORY, (LAUNCH_TEMPLATE,),
    _check_imdsv2)


def _gpu_launch_templates(pool):
    """The launch templates a GPU compute environment or EKS node group launches its instances with."""
    if not is_gpu_capacity(pool.resource_type, pool.props):
        return []
    return dependencies(pool, "computeResources" if pool.resource_type == BATCH_CE else "launchTemplate",
                        LAUNCH_TEMPLATE)


def _check_hop_limit(resources, config):
    templates = {}
    for pool in of_type(resources, BATCH_CE, EKS_NODE_GROUP):
        templates.update((t.urn, t) for t in _gpu_launch_templates(pool))
    yield from each(templates.values(), _container_credentials)


def _container_credentials(template):
    options = template.props.get("metadataOptions") or {}
    if options.get("httpTokens", "optional") != "required":
        yield template, ("GPU instances answer IMDSv1, which no hop limit stops: every container on them reads the "
                         "instance role's credentials"), "set metadataOptions.httpTokens to required"
    hops = options.get("httpPutResponseHopLimit")
    if hops is None or int(hops) != 1:
        now = "not set (Amazon Linux 2023 AMIs then allow 2)" if hops is None else f"{int(hops)}"
        yield template, (f"metadataOptions.httpPutResponseHopLimit is {now}, so job containers and pods behind a "
                         f"bridge network get IMDSv2 tokens and the instance role's credentials"), \
            ("set metadataOptions.httpPutResponseHopLimit to 1 and give jobs their own role (Batch jobRoleArn, "
             "EKS Pod Identity or IRSA)")


imds_hop_limit = stack_rule(
    "imds-hop-limit", "Launch templates of GPU capacity (Batch, EKS) require IMDSv2 with hop limit 1, so containers "
    "cannot read the instance role's credentials.", MANDATORY, _check_hop_limit)


def _true(value) -> bool:
    return value is True or str(value).lower() == "true"


def _check_encrypted(resource_type, name, props, config):
    plain = [m.get("deviceName") for m in props.get("blockDeviceMappings") or []
             if m.get("ebs") is not None and not _true(m["ebs"].get("encrypted"))]
    if plain:
        yield f"volumes {', '.join(map(str, plain))} are not encrypted", "set ebs.encrypted to true"


launch_template_encrypted = resource_rule(
    "launch-template-encrypted", "Launch templates encrypt every EBS volume they define.", MANDATORY,
    (LAUNCH_TEMPLATE,), _check_encrypted)


def _volume_gib(pool) -> tuple[int, str]:
    if pool.resource_type in (BATCH_CE, EKS_NODE_GROUP):
        prop = "computeResources" if pool.resource_type == BATCH_CE else "launchTemplate"
        templates = dependencies(pool, prop, LAUNCH_TEMPLATE)
        sizes = [int(get(m, "ebs.volumeSize", 0)) for t in templates for m in t.props.get("blockDeviceMappings") or []]
        if sizes:
            return max(sizes), f"launch template {templates[0].name}"
        if pool.resource_type == EKS_NODE_GROUP and not templates:
            return int(pool.props.get("diskSize", 20)), "diskSize"
        return 30, "the AMI's default root volume"
    if pool.resource_type == GKE_NODE_POOL:
        return int(get(pool.props, "nodeConfig.diskSizeGb", 100)), "nodeConfig.diskSizeGb"
    return int(pool.props.get("osDiskSizeGB", 128)), "osDiskSizeGB"


def _check_volume_size(resources, config):
    minimum = int(config.get("minGiB", 100))

    def check(pool):
        if not is_gpu_capacity(pool.resource_type, pool.props):
            return
        size, where = _volume_gib(pool)
        if size < minimum:
            yield pool, (f"GPU nodes get a {size} GiB volume ({where}); a 10 GB deep-learning image and its layers "
                         f"fill it, and pods stay in ContainerCreating or jobs in STARTING"), \
                f"give them {minimum} GiB or more"

    yield from each(of_type(resources, *GPU_CAPACITY_TYPES), check)


gpu_root_volume_size = stack_rule(
    "gpu-root-volume-size",
    "GPU nodes have a volume big enough for deep-learning images (size from config).",
    ADVISORY, _check_volume_size, {"minGiB": {"type": "integer", "minimum": 8, "default": 100}})


def _check_public_ips(resources, config):
    yield from each(of_type(resources, *GPU_CAPACITY_TYPES), _public_ips)


def _public_ips(pool):
    if not is_gpu_capacity(pool.resource_type, pool.props):
        return
    if pool.resource_type == AKS_AGENT_POOL and pool.props.get("enableNodePublicIP"):
        yield pool, "GPU nodes with public IPs", "set enableNodePublicIP to false"
    if pool.resource_type == GKE_NODE_POOL:
        for cluster in dependencies(pool, "cluster"):
            if not get(cluster.props, "privateClusterConfig.enablePrivateNodes", False):
                yield pool, f"GPU nodes of cluster {cluster.name} get public IPs (no private nodes)", \
                    "set privateClusterConfig.enablePrivateNodes to true"
    if pool.resource_type in (BATCH_CE, EKS_NODE_GROUP):
        prop = "computeResources" if pool.resource_type == BATCH_CE else "subnetIds"
        public = [s.name for s in dependencies(pool, prop, "aws:ec2/subnet:Subnet")
                  if _true(s.props.get("mapPublicIpOnLaunch"))]
        if public:
            yield pool, f"GPU instances launch in subnets that give public IPs: {', '.join(public)}", \
                "use private subnets behind a NAT gateway"
        lt_prop = "computeResources" if pool.resource_type == BATCH_CE else "launchTemplate"
        for template in dependencies(pool, lt_prop, LAUNCH_TEMPLATE):
            if any(_true(n.get("associatePublicIpAddress")) for n in template.props.get("networkInterfaces") or []):
                yield pool, f"launch template {template.name} gives GPU instances a public IP", \
                    "remove associatePublicIpAddress"


gpu_nodes_no_public_ip = stack_rule(
    "gpu-nodes-no-public-ip", "GPU nodes and instances get no public IP address.", MANDATORY, _check_public_ips)


def _anywhere(cidrs) -> bool:
    """Whether an endpoint allow-list lets in the whole internet: empty, or with a /0."""
    return not cidrs or any(str(c).endswith("/0") for c in cidrs)


def _check_endpoint(resource_type, name, props, config):
    vpc = props.get("vpcConfig") or {}
    if vpc.get("endpointPublicAccess", True) and _anywhere(vpc.get("publicAccessCidrs")):
        yield "the Kubernetes API endpoint is public to the whole internet", \
            ("set vpcConfig.publicAccessCidrs to your networks (gpuready:apiAllowedCidrs in the reference stacks), "
             "or endpointPublicAccess to false")


eks_endpoint_allow_list = resource_rule(
    "eks-endpoint-allow-list", "An EKS API endpoint is not public without an allow-list.", ADVISORY, (EKS_CLUSTER,),
    _check_endpoint)


def _check_api_allow_list(resource_type, name, props, config):
    if resource_type == GKE_CLUSTER:
        public = not get(props, "privateClusterConfig.enablePrivateEndpoint", False)
        cidrs = [c.get("cidrBlock") for c in get(props, "masterAuthorizedNetworksConfig.cidrBlocks", None) or []]
        fix = "set masterAuthorizedNetworksConfig.cidrBlocks to your networks"
    else:
        public = not get(props, "apiServerAccessProfile.enablePrivateCluster", False)
        cidrs = get(props, "apiServerAccessProfile.authorizedIPRanges", None) or []
        fix = "set apiServerAccessProfile.authorizedIPRanges to your networks"
    if public and _anywhere(cidrs):
        yield "the Kubernetes API endpoint is public to the whole internet, with no allow-list", \
            f"{fix} (gpuready:apiAllowedCidrs in the reference stacks), or make the endpoint private"


api_endpoint_allow_list = resource_rule(
    "api-endpoint-allow-list", "A GKE or AKS API endpoint is not public without an allow-list (CIS GKE and AKS "
    "benchmarks: authorized networks / authorized IP ranges).", ADVISORY, (GKE_CLUSTER, AKS_CLUSTER),
    _check_api_allow_list)

_INLINE_POLICIES = ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy", "aws:iam/userPolicy:UserPolicy",
                    "aws:iam/groupPolicy:GroupPolicy")


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
    yield from each([props, *(props.get("inlinePolicies") or [])], check)


iam_no_wildcard_actions = resource_rule(
    "iam-no-wildcard-actions", "Inline IAM policies allow no `*` action.", MANDATORY,
    (*_INLINE_POLICIES, "aws:iam/role:Role"), _check_wildcards)

ADMIN_POLICY = "arn:aws:iam::aws:policy/AdministratorAccess"
GCP_BASIC_ROLES = ("roles/owner", "roles/editor")


def _check_admin(resource_type, name, props, config):
    if resource_type.startswith("gcp:"):
        if props.get("role") in GCP_BASIC_ROLES:
            yield f"basic role {props['role']} granted", "grant the predefined roles the member needs"
        return
    # An ARN built from another resource's output (a policy of the stack) is unknown in a preview.
    listed = props.get("managedPolicyArns") or []
    arns, unknown = known(range(len(listed)), listed.__getitem__)
    if ADMIN_POLICY in [props.get("policyArn"), *arns]:
        yield "AdministratorAccess attached", "attach the AWS managed policies the role needs, and no others"
    elif unknown:
        raise unknown


iam_no_administrator = resource_rule(
    "iam-no-administrator", "No AdministratorAccess attached (AWS) and no basic owner/editor role granted (GCP).",
    MANDATORY, ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/userPolicyAttachment:UserPolicyAttachment",
                "aws:iam/groupPolicyAttachment:GroupPolicyAttachment", "aws:iam/role:Role",
                "gcp:projects/iAMMember:IAMMember", "gcp:projects/iAMBinding:IAMBinding"), _check_admin)

RULES = [launch_template_imdsv2, imds_hop_limit, launch_template_encrypted, gpu_root_volume_size, gpu_nodes_no_public_ip,
         eks_endpoint_allow_list, api_endpoint_allow_list, iam_no_wildcard_actions, iam_no_administrator]
