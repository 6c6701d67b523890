"""A Hugging Face Hub stand-in for tests: the file-resolve part of the Hub's HTTP interface, on
127.0.0.1 in a thread (pure stdlib `http.server`), so the download path runs in CI without a
network.

What huggingface_hub 2.4 needs (file_download.get_hf_file_metadata, http_get): HEAD and GET on
`/{repo}/resolve/{revision}/{filename}` answering `X-Repo-Commit` (the commit the cache files
the snapshot under), `ETag` (the blob's name in the cache; the Hub sends the sha256 of LFS
files) and `Content-Length` (checked against the bytes received); 404s carry `X-Error-Code`
(`RepoNotFound` / `EntryNotFound`), which huggingface_hub turns into its typed errors. A gated
repository (`gated`) answers as the Hub does before its licence is accepted: 401 without a
token, 403 with one, `X-Error-Code: GatedRepo` (huggingface_hub's GatedRepoError). GET
ignores `Range` and answers the whole file with 200, which huggingface_hub accepts.

The `hub` fixture points `HF_ENDPOINT` at the stand-in and `HF_HOME` / `HF_HUB_CACHE` at a temp
folder. huggingface_hub reads those variables once, at import; `vit.hub` reads them per call and
passes them explicitly, which is what makes setting them here work (see vit/hub.py).
"""

from __future__ import annotations

import hashlib
import mmap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from standin_http import served

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # one fixed commit for every repo
MAX_FILE_BYTES = 512 * 2**20  # the stand-in holds files in memory: refuse anything bigger


@dataclass
class HubStandIn:
    url: str
    files: dict[tuple[str, str], bytes | mmap.mmap] = field(default_factory=dict)  # (repo, filename) -> content
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path) of every request
    short: set[tuple[str, str]] = field(default_factory=set)  # files whose GET sends half the bytes
    gated: set[str] = field(default_factory=set)  # repos whose licence this caller has not accepted
    tokens: list[str | None] = field(default_factory=list)  # the Authorization header of every request
    _etags: dict[tuple[str, str], tuple[bytes | mmap.mmap, str]] = field(
        default_factory=dict
    )  # sha256s, hashed once per content

    def etag(self, key: tuple[str, str]) -> str:
        """The file's sha256, computed once: hashing 1.2 GB on every HEAD took longer than
        huggingface_hub's 10 s metadata timeout on a busy machine."""
        content = self.files[key]
        known = self._etags.get(key)
        if known is None or known[0] is not content:
            known = self._etags[key] = (content, hashlib.sha256(content).hexdigest())
        return known[1]

    def publish(self, repo: str, filename: str, content: bytes) -> None:
        if len(content) > MAX_FILE_BYTES:
            raise ValueError(f"{filename}: {len(content)} bytes is more than the stand-in holds")
        self.files[(repo, filename)] = content

    def publish_file(self, repo: str, filename: str, path: Path) -> None:
        """A file served from disk, any size (bench/space.py serves the 1.2 GB ViT-L/14 files):
        mapped, not read, so it costs page cache rather than memory."""
        with path.open("rb") as f:
            self.files[(repo, filename)] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def publish_folder(self, repo: str, folder: Path) -> None:
        """Every file directly in `folder` (e.g. a `save_pretrained` output) under `repo`."""
        for path in sorted(folder.iterdir()):
            if path.is_file():
                self.publish(repo, path.name, path.read_bytes())

    def downloads(self) -> list[str]:
        """Paths of the GET requests so far."""
        return [path for method, path in self.requests if method == "GET"]


def _handler(hub: HubStandIn, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _lookup(self) -> tuple[tuple[str, str] | None, str]:
            """((repo, filename), '') for a served file, or (None, the X-Error-Code)."""
            repo, sep, rest = self.path.partition("/resolve/")
            _revision, _, filename = rest.partition("/")
            repo = repo.lstrip("/")
            if not sep or not filename or not any(r == repo for r, _ in hub.files):
                return None, "RepoNotFound"
            return ((repo, filename), "") if (repo, filename) in hub.files else (None, "EntryNotFound")

        def _answer(self, send_body: bool) -> None:
            with lock:
                hub.requests.append((self.command, self.path))
                hub.tokens.append(self.headers.get("Authorization"))
            if self.path.lstrip("/").partition("/resolve/")[0] in hub.gated:
                self._refuse_gated()
                return
            key, error = self._lookup()
            if key is None:
                self.send_response(404)
                self.send_header("X-Error-Code", error)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            content = hub.files[key]
            body = content
            if send_body and key in hub.short:
                body = body[: len(body) // 2]  # a proxy that cut the file short, announcing the short length
            self.send_response(200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{hub.etag(key)}"')
            self.send_header("Content-Length", str(len(body) if send_body else len(content)))
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def _refuse_gated(self) -> None:
            # The Hub's words: 401 asks to log in, 403 says this account has no access yet.
            authorised = self.headers.get("Authorization") is not None
            self.send_response(403 if authorised else 401)
            self.send_header("X-Error-Code", "GatedRepo")
            self.send_header("X-Error-Message", "Access to this model is restricted: you must have access to it.")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_HEAD(self) -> None:
            self._answer(send_body=False)

        def do_GET(self) -> None:
            self._answer(send_body=True)

    return Handler


@contextmanager
def serve() -> Iterator[HubStandIn]:
    """A running Hub stand-in on 127.0.0.1 (in a thread) until the block ends."""
    lock = threading.Lock()

    def build(url: str):
        standin = HubStandIn(url)
        return standin, _handler(standin, lock)

    with served(build) as standin:
        yield standin


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A running Hub stand-in with an empty cache; `hub.requests` counts what reached it."""
    with serve() as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield standin
