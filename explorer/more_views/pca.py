"""Patch features in colour (DINOv2, Oquab et al. 2023, Fig. 1): each patch token of the chosen layer
as a colour, its first three principal components as red, green and blue (its task, its picture, its
text)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch
from PIL import Image

from vit.analysis import MIN_FOREGROUND, PatchPca, grid_border, patch_pca

from .. import canvas, render
from ..compute import pass_seconds, svd_flops, to_model, work_seconds
from ..explain import ModelInput, model_input
from ..images import EXAMPLES_DIR, load_image
from ..loaded import LoadedModel
from ..views import DISPLAY_WIDTH
from .base import Drawn, MoreView, Scene, Task, register

# The examples one PCA may be fitted on beside the image: the six animal classes of CIFAR-10, whose
# parts (heads, legs, bodies) a good model's features match across images (DINOv2 Fig. 1).
EXAMPLES = ("bird", "cat", "deer", "dog", "frog", "horse")
HINT = (
    "Each patch token of the chosen layer as a colour: its first three principal components as red, green and "
    "blue (DINOv2, Oquab et al. 2023, Fig. 1). With the examples, one PCA is fitted on this image and the six "
    "animal examples together, so the same part gets the same colour in every image."
)


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


TASK = Task(patch_features, patch_features_cost, "The patch-feature colours")


def pca_legend(pca: PatchPca) -> list[str]:
    """The label of each channel's colour bar: its component, its share of the variance, its units."""
    return [
        f"{channel} = colour component {i + 1} ({float(share):.0%} of the kept patches' variance): projection, "
        f"min-max scaled (0 = its smallest, {canvas.number(float(low))}; 1 = its largest, {canvas.number(float(high))})"
        for i, (channel, share, (low, high)) in enumerate(zip("RGB", pca.explained, pca.ranges.tolist(), strict=False))
    ]


def describe_pca(pca: PatchPca, images: int, prefix_names: Sequence[str]) -> str:
    """The PCA picture's note: how the background was removed (the threshold, its sign), what is left out."""
    patches, kept = len(pca.foreground), int(pca.foreground.sum())
    shares = ", ".join(f"{float(s):.0%}" for s in pca.first_explained)
    if bool(pca.removed.any()):
        how = (
            f"Background removed as in DINOv2 (Oquab et al. 2023, Fig. 1): per image, a first PCA over its patches; "
            f"its component 1 ({shares} of the variance) is thresholded at 0 (the image's mean patch) and the "
            f"patches above 0 are kept, {kept} of {patches}. Its sign is chosen so that the image's border patches, "
            f"where background usually is, score below 0 on average (turned for {int(pca.flipped.sum())} of "
            f"{len(pca.flipped)} images). A second PCA over the kept patches of all images gives the colours; the "
            f"other patches show the photo in {render.dim_tint('gray')}, no colour value."
        )
        whole = [str(i + 1) for i, removed in enumerate(pca.removed.tolist()) if not removed]
        if whole:
            how += f" Image {', '.join(whole)} keeps all its patches: fewer than {MIN_FOREGROUND} on one side."
    else:
        how = (
            f"No background removed (not asked for, or fewer than {MIN_FOREGROUND} patches on one side of the "
            f"threshold in every image): one PCA over all {patches} patches gives the colours."
        )
    parts = [how]
    if images > 1:
        parts.append(f"One PCA for all {images} images, so the same colour means the same direction in every image.")
    if prefix_names:
        parts.append(f"Prefix tokens ({_prefix_names(prefix_names)}) have no place on the grid and are left out.")
    parts.append("PCA signs: each component's largest entry is positive (as scikit-learn's PCA).")
    return " ".join(parts)


def _prefix_names(names: Sequence[str]) -> str:
    return ", ".join(render.short_token_name(n) for n in names)


