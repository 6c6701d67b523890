"""A stand-in HTTP service on 127.0.0.1, served from a thread for the length of a `with` block
(the Hub's, tests/hub_standin.py; ZeroGPU's device API, tests/zerogpu_standin.py)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

T = TypeVar("T")


class QuietServer(ThreadingHTTPServer):
    """A client that leaves mid-request (the app's ZeroGPU client when a call is given up) is
    no error of the stand-in's: not a traceback in the rehearsal's output."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def served(build: Callable[[str], tuple[T, type[BaseHTTPRequestHandler]]]) -> Iterator[T]:
    """`build(url)` makes the stand-in and its request handler once the port is known; the
    stand-in is yielded while a thread serves it."""
    server = QuietServer(("127.0.0.1", 0), None)
    standin, server.RequestHandlerClass = build(f"http://127.0.0.1:{server.server_address[1]}")
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
