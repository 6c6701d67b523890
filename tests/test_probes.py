"""vit.probes: token norms, switching heads off, head importance."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tolerance import forward_tolerance

import vit
from vit.probes import head_importance, heads_off, token_norms


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
