"""Starting the app as a server and waiting for it: shared by the benchmarks and the tests."""

from __future__ import annotations

import functools
import socket
import ssl
import subprocess
import time
import urllib.request
from typing import Any

STARTUP_TIMEOUT_S = 120  # the CI machine is small and shared; Gradio's import alone takes seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context, with the certificate bundle httpx would load (certifi's), for every client."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def gradio_client(url: str, **kwargs: Any):
    """A `gradio_client.Client` of `url` that reads no files back and builds its TLS context once.
    gradio_client makes an httpx client for each request and each reply stream, and httpx loads the
    certificate bundle into a new context for each, 20 ms of CPU, even for http on 127.0.0.1: it was
    three quarters of the soak's class process's CPU (py-spy), and the class's clicks, timed in a
    process of low priority beside the server, waited for that process's CPU. A browser does not."""
    from gradio_client import Client

    return Client(url, **{"verbose": False, "download_files": False, "ssl_verify": tls_context(), **kwargs})


def wait_until_served(url: str, proc: subprocess.Popen | None = None, timeout: float = STARTUP_TIMEOUT_S) -> float:
    """Poll `url` until it answers 200; returns the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} not served within {timeout} s")


def file_of(picture: str | dict) -> str:
    """The file of an image output as gradio_client returns it: a path, or an update carrying
    the file and its alt text ({"value": path, "alt_text": ...})."""
    return picture["value"] if isinstance(picture, dict) else picture
