"""2-D rotary position embeddings (RoPE) as DINOv3 uses them (Siméoni et al. 2025, "DINOv3",
arXiv 2508.10104): no position vector is added to the tokens; instead each patch token's query
and key are rotated by angles that depend on where the patch is, so q·k depends on the two
patches' relative position.

RoFormer (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding"),
eq. (34), rotates a d-dimensional vector x at position m plane by plane:

    R_{Θ,m} x = x ⊗ (cos mθ_1, cos mθ_1, …, cos mθ_{d/2}, cos mθ_{d/2})
              + (−x_2, x_1, …, −x_d, x_{d−1}) ⊗ (sin mθ_1, sin mθ_1, …, sin mθ_{d/2}, sin mθ_{d/2})  (34)

and since rotations compose, (R_m q)·(R_n k) = q·(R_{n−m} k): the score sees only n − m.

DINOv3's 2-D axial form (timm `RotaryEmbeddingDinoV3`, rope_type 'dinov3'), per head of
dimension d:

- a patch in row i, column j of a gh × gw grid sits at y = 2(i + ½)/gh − 1, x = 2(j + ½)/gw − 1:
  its centre, normalised to [−1, 1] per axis, so every grid, whatever the image size, spans the
  same square (nothing is interpolated; other sizes only sample it more finely or coarsely);
- the d/2 rotation planes are split in two: planes k < d/4 turn with y, planes k ≥ d/4 with x,
  by φ = 2π·y / p_k (resp. 2π·x / p_{k−d/4}), with periods p_k = T^{4k/d}, k = 0 … d/4 − 1,
  and temperature T = 100 (RoFormer's 10 000 counts tokens in a sentence; here a coordinate
  spans 2);
- plane k pairs channels k and k + d/2 (the "rotate-half" layout) rather than RoFormer's
  adjacent (2k, 2k+1): the same rotation on a permuted channel order, which the trained q and k
  weights are laid out for;
- CLS and register tokens have no position and are not rotated.

DINOv3 trained with random shifts, jitter and rescaling of the coordinates; timm disables
them for these models (and at evaluation any such augmentation is off), so there are none here.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class Rope2d(nn.Module):
    """The rotation angles of DINOv3's 2-D axial RoPE for a patch grid (see the module doc).
    `forward(grid, device)` gives (cos, sin), each (gh*gw, head_dim) float32 in the
    rotate-half layout, for `rotate`. Nothing here is learned or stored: the state dict holds no
    entry for it, and casting the model (`.half()`) cannot round the periods."""

    def __init__(self, head_dim: int, temperature: float):
        super().__init__()
        if head_dim % 4:
            raise ValueError(f"2-D rotary embeddings need a head dimension divisible by 4, got {head_dim}")
        self.head_dim = head_dim
        self.temperature = temperature

    def periods(self) -> Tensor:
        """(head_dim/4,) periods p_k = T^{4k/d} in float32, as timm computes them (DINOv3's own
        checkpoints hold them rounded to bfloat16)."""
        exponents = 2.0 * torch.arange(self.head_dim // 4, dtype=torch.float32) / (self.head_dim // 2)
        return self.temperature**exponents

    @staticmethod
    def coordinates(grid: tuple[int, int]) -> Tensor:
        """(gh*gw, 2) patch centres (y, x) in [−1, 1], row-major like the patch tokens."""
        axes = [torch.arange(0.5, side, dtype=torch.float32) / side for side in grid]  # centres in [0, 1]
        yx = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1)  # (gh, gw, 2)
        return (2.0 * yx - 1.0).flatten(0, 1)

    def angles(self, grid: tuple[int, int]) -> Tensor:
        """(gh*gw, head_dim/2) angles φ: the y planes first, then the x planes."""
        coords = self.coordinates(grid)  # (N, 2)
        return (2 * math.pi * coords[:, :, None] / self.periods()).flatten(1)  # (N, 2, d/4) -> (N, d/2)

    def forward(self, grid: tuple[int, int], device: torch.device | None = None) -> tuple[Tensor, Tensor]:
        phi = self.angles(grid).to(device)
        return torch.cat([phi.cos(), phi.cos()], dim=-1), torch.cat([phi.sin(), phi.sin()], dim=-1)  # 2 x (N, d)


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Eq. (34) in the rotate-half layout: x (..., N, d) rotated by the angles of (cos, sin)
    (N, d): channel k and k + d/2 form plane k. Computed in the angles' float32 and returned in
    x's dtype, as timm does."""
    first, second = x.chunk(2, dim=-1)
    return (x * cos + torch.cat([-second, first], dim=-1) * sin).to(x.dtype)
