"""Attention analyses against independent references: hand-built attention matrices with
numbers worked out by hand, plain Python loops written straight from the definitions in
docs/analysis.md, and non-square cases where a transposed grid would put the answer in the
wrong place."""

import math

import numpy as np
import pytest
import torch
from tolerance import assert_close_up_to_rounding, rounding_tolerance

import vit
from vit.analysis import (
    grid_border,
    mean_attention_distance,
    min_max,
    patch_pca,
    position_embedding_similarity,
    principal_components,
    query_attention,
    query_prefix_attention,
    rollout,
    rollout_prefix_attention,
    top_mass_mask,
)
from vit.model import AttentionMaps
from vit.rope import rotate


def random_maps(batch: int, layers: int, heads: int, grid: tuple[int, int], prefix: int = 1) -> AttentionMaps:
    tokens = prefix + grid[0] * grid[1]
    return AttentionMaps([torch.rand(batch, heads, tokens, tokens).softmax(-1) for _ in range(layers)], grid, prefix)


def one_hot_maps(grid: tuple[int, int], hot: tuple[int, int], prefix: int = 1) -> AttentionMaps:
    """Every query attends only to the patch at grid position `hot` (row, col)."""
    tokens = prefix + grid[0] * grid[1]
    attn = torch.zeros(1, 2, tokens, tokens)
    attn[..., prefix + hot[0] * grid[1] + hot[1]] = 1.0
    return AttentionMaps([attn], grid, prefix)


def test_cls_map_finds_the_hot_patch_on_a_non_square_grid() -> None:
    maps = one_hot_maps(grid=(3, 5), hot=(2, 1))
    cls = query_attention(maps)  # (B, L, H, gh, gw)
    assert cls.shape == (1, 1, 2, 3, 5)
    assert torch.nonzero(cls[0, 0, 0]).tolist() == [[2, 1]]


def test_query_by_index_and_by_position_agree() -> None:
    maps = random_maps(2, 3, 4, (3, 5))
    by_position = query_attention(maps, (1, 4))
    by_index = query_attention(maps, 1 * 5 + 4)
    torch.testing.assert_close(by_position, by_index)
    expected = maps[2][1, 3, 1 + 9, 1:].reshape(3, 5)  # layer 2, sample 1, head 3, query token 10
    torch.testing.assert_close(by_position[1, 2, 3], expected)
    with pytest.raises(ValueError, match=r"patch query \(3, 0\) outside the 3x5 grid"):
        query_attention(maps, (3, 0))


def test_without_cls_the_default_query_is_the_mean_patch_query() -> None:
    maps = random_maps(1, 1, 2, (2, 3), prefix=0)
    expected = maps[0][0, :, :, :].mean(dim=1).reshape(2, 2, 3)  # mean over queries
    torch.testing.assert_close(query_attention(maps)[0, 0], expected)


def hand_maps(*layers: list[list[list[float]]]) -> AttentionMaps:
    """One image, one prefix token and a 1x2 grid: each layer is a list of heads, each head a
    3x3 attention matrix written out by hand."""
    return AttentionMaps([torch.tensor(heads).unsqueeze(0) for heads in layers], (1, 2), 1)


