"""The models the app can explain, by key, loaded on first use and shared by all sessions.

Keys: "bundled" (the CIFAR-10 model shipped in checkpoints/, or fresh "untrained weights" while
it is missing), "pretrained:<name>" (torchvision/timm weights, downloaded once), and
"checkpoint:<token>" for a file the Train tab wrote or a visitor uploaded. A token is a
random name the catalogue gave that file when it was registered for one visitor (an
`owner`); each visitor's picker lists only their own, and a key never holds a path, so an
API client cannot make the server open a file it was not given (docs/security.md).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import vit
from vit.analysis import position_embedding_similarity
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES
from vit.pretrained import PRETRAINED

from .explain import REQUEST_FACTOR, attention_bytes

BUNDLED = "bundled"
EVERYONE = "*"  # owner of checkpoints every visitor may see (local mode: the runs folder)
BUNDLED_PATH = Path(__file__).resolve().parent.parent / "checkpoints" / "vit_cifar10_nano.safetensors"
MAX_KEY_CHARS = 200  # longer than any key the catalogue hands out ("checkpoint:" + 16 characters, pretrained names)
SHOWN_CHARS = 40  # at most this much of a key a visitor sent is echoed back


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` as a short quoted text for a message: a visitor's 1 MB key is not echoed back."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


class ModelUnavailable(RuntimeError):
    """A model key cannot be loaded; the message is meant for the user."""


# The position-similarity picture of a g x g grid holds g² enlarged tiles of g² slots each:
# about this many bytes per (slot, slot) pair at its peak (measured: an 80 x 80 grid took 3.7 GB).
SIMILARITY_BYTES_PER_PAIR = 90


@dataclass(frozen=True)
class ServingLimits:
    """What a model may make one request compute, checked when it is loaded, before any view
    uses it (docs/security.md). Every config and preprocessing field that scales work is
    bounded, then the memory of a crop-mode request (REQUEST_FACTOR x its attention maps) and
    of the position-similarity picture (grows as grid⁴) against `request_bytes`. The defaults
    admit every pretrained model of the picker."""

    max_side: int = 1024  # resize_size, crop_size, image_size (px)
    max_grid_side: int = 48  # patch-grid rows or columns (DINOv2's position embeddings: 37)
    max_depth: int = 64
    max_heads: int = 64
    max_dim: int = 4096
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


@dataclass
class LoadedModel:
    key: str
    label: str
    model: vit.VisionTransformer
    meta: vit.ModelMeta
    untrained: bool = False

    @property
    def preprocessing(self) -> vit.Preprocessing:
        return self.meta.preprocessing or CIFAR10

    def position_similarity(self) -> np.ndarray:
        """(gh, gw, gh, gw) cosine similarities of the position embeddings (numpy)."""
        return position_embedding_similarity(self.model).numpy()

    def describe(self) -> str:
        """Markdown: what this model is and how it preprocesses images."""
        c, p = self.model.config, self.preprocessing
        gh, gw = c.grid
        params = sum(t.numel() for t in self.model.parameters())
        lines = [
            f"**{self.label}** — {params / 1e6:.2f} M parameters, {c.depth} layers x {c.heads} heads, "
            f"{len(self.meta.class_names)} classes",
            f"trained at {c.image_size}x{c.image_size} px, patch {c.patch_size} px -> {gh}x{gw} grid, "
            f"{'CLS token' if c.class_token else 'no CLS token (average pooling)'}",
            f"preprocessing: resize shorter side to {p.resize_size} ({p.interpolation}), centre crop {p.crop_size}, "
            f"mean {tuple(round(m, 3) for m in p.mean)}, std {tuple(round(s, 3) for s in p.std)}",
        ]
        if self.untrained:
            lines.insert(0, "⚠️ **untrained weights** — the bundled model file is missing, so these maps are noise.")
        return "\n\n".join(lines)


class ModelCatalog:
    """Resolve model keys to loaded models (an LRU of `capacity` models; the bundled one stays).

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
    ):
        self.bundled_path = Path(bundled_path)
        self.runs_dir = Path(runs_dir).resolve()
        self.capacity = capacity
        self.scan_runs = scan_runs
        self.limits = limits
        self.serving = serving or ServingLimits()
        self._checkpoints: dict[str, tuple[Path, str, str]] = {}  # token -> (file, owner, label)
        self._loaded: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}

    def choices(self, owner: str = EVERYONE) -> list[tuple[str, str]]:
        """(label, key) pairs for `owner`'s model picker: bundled, pretrained, their checkpoints."""
        out = [(self._bundled_label(), BUNDLED)]
        out += [(f"{name} (pretrained, downloads once)", f"pretrained:{name}") for name in vit.list_pretrained()]
        return out + [(f"checkpoint: {label}", key) for key, label in self.checkpoints(owner)]

    def checkpoints(self, owner: str = EVERYONE) -> list[tuple[str, str]]:
        """(key, label) of the checkpoints `owner` may open, oldest first."""
        if self.scan_runs and self.runs_dir.is_dir():
            for path in sorted(self.runs_dir.rglob("*.safetensors")):
                self._token_for(path.resolve(), EVERYONE, str(path.relative_to(self.runs_dir)))
        with self._lock:
            items = list(self._checkpoints.items())
        return [(f"checkpoint:{t}", label) for t, (_, who, label) in items if who in (owner, EVERYONE)]

    def _token_for(self, path: Path, owner: str, label: str) -> str:
        with self._lock:
            for token, (known, who, _) in self._checkpoints.items():
                if known == path and who == owner:
                    return token
            token = secrets.token_urlsafe(12)
            self._checkpoints[token] = (path, owner, label)
            return token

    def register(self, path: str | os.PathLike, owner: str, label: str | None = None) -> str:
        """Validate a checkpoint file (loading it) for `owner` and return its key. The caller
        has checked where the file is (an upload, or a run of this visitor)."""
        path = Path(path).resolve()
        key = f"checkpoint:{self._token_for(path, owner, label or path.name)}"
        try:
            self.get(key)
        except ModelUnavailable:
            with self._lock:
                self._checkpoints.pop(key.partition(":")[2], None)
            raise
        return key

    def checkpoint_file(self, key: str) -> Path:
        """The file behind a checkpoint key (for training from it). Raises ModelUnavailable."""
        entry = self._checkpoints.get(key.partition(":")[2]) if key.startswith("checkpoint:") else None
        if entry is None:
            raise ModelUnavailable("unknown checkpoint: pick one from the list or upload it")
        return entry[0]

    def known(self, key: object) -> bool:
        """Whether `key` names a model this catalogue offers (checked before anything is kept for it)."""
        if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
            return False
        kind, _, name = key.partition(":")
        with self._lock:
            return (
                key == BUNDLED
                or (kind == "pretrained" and name in PRETRAINED)
                or (kind == "checkpoint" and name in self._checkpoints)
            )

    def get(self, key: str) -> LoadedModel:
        """The loaded model for `key`, loading it on first use. Raises ModelUnavailable.
        An unknown key is refused before any lock or entry is made for it: a visitor sending
        many distinct keys leaves the catalogue as it was (docs/security.md)."""
        if not self.known(key):
            if isinstance(key, str) and key.startswith("checkpoint:"):
                raise ModelUnavailable("unknown checkpoint: pick one from the list or upload it")
            raise ModelUnavailable(f"unknown model {shown(key)}: pick one from the list")
        with self._lock:
            if key in self._loaded:
                self._loaded.move_to_end(key)
                return self._loaded[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:  # two sessions asking for ViT-L load it once; other models stay available meanwhile
            with self._lock:
                if key in self._loaded:
                    return self._loaded[key]
            try:
                loaded = self._load(key)
                if key != BUNDLED:  # the operator's choice is trusted (docs/security.md)
                    self.serving.check(loaded)  # before any view uses it
            except BaseException:
                with self._lock:
                    self._loading.pop(key, None)
                raise
            with self._lock:
                self._loading.pop(key, None)  # whoever waits on it finds the model loaded
                self._loaded[key] = loaded
                evictable = [k for k in self._loaded if k != BUNDLED]
                while len(self._loaded) > self.capacity and evictable:
                    del self._loaded[evictable.pop(0)]
            return loaded

    def _load(self, key: str) -> LoadedModel:
        kind, _, name = key.partition(":")
        if key == BUNDLED:
            return self._load_bundled()
        if kind == "pretrained" and name in PRETRAINED:
            try:
                model, meta = vit.load_pretrained(name)
            except vit.PretrainedUnavailable as e:
                raise ModelUnavailable(str(e)) from e
            return LoadedModel(key, name, model.eval(), meta)
        if kind == "checkpoint":
            path = self.checkpoint_file(key)
            try:
                model, meta = vit.load_checkpoint(path, limits=self.limits)
            except vit.CheckpointError as e:
                raise ModelUnavailable(f"cannot use this checkpoint: {e}") from e
            return LoadedModel(key, f"checkpoint {self._checkpoints[name][2]}", model, meta)
        raise ModelUnavailable(f"unknown model {shown(key)}: pick one from the list")

    def _bundled_label(self) -> str:
        if not self.bundled_path.is_file():
            return "CIFAR-10 nano (untrained weights)"
        return "CIFAR-10 nano (bundled)" if self.bundled_path == BUNDLED_PATH else f"{self.bundled_path.name} (default)"

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
