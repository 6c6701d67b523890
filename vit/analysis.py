"""Pure tensor functions that turn attention weights into the pictures of the ViT paper, and
a layer's patch tokens into colour (PCA, DINOv2's Fig. 1). The definitions, with their
equations, are in docs/analysis.md.

Every function reads the token layout from `AttentionMaps` (the patch grid and the prefix
tokens), so rows and columns can never be swapped: patch tokens are row-major over the
(gh, gw) grid, after any prefix tokens (CLS, distillation, registers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from .model import AttentionMaps, VisionTransformer

# The one query type of the project, all 0-based: None (the default query: the CLS token, or
# the mean patch query without one), a prefix token's name ('cls', 'dist', 'reg1', ...; see
# AttentionMaps.prefix_names), a row-major patch index, or a (row, column) grid position.
Query = int | tuple[int, int] | str | None
HeadFusion = Literal["mean", "max", "min"]


def query_index(maps: AttentionMaps, query: Query) -> int | None:
    """The token index a query names, or None for the mean over patch queries (the default
    without a CLS token). Raises ValueError for an unknown prefix name or a patch off the grid."""
    gh, gw = maps.grid
    if query is None:
        return maps.prefix_names.index("cls") if "cls" in maps.prefix_names else None
    if isinstance(query, str):
        if query not in maps.prefix_names:
            raise ValueError(f"unknown prefix token {query!r}; this model has {list(maps.prefix_names)}")
        return maps.prefix_names.index(query)
    row, col = query if isinstance(query, tuple) else divmod(query, gw)
    if not (0 <= row < gh and 0 <= col < gw):
        raise ValueError(f"patch query {query} outside the {gh}x{gw} grid")
    return maps.prefix_tokens + row * gw + col


def _query_tokens(matrix: Tensor, maps: AttentionMaps, query: Query) -> Tensor:
    """The row of a (..., T, T) token-to-token matrix that a query looks at, every column kept
    (prefix tokens first): (..., T). Without a CLS token the default query is the mean over
    the patch queries, which is what the pooled representation averages."""
    token = query_index(maps, query)
    return matrix[..., maps.prefix_tokens :, :].mean(dim=-2) if token is None else matrix[..., token, :]


def query_rows(matrix: Tensor, maps: AttentionMaps, query: Query) -> Tensor:
    """The query's row of a (..., T, T) matrix, patch columns only, as (..., gh, gw)
    (docs/analysis.md, query maps)."""
    return _on_grid(_query_tokens(matrix, maps, query), maps)


def _on_grid(tokens: Tensor, maps: AttentionMaps) -> Tensor:
    """The patch columns of (..., T) token values on the grid: (..., gh, gw)."""
    rows = tokens[..., maps.prefix_tokens :]
    return rows.reshape(*rows.shape[:-1], *maps.grid)  # (..., gh*gw) -> (..., gh, gw) row-major


def query_attention(maps: AttentionMaps, query: Query = None) -> Tensor:
    """Attention from one query token to every patch, for every layer and head:
    (B, L, H, gh, gw): M[l, h] = A[l][h, q, prefix:] on the grid (docs/analysis.md, query maps).
    The default query is the CLS token, whose map is the ViT paper's Fig. 6."""
    return _on_grid(_stacked_query_tokens(maps, query), maps)  # (B, L, H, T) -> (B, L, H, gh, gw)


def query_prefix_attention(maps: AttentionMaps, query: Query = None) -> Tensor:
    """What the patch maps leave out: the query's attention to each prefix token (CLS),
    (B, L, H, prefix_tokens). With the patch map it sums to 1 per head (softmax rows)."""
    return _stacked_query_tokens(maps, query)[..., : maps.prefix_tokens]


def _stacked_query_tokens(maps: AttentionMaps, query: Query) -> Tensor:
    """The query's row of every layer, (B, L, H, T). Each layer's row is taken before stacking:
    stacking the whole (B, L, H, T, T) maps first copied 11 MB for a ViT-S on every click."""
    return torch.stack([_query_tokens(layer, maps, query) for layer in maps], dim=1)