def test_rollout_is_the_papers_definition_on_a_hand_made_example() -> None:
    # Abnar & Zuidema 2020 (docs/analysis.md): Â_l = rownorm(A_l + I), R = Â_2 Â_1, map = R[CLS, patches].
    #   A_1 = [[.5 .5 0], [0 1 0], [0 .5 .5]]  ->  Â_1 = [[.75 .25 0], [0 1 0], [0 .25 .75]]
    #   A_2 = [[0 0 1], [.5 .5 0], [0 0 1]]    ->  Â_2 = [[.5 0 .5], [.25 .75 0], [0 0 1]]
    #   R[0] = .5 * Â_1[0] + .5 * Â_1[2] = [.375 .25 .375]   (Â_1 Â_2, the wrong order, gives [.4375 .1875 .375])
    #   R[1] = .25 * Â_1[0] + .75 * Â_1[1] = [.1875 .8125 0]
    maps = hand_maps(
        [[[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 0.5]]],
        [[[0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]],
    )
    torch.testing.assert_close(rollout(maps)[0], torch.tensor([[0.25, 0.375]]))
    torch.testing.assert_close(rollout(maps, query=0)[0], torch.tensor([[0.8125, 0.0]]))  # patch 0's row


@pytest.mark.parametrize(("fusion", "expected"), [("mean", [0.125, 0.125]), ("max", [0.2, 0.2]), ("min", [0.0, 0.0])])
def test_rollout_head_fusion_by_hand(fusion: str, expected: list[float]) -> None:
    # Two heads, CLS rows [.5 .5 0] and [.5 0 .5]: mean [.5 .25 .25] + I -> [1.5 .25 .25] / 2;
    # max [.5 .5 .5] + I -> [1.5 .5 .5] / 2.5; min [.5 0 0] + I -> [1.5 0 0] / 1.5.
    maps = hand_maps(
        [[[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 0.5]], [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]]
    )
    torch.testing.assert_close(rollout(maps, fusion)[0, 0], torch.tensor(expected))


def test_rollout_discard_by_hand_spares_the_prefix_column_and_renormalises_each_row() -> None:
    # 9 entries, ratio 0.25: the 2 smallest outside the CLS column (.1 at [0, 2] and .2 at [1, 2])
    # are zeroed; the CLS column's .1 at [1, 0] is spared. Then + I and each row over its own sum:
    #   row 0: [1.3 .6 0] / 1.9,   row 1: [.1 1.7 0] / 1.8.
    maps = hand_maps([[[0.3, 0.6, 0.1], [0.1, 0.7, 0.2], [0.4, 0.35, 0.25]]])
    torch.testing.assert_close(rollout(maps, discard_ratio=0.25)[0, 0], torch.tensor([0.6 / 1.9, 0.0]))
    torch.testing.assert_close(rollout(maps, discard_ratio=0.25, query=0)[0, 0], torch.tensor([1.7 / 1.8, 0.0]))
    torch.testing.assert_close(rollout(maps)[0, 0], torch.tensor([0.3, 0.05]))  # nothing discarded: / 2
    with pytest.raises(ValueError, match=r"discard_ratio must be in \[0, 1\), got 1.0"):
        rollout(maps, discard_ratio=1.0)
    with pytest.raises(ValueError, match="head_fusion must be one of"):
        rollout(maps, "median")


@pytest.mark.parametrize("discard", [0.95, 0.99])
def test_a_high_discard_ratio_never_zeroes_the_whole_map(discard: float) -> None:
    # Few patches, CLS attending mostly to itself: the CLS row's patch entries are among the
    # weakest, so discarding 95% of all entries used to leave the rolled-out map all zero.
    T = 1 + 2 * 2
    attn = torch.full((1, 1, T, T), 0.01)
    attn[..., 0] = 1.0
    attn[..., 0, 1 + 3] = 0.02  # the CLS query's strongest patch: (1, 1)
    maps = AttentionMaps([attn / attn.sum(-1, keepdim=True)] * 3, (2, 2), 1)
    rolled = rollout(maps, "mean", discard)[0]
    assert rolled.max() > 0 and rolled.argmax().item() == 3
    prefix = rollout_prefix_attention(maps, "mean", discard)[0]
    # Rows stay distributions: 3 layers of 5 x 5 products and renormalisations.
    assert abs(float(rolled.sum() + prefix.sum()) - 1) <= rounding_tolerance(torch.float32, T, steps=2 * 3)


def test_prefix_attention_is_what_the_patch_map_leaves_out() -> None:
    maps = random_maps(2, 3, 4, (3, 5))
    for query in (None, (2, 1)):
        patches = query_attention(maps, query).sum(dim=(-2, -1))  # (B, L, H)
        prefix = query_prefix_attention(maps, query)
        assert prefix.shape == (2, 3, 4, 1)
        assert_close_up_to_rounding(patches + prefix[..., 0], torch.ones(2, 3, 4), reduction=16, steps=2)
    assert query_prefix_attention(random_maps(1, 2, 2, (2, 3), prefix=0)).shape == (1, 2, 2, 0)


def test_rollout_follows_a_non_square_hot_patch() -> None:
    maps = one_hot_maps(grid=(2, 6), hot=(1, 4))
    rolled = rollout(maps)[0]
    assert rolled.argmax().item() == 1 * 6 + 4 and rolled.shape == (2, 6)


def test_mean_attention_distance_by_hand() -> None:
    # 1x2 grid of 16-pixel patches: centres 16 px apart. Query 0 puts 0.25 on patch 1 and
    # 0.5 on itself (0.25 on CLS); query 1 puts 1.0 on patch 0. Mean = (0.25*16 + 1*16) / 2.
    attn = torch.tensor([[0.0, 0.0, 0.0], [0.25, 0.5, 0.25], [0.0, 1.0, 0.0]])
    maps = AttentionMaps([attn.expand(1, 1, 3, 3)], (1, 2), 1)
    assert mean_attention_distance(maps, 16).item() == pytest.approx(10.0)


def test_mean_attention_distance_matches_a_loop_on_a_non_square_grid() -> None:
    maps = random_maps(2, 2, 3, (2, 3))
    P, (gh, gw) = 8, maps.grid
    got = mean_attention_distance(maps, P)
    centre = {i: ((i // gw + 0.5) * P, (i % gw + 0.5) * P) for i in range(gh * gw)}
    for layer in range(2):
        for head in range(3):
            total = 0.0
            for b in range(2):
                for q in range(gh * gw):
                    for k in range(gh * gw):
                        total += maps[layer][b, head, 1 + q, 1 + k].item() * math.dist(centre[q], centre[k])
            mean = total / (2 * gh * gw)  # of 2 x 6 x 6 non-negative terms: the sum of |terms| is N x mean
            assert got[layer, head].item() == pytest.approx(mean, abs=rounding_tolerance(torch.float32, 72, mean))


def test_position_similarity_is_cosine_and_keeps_orientation() -> None:
    model = vit.create_model("vit_cifar_nano")
    with torch.no_grad():
        model.pos_embed.normal_()
    sim = position_embedding_similarity(model)
    assert sim.shape == (8, 8, 8, 8)
    # Cosines over D = 128 of unit vectors: the sum of |terms| is at most 1; norms, then the product.
    assert_close_up_to_rounding(torch.diagonal(sim.reshape(64, 64)), torch.ones(64), reduction=128, steps=2)
    a, b = model.pos_embed[0, 1 + 2 * 8 + 5], model.pos_embed[0, 1 + 7 * 8 + 1]  # slots (2,5) and (7,1)
    cosine = torch.cosine_similarity(a, b, dim=0).item()
    assert sim[2, 5, 7, 1].item() == pytest.approx(cosine, abs=rounding_tolerance(torch.float32, 128, steps=2))


REGISTERS = ("cls", "reg1", "reg2", "reg3", "reg4")


def test_queries_name_any_prefix_token() -> None:
    maps = AttentionMaps(random_maps(1, 2, 3, (2, 3), prefix=5), (2, 3), 5, REGISTERS)
    torch.testing.assert_close(query_attention(maps)[0, 1], maps[1][0, :, 0, 5:].reshape(3, 2, 3))  # CLS
    torch.testing.assert_close(query_attention(maps, "reg2")[0, 0], maps[0][0, :, 2, 5:].reshape(3, 2, 3))
    torch.testing.assert_close(query_attention(maps, (1, 2))[0, 0], maps[0][0, :, 5 + 5, 5:].reshape(3, 2, 3))
    with pytest.raises(ValueError, match=r"unknown prefix token 'dist'; this model has \['cls', 'reg1'"):
        query_attention(maps, "dist")


def test_without_a_cls_token_registers_are_not_the_default_query() -> None:
    maps = AttentionMaps(random_maps(1, 1, 2, (2, 2), prefix=2), (2, 2), 2, ("reg1", "reg2"))
    expected = maps[0][0, :, 2:, 2:].mean(dim=1).reshape(2, 2, 2)  # mean over patch queries
    torch.testing.assert_close(query_attention(maps)[0, 0], expected)


def test_rollout_with_registers_by_hand() -> None:
    # Tokens [cls, reg1, patch 0, patch 1] on a 1x2 grid, one layer, one head (rows sum to 1).
    # Without discard: CLS row [.2 .3 .4 .1] + I -> / 2: map (.2, .05).
    # discard_ratio 2/16 zeroes the 2 smallest entries outside the prefix columns, .1 at
    # [cls, patch 1] and .15 at [patch 0, patch 1]; the prefix columns' .05 and .1 are spared:
    #   CLS row [1.2 .3 .4 0] / 1.9;  reg1 row (untouched) [.1 1.05 .5 .35] / 2.
    attn = torch.tensor([[0.2, 0.3, 0.4, 0.1], [0.1, 0.05, 0.5, 0.35], [0.3, 0.25, 0.3, 0.15], [0.3, 0.3, 0.16, 0.24]])
    maps = AttentionMaps([attn.expand(1, 1, 4, 4)], (1, 2), 2, ("cls", "reg1"))
    torch.testing.assert_close(rollout(maps)[0, 0], torch.tensor([0.2, 0.05]))
    torch.testing.assert_close(rollout(maps, discard_ratio=0.125)[0, 0], torch.tensor([0.4 / 1.9, 0.0]))
    torch.testing.assert_close(rollout(maps, discard_ratio=0.125, query="reg1")[0, 0], torch.tensor([0.25, 0.175]))


def test_attention_distance_ignores_prefix_tokens_however_many() -> None:
    # The same patch-to-patch weights with 0 or 5 prefix tokens give the same distances.
    maps = AttentionMaps(random_maps(2, 2, 3, (2, 3), prefix=5), (2, 3), 5, REGISTERS)
    patches_only = AttentionMaps([layer[..., 5:, 5:] for layer in maps], (2, 3), 0)
    distances = mean_attention_distance(patches_only, 14)  # a slice: other strides, maybe another vector path
    assert_close_up_to_rounding(mean_attention_distance(maps, 14), distances, reduction=2 * 6 * 6)


@pytest.mark.parametrize("pos_embed_prefix", [True, False])
def test_position_similarity_skips_the_prefix_slots(pos_embed_prefix: bool) -> None:
    model = vit.create_model("vit_cifar_nano", depth=1, register_tokens=4, pos_embed_prefix=pos_embed_prefix)
    with torch.no_grad():
        model.pos_embed.normal_()
    slots = 5 if pos_embed_prefix else 0
    a, b = model.pos_embed[0, slots + 0], model.pos_embed[0, slots + 7 * 8 + 7]  # slots (0, 0) and (7, 7)
    sim = position_embedding_similarity(model)
    assert sim.shape == (8, 8, 8, 8)
    cosine = torch.cosine_similarity(a, b, dim=0).item()
    assert sim[0, 0, 7, 7].item() == pytest.approx(cosine, abs=rounding_tolerance(torch.float32, 128, steps=2))


def test_rotary_position_similarity_is_the_score_of_a_query_with_its_moved_copy() -> None:
    # A rotary model adds no vector per slot. Its similarity of slots m and n is the score of a
    # query q against itself as a key, rotated to m and to n, over |q|² (every plane weighted
    # equally: q has unit length in each rotation plane), per docs/analysis.md.
    model = vit.create_model("vit_cifar_nano", depth=1, pos_embed="rope", pos_embed_prefix=False)
    sim = position_embedding_similarity(model)
    assert sim.shape == (8, 8, 8, 8)
    half = 32 // 2  # head dim 32: planes pair channel k with k + 16
    q = torch.cat([torch.ones(half), torch.zeros(half)])  # unit length in every plane
    cos, sin = model.rotary((8, 8), torch.device("cpu"))
    m, n = 2 * 8 + 5, 7 * 8 + 1  # slots (2, 5) and (7, 1)
    score = rotate(q, cos[m], sin[m]) @ rotate(q, cos[n], sin[n]) / (q @ q)
    assert sim[2, 5, 7, 1].item() == pytest.approx(score.item(), abs=rounding_tolerance(torch.float32, 32, steps=3))
    assert_close_up_to_rounding(sim[range(8), range(8), range(8), range(8)], torch.ones(8), reduction=32)  # self: 1
    assert sim[0, 0, 0, 1] > sim[0, 0, 0, 7]  # nearer slots are more alike


def dino_threshold(attentions: torch.Tensor, threshold: float) -> torch.Tensor:
    """The mask of facebookresearch/dino's visualize_attention.py (--threshold, commit 7c446df),
    re-implemented from reading it: (heads, N) maps, sorted ascending, normalised, and an entry
    kept where the ascending cumulative share exceeds 1 - threshold."""
    val, idx = torch.sort(attentions)
    val = val / val.sum(dim=1, keepdim=True)
    th_attn = val.cumsum(dim=1) > (1 - threshold)
    return torch.stack([th_attn[h][torch.argsort(idx[h])] for h in range(len(attentions))])


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.6, 0.9, 1.0])
def test_top_mass_mask_matches_dinos_threshold(fraction: float) -> None:
    # distinct integers 1..16 (total 136) scaled: no partial sum lies within 1/136 of the
    # boundary, far above float64 rounding, so both orders of summation decide alike
    maps = torch.stack([torch.randperm(16).double() + 1 for _ in range(3)])  # (3 heads, 16)
    maps = maps / 136 * (torch.arange(3).double()[:, None] + 1)  # totals differ per head
    ours = top_mass_mask(maps.reshape(3, 4, 4), fraction)
    assert torch.equal(ours.reshape(3, 16), dino_threshold(maps, fraction))


def test_top_mass_mask_by_hand() -> None:
    amap = torch.tensor([[0.125, 0.375], [0.3125, 0.1875]])  # dyadic: every partial sum is exact
    assert top_mass_mask(amap, 0.6).tolist() == [[False, True], [True, False]]  # 0.375 + 0.3125 reach 0.6
    assert top_mass_mask(amap, 0.375).tolist() == [[False, True], [False, False]]  # 0.375 alone is enough
    assert top_mass_mask(amap, 0.01).sum() == 1  # the strongest patch is always kept
    assert top_mass_mask(torch.full((4, 4), 1 / 16), 0.6).sum() == 10  # uniform: ceil(0.6 · 16) patches
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        top_mass_mask(amap, 0.0)


def planted_rows(rows: int, sigmas: list[float], dim: int, seed: int = 0) -> torch.Tensor:
    """(rows, dim) float32 with variances `sigmas`² along random orthogonal axes, plus an offset."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(dim, dim, generator=g, dtype=torch.float64))
    z = torch.randn(rows, len(sigmas), generator=g, dtype=torch.float64) * torch.tensor(sigmas, dtype=torch.float64)
    return (z @ q[:, : len(sigmas)].T + torch.randn(dim, generator=g, dtype=torch.float64)).float()


def numpy_pca(rows: torch.Tensor, k: int):
    """Independent reference: eigendecomposition of the covariance in float64 (numpy), largest
    first, each axis signed so its largest-magnitude entry is positive (the documented convention)."""
    x = rows.double().numpy()
    centred = x - x.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred)  # ascending
    order = np.argsort(values)[::-1][:k]
    axes = vectors[:, order].T  # (k, D)
    axes *= np.sign(axes[np.arange(k), np.abs(axes).argmax(axis=1)])[:, None]
    return centred @ axes.T, axes, values[order] / values.sum()


def pca_tolerance(rows: torch.Tensor, sigmas: list[float], magnitude: float, k: int = 3) -> float:
    """float32 SVD against float64: the rounding of a sum over the rows, magnified by how close
    the variance of each of the first k components comes to the next one's (an axis turns by
    about error / eigengap, relative to the largest variance)."""
    spread = [*sorted(sigmas, reverse=True), 0.0]
    gap = min((spread[i] ** 2 - spread[i + 1] ** 2) / spread[0] ** 2 for i in range(k))
    return rounding_tolerance(torch.float32, rows.shape[0] * rows.shape[1], magnitude) / gap


def test_principal_components_equal_an_eigendecomposition_of_the_covariance() -> None:
    sigmas = [9.0, 5.0, 3.0, 1.0]
    rows = planted_rows(300, sigmas, 24)
    got = principal_components(rows, 3)
    projections, axes, explained = numpy_pca(rows, 3)
    tol = pca_tolerance(rows, sigmas, float(np.abs(projections).max()))
    torch.testing.assert_close(got.projections.double(), torch.from_numpy(projections), atol=tol, rtol=0)
    torch.testing.assert_close(got.axes.double(), torch.from_numpy(axes), atol=tol, rtol=0)
    torch.testing.assert_close(got.explained.double(), torch.from_numpy(explained), atol=tol, rtol=0)
    assert float(got.explained.sum()) < 1 and got.explained[0] > got.explained[1] > got.explained[2]
    flipped = principal_components(-rows, 3)  # the sign convention: the same axes whatever the data's sign
    assert torch.equal(flipped.axes, got.axes) or torch.allclose(flipped.axes, got.axes, atol=tol)
    assert principal_components(rows[:2], 3).axes.shape == (2, 24)  # only as many components as rows


def test_min_max_scales_each_column_to_0_and_1() -> None:
    scaled = min_max(torch.tensor([[1.0, -2.0, 5.0], [3.0, 2.0, 5.0], [2.0, 0.0, 5.0]]))
    assert scaled.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.5, 0.5, 0.0]]


def object_on_background(
    grid: tuple[int, int], dim: int = 16, seed: int = 0, along: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Patch features (gh*gw, dim) of a grid whose centre (the object) lies far from its edge
    patches along feature `along`, and the object's mask."""
    gh, gw = grid
    rows = planted_rows(gh * gw, [3.0, 2.0, 1.0, 0.5], dim, seed)
    centre = torch.zeros(gh, gw, dtype=torch.bool)
    centre[1:-1, 1:-1] = True
    centre = centre.reshape(-1)
    rows[centre] += 40 * torch.nn.functional.one_hot(torch.tensor(along), dim).float()
    return rows, centre


def test_patch_pca_removes_the_background_by_the_first_component_and_colours_the_rest() -> None:
    rows, centre = object_on_background((6, 7))
    got = patch_pca([rows], [grid_border((6, 7))])
    assert got.removed.tolist() == [True] and torch.equal(got.foreground, centre)  # positive component 1: the object
    assert float(got.first_explained[0]) > 0.9  # the object/background split dominates the image's variance
    assert torch.equal(got.rgb[~centre], torch.zeros(int((~centre).sum()), 3))
    kept = got.rgb[centre]
    assert torch.equal(kept.amin(dim=0), torch.zeros(3)) and torch.equal(kept.amax(dim=0), torch.ones(3))
    projections, _, explained = numpy_pca(rows[centre], 3)  # the second PCA: the object's patches only
    tol = pca_tolerance(rows[centre], [3.0, 2.0, 1.0, 0.5], 1.0)
    torch.testing.assert_close(kept.double(), min_max(torch.from_numpy(projections)), atol=tol, rtol=0)
    torch.testing.assert_close(got.explained.double(), torch.from_numpy(explained), atol=tol, rtol=0)
    assert got.ranges.shape == (3, 2) and bool((got.ranges[:, 0] < got.ranges[:, 1]).all())
    # Either sign of the data gives the same split: the border decides which side is background.
    negated = patch_pca([-rows], [grid_border((6, 7))])
    assert torch.equal(negated.foreground, centre) and negated.flipped.tolist() != got.flipped.tolist()
    kept_all = patch_pca([rows], [grid_border((6, 7))], remove_background=False)
    assert kept_all.removed.tolist() == [False] and bool(kept_all.foreground.all())


def test_each_image_has_its_own_threshold_and_one_second_pca_colours_them_all() -> None:
    """The first PCA is per image (DINOv2 p. 16: the second PCA runs "on the remaining patches
    across three images"): an object along another feature is still found; the same patches get
    the same colours; an image with too few patches on one side keeps them all."""
    rows, centre = object_on_background((5, 5))
    other, other_centre = object_on_background((4, 6), seed=1, along=5)
    small, _ = object_on_background((3, 3), seed=2)  # one centre patch: fewer than MIN_FOREGROUND
    borders = [grid_border((5, 5))] * 2 + [grid_border((4, 6)), grid_border((3, 3))]
    got = patch_pca([rows, rows, other, small], borders)
    assert got.removed.tolist() == [True, True, True, False] and len(got.first_explained) == 4
    assert torch.equal(got.foreground, torch.cat([centre, centre, other_centre, torch.ones(9, dtype=torch.bool)]))
    assert torch.equal(got.rgb[:25], got.rgb[25:50])  # the same patches, the same colours in both copies


def test_grid_border_marks_the_edge_patches_row_major() -> None:
    assert grid_border((3, 4)).reshape(3, 4).tolist() == [
        [True, True, True, True],
        [True, False, False, True],
        [True, True, True, True],
    ]
