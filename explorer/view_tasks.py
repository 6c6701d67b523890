"""The relevance map as a task (explorer/compute.py: `task(loaded, *args)`, CPU tensors in and out,
no pictures) with its cost, the GPU seconds it asks for: the relevance view's, and the map the
explanation's relevance (`explorer.views.relevance`) draws. A task one view alone runs lives in that
view's module (explorer/more_views/: the PCA's patch features, the logit lens). `ui.zerogpu.GpuTask`
runs them.
"""

from __future__ import annotations

import numpy as np
import torch

from vit import VisionTransformer
from vit.relevance import class_relevance

from .compute import pass_seconds, to_model
from .loaded import LoadedModel


def model_relevance(model: VisionTransformer, tensor: torch.Tensor, target: int | None) -> tuple[np.ndarray, int]:
    """The relevance map (gh, gw) of `tensor` for class `target` (None: the predicted one) on
    `model`, where it is, and the class it explains."""
    amap, chosen = class_relevance(model, to_model(model, tensor), target)
    return amap[0].cpu().numpy(), int(chosen[0])  # (gh, gw), the class explained


def relevance_map(loaded: LoadedModel, tensor: torch.Tensor, target: int | None) -> tuple[np.ndarray, int]:
    """Task (explorer/compute.py): the relevance map (gh, gw) of `tensor` (1, 3, H, W) for class
    `target` (None: the predicted one) and the class it explains."""
    return model_relevance(loaded.model, tensor, target)


def relevance_cost(loaded: LoadedModel, tensor: torch.Tensor, target: int | None) -> float:
    """GPU seconds of `relevance_map`: a forward pass and a backward pass (about twice its work)."""
    return 3 * pass_seconds(loaded.model, tensor.shape[-2:])
