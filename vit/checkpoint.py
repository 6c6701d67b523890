"""The project's checkpoint format: one safetensors file holding the tensors, with the model
config, class names, preprocessing and free-form info as JSON in its header.

Loading never executes code from a file: safetensors holds only tensors, and foreign
`.pth`/`.pt` files go through `torch.load(weights_only=True)`. Writes are atomic and private
(0600). Loading checks before it builds: the header's config must fit `LoadLimits` and every
tensor's shape must match the model it describes before any weight is read or any model
allocated; then the tensors' SHA-256 (recorded at save time) and their finiteness are checked.
A file in this format is read only by `load_checkpoint`: `load_state_dict_file` (foreign
weights, no hash) refuses it, so no caller can skip the hash by trying another format.
The threat model behind these rules is in docs/security.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor, nn

from .config import config_from_dict, require
from .model import VisionTransformer, ViTConfig
from .preprocessing import Preprocessing

FORMAT = "vit-explorer/1"
FORMAT_MARK = "vit-explorer/"  # in the header of every version of the format
HEADER_KEY = "vit_explorer"  # key of our JSON in the safetensors header's string metadata
EXTRA_PREFIX = "extra/"  # tensors that are not model weights (e.g. optimizer state)
DIGEST_KEY = "tensor_sha256"  # header field: SHA-256 of all tensors (names, dtypes, shapes, bytes)
# A training run's full state (model, optimizer, schedule), rewritten after every epoch beside the
# run's model file: for resuming, not a model to offer in the app's pickers.
TRAINING_STATE = "last.safetensors"


class CheckpointError(ValueError):
    """A file is not a usable checkpoint; the message says why."""


@dataclass(frozen=True)
class LoadLimits:
    """What one file may make the loader allocate. The defaults admit every named model up to
    ViT-L/16 (304 M parameters) and refuse ViT-H; servers pass tighter ones (docs/security.md)."""

    max_parameters: int = 320_000_000
    max_file_bytes: int = 2 * 1024**3

    def check_file(self, path: Path) -> None:
        size = path.stat().st_size
        if size > self.max_file_bytes:
            raise CheckpointError(
                f"{path.name} is {size / 2**20:.0f} MiB; files above {self.max_file_bytes / 2**20:.0f} MiB are refused"
            )

    def check_parameters(self, count: int, what: str) -> None:
        if count > self.max_parameters:
            raise CheckpointError(
                f"{what} would have {count:,} parameters; this loader accepts at most {self.max_parameters:,}"
            )


DEFAULT_LIMITS = LoadLimits()


def parameter_shapes(config: ViTConfig, limits: LoadLimits = DEFAULT_LIMITS) -> dict[str, tuple[int, ...]]:
    """The state-dict shapes of `VisionTransformer(config)`, without allocating it: the model
    is built on the meta device, and only after its parameter count (one block counted, times
    depth) passes `limits`, so a hostile config cannot even make the meta model huge."""
    with torch.device("meta"):
        shallow = VisionTransformer(replace(config, depth=1, drop_path=0.0)).state_dict()
        per_block = sum(t.numel() for k, t in shallow.items() if k.startswith("blocks.0."))
        rest = sum(t.numel() for k, t in shallow.items() if not k.startswith("blocks."))
        limits.check_parameters(rest + config.depth * per_block, "this model config")
        return {k: tuple(t.shape) for k, t in VisionTransformer(config).state_dict().items()}


def tensor_digest(tensors: dict[str, Tensor]) -> str:
    """SHA-256 over every tensor's name, dtype, shape and bytes, in name order: flipped bytes,
    a swapped tensor or a renamed key all change it."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def check_finite(tensors: dict[str, Tensor], source: str) -> None:
    """Refuse NaN or infinite weights: they would be served as predictions."""
    bad = [k for k, t in tensors.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
    if bad:
        raise CheckpointError(
            f"{source}: tensors hold NaN or infinite values: {bad[:5]}{' ...' if len(bad) > 5 else ''}"
        )


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
    header = {**header, DIGEST_KEY: tensor_digest(tensors)}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={HEADER_KEY: json.dumps(header)})
        os.chmod(tmp, 0o600)  # private to the server's user, whatever the umask
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def is_checkpoint(path: str | os.PathLike) -> bool:
    """Whether `path` is in this project's format, intact or not: a safetensors file whose
    header metadata has our key, or a value naming our format or our hash field. Two marks in
    different places, so one damaged byte cannot make a checkpoint pass for foreign weights
    (which carry no hash to check). A file whose safetensors header cannot be parsed at all is
    not recognised here, and every reader refuses it anyway."""
    try:
        with safe_open(path, framework="pt") as f:
            metadata = f.metadata() or {}
    except (SafetensorError, OSError, ValueError):
        return False
    return HEADER_KEY in metadata or any(FORMAT_MARK in v or DIGEST_KEY in v for v in metadata.values())


