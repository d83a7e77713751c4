"""A Batch GPU queue in moto's server on 127.0.0.1, and a fault proxy in front of it, for the Batch target's tests."""

from __future__ import annotations

import _thread
import http.client
import json
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

import boto3
import requests

LOG_GROUP = "/gpuready/jobs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_queue(endpoint: str, instance_types=("g6.xlarge", "g6.12xlarge")) -> dict:
    """The resources an aws-batch stack creates, made in moto; returns the stack outputs the smoke test reads."""
    session = boto3.session.Session(region_name="us-east-1")
    kw = {"endpoint_url": endpoint}
    ec2, iam = session.client("ec2", **kw), session.client("iam", **kw)
    batch, logs = session.client("batch", **kw), session.client("logs", **kw)
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/20")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="gpu", Description="gpu", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName="batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="ecs")["InstanceProfile"]["Arn"]
    env = batch.create_compute_environment(
        computeEnvironmentName="gpu-on-demand", type="MANAGED", state="ENABLED", serviceRole=role,
        computeResources={"type": "EC2", "minvCpus": 0, "maxvCpus": 64, "instanceTypes": list(instance_types),
                          "subnets": [subnet], "securityGroupIds": [group], "instanceRole": profile})
    queue = batch.create_job_queue(jobQueueName="gpu", state="ENABLED", priority=1,
                                   computeEnvironmentOrder=[{"order": 1,
                                                             "computeEnvironment": env["computeEnvironmentArn"]}])
    logs.create_log_group(logGroupName=LOG_GROUP)
    definition = batch.register_job_definition(
        jobDefinitionName="gpu-smoke", type="container", containerProperties={
            "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "command": ["nvidia-smi"],
            "resourceRequirements": [{"type": "GPU", "value": "1"}, {"type": "VCPU", "value": "2"},
                                     {"type": "MEMORY", "value": "8192"}],
            "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": LOG_GROUP}}})
    return {"platform": "aws-batch", "jobQueueArn": queue["jobQueueArn"], "jobQueueName": "gpu",
            "jobDefinitionArn": definition["jobDefinitionArn"], "logGroupName": LOG_GROUP}


def configure_moto(endpoint: str) -> None:
    requests.post(f"{endpoint}/moto-api/config", json={"batch": {"use_docker": False}}, timeout=10)


class FaultProxy:
    """Forwards to moto, injecting faults by Batch operation: ``plan[path] = [fault, ...]`` consumed in order.

    Faults: ``throttle`` (HTTP 429 ThrottlingException), ``5xx`` (HTTP 500 ServerException), ``client`` (HTTP 400
    ClientException), ``reset`` (close before forwarding), ``reset-after`` (forward, so the call takes effect, then
    close without answering), ``hang`` (accept, never answer), ``interrupt`` (forward, then Ctrl-C the main thread
    before answering), ``sigterm`` (the same with SIGTERM). ``always:FAULT`` is never consumed.
    """

    def __init__(self, upstream_port: int) -> None:
        self.plan: dict[str, list[str]] = {}
        self.closed = threading.Event()
        self.seen: list[tuple[str, Optional[str]]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?")[0].rstrip("/")
                faults = proxy.plan.get(path) or []
                fault = (faults[0] if faults[0].startswith("always:") else faults.pop(0)) if faults else None
                fault = fault.split(":", 1)[-1] if fault else None
                proxy.seen.append((path, fault))
                if fault == "hang":
                    proxy.closed.wait()
                    return
                if fault == "reset":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault in ("throttle", "5xx", "client"):
                    status, kind = {"throttle": (429, "ThrottlingException"), "5xx": (500, "ServerException"),
                                    "client": (400, "ClientException")}[fault]
                    payload = json.dumps({"__type": kind, "message": f"injected {fault}"}).encode()
                    self.send_response(status)
                    self.send_header("x-amzn-ErrorType", kind)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                if fault in ("interrupt", "sigterm"):
                    _thread.interrupt_main(signal.SIGINT if fault == "interrupt" else signal.SIGTERM)
                    time.sleep(0.5)
                if fault in ("reset-after", "interrupt", "sigterm"):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        self.server.shutdown()