def rollout_matrix(maps: AttentionMaps, head_fusion: HeadFusion = "mean", discard_ratio: float = 0.0) -> Tensor:
    """Attention rollout (Abnar & Zuidema, 2020) as a token-to-token matrix: (B, T, T).

    Per layer: fuse heads, optionally zero the weakest `discard_ratio` of entries (see
    `_discard_weakest`: never the prefix columns, CLS and registers, which carry the residual
    stream's global information), add the identity for the residual connection, and
    row-normalise so each row is again a distribution: Â = rownorm(fuse(A) + I), which for mean fusion
    without discard is the paper's Ã = 0.5·A + 0.5·I. Then R = Â[L-1] @ ... @ Â[0].
    """
    if not 0.0 <= discard_ratio < 1.0:
        raise ValueError(f"discard_ratio must be in [0, 1), got {discard_ratio}")
    fuse = {"mean": lambda a: a.mean(dim=1), "max": lambda a: a.amax(dim=1), "min": lambda a: a.amin(dim=1)}
    if head_fusion not in fuse:
        raise ValueError(f"head_fusion must be one of {sorted(fuse)}, got {head_fusion!r}")
    B, _, T, _ = maps[0].shape
    eye = torch.eye(T, dtype=maps[0].dtype, device=maps[0].device)
    result = eye.expand(B, T, T)
    for layer in maps:
        fused = fuse[head_fusion](layer.float())  # (B, T, T)
        if discard_ratio > 0:
            fused = _discard_weakest(fused, discard_ratio, maps.prefix_tokens)
        a = fused + eye
        a = a / a.sum(dim=-1, keepdim=True)  # keepdim: divide each row by its own sum
        result = a @ result
    return result


def rollout(
    maps: AttentionMaps,
    head_fusion: HeadFusion = "mean",
    discard_ratio: float = 0.0,
    query: Query = None,
) -> Tensor:
    """Attention rollout from the query to every patch: (B, gh, gw). See `rollout_matrix`."""
    return query_rows(rollout_matrix(maps, head_fusion, discard_ratio), maps, query)


def rollout_prefix_attention(
    maps: AttentionMaps,
    head_fusion: HeadFusion = "mean",
    discard_ratio: float = 0.0,
    query: Query = None,
) -> Tensor:
    """The rollout mass the patch map leaves out: the query's share on each prefix token,
    (B, prefix_tokens)."""
    return _query_tokens(rollout_matrix(maps, head_fusion, discard_ratio), maps, query)[..., : maps.prefix_tokens]


def _discard_weakest(fused: Tensor, ratio: float, prefix: int) -> Tensor:
    """Zero the lowest `ratio` fraction of each sample's (T, T) entries.

    Never candidates: the prefix (CLS) columns, which carry the residual stream's global
    information, and each row's strongest patch entry, so no row, and hence no rollout
    map, loses all its patch attention (0.95 with few patches used to zero the whole map).
    The count is capped at the number of candidates, so a high ratio cannot reach them."""
    B, T, _ = fused.shape
    ranked = fused.clone()
    ranked[..., :prefix] = float("inf")  # prefix columns (CLS, registers, ...): never candidates
    if prefix < T:
        strongest = fused[..., prefix:].argmax(dim=-1, keepdim=True) + prefix  # (B, T, 1)
        ranked.scatter_(-1, strongest, float("inf"))
    flat = ranked.reshape(B, T * T)
    k = min(int(T * T * ratio), T * max(T - prefix - 1, 0))
    weakest = flat.topk(k, dim=-1, largest=False).indices  # (B, k)
    keep = torch.ones_like(flat).scatter_(1, weakest, 0.0).reshape(B, T, T)
    return fused * keep


def patch_centres(grid: tuple[int, int], patch_size: int) -> Tensor:
    """(gh*gw, 2) pixel coordinates (y, x) of patch centres, row-major."""
    gh, gw = grid
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    return (torch.stack([ys, xs], dim=-1).reshape(-1, 2).float() + 0.5) * patch_size


