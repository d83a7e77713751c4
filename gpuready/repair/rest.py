"""A cloud's REST API over plain HTTPS with a bearer token (``urllib``, no SDK): the calls of the Compute Engine
(:mod:`.gcp`) and Azure (:mod:`.azure`) repairers.

Every call is bounded by a timeout and retried with backoff (the sweep's own loop, :func:`gpuready.smoke.retry.retry`)
when the API throttles (429), fails on its side (5xx) or leaves it unanswered (a reset connection, the timeout). A
call that changes something (:meth:`Api.act`) is sent again only where it cannot have taken effect (a throttle), or
after its caller checked that it did not: a 5xx or no answer may come after the cloud acted, so before each new try
the caller's ``took_effect`` says what is under way, and a change seen under way is the answer (nothing acts twice).
A refusal (4xx other than 429), or a fault still there after the last try, is raised as :class:`CloudError`.
:class:`NodeRepairer` is what both repairers share besides."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union

from ..smoke.retry import Backoff, retry

BACKOFF = Backoff(1.0, 16.0)
"""Pauses between tries of one call: 1 s, doubling, at most 16 s."""
TRIES = 5
"""Tries of one call before its fault is raised."""
TIMEOUT = 30.0
"""Seconds one try waits for the connection and for each read of the answer."""


class CloudError(Exception):
    """A cloud API call that failed: the API's refusal (``status``: its HTTP status, ``message``: its own words), or
    no answer at all (``status`` None). ``passing``: a fault a later try may not meet (throttle, 5xx, no answer);
    ``doubtful``: the call may have reached the cloud and taken effect (a 5xx, or no answer)."""

    def __init__(self, call: str, status: Optional[int], message: str, *, passing: bool = False,
                 doubtful: bool = False) -> None:
        super().__init__(f"{call}: HTTP {status}: {message}" if status else f"{call}: no answer ({message})")
        self.call, self.status, self.message = call, status, message
        self.passing, self.doubtful = passing, doubtful


@dataclass(frozen=True)
class Answer:
    """An API's answer: its HTTP status, headers and JSON body (None where it has none)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None


def _json(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8")) if data.strip() else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Api:
    """One cloud's REST API at ``base`` (every path is relative to it), called with ``token``; ``message`` takes an
    error answer's JSON body (or None) and says what the API said."""

    base: str
    token: str
    message: Callable[[Any], str]
    timeout: float = TIMEOUT
    backoff: Backoff = BACKOFF
    tries: int = TRIES
    sleep: Callable[[float], None] = time.sleep

    def _send(self, method: str, path: str, body: Any) -> Answer:
        call = f"{method} {path.split('?')[0]}"
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base.rstrip("/") + "/" + path.lstrip("/"), data=data, headers=headers,
                                         method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return Answer(response.status, dict(response.headers.items()), _json(response.read()))
        except urllib.error.HTTPError as e:
            text = self.message(_json(e.read() or b""))
            raise CloudError(call, e.code, text, passing=e.code == 429 or e.code >= 500,
                             doubtful=e.code >= 500) from None
        except urllib.error.URLError as e:
            refused = isinstance(e.reason, ConnectionRefusedError)  # never sent: it cannot have taken effect
            raise CloudError(call, None, str(e.reason), passing=True, doubtful=not refused) from None
        except (http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError) as e:
            raise CloudError(call, None, str(e) or type(e).__name__, passing=True, doubtful=True) from None

    def read(self, method: str, path: str, body: Any = None) -> Answer:
        """A call that changes nothing (``GET``, or a ``POST`` that lists), retried on every passing fault."""
        return retry(lambda: self._send(method, path, body), retryable=_passing, backoff=self.backoff,
                     tries=self.tries, sleep=self.sleep)

    def act(self, method: str, path: str, body: Any = None, *,
            took_effect: Callable[[], Optional[str]]) -> Union[Answer, str]:
        """A call that changes something: its answer; or, where a try was left in doubt (a 5xx, no answer) and
        ``took_effect()`` then says what is under way (in words), those words, and the call is not sent again."""
        doubt: list[CloudError] = []

        def attempt() -> Union[Answer, str]:
            if doubt:
                seen = took_effect()
                if seen:
                    return seen
            try:
                return self._send(method, path, body)
            except CloudError as error:
                if error.doubtful:
                    doubt.append(error)
                raise
        return retry(attempt, retryable=_passing, backoff=self.backoff, tries=self.tries, sleep=self.sleep)


class NodeRepairer:
    """What the Compute Engine and Azure repairers share: their :class:`Api`, how a node's ``spec.providerID`` is
    read, and why each node they do not handle was skipped (:meth:`skipped`)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.reasons: dict[str, str] = {}
        """Why ``machine`` gave None, by node name."""

    def skipped(self, node: dict) -> str:
        """Why ``machine`` gave None for ``node`` ("" if it did not)."""
        return self.reasons.get(node.get("metadata", {}).get("name", ""), "")

    def provider_id(self, node: dict, pattern: re.Pattern, kind: str) -> tuple[str, Optional[re.Match]]:
        """The node's name and its providerID's match of ``pattern``; no match is noted as the reason it is skipped
        (not ``kind``, the machines this repairer handles)."""
        name = node.get("metadata", {}).get("name", "")
        provider = (node.get("spec") or {}).get("providerID", "")
        found = pattern.match(provider)
        if not found:
            self.skip(name, f"its providerID {provider or '(none)'} is not {kind}")
        return name, found

    def skip(self, name: str, reason: str) -> None:
        """Note why node ``name`` is skipped."""
        self.reasons[name] = reason


def _passing(error: BaseException) -> bool:
    return isinstance(error, CloudError) and error.passing
