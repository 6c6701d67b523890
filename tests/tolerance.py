"""The one rule for comparing two float computations of the same quantity that may round
differently: another summation order, a fused kernel, another library's formula, another CPU's
vector width or thread count. A tolerance tuned on one machine fails on the next one.

Each rounding adds a relative error of at most eps/2 (eps = torch.finfo(dtype).eps). A sum of
n terms whose absolute values add up to m is off by at most about n·eps·m, and in practice by
about sqrt(n)·eps·m, because the roundings have random signs (Higham & Mary, "A New Approach
to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019). `steps` counts
the reductions in sequence that feed the compared value (a transformer block is about four:
q;k;v, attention, projection, MLP), whose errors add up; SAFETY covers the constant of the
bound and an unlucky draw. Two code paths that must be bit-identical compare with
atol=0, rtol=0 and say why in a comment instead.
"""

from __future__ import annotations

import math

import torch

import vit

SAFETY = 8.0


def rounding_tolerance(dtype: torch.dtype, reduction: int, magnitude: float = 1.0, steps: int = 1) -> float:
    """Absolute tolerance: SAFETY · steps · eps(dtype) · sqrt(reduction) · magnitude, where
    `reduction` is the length of the longest sum and `magnitude` the sum of its terms' absolute
    values (the size of the result where they do not cancel)."""
    return SAFETY * steps * torch.finfo(dtype).eps * math.sqrt(reduction) * magnitude


def assert_close_up_to_rounding(
    actual: torch.Tensor, expected: torch.Tensor, reduction: int, magnitude: float | None = None, steps: int = 1
) -> None:
    """torch.testing.assert_close with `rounding_tolerance` as its only tolerance (rtol=0);
    `magnitude` defaults to the largest |value| of `expected` (at least 1 ulp of 1)."""
    expected = torch.as_tensor(expected)
    if magnitude is None:
        magnitude = max(float(expected.abs().max()), torch.finfo(expected.dtype).eps) if expected.numel() else 1.0
    atol = rounding_tolerance(expected.dtype, reduction, magnitude, steps)
    torch.testing.assert_close(torch.as_tensor(actual), expected, atol=atol, rtol=0)


def forward_tolerance(config: vit.ViTConfig, magnitude: float, dtype: torch.dtype = torch.float32) -> float:
    """`rounding_tolerance` of a whole forward pass of a ViT with this config: the longest sum
    is the MLP's, the embedding's or the attention's over the tokens; four reductions per block,
    plus the patch embedding and the head."""
    tokens = len(config.prefix_names) + config.grid[0] * config.grid[1]
    reduction = max(config.dim, config.mlp_dim, config.in_channels * config.patch_size**2, tokens)
    return rounding_tolerance(dtype, reduction, magnitude, steps=4 * config.depth + 2)
