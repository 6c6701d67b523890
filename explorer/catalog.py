"""The models the app can explain, by key, loaded on first use and shared by every visitor.

Keys: "bundled" (the CIFAR-10 model shipped in checkpoints/, or fresh "untrained weights" while
it is missing), "pretrained:<name>" (a name of `vit.list_pretrained()`, downloaded once from the
Hugging Face Hub; nothing else, whoever asks), and
"checkpoint:<token>" for a file the Train tab wrote or a visitor uploaded. A token is a
random name the catalogue gave that file when it was registered for one visitor;
each visitor's picker lists only their own, and a key never holds a path, so an API client
cannot make the server open a file it was not given (docs/security.md).

A model many visitors ask for at once is loaded (downloaded) once: the first request loads it,
the others wait on that same load, watch its progress and get its model or its error.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import torch

import vit
from vit.messages import quoted
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

from .explain import REQUEST_FACTOR, attention_bytes
from .loaded import LoadedModel
from .page_budget import PageShape, token_queries

log = logging.getLogger(__name__)

BUNDLED = "bundled"
PRETRAINED_PREFIX = "pretrained:"
UNKNOWN_CHECKPOINT = "unknown checkpoint: pick one from the list or upload it"
EVERYONE = "*"  # the `visitor` a checkpoint every visitor may see is registered for (local mode: the runs folder)
BUNDLED_PATH = Path(__file__).resolve().parent.parent / "checkpoints" / "vit_cifar10_tiny.safetensors"
MAX_KEY_CHARS = 200  # longer than any key the catalogue hands out ("checkpoint:" + 16 characters, pretrained names)


# training.registry's mark of a Train-tab run's folder, whose name is internal (the visitor's
# hash and a random id): such a run is listed by its model file's name and when it was saved.
APP_RUN_MARKER = ".made-by-vit-explorer-app"


Progress = Callable[[int, int | None], None]  # (bytes downloaded, total bytes or None)
WATCH_S = 0.25  # how often a visitor waiting on another's download is told its progress


class ModelUnavailable(RuntimeError):
    """A model key cannot be loaded; the message is one line for the user (the full reason,
    if any, is its `__cause__` and went to the server log)."""


def pretrained_key(name: str) -> str:
    return PRETRAINED_PREFIX + name


def no_internet(name: str) -> str:
    """What a visitor is told when `name`'s weights are not here and cannot be downloaded."""
    return (
        f"{name} is not on this machine, and this machine has no internet connection to download it. "
        "Pick one of the models at the top of the list: they are on this machine."
    )


def not_on_hub(name: str) -> str:
    """What a visitor is told when `name`'s weights are not here and the Hub does not have them
    (moved or removed there): the same plain words as `no_internet`, no address, no file name."""
    return (
        f"{name} cannot be downloaded: the Hugging Face Hub does not have it (it may have been moved, renamed "
        "or removed there). Pick another model: the ones at the top of the list are on this machine."
    )


def scanned_label(path: Path, runs_dir: Path) -> str:
    """How the model lists name a checkpoint found in the runs folder by a restarted local server:
    a Train-tab run by its own name and when it was trained ("vit_cifar_nano_5epochs_acc41,
    trained 2025-01-02 03:04"), any other file by its path under the runs folder (a folder the
    training CLI wrote is named by whoever ran it)."""
    if not (path.parent / APP_RUN_MARKER).is_file():
        return str(path.relative_to(runs_dir))
    when = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    return f"{path.stem}, trained {when}"


def download_text(name: str, done: int, total: int | None) -> str:
    """One line saying how far the download of `name` is: "downloading deit_small…: 12.5 of
    88.3 MB (14%)" (no total known: the megabytes so far)."""
    mb = f"{done / 1e6:.1f}"
    if not total:
        return f"downloading {name}: {mb} MB so far"
    return f"downloading {name}: {mb} of {total / 1e6:.1f} MB ({100 * min(done, total) // total}%)"


