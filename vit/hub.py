"""Files from the Hugging Face Hub through `huggingface_hub` (installed with Gradio, so a Space
built from requirements.txt alone has it): cache first, a quick reachability probe, byte
progress, and one-line errors without Python in them (the full reason is chained).

huggingface_hub reads `HF_ENDPOINT`, `HF_HOME` and `HF_HUB_CACHE` once, when it is imported;
this module reads them on every call and passes `endpoint=` and `cache_dir=` explicitly, so a
test (or a wrapper) that sets them after the import is obeyed. Offline, huggingface_hub retries
an unreachable host for ~45 s; one TCP probe (3 s at most) answers first.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

Progress = Callable[[int, int | None], None]  # (bytes downloaded so far, total bytes or None)

_DEFAULT_ENDPOINT = "https://huggingface.co"


class PretrainedUnavailable(RuntimeError):
    """Named pretrained weights could not be obtained. str(e) is one sentence for a person;
    the exception it was raised from (`__cause__`) holds the full reason, for the server log."""


class Gated(PretrainedUnavailable):
    """The repository is gated: the Hub answered 401/403 "GatedRepo", as it does until the
    account whose token this machine sends has accepted the repository's licence on its page.
    `url` is that page."""

    def __init__(self, message: str, url: str):
        super().__init__(message)
        self.url = url


class NotOnHub(PretrainedUnavailable):
    """The Hub answered that it has no such repository or file (HTTP 404): the weights were
    moved, renamed or removed there. Said in a person's words; the address and the file the Hub
    lacked are in the chained error, for the server log."""


class NoInternet(PretrainedUnavailable):
    """The weights are not cached and this machine cannot download them: `HF_HUB_OFFLINE` is
    set or the host does not answer. An app can tell its visitors so before they pick a model."""


def offline_by_setting() -> bool:
    """Whether `HF_HUB_OFFLINE` forbids downloads (huggingface_hub's own switch)."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def hub_endpoint() -> str:
    """The Hub's address now: `HF_ENDPOINT`, else huggingface.co."""
    return os.environ.get("HF_ENDPOINT", _DEFAULT_ENDPOINT).rstrip("/")


def hub_cache_dir() -> Path:
    """The Hub cache now, by huggingface_hub's rule: `HF_HUB_CACHE`, else `$HF_HOME/hub`,
    else `~/.cache/huggingface/hub` (`$XDG_CACHE_HOME/huggingface/hub` when that is set)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "huggingface" / "hub"


def reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the URL's host opens within `timeout` seconds."""
    parts = urlsplit(url)
    default_port = 80 if parts.scheme == "http" else 443
    try:
        socket.create_connection((parts.hostname, parts.port or default_port), timeout=timeout).close()
    except OSError:
        return False
    return True


def can_download(timeout: float = 2.0) -> bool:
    """Whether this machine may and can download weights now: `HF_HUB_OFFLINE` unset and the
    Hub answering (one TCP probe)."""
    return not offline_by_setting() and reachable(hub_endpoint(), timeout)


def cached_file(repo: str, filename: str) -> Path | None:
    """The cached copy of `repo`'s `filename` (a finished download), or None; no network."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo, filename, cache_dir=hub_cache_dir())
    return Path(found) if isinstance(found, str) else None


def is_cached(repo: str, filenames: Sequence[str]) -> bool:
    return all(cached_file(repo, f) is not None for f in filenames)


def _progress_bar(report: Callable[[int], None]) -> type:
    """A tqdm class for huggingface_hub's `tqdm_class` that draws nothing and reports each
    chunk's byte count (huggingface_hub calls `update(len(chunk))` per chunk written)."""
    from tqdm.auto import tqdm

    class _Reporter(tqdm):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "disable": True})

        def update(self, n: float | None = 1) -> bool | None:
            report(int(n or 0))
            return None

    return _Reporter


def _why(repo: str, filename: str, error: Exception) -> str:
    """One sentence for a failed download of `repo`'s `filename`."""
    from huggingface_hub.errors import EntryNotFoundError, GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    where = f"{filename} of {repo}"
    if isinstance(error, GatedRepoError):  # a RepositoryNotFoundError too: asked first
        return gated_sentence(f"{repo}'s weights", "their licence", f"{hub_endpoint()}/{repo}")
    if isinstance(error, RepositoryNotFoundError | EntryNotFoundError):
        return NOT_ON_HUB
    if isinstance(error, HfHubHTTPError) and error.response is not None:
        return f"the Hub at {hub_endpoint()} answered HTTP {error.response.status_code} for {where}"
    return f"the download of {where} did not complete (nothing was cached; try again)"


# A visitor who picked a model the Hub does not have reads why in words they can act on: no Hub
# address, no file name (a teacher read "the Hub at http://127.0.0.1:… has no file config.json"
# where, offline, the same pick got a clear sentence; issue 61).
NOT_ON_HUB = "the Hugging Face Hub does not have these weights (they may have been moved, renamed or removed there)"


def gated_sentence(what: str, licence: str, url: str) -> str:
    """What a person does about a gated repository, in one sentence: "`what` need you to accept
    `licence` on `url` and a token; ..." (url without its scheme, as people type it)."""
    page = urlsplit(url)._replace(scheme="").geturl().lstrip("/")
    return (
        f"{what} need you to accept {licence} on {page} and a token: accept it there, logged in to the Hub, "
        "then give this machine an access token of that account (HF_TOKEN, or `hf auth login`) and load it again"
    )


def download(repo: str, filenames: Sequence[str], progress: Progress | None = None) -> dict[str, Path]:
    """The local paths of `repo`'s `filenames`, downloading those not cached yet. Cached files
    cost no request. `progress(done, total)` is called as bytes arrive (total: the sum of the
    missing files' sizes, None if the Hub did not say). Raises PretrainedUnavailable."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    paths = {f: cached_file(repo, f) for f in filenames}
    missing = [f for f, path in paths.items() if path is None]
    if not missing:
        return paths
    # The messages name no folder: they reach visitors (docs/models.md says where the cache is).
    endpoint, cache = hub_endpoint(), hub_cache_dir()
    if offline_by_setting():
        raise NoInternet(f"{repo} is not in the Hugging Face cache and HF_HUB_OFFLINE is set")
    if not reachable(endpoint):
        raise NoInternet(
            f"the Hugging Face Hub ({urlsplit(endpoint).netloc}) cannot be reached from this machine "
            f"and {repo} is not in its cache"
        )
    done = 0

    def report(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    total: int | None = 0
    try:
        for filename in missing:  # HEAD each first: the total lets progress say a percentage
            size = get_hf_file_metadata(hf_hub_url(repo, filename, endpoint=endpoint)).size
            total = None if total is None or size is None else total + size
        report(0)
        for filename in missing:
            kwargs = {"cache_dir": cache, "endpoint": endpoint, "tqdm_class": _progress_bar(report)}
            paths[filename] = Path(hf_hub_download(repo, filename, **kwargs))
    except Exception as e:  # noqa: BLE001 - the Hub and the network fail in many library-specific ways
        from huggingface_hub.errors import EntryNotFoundError, GatedRepoError, RepositoryNotFoundError

        if isinstance(e, GatedRepoError):
            raise Gated(_why(repo, filename, e), f"{endpoint}/{repo}") from e
        if isinstance(e, RepositoryNotFoundError | EntryNotFoundError):
            raise NotOnHub(_why(repo, filename, e)) from e
        raise PretrainedUnavailable(_why(repo, filename, e)) from e
    return paths