def pca_alt(names: Sequence[str], computed: LayerPca, layer_number: int, depth: int, model: str) -> str:
    """The PCA picture of the layer `layer_number` (from 1, as written)."""
    background = (
        "background patches (component 1 of a first PCA below 0) shown as the pale photo"
        if bool(computed.pca.removed.any())
        else "no background removed"
    )
    return (
        f"Patch tokens of layer {layer_number} of {depth} in colour for {len(names)} image(s) ({', '.join(names)}): "
        "one PCA over all their patches, components 1, 2, 3 as red, green and blue, each min-max scaled, "
        f"{background}, each image's colours under its photo; model: {model}."
    )


def pca_view(
    pixels: Sequence[np.ndarray],
    names: Sequence[str],
    computed: LayerPca,
    layer_number: int,
    depth: int,
    prefix_names: Sequence[str] = (),
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """Patch features of the layer `layer_number` (from 1, as the title writes it) in colour, one
    column per image (`pixels`, the model inputs (H, W, 3), named `names`), with its RGB legend
    and note (describe_pca)."""
    pca = computed.pca
    room = (DISPLAY_WIDTH["more"] - 80) // len(pixels) - canvas.GAP  # 80 px: the row labels "image", "PCA"
    tile = max(48, min(render.PCA_TILE_PX, room))
    photos, colours, keep, start = [], [], [], 0
    for image, grid in zip(pixels, computed.grids, strict=True):
        n = grid[0] * grid[1]
        photos.append(canvas.fit_to_grid(image, grid, tile))
        colours.append(pca.rgb[start : start + n].reshape(*grid, 3).numpy())  # (N, 3) -> (gh, gw, 3) row-major
        keep.append(pca.foreground[start : start + n].reshape(grid).numpy())
        start += n
    title = (
        f"Patch tokens of layer {layer_number} of {depth} in colour: their first three principal components as R, G, B "
        f"({', '.join(f'{float(s):.0%}' for s in pca.explained)} of the variance)"
    )
    note = describe_pca(pca, len(pixels), prefix_names)
    return render.pca_picture(photos, colours, keep, names, pca_legend(pca), title, note, text_px)


@dataclass(frozen=True)
class PcaChoice:
    """The PCA tab's controls: the layer (1-based; None: the last), whether the animal examples
    are fitted with the image, whether the background is removed (checked by ui/explore_views.py)."""

    layer: object = None
    examples: bool = False
    background: bool = True


def pca_choice(pca_layer: float | None = None, pca_examples: bool = False, pca_background: bool = True) -> PcaChoice:
    """The PCA tab's three controls as one value."""
    return PcaChoice(pca_layer, pca_examples, pca_background)


def inputs(scene: Scene, examples: bool) -> list[tuple[str, ModelInput]]:
    """The images one PCA is fitted on: the analysis's model input, then (with `examples`) each of
    EXAMPLES as the model's own preprocessing gives it."""
    loaded, ex = scene.loaded, scene.ex
    fitted = [("this image", ex.input)]
    for name in EXAMPLES if examples else ():
        image = load_image(str(EXAMPLES_DIR / f"{name}.jpg"))
        fitted.append((name, model_input(image, loaded.preprocessing, loaded.model.config.patch_size)))
    return fitted


def picture(scene: Scene, choice: PcaChoice) -> Drawn:
    """Patch features of the chosen layer (1-based; None: the last) in colour, on the GPU where there is one."""
    ex = scene.ex
    layer = ex.depth if choice.layer is None else int(choice.layer)
    names, fitted = zip(*inputs(scene, choice.examples), strict=True)
    computed = scene.run(TASK, scene.loaded, [i.tensor for i in fitted], layer - 1, choice.background)
    pixels = [i.pixels for i in fitted]
    drawn = pca_view(pixels, names, computed, layer, ex.depth, ex.prefix_names, scene.text_px)
    return Drawn(drawn, pca_alt(names, computed, layer, ex.depth, scene.model))


VIEW = register(
    MoreView(
        "pca",
        "Patch features (PCA)",
        "patch features (PCA)",
        "**Patch features in colour** (DINOv2, Oquab et al. 2023, Fig. 1)",
        "The patch tokens of the chosen layer in colour",
        picture,
        record=PcaChoice,
        parse=pca_choice,
        api_name="patch_pca",
        task=TASK,
        hint=HINT,
    )
)