# The position-similarity picture of a g x g grid holds g² enlarged tiles of g² slots each:
# about this many bytes per (slot, slot) pair at its peak (measured: an 80 x 80 grid took 3.7 GB).
SIMILARITY_BYTES_PER_PAIR = 90


@dataclass(frozen=True)
class ServingLimits:
    """What a model may make one request compute, checked when it is loaded, before any view
    uses it (docs/security.md). Every config and preprocessing field that scales work is
    bounded, then the memory of a crop-mode request (REQUEST_FACTOR x its attention maps) and
    of the position-similarity picture (grows as grid⁴) against `request_bytes`, and the bytes
    of the page's first screen against explorer.page_budget.REPLY_BYTES. The defaults admit
    every pretrained model of the picker."""

    max_side: int = 1024  # resize_size, crop_size, image_size (px)
    max_grid_side: int = 48  # patch-grid rows or columns (DINOv2's position embeddings: 37)
    max_depth: int = 64
    max_heads: int = 64
    max_prefix_tokens: int = 16  # CLS, distillation and registers (DINOv3: 5); each is a row of every layer sent
    max_dim: int = 4096
    min_head_width: int = 8  # channels of one head (dim / heads): every trained ViT here has 16 to 64
    request_bytes: int = 1024 * 2**20

    def check(self, loaded: LoadedModel) -> None:
        """Raise ModelUnavailable naming the first field or estimate over its bound."""
        c, p = loaded.model.config, loaded.preprocessing
        crop_grid = loaded.model.patch_grid(p.crop_size, p.crop_size)
        fields = [
            ("preprocessing resize_size", p.resize_size, self.max_side),
            ("preprocessing crop_size", p.crop_size, self.max_side),
            ("image_size", c.image_size, self.max_side),
            ("patch grid side", max(*c.grid, *crop_grid), self.max_grid_side),
            ("depth", c.depth, self.max_depth),
            ("heads", c.heads, self.max_heads),
            ("prefix tokens (CLS, distillation, registers)", len(c.prefix_names), self.max_prefix_tokens),
            ("dim", c.dim, self.max_dim),
        ]
        for name, value, bound in fields:
            if value > bound:
                raise ModelUnavailable(f"{loaded.label}: {name} {value:,} is more than this server's {bound:,}")
        side = p.crop_size
        costs = [
            ("one analysis", REQUEST_FACTOR * attention_bytes(loaded.model, (side, side))),
            ("the position-similarity picture", SIMILARITY_BYTES_PER_PAIR * (c.grid[0] * c.grid[1]) ** 2),
        ]
        for what, cost in costs:
            if cost > self.request_bytes:
                raise ModelUnavailable(
                    f"{loaded.label}: {what} would need about {cost / 2**20:,.0f} MiB, more than this server's "
                    f"{self.request_bytes / 2**20:,.0f} MiB per request"
                )
        queries = token_queries(c.prefix_names)
        page = PageShape(crop_grid, c.heads, c.depth, len(c.prefix_names), queries, (side, side))
        if why := page.refusal():
            raise ModelUnavailable(f"{loaded.label}: {why}")
        # The weights' shapes do not say how dim splits into heads: a header claiming 64 heads for
        # a 384-wide model loads, and draws maps of heads that were never trained (issue 28).
        if c.dim // c.heads < self.min_head_width:
            raise ModelUnavailable(
                f"{loaded.label}: {c.heads} heads of {c.dim // c.heads} channels each (dim {c.dim}) are narrower "
                f"than any trained ViT's ({self.min_head_width} channels at least): the header's heads do not match "
                "its weights"
            )


