"""A stand-in of ZeroGPU's device API for tests: what the `spaces` package (0.51.3) asks of the
platform, on 127.0.0.1 in a thread (pure stdlib `http.server`), so a ZeroGPU Space's start and
its refusals run here, without Hugging Face's infrastructure.

What the package sends (spaces/zero/api.py, client.py), all POSTs with query parameters:
- `/startup-report` at `Blocks.launch` (only if some function is decorated): 200;
- `/schedule` per call of a decorated function (cgroupPath, taskId, durationSeconds, token,
  ...): 200 JSON {idle, nvidiaIndex, nvidiaUUID, allowToken}; 429 JSON {left, wait} when the
  visitor's quota cannot pay durationSeconds (the package words it "You have exceeded your ...
  quota (Ns requested vs. Ms left). Try again in H:MM:SS." for a visitor with a token, "Space app
  has reached its GPU limit" for one without); 503 when no GPU is free. Both JSON answers
  need a Content-Type: the package reads it to tell them from a queue's event stream; a 429
  with a negative wait means the call asks for more than any call may have;
- `/allow` (allowToken, pid) from the forked worker, which must get 200 (the package asserts it);
- `/release` (allowToken, fail) when the call ends.

The stand-in charges a visitor the seconds a call asks for when it schedules it (the platform
charges the seconds used, which are fewer: this errs towards refusing). A visitor is their
token (`visitor_token(name)`, an unsigned JWT the way the package decodes it) or, without one,
the Space itself (the package's IP-based quota).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from standin_http import served

FREE_QUOTA_S = 300  # a free account's daily ZeroGPU time (5 minutes)
WAIT_S = 3600  # "Try again in" this long, as the package shows it: 1:00:00
ANONYMOUS = ""  # the visitor without a token


def visitor_token(name: str) -> str:
    """An X-IP-Token the package accepts (it reads the JWT's payload, never its signature)."""

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'user': name})}.signature"


@dataclass
class ZeroGpuStandIn:
    url: str
    quota_s: int = FREE_QUOTA_S  # every visitor's daily seconds
    exceeded: bool = False  # answer "quota exceeded" to everyone, whatever they have left
    busy: bool = False  # answer "no GPU was available" (503) to everyone
    max_duration_s: int | None = None  # the longest call allowed (longer: 429 with a negative wait)
    auth: str | None = "regular"  # what a visitor with a token is: None (not logged in), "regular", "pro"
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (path, parameters)
    used: dict[str, int] = field(default_factory=dict)  # visitor -> seconds charged
    _tokens: int = 0

    def paths(self) -> list[str]:
        """The paths of every request so far, in order."""
        return [path for path, _ in self.requests]

    def left(self, visitor: str = ANONYMOUS) -> int:
        return max(0, self.quota_s - self.used.get(visitor, 0))

    def schedule(self, params: dict[str, str]) -> tuple[int, dict]:
        """The answer to one /schedule: (status, JSON body)."""
        if self.busy:
            return 503, {"detail": "No GPU available"}
        visitor = charged_visitor(params.get("token"))
        requested = int(params.get("durationSeconds", 60))
        if self.max_duration_s is not None and requested > self.max_duration_s:
            return 429, {"left": self.left(visitor), "wait": -1}  # the package: "illegal duration"
        if self.exceeded or requested > self.left(visitor):
            return 429, {"left": 0 if self.exceeded else self.left(visitor), "wait": WAIT_S}
        self.used[visitor] = self.used.get(visitor, 0) + requested
        self._tokens += 1
        return 200, {"idle": True, "nvidiaIndex": 0, "nvidiaUUID": "GPU-standin", "allowToken": f"allow-{self._tokens}"}


def charged_visitor(token: str | None) -> str:
    """Whose quota a call with `token` (its X-IP-Token) is charged to: the token's user, else ANONYMOUS."""
    if not token:
        return ANONYMOUS
    payload = token.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(payload + "==")).get("user", token))


def _handler(gpu: ZeroGpuStandIn, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _send(self, status: int, body: dict | None = None, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query).items()}
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                gpu.requests.append((url.path, params))
                if url.path == "/schedule":
                    status, body = gpu.schedule(params)
                    auth = {"X-Authenticated": gpu.auth} if params.get("token") and gpu.auth else {}
                    return self._send(status, body, auth)
            if url.path in ("/startup-report", "/allow", "/release"):
                return self._send(200)
            self._send(404, {"detail": "Not Found"})

    return Handler


@contextmanager
def serve(quota_s: int = FREE_QUOTA_S) -> Iterator[ZeroGpuStandIn]:
    """A running ZeroGPU device API stand-in on 127.0.0.1 (in a thread) until the block ends."""
    lock = threading.Lock()

    def build(url: str):
        standin = ZeroGpuStandIn(url, quota_s)
        return standin, _handler(standin, lock)

    with served(build) as standin:
        yield standin
