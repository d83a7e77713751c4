"""Metaflow profiles from a stack: the ``METAFLOW_*`` keys Metaflow reads (``metaflow/metaflow_config.py``), with the
stack's queue, role, namespace, node labels and taints, so that a Metaflow user's ``@batch(gpu=N)`` or
``@kubernetes(gpu=N)`` step lands on its GPUs.

Saved as ``~/.metaflowconfig/config_<profile>.json`` and selected with ``METAFLOW_PROFILE=<profile>``; a profile file
replaces ``config.json`` while it is selected, so the datastore keys are included when the stack knows the bucket.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence

DATASTORE_PREFIX = "metaflow"
"""Folder of the datastore bucket that Metaflow writes under (``METAFLOW_DATASTORE_SYSROOT_S3``)."""


def datastore(bucket: Optional[str]) -> dict[str, str]:
    """The S3 datastore keys for ``bucket``; none without one (Metaflow's own config then has to name it)."""
    if not bucket:
        return {}
    return {"METAFLOW_DEFAULT_DATASTORE": "s3", "METAFLOW_DATASTORE_SYSROOT_S3": f"s3://{bucket}/{DATASTORE_PREFIX}"}


def batch_profile(*, job_queue: Any, job_role_arn: Any, image: Optional[str] = None,
                  datastore_bucket: Optional[str] = None) -> dict[str, Any]:
    """``@batch``: the GPU queue, the role jobs assume (``METAFLOW_ECS_S3_ACCESS_IAM_ROLE``), the job image.

    ``job_queue`` and ``job_role_arn`` may be Pulumi outputs."""
    profile = {"METAFLOW_BATCH_JOB_QUEUE": job_queue, "METAFLOW_ECS_S3_ACCESS_IAM_ROLE": job_role_arn}
    if image:
        profile["METAFLOW_BATCH_CONTAINER_IMAGE"] = image
    return {**profile, **datastore(datastore_bucket)}


def tolerations(taints: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Tolerations of exactly ``taints`` ({key, value, effect}), in the Kubernetes API's spelling that Metaflow's
    ``@kubernetes`` checks against ``V1Toleration``."""
    return [{"key": t["key"], "operator": "Equal", "value": t.get("value") or "", "effect": t["effect"]}
            if t.get("value") else {"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in taints]


def kubernetes_profile(*, namespace: str, service_account: Any, node_labels: Mapping[str, str],
                       taints: Sequence[Mapping[str, str]], gpu_vendor: str = "nvidia",
                       datastore_bucket: Optional[str] = None) -> dict[str, Any]:
    """``@kubernetes``: the namespace and service account jobs run as, the GPU nodes' labels as Metaflow's
    ``key=value,...`` node selector, tolerations of their taints as a JSON list, and the GPU vendor."""
    return {
        "METAFLOW_KUBERNETES_NAMESPACE": namespace,
        "METAFLOW_KUBERNETES_SERVICE_ACCOUNT": service_account,
        "METAFLOW_KUBERNETES_NODE_SELECTOR": ",".join(f"{k}={v}" for k, v in sorted(node_labels.items())),
        "METAFLOW_KUBERNETES_TOLERATIONS": json.dumps(tolerations(taints), separators=(",", ":")),
        "METAFLOW_KUBERNETES_GPU_VENDOR": gpu_vendor,
        **datastore(datastore_bucket),
    }
