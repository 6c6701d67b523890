"""vit.probes: token norms, switching heads off, head importance."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tolerance import forward_tolerance

import vit
from vit.probes import head_importance, heads_off, logit_lens, token_norms


@pytest.fixture(scope="module")
def model() -> vit.VisionTransformer:
    torch.manual_seed(0)
    return vit.create_model("vit_cifar_nano").eval()


@pytest.fixture(scope="module")
def image() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randn(1, 3, 32, 32)


def test_token_norms_are_the_norms_of_the_block_output(model, image) -> None:
    x = model.patch_embed(image)
    x = torch.cat([model.cls_token.expand(1, -1, -1), x], dim=1) + model.position_embedding((8, 8))
    with torch.no_grad():
        for block in model.blocks[:3]:
            x, _ = block(x)
    # The model's pass (fused attention) against the blocks' explicit one: 3 of the 6 blocks.
    expected = x.norm(dim=-1)
    tol = forward_tolerance(replace(model.config, depth=3), expected.max().item())
    torch.testing.assert_close(token_norms(model, image, 2), expected, atol=tol, rtol=0)
    with pytest.raises(ValueError, match="layer index must be from 0 to 5, got 6"):
        token_norms(model, image, 6)


def test_a_head_switched_off_equals_zeroing_its_value_projection(model, image) -> None:
    """Zeroing head h's output before W_O is the same as zeroing its rows of the value weights."""
    with torch.no_grad(), heads_off(model, [(1, 2)]):
        hooked = model(image)
    edited = vit.create_model("vit_cifar_nano").eval()
    edited.load_state_dict(model.state_dict())
    dim, width = model.config.dim, model.config.dim // model.config.heads
    with torch.no_grad():
        rows = slice(2 * dim + 2 * width, 2 * dim + 3 * width)  # v of head 2 inside the packed q;k;v
        edited.blocks[1].attn.qkv.weight[rows] = 0
        edited.blocks[1].attn.qkv.bias[rows] = 0
        tol = forward_tolerance(model.config, hooked.abs().max().item())
        torch.testing.assert_close(hooked, edited(image), atol=tol, rtol=0)
        assert not torch.allclose(hooked, model(image), atol=tol, rtol=0)  # the hook is gone afterwards... and mattered


def test_head_importance_ranks_every_head_by_the_drop_of_the_predicted_class(model, image) -> None:
    predicted, drops = head_importance(model, image)
    assert drops.shape == (6, 4) and predicted == int(model(image).argmax())
    layer, head = divmod(int(drops.argmax()), 4)
    with torch.no_grad(), heads_off(model, [(layer, head)]):
        p = model(image).softmax(-1)[0, predicted]
    # With gradients on, the pass may take another attention kernel than head_importance's.
    tol = forward_tolerance(model.config, 1.0)  # probabilities: at most 1
    assert torch.isclose(model(image).softmax(-1)[0, predicted] - p, drops.max(), atol=tol, rtol=0)
    with pytest.raises(ValueError, match="head index must be from 0 to 3, got 4"):
        with heads_off(model, [(0, 4)]):
            pass


def test_hooks_leave_other_threads_forward_passes_alone(model, image) -> None:
    """The app shares one model between requests: heads switched off (or a norm read) in one
    request must not change what another request computes at the same moment."""
    import threading

    with torch.inference_mode():
        clean = model(image)
    seen: list[torch.Tensor] = []
    every_head = [(layer, head) for layer in range(6) for head in range(4)]
    with heads_off(model, every_head):
        worker = threading.Thread(target=lambda: seen.append(model(image).detach()))
        worker.start()
        worker.join()
        with torch.inference_mode():
            assert not torch.allclose(model(image), clean)  # this thread: heads off
    tol = forward_tolerance(model.config, clean.abs().max().item())  # another thread may split the work otherwise
    assert torch.allclose(seen[0], clean, atol=tol, rtol=0)  # the other thread: untouched
    expected = token_norms(model, image, 2)
    main, fired = threading.get_ident(), []

    def interleave(_module, _args) -> None:  # another request's whole pass, while token_norms' hook is in place
        if threading.get_ident() == main and not fired:
            fired.append(True)
            other = threading.Thread(target=lambda: model(torch.randn(2, 3, 32, 32)))
            other.start()
            other.join()

    hook = model.blocks[0].register_forward_pre_hook(interleave)
    try:
        norms = token_norms(model, image, 2)
    finally:
        hook.remove()
    tol = forward_tolerance(replace(model.config, depth=3), expected.max().item())
    assert fired and norms.shape == (1, 65) and torch.allclose(norms, expected, atol=tol, rtol=0)


