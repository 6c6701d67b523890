"""What a training run will allocate and write, computed from its model's config before anything
is loaded: the Train tab fits a run into the server's budgets with it (docs/security.md,
"Training"). Pure arithmetic on a `ViTConfig`; no tensors are made.

Memory, in float32 (4 bytes a number; CPU training never autocasts, CUDA's bf16 only shrinks it):

- **state**: `STATE_COPIES` copies of the P parameters: the weights, their gradients, AdamW's two
  moments (Loshchilov & Hutter 2019, Algorithm 2), the loaded source the model is adapted from
  (alive while the run starts) and the temporaries of the fused/foreach update;
- **activations**, per training image, what autograd keeps for the backward pass in each of the
  `depth` blocks, with T tokens, width D, MLP width M and H heads (eq. 2 and 3 of Dosovitskiy
  et al. 2021): both LayerNorms' inputs and outputs, q, k and v, the heads' output, the residual
  stream and the dropout/drop-path masks (`BLOCK_TOKEN_WIDTHS` = 10 × T × D), the MLP's hidden
  layer before and after GELU (2 × T × M), and the attention matrix before and after the softmax
  (2 × H × T², as the CPU's math path materialises it); plus the input pipeline (the uint8 batch
  as floats, normalised, resized, mixed: `INPUT_COPIES` × 3 × S² per image at side S);
- **evaluation**, per image under `no_grad`, only one block's tensors at a time (6 × T × D +
  2 × T × M + 2 × H × T²) and the same input copies;
- **data**: the training images the run holds (uint8, the split and its held-out part).

On disk a run keeps `model.safetensors` (the weights) and `last.safetensors` (weights and AdamW's
two moments, to resume), and each save writes its file anew beside the old one before it replaces
it (vit/checkpoint.py: atomic), so at the save of `last.safetensors` the folder holds both of its
copies: at most `WRITTEN_COPIES` × 4 bytes per parameter at once, and `FILES_BYTES` for the
files' headers (a name and shape a tensor, the run's history), its metrics and its config.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image

import vit
from vit.checkpoint import CheckpointError, is_checkpoint, read_header
from vit.config import config_from_dict
from vit.model import CONFIGS, ViTConfig
from vit.pretrained import PRETRAINED

from .data import CIFAR10_NAME, check_source, list_image_folder

FLOAT_BYTES = 4
STATE_COPIES = 6  # weights, gradients, AdamW's 2 moments, the source model while adapted, the update's temporaries
BLOCK_TOKEN_WIDTHS = 10  # T × D tensors autograd keeps per block (see the module docstring)
EVAL_TOKEN_WIDTHS = 6  # T × D tensors alive at once in one block without autograd
INPUT_COPIES = 4  # 3 × S² float copies of each image on its way in (float, normalised, resized, mixed)
KEPT_COPIES = 4  # model.safetensors (1) + last.safetensors (weights and 2 moments: 3)
# + the new last.safetensors being written beside the old (3): issue 56's soak found the runs folder
# at 304 MB of its 268 during a save, when the room a run was given counted only what it keeps
WRITTEN_COPIES = KEPT_COPIES + 3
FILES_BYTES = 1024**2  # vit_cifar_nano's three headers, metrics and config at a save: 77 kB
TRANSFORMERS_BOUND = "vit_b_16"
CIFAR10_TRAIN_IMAGES, CIFAR10_SIDE = 50_000, 32
MAX_EVAL_BATCH = 500  # TrainConfig's default: never more at once, whatever the budget allows


class TrainingTooBig(ValueError):
    """A run that does not fit the server's memory or disk budget even at batch size 1."""


@dataclass(frozen=True)
class TrainingCost:
    """Bytes a run of one model at one image size costs (see the module docstring)."""

    parameters: int
    image_size: int
    state_bytes: int
    train_bytes_per_image: int
    eval_bytes_per_image: int
    written_bytes: int

    def memory(self, batch: int, eval_batch: int, data_bytes: int = 0) -> int:
        """Peak bytes of a run training `batch` images a step and evaluating `eval_batch` at once
        (training and evaluation alternate, so the larger of the two counts)."""
        working = max(batch * self.train_bytes_per_image, eval_batch * self.eval_bytes_per_image)
        return self.state_bytes + working + data_bytes


def parameter_count(config: ViTConfig) -> int:
    """P of `config`, counted on PyTorch's meta device (no memory)."""
    import torch

    with torch.device("meta"):
        return sum(p.numel() for p in vit.VisionTransformer(config).parameters())