def read_header(path: str | os.PathLike, limits: LoadLimits = DEFAULT_LIMITS) -> tuple[dict, dict[str, tuple]]:
    """(our JSON header, {tensor name: shape}) of a file written by `write_tensors`, reading
    no tensor data. Raises CheckpointError."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path.name}: no such file")
    limits.check_file(path)
    try:
        with safe_open(path, framework="pt") as f:
            header_text = (f.metadata() or {}).get(HEADER_KEY)
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path.name} is not a readable safetensors file (truncated or another format?)") from e
    if header_text is None:
        raise CheckpointError(
            f"{path.name} is a safetensors file but not a ViT explorer checkpoint (no {HEADER_KEY!r} header)"
        )
    try:
        header = json.loads(header_text)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path.name}: the checkpoint header is not valid JSON: {e}") from e
    if not isinstance(header, dict):
        raise CheckpointError(f"{path.name}: the checkpoint header is not a JSON object")
    return header, shapes


def read_tensors(path: str | os.PathLike, limits: LoadLimits = DEFAULT_LIMITS) -> tuple[dict[str, Tensor], dict]:
    """Read a file written by `write_tensors`: (tensors, header), the tensors checked against
    the SHA-256 recorded at save time. Raises CheckpointError."""
    header, _ = read_header(path, limits)
    return verified_tensors(path, header), header


def verified_tensors(path: str | os.PathLike, header: dict) -> dict[str, Tensor]:
    """Every tensor of a file whose `header` was read by `read_header`, checked against the
    SHA-256 recorded at save time. Raises CheckpointError."""
    path = Path(path)
    try:
        with safe_open(path, framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path.name} is not a readable safetensors file (truncated or another format?)") from e
    recorded = header.get(DIGEST_KEY)
    if recorded is None:
        raise CheckpointError(
            f"{path.name} records no tensor hash ({DIGEST_KEY}): written by an older version or edited by hand; "
            "re-save it with vit.save_checkpoint"
        )
    if tensor_digest(tensors) != recorded:
        raise CheckpointError(f"{path.name} is corrupt: its tensors do not match the hash recorded when it was saved")
    return tensors


def check_shapes(expected: dict[str, tuple], found: dict[str, tuple], source: str) -> None:
    """Fail loudly on any missing, unexpected or mis-shaped key (silently partial loads are
    how wrong attention maps get published)."""
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    wrong = [f"{k}: file {found[k]} vs model {v}" for k, v in expected.items() if k in found and found[k] != v]
    problems = []
    if missing:
        problems.append(f"missing keys {missing}")
    if unexpected:
        problems.append(f"unexpected keys {unexpected}")
    if wrong:
        problems.append(f"wrong shapes [{'; '.join(wrong)}]")
    if problems:
        raise CheckpointError(f"{source}: weights do not fit the model: " + "; ".join(problems))


def assign_weights(model: nn.Module, state_dict: dict[str, Tensor], source: str) -> nn.Module:
    """Copy `state_dict` into `model` after `check_shapes`."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    check_shapes(expected, {k: tuple(v.shape) for k, v in state_dict.items()}, source)
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


