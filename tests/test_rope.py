"""vit/rope.py: DINOv3's 2-D rotary position embeddings, against timm's and against the
properties that make them rotary (RoFormer eq. 34)."""

import math

import pytest
import torch
from timm.layers.pos_embed_sincos import RotaryEmbeddingDinoV3
from tolerance import assert_close_up_to_rounding

import vit
from vit.rope import Rope2d, rotate


@pytest.mark.parametrize(("head_dim", "grid"), [(64, (4, 6)), (64, (16, 16)), (32, (7, 3))])
def test_angles_equal_timms_dinov3_rope(head_dim: int, grid: tuple[int, int]) -> None:
    theirs = RotaryEmbeddingDinoV3(head_dim, temperature=100.0).get_embed(list(grid))  # (N, 2 d): [sin, cos]
    cos, sin = Rope2d(head_dim, 100.0)(grid)
    # One sin/cos of the same float32 angle computed by the same formula: a few ulps apart at most.
    assert_close_up_to_rounding(torch.cat([sin, cos], dim=-1), theirs, reduction=1)


def test_patch_centres_span_minus_one_to_one_per_axis() -> None:
    coords = Rope2d.coordinates((2, 4)).reshape(2, 4, 2)  # (gh, gw, (y, x))
    # Centre of row i of gh: 2 (i + 1/2) / gh - 1; rows first, as the tokens are row-major.
    torch.testing.assert_close(coords[:, 0, 0], torch.tensor([-0.5, 0.5]))
    torch.testing.assert_close(coords[0, :, 1], torch.tensor([-0.75, -0.25, 0.25, 0.75]))


def test_scores_depend_on_the_relative_position_only() -> None:
    # (R_m q) . (R_n k) = q . R_{n-m} k: the same offset between query and key, the same score.
    grid = (4, 6)
    cos, sin = Rope2d(16, 100.0)(grid)
    q, k = torch.randn(16), torch.randn(16)

    def score(m: tuple[int, int], n: tuple[int, int]) -> torch.Tensor:
        i, j = m[0] * grid[1] + m[1], n[0] * grid[1] + n[1]
        return rotate(q, cos[i], sin[i]) @ rotate(k, cos[j], sin[j])

    same_offset = [score((0, 0), (1, 2)), score((2, 3), (3, 5)), score((1, 1), (2, 3))]
    magnitude = float(q.abs() @ k.abs())
    for other in same_offset[1:]:
        assert_close_up_to_rounding(other, same_offset[0], reduction=16, magnitude=magnitude, steps=3)
    assert (score((0, 0), (3, 5)) - same_offset[0]).abs() > 1e-3 * magnitude  # another offset, another score


def test_rotation_keeps_lengths_and_turns_by_the_angle() -> None:
    rope = Rope2d(8, 100.0)
    cos, sin = rope((3, 3))
    x = torch.randn(9, 8)
    turned = rotate(x, cos, sin)
    assert_close_up_to_rounding(turned.norm(dim=-1), x.norm(dim=-1), reduction=8, steps=2)
    # Plane k pairs channels k and k + d/2; its angle is 2 pi y / p_k (k < d/4), 2 pi x / p_(k-d/4) after.
    plane = torch.zeros(8)
    plane[1] = 1.0  # the second y plane: period 100^(4/8) = 10
    y = Rope2d.coordinates((3, 3))[0, 0]  # patch (1, 1): y = -2/3
    phi = 2 * math.pi * y / 10.0
    out = rotate(plane, cos[0], sin[0])
    assert_close_up_to_rounding(out[[1, 5]], torch.stack([torch.cos(phi), torch.sin(phi)]), reduction=1, steps=2)


def test_prefix_tokens_are_not_rotated() -> None:
    # CLS and registers have no position. Among prefix queries and prefix keys the scores are the
    # unrotated ones, so the ratios of their attention weights (differences of logits) agree.
    model = vit.create_model("vit_cifar_nano", pos_embed="rope", pos_embed_prefix=False, register_tokens=2).eval()
    attn, x = model.blocks[0].attn, torch.randn(1, 3 + 64, 128)
    with torch.no_grad():
        attn.qkv.weight.mul_(10.0)  # peaked attention: positions change the weights visibly
        _, rotated = attn(x, need_weights=True, rope=model.rotary((8, 8), x.device))
        _, plain = attn(x, need_weights=True)

    def prefix_logit_gaps(a: torch.Tensor) -> torch.Tensor:
        return a[..., :3, :3].log() - a[..., :3, :1].log()  # (1, H, 3, 3): s(p, p') - s(p, cls)

    assert_close_up_to_rounding(prefix_logit_gaps(rotated), prefix_logit_gaps(plain), reduction=32, steps=4)
    assert (rotated[..., 3:, 3:] - plain[..., 3:, 3:]).abs().max() > 1e-2  # the patches did move


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"heads": 3, "dim": 6 * 3, "mlp_dim": 8}, "2-D RoPE needs dim/heads divisible by 4, got 6"),
        ({"pos_embed_prefix": True}, "rotary embeddings have no position slots"),
        ({"pos_embed_prefix": False, "rope_temperature": 1.0}, "'rope_temperature' = 1.0 is not allowed"),
    ],
)
def test_rope_configs_that_cannot_work_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        vit.ViTConfig(image_size=32, patch_size=4, pos_embed="rope", **{"pos_embed_prefix": False, **fields})


def test_a_rotary_model_has_no_position_embedding_and_runs_at_any_grid() -> None:
    model = vit.create_model("vit_cifar_nano", pos_embed="rope", pos_embed_prefix=False).eval()
    assert model.pos_embed is None and "pos_embed" not in model.state_dict()
    with torch.no_grad():
        out, maps = model(torch.randn(1, 3, 24, 40), need_weights=True)  # 6 x 10, not the 8 x 8 it was built for
    assert maps.grid == (6, 10) and out.shape == (1, 10)
    with pytest.raises(ValueError, match="rotary position embeddings"):
        model.position_embedding((8, 8))


def test_a_rotary_model_survives_a_checkpoint(tmp_path) -> None:
    model = vit.create_model("vit_cifar_nano", pos_embed="rope", pos_embed_prefix=False, rope_temperature=50.0).eval()
    vit.save_checkpoint(model, tmp_path / "rope.safetensors")
    loaded, _ = vit.load_checkpoint(tmp_path / "rope.safetensors")
    assert loaded.config == model.config
    images = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        # The same weights through the same code: bit-identical, so any difference is a lost field.
        torch.testing.assert_close(loaded(images), model(images), atol=0, rtol=0)


def test_hidden_states_rotate_as_the_forward_pass_does() -> None:
    """The logit lens and the PCA read `hidden_states`: without the rotation there, a rotary
    model's layers would be read with no positions at all."""
    model = vit.create_model("vit_cifar_nano", pos_embed="rope", pos_embed_prefix=False).eval()
    images = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        last = model.hidden_states(images)[-1]
        # The same blocks on the same input in the same order: bit-identical.
        torch.testing.assert_close(model.forward_head(model.norm(last)), model(images), atol=0, rtol=0)
