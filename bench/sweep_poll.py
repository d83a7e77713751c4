"""Measure what `gpuready sweep` costs AWS Batch to follow its jobs: DescribeJobs calls per job per poll round.

Submits JOBS jobs to moto's server (in this process, on 127.0.0.1), lets them finish in ROUNDS waves (an equal share
between each two poll rounds: moto ends jobs at once, so its scheduler is held and released here), and follows them
with the sweep's own poller (``Poller`` in gpuready/smoke/batch.py). The calls are counted as they leave boto3
(botocore's before-send event), not by the poller. Exit 1 when the figure is above the target (0.02; 100 ids a call
is 0.01).

    python bench/sweep_poll.py                 # 1,000 jobs
    python bench/sweep_poll.py --jobs 200      # fewer
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 0.02
"""DescribeJobs calls per job per poll round the sweep may cost."""
LIMIT_SECONDS = 300
"""The whole run stops (and says so) after this long, whatever happens."""


@dataclass
class Figures:
    jobs: int
    waves: int
    """Waves in which the jobs end, one before each poll round after the first."""
    rounds: int
    calls: int
    """DescribeJobs requests sent (counted at botocore's before-send)."""
    polled: int
    """Job ids asked about, summed over the rounds."""
    largest_call: int
    """Most job ids in one call."""
    seconds_submit: float
    seconds_poll: float

    @property
    def per_job_per_round(self) -> float:
        return self.calls / self.polled

    @property
    def expected_calls(self) -> int:
        """What 100 ids a call, only for unfinished jobs, costs for these waves (none ends before the first
        round)."""
        share, left = math.ceil(self.jobs / self.waves), self.jobs
        total = math.ceil(left / 100)
        while left > 0:
            total += math.ceil(left / 100)
            left -= share
        return total


@contextlib.contextmanager
def moto_batch() -> Iterator[tuple[object, dict, dict]]:
    """moto's server with a Batch GPU queue whose jobs wait until released: (batch client, outputs, held jobs)."""
    import boto3
    import requests
    from moto.batch_simple.models import BatchSimpleBackend
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    from tests.gpuready.smoke.moto_batch import build_queue, configure_moto, free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    held: dict = {}
    real = BatchSimpleBackend._mark_job_as_finished

    def hold(self, include_start_attempt, job):
        self.backend._jobs[job.job_id] = job
        job.status = "RUNNABLE"
        held[job.job_id] = job

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    BatchSimpleBackend._mark_job_as_finished = hold
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        requests.post(f"{endpoint}/moto-api/reset", timeout=10)  # moto's state is per process: start from none
        configure_moto(endpoint)
        outputs = build_queue(endpoint)
        yield boto3.session.Session(region_name="us-east-1").client("batch", endpoint_url=endpoint), outputs, held
    finally:
        server.stop()
        BatchSimpleBackend._mark_job_as_finished = real
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def measure(jobs: int = 1000, rounds: int = 5, limit: float = LIMIT_SECONDS) -> Figures:
    """Submit ``jobs``, release an equal share of them before each poll round after the first, follow them all with
    the sweep's poller; the figures."""
    from gpuready.smoke.batch import Poller

    with moto_batch() as (client, outputs, held):
        started = time.monotonic()
        ids = [client.submit_job(jobName=f"sweep-bench-{i}", jobQueue=outputs["jobQueueArn"],
                                 jobDefinition=outputs["jobDefinitionArn"])["jobId"] for i in range(jobs)]
        submitted = time.monotonic()
        sizes: list[int] = []
        client.meta.events.register("before-parameter-build.batch.DescribeJobs",
                                    lambda params, **kw: sizes.append(len(params["jobs"])))
        sent = [0]
        client.meta.events.register("before-send.batch.DescribeJobs", lambda **kw: sent.__setitem__(0, sent[0] + 1))
        share, waiting = math.ceil(jobs / rounds), list(ids)

        def between_rounds(seconds: float) -> None:  # a wave of jobs ends
            if time.monotonic() - started > limit:
                raise TimeoutError(f"the benchmark ran past {limit:g} s")
            for job_id in waiting[:share]:
                held[job_id].status = "SUCCEEDED"
            del waiting[:share]

        poller = Poller(client)
        found = poller.follow(ids, timeout=limit, poll=0.0, sleep=between_rounds)
        done = time.monotonic()
    if len(found) != jobs or any(j["status"] != "SUCCEEDED" for j in found.values()):
        raise RuntimeError("the poller did not see every job end")
    if sent[0] != poller.calls:
        raise RuntimeError(f"boto3 sent {sent[0]} DescribeJobs, the poller counted {poller.calls}")
    return Figures(jobs, rounds, poller.rounds, sent[0], poller.polled, max(sizes), submitted - started,
                   done - submitted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs to submit and follow (1000)")
    parser.add_argument("--rounds", type=int, default=5, help="waves in which the jobs end (5)")
    args = parser.parse_args()
    started = time.monotonic()
    f = measure(args.jobs, args.rounds)
    print(f"sweep polling: {f.jobs} jobs ending in {args.rounds} waves, moto on 127.0.0.1, "
          f"{time.monotonic() - started:.1f} s in all")
    print(f"  poll rounds                     {f.rounds}")
    print(f"  DescribeJobs calls              {f.calls} (100 ids a call, unfinished jobs only: {f.expected_calls})")
    print(f"  job ids asked, all rounds       {f.polled}")
    print(f"  most ids in one call            {f.largest_call}")
    print(f"  calls per job per poll round    {f.per_job_per_round:.4f} (target <= {TARGET})")
    print(f"  seconds: submit {f.seconds_submit:.1f}, poll {f.seconds_poll:.1f}")
    return 0 if f.per_job_per_round <= TARGET and f.largest_call <= 100 and f.calls <= f.expected_calls else 1


if __name__ == "__main__":
    sys.exit(main())