def training_cost(config: ViTConfig) -> TrainingCost:
    """What training `config` (at its own image_size) costs; see the module docstring."""
    c = config
    tokens = c.grid[0] * c.grid[1] + len(c.prefix_names)
    attention = 2 * c.heads * tokens**2
    block = BLOCK_TOKEN_WIDTHS * tokens * c.dim + 2 * tokens * c.mlp_dim + attention
    single = EVAL_TOKEN_WIDTHS * tokens * c.dim + 2 * tokens * c.mlp_dim + attention
    inputs = INPUT_COPIES * c.in_channels * c.image_size**2
    parameters = parameter_count(c)
    return TrainingCost(
        parameters=parameters,
        image_size=c.image_size,
        state_bytes=STATE_COPIES * FLOAT_BYTES * parameters,
        train_bytes_per_image=FLOAT_BYTES * (c.depth * block + inputs),
        eval_bytes_per_image=FLOAT_BYTES * (single + inputs),
        written_bytes=WRITTEN_COPIES * FLOAT_BYTES * parameters + FILES_BYTES,
    )


@dataclass(frozen=True)
class MemoryPlan:
    """The batch sizes a run gets, and what they cost."""

    batch: int
    eval_batch: int
    memory_bytes: int
    asked_bytes: int  # what the batch size asked for would have cost
    disk_bytes: int = 0  # what its checkpoints write (the runs folder makes room for it before it starts)

    @property
    def scaled_down(self) -> bool:
        return self.memory_bytes < self.asked_bytes


def fit(cost: TrainingCost, batch: int, memory_budget: int, disk_budget: int, data_bytes: int = 0) -> MemoryPlan:
    """The largest batch up to `batch` (and evaluation batch up to MAX_EVAL_BATCH) whose run fits
    `memory_budget` bytes, or TrainingTooBig when even one image at a time does not, or when the
    run's checkpoints would pass `disk_budget` bytes."""
    if cost.written_bytes > disk_budget:
        raise TrainingTooBig(
            f"its checkpoints would take about {gb(cost.written_bytes)} on disk ({cost.parameters:,} parameters), "
            f"more than the {gb(disk_budget)} this server keeps for training runs"
        )
    room = memory_budget - cost.state_bytes - data_bytes
    fits_train = room // cost.train_bytes_per_image if room > 0 else 0
    fits_eval = room // cost.eval_bytes_per_image if room > 0 else 0
    if fits_train < 1:
        least = cost.memory(1, 1, data_bytes)
        raise TrainingTooBig(
            f"it needs about {gb(least)} of memory even one image at a time ({cost.parameters:,} parameters at "
            f"{cost.image_size} px), more than the {gb(memory_budget)} this server gives one run"
        )
    chosen, eval_batch = min(batch, fits_train), min(MAX_EVAL_BATCH, fits_eval)
    return MemoryPlan(
        chosen,
        eval_batch,
        cost.memory(chosen, eval_batch, data_bytes),
        cost.memory(batch, MAX_EVAL_BATCH, data_bytes),
        cost.written_bytes,
    )


def gb(size: int) -> str:
    """Bytes as people read them on a budget: "2.0 GB" (10⁹, as the Space's hardware page says)."""
    return f"{size / 1e9:.1f} GB"


def run_config(spec: str, data_size: int) -> ViTConfig | None:
    """The config a run of `spec` trains, at the size it trains (`training.sources.adapt`: a
    preset at the data's side `data_size`, pretrained weights and checkpoints at their own),
    from names and the checkpoint's header only (CheckpointError for a header that is not one);
    None for a foreign weights file (a local server's own file: its shapes are not read here)."""
    if spec in vit.list_models():
        return replace(CONFIGS[spec], image_size=data_size)
    if spec in PRETRAINED:
        # transformers-format weights name no config of ours: the Hub ids offered are ViT-B/16 or
        # smaller at 224 px, so ViT-B/16's cost bounds theirs.
        return CONFIGS[PRETRAINED[spec].config or TRANSFORMERS_BOUND]
    if not is_checkpoint(spec):
        return None
    header, _ = read_header(spec)
    try:
        return config_from_dict(ViTConfig, header.get("config"), "ViT config")
    except ValueError as e:
        raise CheckpointError(f"{Path(spec).name}: bad checkpoint header: {e}") from e


def data_shape(data: str) -> tuple[int, int]:
    """(training images, their side in px) of a run's data: CIFAR-10's 50,000 at 32 px, or an
    image folder's count and its first image's side (read from its header: every image of a
    folder has one size, `training.data.load_image_folder`)."""
    if data == CIFAR10_NAME:
        return CIFAR10_TRAIN_IMAGES, CIFAR10_SIDE
    check_source(data)  # DataError naming the folder, as the run itself would
    _, files = list_image_folder(Path(data) / "train")
    if not files:
        return 0, 1
    with Image.open(files[0][0]) as image:
        return len(files), max(image.size)


def image_set_bytes(images: int, side: int, holdout: bool = True) -> int:
    """Bytes of `images` uint8 RGB images of side × side held by a run; `holdout`: the split into
    training and validation images makes a second copy (`training.data.holdout_split`)."""
    return (2 if holdout else 1) * images * 3 * side * side
