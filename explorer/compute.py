"""Where a model's arithmetic runs: the GPU when this process has one, else the CPU.

A *task* is a module-level function `task(loaded, *args)` that does a model's arithmetic and
nothing else: its arguments and its result are CPU tensors, arrays and plain values (no
pictures, no model), so it can run in another process. On a ZeroGPU Space `ui/zerogpu.py`
runs tasks in the platform's forked GPU worker (docs/space.md); everywhere else `run_here`
calls them in this process, on the CUDA device if there is one.

A model crosses into the worker by reference (`ModelRef`: its catalogue and key), never by
value: the worker is a fork of this process, so it already holds the catalogue and its models.
"""

from __future__ import annotations

import copy
import math
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

if TYPE_CHECKING:
    from vit import VisionTransformer, ViTConfig

    from .loaded import LoadedModel

T = TypeVar("T")
Task = Callable[..., T]  # task(loaded: LoadedModel, *args) -> CPU result

# The catalogue's CPU model -> its copy on a device (one per model and device type). Keyed by
# the CPU model itself, so a model the catalogue drops takes its copies with it.
_PLACED: weakref.WeakKeyDictionary[nn.Module, dict[str, nn.Module]] = weakref.WeakKeyDictionary()
_PLACED_LOCK = threading.Lock()


def local_device() -> torch.device:
    """This process's device for model arithmetic: the first CUDA device, else the CPU."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def model_device(model: nn.Module) -> torch.device:
    """The device a model's weights are on (tasks move their inputs there)."""
    return next(model.parameters()).device


def place(model: nn.Module, device: torch.device | str) -> nn.Module:
    """`model` on `device`: the model itself on the CPU, else a copy made once and kept (the
    catalogue's model stays on the CPU for everything that reads it there)."""
    device = torch.device(device)
    if device.type == "cpu":
        return model
    with _PLACED_LOCK:
        copies = _PLACED.setdefault(model, {})
        if device.type not in copies:
            copies[device.type] = copy.deepcopy(model).to(device).eval()
        return copies[device.type]


def placed_loaded(loaded: LoadedModel, device: torch.device | str) -> LoadedModel:
    """`loaded` with its model on `device` (label, metadata and key unchanged)."""
    model = place(loaded.model, device)
    return loaded if model is loaded.model else replace(loaded, model=model)


def run_here(task: Task[T], loaded: LoadedModel, *args: Any, device: torch.device | str | None = None) -> T:
    """Run `task` in this process, on `device` (default: `local_device()`)."""
    return task(placed_loaded(loaded, device or local_device()), *args)


def to_model(model: nn.Module, tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` on the model's device (a no-op on the CPU)."""
    return tensor.to(model_device(model), non_blocking=True)


# -- how long a task holds a GPU (docs/space.md, "Durations, measured"; bench/gpu_tasks.py) --

# Sustained arithmetic of a task: the slowest rate measured on one H100 among the tasks that take
# 50 ms or more (the PCA of 4 images, 3.7 TFLOP/s; CLIP's words 5.2; ViT-L/14's relevance 35),
# scaled to a ZeroGPU slice (half an H200: 60 of the H100's 132 SMs, spaces/zero/configs.json).
GPU_FLOPS = 1.7e12
# Per call: a worker's first call spent 4.2-4.9 s before its task's own work on the H100 (CUDA's start
# 0.3 s, every model the Space opens on copied to the GPU 3.1-4.0 s, the first task's cold start), a
# later call 0.02-0.1 s; x1.5 for a host that is not the one measured, to the half second above. It
# also covers ViT-L/14's forward pass with every map (2.2 s on the H100, not arithmetic: docs/space.md).
FIRST_CALL_S = 4.9
GPU_MARGIN = 1.5
FIXED_GPU_S = math.ceil(2 * FIRST_CALL_S * GPU_MARGIN) / 2  # 7.5 s
SOFTMAX_FLOPS = 5  # per attention weight: max, subtract, exp, sum, divide


def forward_flops(config: ViTConfig, tokens: int, images: int = 1) -> float:
    """Estimated floating-point operations of one forward pass over `tokens` tokens. Per layer:
    the q, k, v and output projections (2·T·D·4D), the MLP (2·T·D·2·mlp), QKᵀ and the weighted
    sum of values (4·T²·D) and the softmax."""
    t, d = tokens, config.dim
    per_layer = (
        2 * t * d * 4 * d + 2 * t * d * 2 * config.mlp_dim + 4 * t * t * d + SOFTMAX_FLOPS * config.heads * t * t
    )
    return images * config.depth * per_layer


def pass_seconds(model: VisionTransformer, size: Sequence[int], images: int = 1) -> float:
    """GPU seconds of `images` forward passes of `model` over (H, W) inputs (`forward_flops`
    of its prefix and patch tokens at GPU_FLOPS): every task's cost is a multiple of this."""
    gh, gw = model.patch_grid(*size)
    return work_seconds(forward_flops(model.config, model.prefix_tokens + gh * gw, images))


def work_seconds(flops: float) -> float:
    """Seconds of GPU arithmetic for `flops` at GPU_FLOPS."""
    return flops / GPU_FLOPS


def gpu_seconds(work_s: float) -> int:
    """The whole seconds a GPU call asks for: its work plus the fixed cost of a call."""
    return int(math.ceil(FIXED_GPU_S + work_s))


def svd_flops(rows: int, columns: int) -> float:
    """Estimated floating-point operations of a thin SVD of a (rows, columns) matrix: about
    4·m·n·min(m, n) for its bidiagonalisation (Golub & Van Loan, Matrix Computations, 5.4.8),
    which dominates."""
    return 4.0 * rows * columns * min(rows, columns)
