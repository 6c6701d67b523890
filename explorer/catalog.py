"""The models the app can explain, by key, loaded on first use and shared by all sessions.

Keys: "bundled" (the CIFAR-10 model shipped in checkpoints/, or fresh "untrained weights" while
it is missing), "pretrained:<name>" (torchvision/timm weights, downloaded once), and
"checkpoint:<path>" for files the Train tab wrote under the runs folder or that a user
uploaded. Only those paths are ever opened: a key from an API client cannot make the
server read an arbitrary file.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import vit
from vit.analysis import position_embedding_similarity
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES
from vit.weights import PRETRAINED

BUNDLED = "bundled"
BUNDLED_PATH = Path(__file__).resolve().parent.parent / "checkpoints" / "vit_cifar10_nano.safetensors"


class ModelUnavailable(RuntimeError):
    """A model key cannot be loaded; the message is meant for the user."""


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
    """Resolve model keys to loaded models (an LRU of `capacity` models; the bundled one stays)."""

    def __init__(
        self, bundled_path: str | os.PathLike = BUNDLED_PATH, runs_dir: str | os.PathLike = "runs", capacity: int = 3
    ):
        self.bundled_path = Path(bundled_path)
        self.runs_dir = Path(runs_dir).resolve()
        self.capacity = capacity
        self._uploads: set[Path] = set()
        self._loaded: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}

    def choices(self) -> list[tuple[str, str]]:
        """(label, key) pairs for the model picker."""
        out = [(self._bundled_label(), BUNDLED)]
        out += [(f"{name} (pretrained, downloads once)", f"pretrained:{name}") for name in vit.list_pretrained()]
        out += [(f"checkpoint: {self._short(p)}", f"checkpoint:{p}") for p in self.checkpoint_paths()]
        return out

    def _short(self, path: Path) -> str:
        return str(path.relative_to(self.runs_dir)) if path.is_relative_to(self.runs_dir) else path.name

    def checkpoint_paths(self) -> list[Path]:
        """Checkpoints under the runs folder, then this server's uploads."""
        found = sorted(self.runs_dir.rglob("*.safetensors")) if self.runs_dir.is_dir() else []
        return found + sorted(self._uploads - set(found))

    def register_upload(self, path: str | os.PathLike) -> str:
        """Validate an uploaded checkpoint (loading it) and return its key."""
        path = Path(path).resolve()
        self._uploads.add(path)
        key = f"checkpoint:{path}"
        try:
            self.get(key)
        except ModelUnavailable:
            self._uploads.discard(path)
            raise
        return key

    def get(self, key: str) -> LoadedModel:
        """The loaded model for `key`, loading it on first use. Raises ModelUnavailable."""
        with self._lock:
            if key in self._loaded:
                self._loaded.move_to_end(key)
                return self._loaded[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:  # two sessions asking for ViT-L load it once; other models stay available meanwhile
            with self._lock:
                if key in self._loaded:
                    return self._loaded[key]
            loaded = self._load(key)
            with self._lock:
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
            path = Path(name).resolve()
            if not (path.is_relative_to(self.runs_dir) or path in self._uploads):
                raise ModelUnavailable(f"unknown checkpoint {name!r}: pick one from the list or upload it")
            try:
                model, meta = vit.load_checkpoint(path)
            except vit.CheckpointError as e:
                raise ModelUnavailable(f"cannot use this checkpoint: {e}") from e
            return LoadedModel(key, f"checkpoint {self._short(path)}", model, meta)
        raise ModelUnavailable(f"unknown model {key!r}")

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
