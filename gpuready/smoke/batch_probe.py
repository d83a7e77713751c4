"""The probe's own Batch job definition: the stack's GPU job definition with a command that carries the probe file.

Registered at smoke time in a family of gpuready's own (``<stack definition>-gpuready-probe``), used by one job and
deregistered afterwards: the stack gains no resource, and the probe is limited by the size of a job definition
(:data:`DEFINITION_LIMIT`), not by the 8,192 characters ECS allows a job's container overrides.
"""

from __future__ import annotations

import ast
import base64
import copy
import json
import os
import zlib
from typing import Any

from ..errors import UserError
from ..probe import core

DEFINITION_LIMIT = 24 * 1024
"""AWS Batch accepts a ``RegisterJobDefinition`` request of at most 24 KiB (a quota that cannot be raised)."""
FAMILY_SUFFIX = "-gpuready-probe"
NAME_LIMIT = 128
"""Characters in a job definition's name."""
REGISTERED_FIELDS = ("type", "parameters", "containerProperties", "nodeProperties", "timeout", "retryStrategy",
                     "propagateTags", "platformCapabilities", "schedulingPriority")
"""What ``DescribeJobDefinitions`` returns that ``RegisterJobDefinition`` takes back unchanged."""


SDK_SIDE = {"nccl.py": ("FIXES",)}
"""Top-level names of a carried file that only the SDK needs, left out of jobs (the fix each transport verdict
names: a job's log shows the verdict, ``gpuready smoke`` the fix too); a test holds that nothing left in the file
names them."""


def shipped(path: str) -> bytes:
    """The code of the module file at ``path`` as a job carries it: the same statements, less its
    :data:`SDK_SIDE` ones, without docstrings, comments and most indentation (``ast.unparse``), about a quarter
    smaller compressed, so that the probe fits a job definition."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read())
    sdk_side = SDK_SIDE.get(os.path.basename(path), ())
    tree.body = [s for s in tree.body if not {getattr(s, "name", None), *(getattr(t, "id", None) for t in getattr(
        s, "targets", ()))} & set(sdk_side)]
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(_text(statement) for statement in block):
                setattr(node, field, [statement for statement in block if not _text(statement)] or [ast.Pass()])
    # One space an indentation level: no string literal spans lines once docstrings are gone, so this is safe,
    # and checked: the text must parse to the very same statements.
    code = "\n".join(" " * ((len(line) - len(line.lstrip(" "))) // 4) + line.lstrip(" ")
                     for line in ast.unparse(tree).split("\n")) + "\n"
    if ast.dump(ast.parse(code)) != ast.dump(tree):
        raise AssertionError(f"{path}: the shipped code differs from the module's")
    return code.encode()


def _text(statement: ast.stmt) -> bool:
    """Whether ``statement`` is a bare string: a docstring of a module, class, function or attribute."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and \
        isinstance(statement.value.value, str)


def probe_source() -> bytes:
    """The probe file as a job carries it (:func:`shipped`)."""
    return shipped(core.__file__)


def probe_command(gpus: int, full: bool) -> list[str]:
    """``python3 -c`` running the probe file (:func:`shipped`, compressed; with ``full``, its sustained tier
    ``burn.py`` too, each loaded as the module of its name): no image of ours, no network access."""
    from ..probe import burn

    files = {name: shipped(module.__file__).decode() for name, module in (("core", core), ("burn", burn))
             if full or name == "core"}
    bundle = base64.b85encode(zlib.compress(json.dumps(files).encode(), 9)).decode()
    argv = ["probe", "--gpus", str(gpus), *(["--full"] if full else [])]
    code = (f"import base64,json,sys,types,zlib;sys.argv={argv!r};f=json.loads(zlib.decompress(base64.b85decode("
            f"{bundle!r})))\nfor n,t in f.items():m=sys.modules[n]=types.ModuleType(n);"
            f"exec(compile(t,n+'.py','exec'),m.__dict__)\nsys.exit(sys.modules['core'].main())")
    return ["python3", "-c", code]


def probe_files() -> dict[str, bytes]:
    """The files a gang job's nodes run (:func:`shipped`): the probe and the NCCL launcher."""
    from ..probe import nccl

    return {module.__name__.rsplit(".", 1)[-1] + ".py": shipped(module.__file__) for module in (core, nccl)}


def launcher_command(argv: list[str]) -> list[str]:
    """``python3 -c`` writing :func:`probe_files` (compressed) to a fresh directory and running
    ``nccl.py`` there with ``argv``: a gang job's nodes need files on disk, which ``torchrun`` starts again."""
    bundle = base64.b85encode(zlib.compress(json.dumps(
        {name: data.decode() for name, data in probe_files().items()}).encode(), 9)).decode()
    code = (f"import base64,json,os,sys,tempfile,zlib;d=tempfile.mkdtemp(prefix='gpuready-');"
            f"[open(os.path.join(d,n),'w').write(t) for n,t in json.loads(zlib.decompress(base64.b85decode("
            f"{bundle!r}))).items()];os.execv(sys.executable,[sys.executable,os.path.join(d,'nccl.py'),*{argv!r}])")
    return ["python3", "-c", code]