def load_checkpoint(
    path: str | os.PathLike, device: str | torch.device = "cpu", limits: LoadLimits = DEFAULT_LIMITS
) -> tuple[VisionTransformer, ModelMeta]:
    """Load a checkpoint written by `save_checkpoint`: (model in eval mode, meta). The header
    and every tensor shape are checked against `limits` and the config before any weight is
    read or the model allocated."""
    name = Path(path).name
    raw, shapes = read_header(path, limits)
    try:
        fields_ = {k: v for k, v in raw.items() if k != DIGEST_KEY}  # the hash is checked below, with the tensors
        header = config_from_dict(CheckpointHeader, fields_, "checkpoint header")
    except ValueError as e:
        raise CheckpointError(f"{name}: bad checkpoint header: {e}") from e
    expected = parameter_shapes(header.config, limits)
    check_shapes(expected, {k: v for k, v in shapes.items() if not k.startswith(EXTRA_PREFIX)}, name)
    tensors = verified_tensors(path, raw)
    weights = {k: v for k, v in tensors.items() if not k.startswith(EXTRA_PREFIX)}
    check_finite(weights, name)
    extra = {k[len(EXTRA_PREFIX) :]: v for k, v in tensors.items() if k.startswith(EXTRA_PREFIX)}
    model = assign_weights(VisionTransformer(header.config), weights, name)
    meta = ModelMeta(header.class_names, header.preprocessing, header.info, extra)
    return model.to(device).eval(), meta


def load_state_dict_file(path: str | os.PathLike, limits: LoadLimits = DEFAULT_LIMITS) -> dict[str, Tensor]:
    """Read a foreign weights file safely: `.safetensors` directly (its shapes checked against
    `limits` before any data is read), anything else with `torch.load(weights_only=True)`,
    which refuses pickles that would build arbitrary Python objects (and so never runs code
    hidden in them). NaN or infinite weights are refused."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path.name}: no such file")
    limits.check_file(path)
    if is_checkpoint(path):  # read as foreign weights, it would skip its hash and drop its preprocessing
        raise CheckpointError(
            f"{path.name} is a ViT explorer checkpoint, not foreign weights: load it with vit.load_checkpoint, "
            "which checks it"
        )
    obj = _read_safetensors(path, limits) if path.suffix == ".safetensors" else _torch_load(path)
    for wrapper in ("state_dict", "model"):  # common training-script wrappers
        if isinstance(obj, dict) and isinstance(obj.get(wrapper), dict):
            obj = obj[wrapper]
    if not isinstance(obj, dict) or not obj or not all(isinstance(v, Tensor) for v in obj.values()):
        raise CheckpointError(f"{path.name} does not hold a state dict of tensors")
    limits.check_parameters(sum(t.numel() for t in obj.values()), path.name)
    check_finite(obj, path.name)
    return obj


def _read_safetensors(path: Path, limits: LoadLimits) -> dict[str, Tensor]:
    try:
        with safe_open(path, framework="pt") as f:
            count = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
            limits.check_parameters(count, path.name)
            return {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        if isinstance(e, CheckpointError):
            raise
        raise CheckpointError(f"{path.name} is not a readable safetensors file") from e


def _torch_load(path: Path) -> object:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(
            f"refused to load {path.name}: torch.load(weights_only=True) rejected it. Either it is not a weights "
            f"file, or it holds Python objects besides tensors, and unpickling those could run code. "
            f"Re-save just the state_dict, or convert it to safetensors. ({first_line})"
        ) from e
    except (RuntimeError, EOFError, OSError, ValueError, IndexError, KeyError) as e:
        raise CheckpointError(f"{path.name} is not a readable PyTorch weights file (truncated?)") from e