def timm_with_spread_head(name: str) -> torch.nn.Module:
    """A random timm model whose norms and head have weights of order 1 (randomise_ gives 0.02
    to all), so the class probabilities spread far from uniform and a wrong layer would show."""
    import timm
    from conftest import randomise_

    foreign = randomise_(timm.create_model(name, pretrained=False)).eval()
    with torch.no_grad():
        for module in foreign.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.normal_(1.0, 0.1)
        for head in (foreign.head, getattr(foreign, "head_dist", None)):
            if head is not None:
                head.weight.normal_(0.0, 1.0)
    return foreign


@pytest.mark.parametrize("name", ["vit_tiny_patch16_224", "deit_tiny_distilled_patch16_224"])
def test_the_logit_lens_is_timms_blocks_read_by_timms_norm_and_head(name) -> None:
    """Independent reference: timm's own modules, its blocks applied one at a time, each
    output read by its final norm and forward_head (CLS; DeiT: the mean of its two heads)."""
    foreign = timm_with_spread_head(name)
    ours = vit.from_timm(foreign)
    torch.manual_seed(2)
    images = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        x = foreign.norm_pre(foreign.patch_drop(foreign._pos_embed(foreign.patch_embed(images))))
        expected = []
        for block in foreign.blocks:
            x = block(x)
            expected.append(foreign.forward_head(foreign.norm(x)).softmax(-1))
        expected = torch.stack(expected, dim=1)  # (B, L, classes)
        lens = logit_lens(ours, images)
        final = ours(images).softmax(-1)
    assert lens.shape == (2, 12, 1000) and float(expected.max()) > 0.05  # far from uniform (0.001)
    # softmax probabilities are at most 1: the tolerance of a forward pass of magnitude 1
    torch.testing.assert_close(lens, expected, atol=forward_tolerance(ours.config, 1.0), rtol=0)
    torch.testing.assert_close(lens[:, -1], final, atol=forward_tolerance(ours.config, 1.0), rtol=0)
    assert torch.equal(lens[:, -1].argmax(-1), final.argmax(-1))  # the last layer is the model's own prediction


def test_the_logit_lens_of_a_gap_model_reads_the_mean_patch_and_a_headless_model_is_refused(image) -> None:
    torch.manual_seed(3)
    showcase = vit.create_model("vit_cifar_showcase").eval()  # GAP, no CLS token, no final norm
    with torch.no_grad():
        x, _ = showcase.embed(image)
        expected = []
        for block in showcase.blocks:
            x, _ = block(x)
            expected.append(showcase.head(x[:, showcase.prefix_tokens :].mean(dim=1)).softmax(-1))
        final = showcase(image).softmax(-1)
    lens = logit_lens(showcase, image)
    tol = forward_tolerance(showcase.config, 1.0)
    torch.testing.assert_close(lens, torch.stack(expected, dim=1), atol=tol, rtol=0)
    torch.testing.assert_close(lens[:, -1], final, atol=tol, rtol=0)
    with pytest.raises(ValueError, match="no classifier head"):
        logit_lens(vit.create_model("vit_cifar_nano", num_classes=0), image)