RESULT_MARGIN_S = 90
"""Of a run's time limit, what the launcher leaves for its report to reach the logs and the job to be seen ending."""


def launcher_limits(timeout: float) -> list[str]:
    """The launcher's ``--timeout`` and ``--rendezvous-timeout`` for a run that gpuready stops after ``timeout``
    seconds: the launcher gives up (and reports why) before the job is killed (Batch's attempt duration, the
    smoke test's deadline), and waits at most 600 s for every node to arrive."""
    run = max(60, int(timeout) - RESULT_MARGIN_S)
    return ["--timeout", str(run), "--rendezvous-timeout", str(min(600, run))]


def family(stack_definition: dict[str, Any]) -> str:
    """The probe's job definition name for the stack's definition (a family of its own, never the stack's)."""
    return stack_definition["jobDefinitionName"][:NAME_LIMIT - len(FAMILY_SUFFIX)] + FAMILY_SUFFIX


def definition(stack_definition: dict[str, Any], *, gpus: int, full: bool, tags: dict[str, str]) -> dict[str, Any]:
    """The ``RegisterJobDefinition`` request: the stack's definition (image, job role, resources, logging, timeout)
    with the probe as its command, tagged with ``tags`` besides the stack's own."""
    if stack_definition.get("type") != "container" or not stack_definition.get("containerProperties"):
        raise UserError(f"job definition {stack_definition.get('jobDefinitionArn')} is not a single-container "
                        "definition: is it the jobDefinitionArn output of an aws-batch stack deployed by gpuready?")
    request = _registered(stack_definition, tags)
    request["containerProperties"]["command"] = probe_command(gpus, full)
    return request


def multinode_definition(stack_definition: dict[str, Any], *, nodes: int, argv: list[str],
                         tags: dict[str, str]) -> dict[str, Any]:
    """The ``RegisterJobDefinition`` request for a gang job: the stack's multi-node definition with ``nodes``
    nodes, every node range's container running :func:`launcher_command` (``argv``) and seeing the GPUs'
    management library (``NVIDIA_DRIVER_CAPABILITIES=compute,utility``: the probe reads nvidia-smi), tagged with
    ``tags`` besides the stack's own. A UserError when it exceeds :data:`DEFINITION_LIMIT`."""
    properties = stack_definition.get("nodeProperties") or {}
    if stack_definition.get("type") != "multinode" or not properties.get("nodeRangeProperties"):
        raise UserError(f"job definition {stack_definition.get('jobDefinitionArn')} is not a multi-node parallel "
                        "definition: is it the multiNodeJobDefinitionArn output of an aws-batch stack deployed by "
                        "gpuready?")
    request = _registered(stack_definition, tags)
    request["nodeProperties"]["numNodes"] = nodes
    command = launcher_command(argv)
    for node_range in request["nodeProperties"]["nodeRangeProperties"]:
        container = node_range.setdefault("container", {})
        container["command"] = command
        environment = [e for e in container.get("environment") or [] if e.get("name") != "NVIDIA_DRIVER_CAPABILITIES"]
        container["environment"] = environment + [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]
    if size(request) > DEFINITION_LIMIT:
        ranges = len(request["nodeProperties"]["nodeRangeProperties"])
        raise UserError(f"the probe's multi-node job definition would be {size(request)} bytes, more than the "
                        f"{DEFINITION_LIMIT} a RegisterJobDefinition may hold: "
                        f"{stack_definition.get('jobDefinitionArn')} has {ranges} node ranges, each carrying the "
                        "probe: give it one range, targetNodes '0:'")
    return request


def _registered(stack_definition: dict[str, Any], tags: dict[str, str]) -> dict[str, Any]:
    """What the probe's definition keeps of the stack's: its fields (:data:`REGISTERED_FIELDS`), its own tags (not
    AWS's) and ``tags``, in the probe's family."""
    request = {key: copy.deepcopy(stack_definition[key]) for key in REGISTERED_FIELDS if key in stack_definition}
    own = {k: v for k, v in (stack_definition.get("tags") or {}).items() if not k.startswith("aws:")}
    return {"jobDefinitionName": family(stack_definition), **request, "tags": {**own, **tags}}


def size(request: dict[str, Any]) -> int:
    """Bytes of ``request`` as a JSON body (with the spaces botocore may leave out: never an underestimate)."""
    return len(json.dumps(request).encode())