@dataclass
class _Load:
    """One load in flight, shared by everyone who asked for its key meanwhile."""

    finished: threading.Event = field(default_factory=threading.Event)
    done: int = 0
    total: int | None = None
    result: LoadedModel | None = None
    error: ModelUnavailable | None = None

    def report(self, done: int, total: int | None, progress: Progress | None) -> None:
        self.done, self.total = done, total
        if progress is not None:
            progress(done, total)

    def wait(self, progress: Progress | None) -> LoadedModel:
        """Block until the load is over, passing its progress on; its model or its error."""
        while not self.finished.wait(WATCH_S):
            if progress is not None and self.done:
                progress(self.done, self.total)
        if self.error is not None:
            raise ModelUnavailable(str(self.error)) from self.error
        assert self.result is not None
        return self.result


@dataclass(frozen=True)
class ModelRef:
    """A model named across a fork (explorer/compute.py): its catalogue, by id (a forked GPU
    worker holds the same object at the same address), its key, and for a checkpoint the
    catalogue's entry, which a worker forked before the checkpoint was registered lacks."""

    catalog: int
    key: str
    checkpoint: tuple[Path, str, str] | None = None  # (file, visitor, label)


_CATALOGS: weakref.WeakValueDictionary[int, ModelCatalog] = weakref.WeakValueDictionary()


def ref_of(loaded: LoadedModel) -> ModelRef:
    """`loaded` as a ModelRef that a forked worker resolves with `from_ref`."""
    if loaded.catalog_id is None or loaded.catalog_id not in _CATALOGS:
        raise ValueError(f"{loaded.label} was not loaded by a ModelCatalog, so no other process can name it")
    return _CATALOGS[loaded.catalog_id].ref(loaded.key)


def from_ref(ref: ModelRef) -> LoadedModel:
    """The loaded model `ref` names, in this process (a forked worker: usually already loaded)."""
    catalog = _CATALOGS[ref.catalog]
    if ref.checkpoint is not None:
        with catalog._lock:
            catalog._checkpoints.setdefault(ref.key.partition(":")[2], ref.checkpoint)
    return catalog.get(ref.key)


