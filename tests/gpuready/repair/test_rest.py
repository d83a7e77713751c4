"""The REST calls of the GKE and AKS repairers (``gpuready/repair/rest.py``) against a loopback server that answers
each request as told: what is sent, how often a call is tried and after which pauses, which faults are retried, left
in doubt or raised, and what an answer is read as. The pauses go to a recorder, so no test waits for them."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
from typing import Optional

import pytest

from gpuready.repair.rest import Answer, Api, CloudError, NodeRepairer
from gpuready.smoke.retry import Backoff

from .loopback import JsonHandler, serve


class Scripted(JsonHandler):
    """Answers each request with the next of ``script`` (status, body), the last one again once it runs out; records
    each request as (method, path, headers, body)."""

    script: list[tuple[int, Optional[dict]]] = []
    seen: list[tuple[str, str, dict, bytes]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, dict(self.headers.items()), body))
        status, answer = self.script[min(len(self.seen), len(self.script)) - 1]
        self.send_json(status, answer, {"X-Request": str(len(self.seen))})

    do_GET = do_POST = _answer


@pytest.fixture
def server():
    """``start(*script)``: a loopback server playing ``script``; (its base URL, the requests it saw)."""
    started = []

    def start(*script: tuple[int, Optional[dict]]):
        handler = type("Handler", (Scripted,), {"script": list(script), "seen": []})
        started.append(serve(handler))
        return f"http://127.0.0.1:{started[-1].server_address[1]}/compute/v1", handler.seen
    yield start
    for running in started:
        running.shutdown()
        running.server_close()


def _api(base: str, paused: list[float], **changes) -> Api:
    return Api(base, "t0ken", lambda body: (body or {}).get("message", "no words"), timeout=2.0,
               sleep=paused.append, **changes)


def test_a_read_is_sent_with_the_token_and_its_answer_read_as_json(server):
    base, seen = server((200, {"name": "x"}))
    answer = _api(base + "/", []).read("GET", "/projects/p/instances/x?fields=name")
    assert answer == Answer(200, answer.headers, {"name": "x"}) and answer.headers["X-Request"] == "1"
    ((method, path, headers, body),) = seen
    assert (method, path, body) == ("GET", "/compute/v1/projects/p/instances/x?fields=name", b"")
    assert headers["Authorization"] == "Bearer t0ken" and headers["Accept"] == "application/json"
    assert "Content-Type" not in headers


def test_a_change_sends_its_body_as_json_and_a_post_without_one_an_empty_body(server):
    base, seen = server((200, None))
    api = _api(base, [])
    assert api.act("POST", "groups/g/recreateInstances", {"instances": ["x"]}, took_effect=lambda: None).body is None
    assert api.act("POST", "instances/x/reset", took_effect=lambda: None).status == 200
    (_, path, headers, body), (_, _, bare, empty) = seen
    assert path == "/compute/v1/groups/g/recreateInstances" and json.loads(body) == {"instances": ["x"]}
    assert headers["Content-Type"] == "application/json"
    # a POST with nothing to send still says its length (Google's front ends answer 411 Length Required otherwise)
    assert empty == b"" and bare["Content-Length"] == "0" and bare.get("Content-Type") != "application/json"


def test_an_answer_with_no_json_is_read_as_none():
    for raw in (b"", b"  \n", b"<html>busy</html>"):
        handler_answer = raw

        class Raw(JsonHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(handler_answer)))
                self.end_headers()
                self.wfile.write(handler_answer)
        running = serve(Raw)
        try:
            assert _api(f"http://127.0.0.1:{running.server_address[1]}", []).read("GET", "x").body is None
        finally:
            running.shutdown()
            running.server_close()


def test_a_change_left_in_doubt_is_tried_tries_times_after_the_backoffs_pauses_asking_each_time(server):
    base, seen = server((503, {"message": "backend unavailable"}))
    paused, asked = [], []
    with pytest.raises(CloudError) as raised:
        _api(base, paused).act("POST", "instances/x/reset?requestId=r1", took_effect=lambda: asked.append(1))
    assert str(raised.value) == "POST instances/x/reset: HTTP 503: backend unavailable"
    assert (raised.value.status, raised.value.passing, raised.value.doubtful) == (503, True, True)
    assert len(seen) == 5 and paused == [1.0, 2.0, 4.0, 8.0]  # 1 s doubling, five tries (TRIES)
    assert len(asked) == 4  # before each try after the first: did the change take effect?


def test_a_change_seen_under_way_after_a_doubt_is_not_sent_again(server):
    base, seen = server((500, None), (200, {}))
    assert _api(base, []).act("POST", "x/redeploy", took_effect=lambda: "instance 0 is Updating") == \
        "instance 0 is Updating"
    assert len(seen) == 1


def test_a_throttled_change_is_sent_again_without_asking_it_cannot_have_taken_effect(server):
    base, seen = server((429, {"message": "slow down"}), (429, None), (200, {"name": "op"}))
    paused, asked = [], []
    api = _api(base, paused, tries=3, backoff=Backoff(0.5, 0.75))
    assert api.act("POST", "x/reset", took_effect=lambda: asked.append(1)).body == {"name": "op"}
    assert len(seen) == 3 and paused == [0.5, 0.75] and asked == []


def test_a_read_gives_up_after_its_tries(server):
    base, seen = server((502, None))
    paused: list[float] = []
    with pytest.raises(CloudError) as raised:
        _api(base, paused, tries=2).read("GET", "projects/p/zones/z/instances/x?alt=json")
    assert str(raised.value) == "GET projects/p/zones/z/instances/x: HTTP 502: no words"
    assert len(seen) == 2 and paused == [1.0]


def test_a_refusal_is_raised_at_once_neither_passing_nor_in_doubt(server):
    base, seen = server((404, {"message": "The resource 'x' was not found"}))
    with pytest.raises(CloudError) as raised:
        _api(base, []).act("POST", "x/reset", took_effect=lambda: pytest.fail("a refusal did nothing"))
    assert str(raised.value) == "POST x/reset: HTTP 404: The resource 'x' was not found"
    assert (raised.value.call, raised.value.status, raised.value.message) == (
        "POST x/reset", 404, "The resource 'x' was not found")
    assert (raised.value.passing, raised.value.doubtful) == (False, False) and len(seen) == 1


def test_a_refused_connection_never_reached_the_cloud_and_is_not_in_doubt():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    paused: list[float] = []
    asked: list[int] = []
    with pytest.raises(CloudError) as raised:
        _api(f"http://127.0.0.1:{port}", paused, tries=2).act("POST", "x/reset",
                                                              took_effect=lambda: asked.append(1))
    said = f"[Errno {errno.ECONNREFUSED}] {os.strerror(errno.ECONNREFUSED)}"  # the system's own words
    assert str(raised.value) == f"POST x/reset: no answer ({said})" and raised.value.status is None
    assert raised.value.message == said
    assert (raised.value.passing, raised.value.doubtful) == (True, False)
    assert paused == [1.0] and asked == []  # tried again, with nothing to ask: it was never sent


def test_a_read_that_lists_sends_its_body_and_a_get_sends_none(server):
    base, seen = server((200, {"managedInstances": []}))
    api = _api(base, [])
    assert api.read("POST", "groups/g/listManagedInstances", {"filter": "name = x"}).body == {"managedInstances": []}
    api.read("GET", "groups/g")
    (post, _, post_headers, body), (get, _, get_headers, nothing) = seen
    assert (post, json.loads(body), post_headers["Content-Type"]) == ("POST", {"filter": "name = x"}, "application/json")
    assert (get, nothing) == ("GET", b"") and "Content-Length" not in get_headers


@pytest.mark.parametrize("provider, reason", [
    ("", "its providerID (none) is not a Compute Engine instance (gce://...)"),
    ("aws:///us-east-1a/i-0abc", "its providerID aws:///us-east-1a/i-0abc is not a Compute Engine instance (gce://...)"),
])
def test_a_node_of_no_machine_this_repairer_handles_is_skipped_saying_its_provider_id(provider, reason):
    repairer = NodeRepairer(_api("http://127.0.0.1:9", []))
    node = {"metadata": {"name": "gpu-1"}, "spec": {"providerID": provider} if provider else {}}
    assert repairer.provider_id(node, re.compile(r"gce://(?P<path>.+)"), "a Compute Engine instance (gce://...)") == (
        "gpu-1", None)
    assert repairer.skipped(node) == reason and repairer.skipped({"metadata": {"name": "gpu-2"}}) == ""
    name, found = repairer.provider_id({"metadata": {"name": "gpu-3"}, "spec": {"providerID": "gce://p/z/x"}},
                                       re.compile(r"gce://(?P<path>.+)"), "a Compute Engine instance")
    assert (name, found.group("path")) == ("gpu-3", "p/z/x") and repairer.skipped({"metadata": {"name": "gpu-3"}}) == ""


def test_an_answer_cut_off_is_no_answer_in_doubt_said_in_the_networks_words():
    class Hangs(JsonHandler):
        def do_POST(self):
            self.close_connection = True  # the request read, the connection closed without a word

    running = serve(Hangs)
    paused: list[float] = []
    try:
        with pytest.raises(CloudError) as raised:
            _api(f"http://127.0.0.1:{running.server_address[1]}", paused, tries=1).act(
                "POST", "x/recreate", {"instances": ["x"]}, took_effect=lambda: None)
    finally:
        running.shutdown()
        running.server_close()
    assert str(raised.value) == "POST x/recreate: no answer (Remote end closed connection without response)"
    assert (raised.value.call, raised.value.status, raised.value.passing, raised.value.doubtful) == (
        "POST x/recreate", None, True, True)
