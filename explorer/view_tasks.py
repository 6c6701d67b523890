"""The model arithmetic that some views run again beyond the analysis's forward pass, as tasks
(explorer/compute.py: `task(loaded, *args)`, CPU tensors in and out, no pictures), each with its
cost, the GPU seconds it asks for: the relevance map, the patch features of a layer (PCA) and
the logit lens. `ui.zerogpu.GpuTask` runs them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from vit import VisionTransformer
from vit.analysis import PatchPca, grid_border, patch_pca
from vit.probes import logit_lens
from vit.relevance import class_relevance

from .compute import pass_seconds, svd_flops, to_model, work_seconds
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


# -- what each layer holds: patch features in colour (PCA) and the logit lens (docs/analysis.md) --


@dataclass(frozen=True)
class LayerPca:
    """`patch_features`' result: the PCA of the patches of every image, and each image's grid."""

    pca: PatchPca  # on the CPU; rows: the images' patches one image after another, row-major
    grids: tuple[tuple[int, int], ...]


def patch_features(
    loaded: LoadedModel, tensors: Sequence[torch.Tensor], layer: int, remove_background: bool
) -> LayerPca:
    """Task (explorer/compute.py): the patch tokens leaving block `layer` (0-based) for each of
    `tensors` (1, 3, H, W), through the model's final norm as DINOv2's features are (its
    `x_norm_patchtokens`, and `get_intermediate_layers(norm=True)` for earlier layers), prefix
    tokens left out, and one `patch_pca` of all of them."""
    model = loaded.model
    patches, borders, grids = [], [], []
    with torch.inference_mode():
        for tensor in tensors:
            tokens = model.norm(model.hidden_states(to_model(model, tensor), upto=layer)[layer])  # (1, T, D)
            patches.append(tokens[0, model.prefix_tokens :].float())  # (N, D), row-major over the grid
            grids.append(model.patch_grid(*tensor.shape[-2:]))
            borders.append(grid_border(grids[-1]).to(tokens.device))
        pca = patch_pca(patches, borders, remove_background)
    on_cpu = {f.name: getattr(pca, f.name) for f in fields(pca)}
    on_cpu = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in on_cpu.items()}
    return LayerPca(PatchPca(**on_cpu), tuple(grids))


def patch_features_cost(loaded: LoadedModel, tensors: Sequence[torch.Tensor], layer: int, *_: object) -> float:
    """GPU seconds of `patch_features`: each image's pass up to block `layer`, and two SVDs of
    all the patches (M rows of D features)."""
    model = loaded.model
    passes = sum(pass_seconds(model, t.shape[-2:]) for t in tensors) * (layer + 1) / model.config.depth
    rows = sum(math.prod(model.patch_grid(*t.shape[-2:])) for t in tensors)
    return passes + 2 * work_seconds(svd_flops(rows, model.config.dim))


def layer_predictions(loaded: LoadedModel, tensor: torch.Tensor) -> torch.Tensor:
    """Task (explorer/compute.py): (layers, classes) class probabilities read after every block
    of one image (1, 3, H, W): `vit.probes.logit_lens`."""
    return logit_lens(loaded.model, to_model(loaded.model, tensor))[0].cpu()


def layer_predictions_cost(loaded: LoadedModel, tensor: torch.Tensor) -> float:
    """GPU seconds of `layer_predictions`: one forward pass and the head after every block."""
    c = loaded.model.config
    return pass_seconds(loaded.model, tensor.shape[-2:]) + work_seconds(c.depth * 2 * c.dim * c.num_classes)
