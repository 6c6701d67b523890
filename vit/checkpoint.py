"""The project's checkpoint format: one safetensors file holding the tensors, with the model
config, class names, preprocessing and free-form info as JSON in its header.

Loading never executes code from a file: safetensors holds only tensors, and foreign
`.pth`/`.pt` files go through `torch.load(weights_only=True)`. Writes are atomic.
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor, nn

from .config import config_from_dict, require
from .model import VisionTransformer, ViTConfig
from .preprocessing import Preprocessing

FORMAT = "vit-explorer/1"
HEADER_KEY = "vit_explorer"  # key of our JSON in the safetensors header's string metadata
EXTRA_PREFIX = "extra/"  # tensors that are not model weights (e.g. optimizer state)


class CheckpointError(ValueError):
    """A file is not a usable checkpoint; the message says why."""


@dataclass
class ModelMeta:
    """What travels with a model besides its weights."""

    class_names: list[str]  # one per class; empty for models without a classifier (num_classes=0)
    preprocessing: Preprocessing | None = None
    info: dict = field(default_factory=dict)  # free-form: training command, accuracy, source...
    extra: dict[str, Tensor] = field(default_factory=dict)  # non-model tensors, e.g. optimizer state


def write_tensors(path: str | os.PathLike, tensors: dict[str, Tensor], header: dict) -> None:
    """Atomically write `tensors` and a JSON `header` to a safetensors file: write a temp
    file in the same folder, fsync it, then rename over `path`, so a crash never leaves
    a half-written file under the final name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={HEADER_KEY: json.dumps(header)})
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_tensors(path: str | os.PathLike) -> tuple[dict[str, Tensor], dict]:
    """Read a file written by `write_tensors`: (tensors, header). Raises CheckpointError."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    try:
        with safe_open(path, framework="pt") as f:
            header_text = (f.metadata() or {}).get(HEADER_KEY)
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path} is not a readable safetensors file (truncated or another format?): {e}") from e
    if header_text is None:
        raise CheckpointError(
            f"{path} is a safetensors file but not a ViT explorer checkpoint (no {HEADER_KEY!r} header)"
        )
    try:
        header = json.loads(header_text)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: the checkpoint header is not valid JSON: {e}") from e
    return tensors, header


def assign_weights(model: nn.Module, state_dict: dict[str, Tensor], source: str) -> nn.Module:
    """Copy `state_dict` into `model`, failing loudly on any missing, unexpected or
    mis-shaped key (silently partial loads are how wrong attention maps get published)."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(expected))
    wrong = [
        f"{k}: file {tuple(state_dict[k].shape)} vs model {tuple(v.shape)}"
        for k, v in expected.items()
        if k in state_dict and state_dict[k].shape != v.shape
    ]
    problems = []
    if missing:
        problems.append(f"missing keys {missing}")
    if unexpected:
        problems.append(f"unexpected keys {unexpected}")
    if wrong:
        problems.append(f"wrong shapes [{'; '.join(wrong)}]")
    if problems:
        raise CheckpointError(f"{source}: weights do not fit the model: " + "; ".join(problems))
    model.load_state_dict(state_dict, strict=True)
    return model


@dataclass(frozen=True)
class CheckpointHeader:
    """The JSON in a checkpoint's header, read with `config_from_dict`'s rule."""

    format: str
    config: ViTConfig
    class_names: list[str]  # one per class, in the head's output order
    preprocessing: Preprocessing | None = None
    info: dict = field(default_factory=dict)  # free-form, JSON-serialisable

    def __post_init__(self) -> None:
        what = "checkpoint header"
        require(self.format == FORMAT, what, "format", self.format, f"expected {FORMAT!r}")
        n = self.config.num_classes
        names = self.class_names
        fits = len(names) == n and all(isinstance(c, str) for c in names)
        require(fits, what, "class_names", names, f"expected a list of {n} strings, one per class")


def save_checkpoint(
    model: VisionTransformer,
    path: str | os.PathLike,
    *,
    class_names: list[str] | None = None,
    preprocessing: Preprocessing | None = None,
    extra: dict[str, Tensor] | None = None,
    **info,
) -> None:
    """Save model weights + config + class names + preprocessing + free-form `info`
    (anything JSON-serialisable) atomically. `extra` tensors ride along under 'extra/'."""
    names = list(class_names) if class_names is not None else [str(i) for i in range(model.config.num_classes)]
    header = CheckpointHeader(FORMAT, model.config, names, preprocessing, info)
    tensors = dict(model.state_dict())
    tensors.update({EXTRA_PREFIX + k: v for k, v in (extra or {}).items()})
    write_tensors(path, tensors, asdict(header))


def load_checkpoint(path: str | os.PathLike, device: str | torch.device = "cpu") -> tuple[VisionTransformer, ModelMeta]:
    """Load a checkpoint written by `save_checkpoint`: (model in eval mode, meta)."""
    tensors, raw = read_tensors(path)
    try:
        header = config_from_dict(CheckpointHeader, raw, "checkpoint header")
    except ValueError as e:
        raise CheckpointError(f"{path}: bad checkpoint header: {e}") from e
    weights = {k: v for k, v in tensors.items() if not k.startswith(EXTRA_PREFIX)}
    extra = {k[len(EXTRA_PREFIX) :]: v for k, v in tensors.items() if k.startswith(EXTRA_PREFIX)}
    model = assign_weights(VisionTransformer(header.config), weights, str(path))
    meta = ModelMeta(header.class_names, header.preprocessing, header.info, extra)
    return model.to(device).eval(), meta


def load_state_dict_file(path: str | os.PathLike) -> dict[str, Tensor]:
    """Read a foreign weights file safely: `.safetensors` directly, anything else with
    `torch.load(weights_only=True)`, which refuses pickles that would build arbitrary
    Python objects (and so never runs code hidden in them)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    if path.suffix == ".safetensors":
        try:
            with safe_open(path, framework="pt") as f:
                return {k: f.get_tensor(k) for k in f.keys()}
        except (SafetensorError, OSError, ValueError) as e:
            raise CheckpointError(f"{path} is not a readable safetensors file: {e}") from e
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(
            f"refused to load {path}: torch.load(weights_only=True) rejected it. Either it is not a weights "
            f"file, or it holds Python objects besides tensors, and unpickling those could run code. "
            f"Re-save just the state_dict, or convert it to safetensors. ({first_line})"
        ) from e
    except (RuntimeError, EOFError, OSError, ValueError) as e:
        raise CheckpointError(f"{path} is not a readable PyTorch weights file (truncated?): {e}") from e
    for wrapper in ("state_dict", "model"):  # common training-script wrappers
        if isinstance(obj, dict) and isinstance(obj.get(wrapper), dict):
            obj = obj[wrapper]
    if not isinstance(obj, dict) or not all(isinstance(v, Tensor) for v in obj.values()):
        raise CheckpointError(f"{path} does not hold a state dict of tensors")
    return obj
