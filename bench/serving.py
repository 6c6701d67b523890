"""Starting the app as a server and waiting for it: shared by the benchmarks and the tests."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

STARTUP_TIMEOUT_S = 120  # the CI machine is small and shared; Gradio's import alone takes seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
