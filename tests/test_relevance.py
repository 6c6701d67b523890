"""vit.relevance: Chefer et al. 2021, Eq. (5)-(6), on a hand-computed example and on a model."""

from __future__ import annotations

import pytest
import torch

import vit
from vit.model import AttentionMaps
from vit.relevance import class_relevance, relevance_from


def test_one_layer_by_hand() -> None:
    # One layer, two heads, tokens [CLS, p1, p2] on a 1x2 grid.
    a = torch.tensor([[[[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]], [[0.2, 0.2, 0.6]] * 3]])  # (1, 2, 3, 3)
    g = torch.tensor([[[[1.0, 2.0, -1.0]] * 3, [[0.0, -1.0, 1.0]] * 3]])  # (1, 2, 3, 3)
    maps = AttentionMaps([a], (1, 2), 1)
    # Head 1, CLS row: (g*a)+ = [0.5, 0.6, 0]; head 2: [0, 0, 0.6]; mean: [0.25, 0.3, 0.3].
    # R = I + Ā: the CLS row of R is [1.25, 0.3, 0.3], so the patches get 0.3 and 0.3.
    assert torch.allclose(relevance_from(maps, [g]), torch.tensor([[[0.3, 0.3]]]))
    # Patch 1's row: head 1 (g*a)+ = [0.1, 1.6, 0]; head 2 [0, 0, 0.6]; mean [0.05, 0.8, 0.3]; plus I.
    assert torch.allclose(relevance_from(maps, [g], query=(0, 0)), torch.tensor([[[1.8, 0.3]]]))


def test_two_layers_compose_as_r_plus_a_bar_times_r() -> None:
    torch.manual_seed(0)
    layers = [torch.rand(1, 3, 5, 5).softmax(-1) for _ in range(2)]
    grads = [torch.randn(1, 3, 5, 5) for _ in range(2)]
    r = torch.eye(5)
    for a, g in zip(layers, grads, strict=True):
        r = r + (g * a).clamp(min=0).mean(1)[0] @ r
    expected = r[0, 1:].reshape(1, 2, 2)
    assert torch.allclose(relevance_from(AttentionMaps(layers, (2, 2), 1), grads), expected)


def test_class_relevance_on_a_model_uses_the_gradient_of_the_chosen_class() -> None:
    torch.manual_seed(0)
    model = vit.create_model("vit_cifar_nano").eval()
    images = torch.randn(2, 3, 32, 32)
    rel, target = class_relevance(model, images)
    assert rel.shape == (2, 8, 8) and torch.equal(target, model(images).argmax(-1))
    assert bool((rel >= 0).all())
    other, _ = class_relevance(model, images, target=(int(target[0]) + 1) % 10)
    assert not torch.allclose(rel[0], other[0])
    with pytest.raises(ValueError, match="class index must be from 0 to 9"):
        class_relevance(model, images, target=10)


def _tiny(**prefix) -> vit.VisionTransformer:
    torch.manual_seed(0)
    config = vit.ViTConfig(image_size=16, patch_size=4, num_classes=3, dim=16, depth=2, heads=2, mlp_dim=32, **prefix)
    return vit.VisionTransformer(config).eval()


def _relevance_matrix(model: vit.VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """R of Eq. (5)-(6) for the predicted class, written out again: (B, T, T)."""
    logits, maps = model(images, need_weights=True)
    grads = torch.autograd.grad(logits.gather(1, logits.argmax(-1)[:, None]).sum(), list(maps))
    r = torch.eye(maps[0].shape[-1]).expand(images.shape[0], -1, -1)
    for a, g in zip(maps, grads, strict=True):
        r = r + (g * a).clamp(min=0).mean(dim=1) @ r
    return r.detach()


def test_the_distillation_token_can_be_the_query() -> None:
    model = _tiny(distill_token=True, register_tokens=1)  # tokens: cls, dist, reg1, 16 patches
    images = torch.randn(2, 3, 16, 16)
    rel, _ = class_relevance(model, images, query="dist")
    expected = _relevance_matrix(model, images)[:, 1, 3:].reshape(2, 4, 4)
    torch.testing.assert_close(rel, expected)
    with pytest.raises(ValueError, match=r"unknown prefix token 'reg2'; this model has \['cls', 'dist', 'reg1'\]"):
        class_relevance(model, images, query="reg2")


def test_registers_without_cls_are_not_read_as_cls() -> None:
    model = _tiny(class_token=False, pool="gap", register_tokens=2)  # tokens: reg1, reg2, 16 patches
    images = torch.randn(2, 3, 16, 16)
    rel, _ = class_relevance(model, images)  # the default query: the mean patch row, no CLS to read
    r = _relevance_matrix(model, images)
    torch.testing.assert_close(rel, r[:, 2:, 2:].mean(dim=1).reshape(2, 4, 4))
    assert not torch.allclose(rel, r[:, 0, 2:].reshape(2, 4, 4))  # reg1's row, which main read as CLS
    with pytest.raises(ValueError, match="unknown prefix token 'cls'"):
        class_relevance(model, images, query="cls")


def test_every_layer_is_accumulated_and_the_docs_say_where_chefers_clip_notebook_differs() -> None:
    """The app's R runs from layer 1 to L; the CLIP notebook's default (start_layer=-1) keeps only
    the last layer, R = I + Ā_L, and min-max scales its maps: docs/analysis.md says both, and
    that the logit lens has no head to read in DINOv3 or CLIP either."""
    from conftest import REPO

    torch.manual_seed(0)
    a = [torch.softmax(torch.randn(1, 2, 5, 5), dim=-1) for _ in range(2)]  # two layers, CLS + 2 x 2 patches
    g = [torch.randn(1, 2, 5, 5) for _ in range(2)]
    every = relevance_from(AttentionMaps(a, (2, 2), 1), g)
    last_only = relevance_from(AttentionMaps(a[1:], (2, 2), 1), g[1:])  # the notebook's default
    assert not torch.allclose(every, last_only)  # the choice changes the map
    docs = " ".join((REPO / "docs" / "analysis.md").read_text().split())
    assert "`start_layer` argument whose default, -1, means the last layer only" in docs
    assert "min-max scales each map to [0, 1]" in docs and "the app draws from 0" in docs
    assert "a feature extractor (DINO, DINOv2, DINOv3) has no classes to read, and neither has CLIP's" in docs