def mean_attention_distance(maps: AttentionMaps, patch_size: int) -> Tensor:
    """Mean attention distance in pixels per layer and head, (L, H): the ViT paper's Fig. 7
    (right). For each patch query, sum_k A[q, k] * |centre(q) - centre(k)| over patch keys;
    average over patch queries and over the batch. Prefix tokens are excluded as queries and
    as keys, and keys are not renormalised after dropping it, as in the algorithm the
    authors posted (google-research/vision_transformer #162)."""
    centres = patch_centres(maps.grid, patch_size).to(maps[0].device)
    dist = torch.cdist(centres, centres)  # (N, N) pixels
    p = maps.prefix_tokens
    stacked = torch.stack(tuple(maps), dim=1).float()[..., p:, p:]  # (B, L, H, N, N)
    per_query = (stacked * dist).sum(dim=-1)  # (B, L, H, N)
    return per_query.mean(dim=(0, -1))  # (L, H)


def position_embedding_similarity(model: VisionTransformer) -> Tensor:
    """Cosine similarity between the position embeddings of every pair of patch slots:
    (gh, gw, gh, gw), where [i, j] is the tile for slot (i, j) (the ViT paper's Fig. 7 centre).
    A rotary model (pos_embed='rope') has no vector added per slot; its slot's embedding is
    the unit vector (cos φ_k, sin φ_k) of its rotation angles, whose cosine similarity is the
    mean over planes of cos(φ_k(m) − φ_k(n)): how a query scores its own copy as a key placed at
    the other slot, relative to in place (docs/analysis.md)."""
    gh, gw = model.config.grid
    if model.rope is None:
        patches = model.pos_embed[0, model.pos_slots :].detach().float()  # (N, D): prefix slots, if any, left out
    else:
        angles = model.rope.angles((gh, gw))  # (N, hd/2)
        patches = torch.cat([angles.cos(), angles.sin()], dim=-1)  # (N, hd)
    unit = F.normalize(patches, dim=-1)
    return (unit @ unit.T).reshape(gh, gw, gh, gw)


def top_mass_mask(maps: Tensor, fraction: float) -> Tensor:
    """Which patches hold the top `fraction` of each (..., gh, gw) map's mass, as a bool
    mask of the same shape: the smallest set of largest entries whose sum reaches
    `fraction` of the map's total, as DINO's visualize_attention thresholds its maps
    (Caron et al. 2021, facebookresearch/dino). A patch is kept when the mass of the
    patches ranked above it is still short of `fraction`, so the strongest patch is always
    kept; ties are ranked by position."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"the kept fraction of the mass must be in (0, 1], got {fraction}")
    flat = maps.reshape(*maps.shape[:-2], -1).float()  # (..., gh*gw)
    values, order = flat.sort(dim=-1, descending=True, stable=True)
    share = values / values.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(values.dtype).tiny)
    before = share.cumsum(dim=-1) - share  # mass of the patches ranked above each one
    keep = torch.empty_like(flat, dtype=torch.bool).scatter_(-1, order, before < fraction)
    return keep.reshape(maps.shape)


@dataclass(frozen=True)
class Components:
    """The first k principal components of M rows of D features (`principal_components`)."""

    projections: Tensor  # (M, k): each centred row's coordinates on the axes
    axes: Tensor  # (k, D): unit vectors, largest variance first
    explained: Tensor  # (k,): each axis's share of the rows' total variance, 0 to 1


def principal_components(rows: Tensor, k: int) -> Components:
    """PCA of `rows` (M, D) by the SVD of the centred rows, X - mean = U S Vᵀ
    (torch.linalg.svd): the axes are the first k rows of Vᵀ, the projections (X - mean) V_k,
    the explained shares S_i² / Σ S². Fewer than k components exist when M or D is smaller:
    k is then min(k, M, D). Sign convention (an SVD fixes each axis only up to its sign): each
    axis is flipped so that its entry of largest magnitude is positive (scikit-learn's PCA
    does the same), so the same rows always give the same colours."""
    if rows.ndim != 2 or rows.shape[0] < 1:
        raise ValueError(f"expected rows (M, D) with M >= 1, got shape {tuple(rows.shape)}")
    centred = rows.float() - rows.float().mean(dim=0)
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)  # s (r,), vh (r, D), r = min(M, D)
    k = min(k, vh.shape[0])
    axes = vh[:k]
    biggest = axes.abs().argmax(dim=1, keepdim=True)  # (k, 1)
    axes = axes * torch.sign(axes.gather(1, biggest))  # the largest entry of each axis positive
    variance = s.square()
    explained = variance[:k] / variance.sum().clamp_min(torch.finfo(variance.dtype).tiny)
    return Components(centred @ axes.T, axes, explained)


def min_max(values: Tensor) -> Tensor:
    """Each column of (M, k) scaled to [0, 1]: its smallest value 0, its largest 1 (a column
    whose values are all equal: 0)."""
    low, high = values.amin(dim=0), values.amax(dim=0)
    return (values - low) / (high - low).clamp_min(torch.finfo(values.dtype).tiny)


def grid_border(grid: tuple[int, int]) -> Tensor:
    """(gh*gw,) bool, row-major: True for the patches on the edge of the grid."""
    gh, gw = grid
    border = torch.zeros(gh, gw, dtype=torch.bool)
    border[[0, -1], :] = True
    border[:, [0, -1]] = True
    return border.reshape(-1)  # (gh, gw) -> (gh*gw,) row-major


@dataclass(frozen=True)
class PatchPca:
    """Patch features in colour (`patch_pca`): M patches of one or several images."""

    rgb: Tensor  # (M, 3) in [0, 1]: R, G, B = the second PCA's components 1, 2, 3, min-max scaled; 0 off it
    foreground: Tensor  # (M,) bool: the patches kept (all of them without background removal)
    explained: Tensor  # (<=3,) each colour component's share of the kept patches' variance
    first_explained: Tensor  # (images,) each image's first PCA: component 1's share of its patches' variance
    ranges: Tensor  # (<=3, 2): each colour component's projection from its min to its max before scaling
    flipped: Tensor  # (images,) bool: component 1 was turned so the image's border scores below 0 on average
    removed: Tensor  # (images,) bool: its background was removed (not when asked not to, or too few patches)


MIN_FOREGROUND = 3  # patches on each side of the threshold, or an image keeps all its patches


def _foreground(patches: Tensor, border: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One image's first PCA (DINOv2 Fig. 9: patches "with a negative score of the first PCA
    component" are background): (kept (N,) bool, component 1's share of the variance, whether
    it was flipped so that the `border` patches score below 0 on average)."""
    first = principal_components(patches, 1)
    score = first.projections[:, 0]
    flipped = bool(border.any()) and float(score[border].mean()) > 0
    keep = (-score if flipped else score) > 0
    return keep, first.explained[0], torch.tensor(flipped)