class ModelCatalog:
    """Resolve model keys to loaded models: the pinned ones (bundled, the default model `default`,
    a key such as "pretrained:deit_small_patch16_224.fb_in1k") stay, and an LRU of `capacity` others.

    With `scan_runs` (a local, single-user server) every checkpoint under `runs_dir` is
    offered to everyone; a public server offers each visitor only what they registered."""

    def __init__(
        self,
        bundled_path: str | os.PathLike = BUNDLED_PATH,
        runs_dir: str | os.PathLike = "runs",
        capacity: int = 3,
        scan_runs: bool = True,
        limits: vit.checkpoint.LoadLimits = vit.checkpoint.DEFAULT_LIMITS,
        serving: ServingLimits | None = None,
        default: str = BUNDLED,
    ):
        self.bundled_path = Path(bundled_path)
        self.runs_dir = Path(runs_dir).resolve()
        self.capacity = capacity
        self.scan_runs = scan_runs
        self.limits = limits
        self.serving = serving or ServingLimits()
        self._checkpoints: dict[str, tuple[Path, str, str]] = {}  # token -> (file, visitor, label)
        self._loaded: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[str, _Load] = {}
        self.default_key = default
        self.pinned = {BUNDLED, default}  # kept loaded beyond `capacity` (ui pins the lessons' defaults too)
        self.note = ""  # why the start model is not the default one, if it is not
        # whether weights can be downloaded: False once known not to (HF_HUB_OFFLINE, a failed
        # probe or download), True after a probe that answered, None while nobody has asked
        self.online: bool | None = False if vit.offline_by_setting() else None
        _CATALOGS[id(self)] = self

    def choices(self, visitor: str = EVERYONE) -> list[tuple[str, str]]:
        """(label, key) pairs for `visitor`'s model picker: first what opens here and now (bundled,
        pretrained weights on this machine, their checkpoints), then the weights to download,
        marked as such (and as impossible to get while this machine is offline)."""
        here, away = self.pretrained_choices()
        out = [(self._bundled_label(), BUNDLED)] + [(label, pretrained_key(name)) for label, name in here]
        out += [(f"checkpoint: {label}", key) for key, label in self.checkpoints(visitor)]
        return out + [(label, pretrained_key(name)) for label, name in away]

    def here(self, visitor: str = EVERYONE) -> list[str]:
        """The keys of `visitor`'s picker's models that open now, without a download (the bundled
        model, pretrained weights on this machine, their checkpoints), in the picker's order: what
        the lessons call "on this machine"."""
        return [key for _, key in self.choices(visitor) if self.available(key)]

    def pretrained_choices(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(label, name) of the listed pretrained weights: those on this machine, and those to
        download, each marked as such (or as impossible to get while this machine is offline)."""
        names = vit.list_pretrained()
        here = [name for name in names if self._on_this_machine(name)]
        away = [(self._download_label(name), name) for name in names if name not in here]
        return [(f"{name} (pretrained)", name) for name in here], away

    def check_downloads(self) -> bool:
        """Probe once whether weights can be downloaded (vit.can_download), so the pickers mark
        what cannot be had before anyone picks it; the answer is kept in `online`."""
        self.online = vit.can_download()
        return self.online

    def checkpoints(self, visitor: str = EVERYONE) -> list[tuple[str, str]]:
        """(key, label) of the checkpoints `visitor` may open, oldest first."""
        if self.scan_runs and self.runs_dir.is_dir():
            # a run's model files, not its training state (vit.checkpoint.TRAINING_STATE): one entry per run
            for path in sorted(self.runs_dir.rglob("*.safetensors")):
                if path.name != vit.checkpoint.TRAINING_STATE:
                    self._token_for(path.resolve(), EVERYONE, scanned_label(path, self.runs_dir), scanned=True)
        with self._lock:
            if self.scan_runs:  # a scanned file renamed or deleted since (a run renames its model when it ends)
                self._checkpoints = {t: entry for t, entry in self._checkpoints.items() if entry[0].is_file()}
            items = list(self._checkpoints.items())
        return [(f"checkpoint:{t}", label) for t, (_, who, label) in items if who in (visitor, EVERYONE)]

    def _token_for(self, path: Path, visitor: str, label: str, scanned: bool = False) -> str:
        """The key of `path` for `visitor`: one entry per file (a registration names a file already
        listed, and a scan offers a registered file to everyone under the name it was given)."""
        with self._lock:
            for token, (known, who, old) in self._checkpoints.items():
                if known == path and (scanned or who in (visitor, EVERYONE)):
                    self._checkpoints[token] = (known, EVERYONE, old) if scanned else (known, who, label)
                    return token
            token = secrets.token_urlsafe(12)
            self._checkpoints[token] = (path, visitor, label)
            return token

    def register(self, path: str | os.PathLike, visitor: str, label: str | None = None) -> str:
        """Validate a checkpoint file (loading it) for `visitor` and return its key. The caller
        has checked where the file is (an upload, or a run of this visitor)."""
        path = Path(path).resolve()
        key = f"checkpoint:{self._token_for(path, visitor, label or path.name)}"
        try:
            self.get(key)
        except ModelUnavailable:
            with self._lock:
                self._checkpoints.pop(key.partition(":")[2], None)
            raise
        return key

    def ref(self, key: str) -> ModelRef:
        """`key` as a ModelRef that a forked worker resolves with `from_ref`."""
        entry = self._checkpoints.get(key.partition(":")[2]) if key.startswith("checkpoint:") else None
        return ModelRef(id(self), key, entry)

    def checkpoint_file(self, key: str) -> Path:
        """The file behind a checkpoint key (for training from it). Raises ModelUnavailable."""
        entry = self._checkpoints.get(key.partition(":")[2]) if key.startswith("checkpoint:") else None
        if entry is None:
            raise ModelUnavailable(UNKNOWN_CHECKPOINT)
        return entry[0]

    def check_use(self, key: object, visitor: str) -> None:
        """The one rule for checkpoint keys, which every endpoint applies (docs/security.md): a
        visitor may use a checkpoint key registered for them or for everyone; another visitor's
        key is refused with the very sentence an unknown key gets, so a leaked key tells nothing.
        Keys of other kinds pass (`get` says whether they are known)."""
        if not isinstance(key, str) or not key.startswith("checkpoint:"):
            return
        with self._lock:
            entry = self._checkpoints.get(key.partition(":")[2])
        if entry is None or entry[1] not in (visitor, EVERYONE):
            raise ModelUnavailable(UNKNOWN_CHECKPOINT)

    def known(self, key: object) -> bool:
        """Whether `key` names a model this catalogue offers (checked before anything is kept for it)."""
        if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
            return False
        kind, _, name = key.partition(":")
        with self._lock:
            return (
                key == BUNDLED
                or (kind == "pretrained" and name in vit.list_pretrained())
                or (kind == "checkpoint" and name in self._checkpoints)
            )

    def get(self, key: str, progress: Progress | None = None, visitor: str | None = None) -> LoadedModel:
        """The loaded model for `key`, loading it on first use; `progress(bytes, total)` while
        its weights download (also when another visitor's request started the download).
        `visitor`: the visitor asking, whose use of a checkpoint key `check_use` decides (None:
        the server itself). Raises ModelUnavailable with one line; the full reason goes to the
        server log."""
        if visitor is not None:
            self.check_use(key, visitor)
        if not self.known(key):
            if isinstance(key, str) and key.startswith("checkpoint:"):
                raise ModelUnavailable(UNKNOWN_CHECKPOINT)
            raise ModelUnavailable(f"unknown model {quoted(key)}: pick one from the list")
        with self._lock:
            if key in self._loaded:
                self._loaded.move_to_end(key)
                return self._loaded[key]
            pending = self._pending.get(key)
            leading = pending is None
            if leading:
                pending = self._pending[key] = _Load()
        if not leading:  # someone else's request is loading it: wait on that one load
            return pending.wait(progress)
        try:
            loaded = self._load(key, lambda done, total: pending.report(done, total, progress))
            if key != BUNDLED:  # the operator's choice is trusted (docs/security.md)
                self.serving.check(loaded)  # before any view uses it
            loaded.catalog_id = id(self)
            pending.result = loaded
            with self._lock:
                self._keep(key, pending.result)
            return pending.result
        except ModelUnavailable as e:
            log.warning("model %s unavailable: %s", key, e, exc_info=e if e.__cause__ else None)  # the full reason
            pending.error = e
            raise
        except Exception as e:  # a bug or a broken file: the visitor gets one line, the log the traceback
            log.exception("model %s could not be loaded", key)
            pending.error = ModelUnavailable(f"{key} could not be loaded (the reason is in the server log)")
            raise pending.error from e
        finally:
            with self._lock:
                del self._pending[key]
            pending.finished.set()

    def _keep(self, key: str, loaded: LoadedModel) -> None:
        """Hold a loaded model, dropping the least recently used past `capacity` (never a pinned one)."""
        self._loaded[key] = loaded
        evictable = [k for k in self._loaded if k not in self.pinned]
        while len(self._loaded) - len(self.pinned & self._loaded.keys()) > self.capacity and evictable:
            del self._loaded[evictable.pop(0)]

    def loaded_bytes(self) -> int:
        """Bytes of the weights held now (parameters and buffers, a CLIP model's text tower
        included): with the number held, what the operator's log says the catalogue holds."""
        with self._lock:
            modules = [loaded.model for loaded in self._loaded.values()]
            modules += [loaded.text.model for loaded in self._loaded.values() if loaded.text is not None]
        tensors = {id(t): t for m in modules for t in (*m.parameters(), *m.buffers())}  # tied weights once
        return sum(t.nbytes for t in tensors.values())

    def loaded_keys(self) -> list[str]:
        """The keys of the models held now, pinned ones included (oldest use first)."""
        with self._lock:
            return list(self._loaded)

    def available(self, key: str) -> bool:
        """Whether `key` loads now without a download: the bundled model, a registered
        checkpoint, a loaded model, or listed pretrained weights already in the local cache."""
        kind, _, name = key.partition(":")
        with self._lock:
            if key == BUNDLED or key in self._loaded or (kind == "checkpoint" and name in self._checkpoints):
                return True
        return kind == "pretrained" and name in vit.list_pretrained() and vit.is_pretrained_cached(name)

    def start(self) -> LoadedModel:
        """The model every visitor starts on: `default_key`, or the bundled one if that cannot be
        had (then `default_key` becomes "bundled" and `note` says what happened)."""
        try:
            return self.get(self.default_key)
        except ModelUnavailable as e:
            log.warning("the default model %s cannot be loaded, starting on the bundled one instead", self.default_key)
            self.note = (
                f"⚠️ The default model `{self.default_key}` is not available here ({e}); here is the bundled one."
            )

            self.default_key = BUNDLED
            return self.get(BUNDLED)

    def _load(self, key: str, progress: Progress) -> LoadedModel:
        kind, _, name = key.partition(":")
        if key == BUNDLED:
            return self._load_bundled()
        if kind == "pretrained" and name in vit.list_pretrained():  # listed names only, never a visitor's repo
            try:
                if vit.pretrained.is_clip(name):  # both towers: the prompts need the text one
                    model, meta, text = vit.pretrained.load_pretrained_clip(name, progress=progress)
                else:
                    (model, meta), text = vit.load_pretrained(name, progress=progress), None
            except vit.NoInternet as e:
                self.online = False
                raise ModelUnavailable(no_internet(name)) from e
            except vit.NotOnHub as e:
                raise ModelUnavailable(not_on_hub(name)) from e
            except vit.PretrainedUnavailable as e:
                raise ModelUnavailable(str(e)) from e
            return LoadedModel(key, name, model.eval(), meta, text=text)
        if kind == "checkpoint":
            path = self.checkpoint_file(key)
            try:
                model, meta = vit.load_checkpoint(path, limits=self.limits)
            except vit.CheckpointError as e:
                raise ModelUnavailable(f"cannot use this checkpoint: {e}") from e
            return LoadedModel(key, f"checkpoint {self._checkpoints[name][2]}", model, meta)
        raise ModelUnavailable(f"unknown model {quoted(key)}: pick one from the list")

    def _on_this_machine(self, name: str) -> bool:
        return pretrained_key(name) in self._loaded or vit.is_pretrained_cached(name)

    def _download_label(self, name: str) -> str:
        if self.online is False:
            return f"{name} (not on this machine, and no internet to download it)"
        return f"{name} (pretrained, downloads once)"

    def _bundled_label(self) -> str:
        if not self.bundled_path.is_file():
            return "CIFAR-10 nano (untrained weights)"
        return "CIFAR-10 tiny (bundled)" if self.bundled_path == BUNDLED_PATH else f"{self.bundled_path.name} (default)"

    def _load_bundled(self) -> LoadedModel:
        if self.bundled_path.is_file():
            try:
                model, meta = vit.load_checkpoint(self.bundled_path)
            except vit.CheckpointError as e:
                raise ModelUnavailable(f"the bundled model is unreadable: {e}") from e
            return LoadedModel(BUNDLED, self._bundled_label(), model, meta)
        with torch.random.fork_rng():  # the same "untrained" model every start, without reseeding anyone else
            torch.manual_seed(0)
            model = vit.create_model("vit_cifar_nano").eval()
        meta = vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10, {"source": "fresh initialisation"})
        return LoadedModel(BUNDLED, "CIFAR-10 nano (untrained weights)", model, meta, untrained=True)