def patch_pca(patches: Sequence[Tensor], borders: Sequence[Tensor], remove_background: bool = True) -> PatchPca:
    """Patch tokens of one or several images ((N_i, D) each) in colour, as DINOv2 (Oquab et al.
    2023, Fig. 1 and p. 16): per image, a first PCA over its patches whose component 1 is
    thresholded at 0 (the image's mean patch), the patches above 0 kept. Which side is
    positive is not fixed by a PCA; here component 1 is turned so that the image's `border`
    patches ((N_i,) bool), where background usually is, score below 0 on average. An image with
    fewer than MIN_FOREGROUND patches on either side keeps all its patches. Then one second
    PCA over the kept patches of all the images gives three components, each min-max scaled to
    [0, 1] as R, G, B: fitted on several images at once, the same part gets the same colour."""
    keep, first_explained, flipped = [], [], []
    for rows, border in zip(patches, borders, strict=True):
        kept, share, turned = _foreground(rows, border)
        keep.append(
            kept
            if remove_background and MIN_FOREGROUND <= int(kept.sum()) <= len(kept) - MIN_FOREGROUND
            else torch.ones_like(kept)
        )
        first_explained.append(share)
        flipped.append(turned)
    removed = torch.stack([~k.all() for k in keep])
    keep, rows = torch.cat(keep), torch.cat(list(patches))
    second = principal_components(rows[keep], 3)
    rgb = torch.zeros(len(rows), 3, dtype=second.projections.dtype, device=rows.device)
    rgb[keep, : second.projections.shape[1]] = min_max(second.projections)
    ranges = torch.stack([second.projections.amin(dim=0), second.projections.amax(dim=0)], dim=1)
    return PatchPca(rgb, keep, second.explained, torch.stack(first_explained), ranges, torch.stack(flipped), removed)
