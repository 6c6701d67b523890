"""vit.clip: CLIP's image tower against open_clip's `encode_image` (random weights of real
shapes), its attention against open_clip's blocks, the text side from open_clip, and the
relevance of an image-text similarity against Chefer et al.'s CLIP notebook, written again."""

from __future__ import annotations

import open_clip
import pytest
import safetensors.torch
import torch
from hub_standin import hub  # noqa: F401 - the fixture
from tolerance import assert_close_up_to_rounding, forward_tolerance

import vit
from vit.checkpoint import CheckpointError, parameter_shapes
from vit.clip import CLIP_CONFIGS, OPEN_CLIP_WEIGHTS, from_open_clip, text_tower, visual_state_dict, zero_shot
from vit.pretrained import PRETRAINED
from vit.relevance import similarity_relevance


def perturbed_(module: torch.nn.Module, std: float = 0.02) -> torch.nn.Module:
    """open_clip's initialisation plus noise: LayerNorm gains stay near 1 (so the signal passes
    every block) and the zero biases become non-zero (so a bias mapped wrongly shows)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p) * std)
    return module


def open_clip_model(name: str, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return perturbed_(open_clip.create_model(name, pretrained=None)).eval()


@pytest.fixture(scope="module")
def clip_b16() -> torch.nn.Module:
    return open_clip_model("ViT-B-16-quickgelu", 3)


@pytest.mark.parametrize("name", ["ViT-B-16-quickgelu", "ViT-B-32", "ViT-B-32-quickgelu"])
def test_image_embedding_equals_open_clips_encode_image(name, clip_b16) -> None:
    reference = clip_b16 if name == "ViT-B-16-quickgelu" else open_clip_model(name, 4)
    ours = from_open_clip(reference, name)
    images = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        expected = reference.encode_image(images)
        actual, maps = ours(images, need_weights=True)
    assert expected.shape == (2, ours.config.embed_dim)
    # the projection sums dim terms after the forward pass: one more reduction than a classifier's head
    tol = forward_tolerance(ours.config, expected.abs().max().item())
    torch.testing.assert_close(actual, expected, atol=tol, rtol=0)
    torch.testing.assert_close(ours(images), actual, atol=tol, rtol=0)  # the fused path agrees too
    assert len(maps) == 12 and maps.grid == ours.config.grid and maps.prefix_tokens == 1


def multihead_weights(block, q_x, k_x=None, v_x=None, attn_mask=None):
    """nn.MultiheadAttention's own weights (need_weights=True) on the block's normed input."""
    out, weights = block.attn(q_x, q_x, q_x, need_weights=True, average_attn_weights=False)
    return out, weights


def attention_probs(block, q_x, k_x=None, v_x=None, attn_mask=None):
    """The attention as Chefer et al.'s modified CLIP computes it (their `attn_probs`, kept in
    the graph: nn.MultiheadAttention returns a view made after use, which no gradient reaches):
    softmax(q kᵀ / sqrt(d)) from the block's packed in_proj, then out_proj."""
    mha = block.attn
    B, T, D = q_x.shape
    H = mha.num_heads
    qkv = torch.nn.functional.linear(q_x, mha.in_proj_weight, mha.in_proj_bias)  # (B, T, 3D)
    q, k, v = qkv.reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, d)
    probs = (q @ k.transpose(-2, -1) / (D // H) ** 0.5).softmax(dim=-1)  # (B, H, T, T)
    out = (probs @ v).transpose(1, 2).reshape(B, T, D)
    return mha.out_proj(out), probs


def attention_of_open_clip(model: torch.nn.Module, images: torch.Tensor, attention=multihead_weights) -> tuple:
    """open_clip's image features and each block's post-softmax attention (B, H, T, T), computed
    by `attention` in place of each block's own (which returns no weights)."""
    maps = []

    def recorded(block, *args, **kwargs):
        out, weights = attention(block, *args, **kwargs)
        maps.append(weights)
        return out

    blocks = model.visual.transformer.resblocks
    for block in blocks:
        block.attention = recorded.__get__(block)
    try:
        features = model.encode_image(images)
    finally:
        for block in blocks:
            del block.attention  # the class's method again
    return features, maps


def test_attention_weights_equal_open_clips_blocks(clip_b16) -> None:
    ours = from_open_clip(clip_b16, "ViT-B-16-quickgelu")
    images = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        _, expected = attention_of_open_clip(clip_b16, images)
        _, maps = ours(images, need_weights=True)
    tokens = 1 + 14 * 14
    for layer, (a, b) in enumerate(zip(maps, expected, strict=True)):
        assert a.shape == b.shape == (1, 12, tokens, tokens), layer
        # softmax rows of probabilities <= 1 from logits summed over head_dim after (layer + 1) blocks
        assert_close_up_to_rounding(a, b, reduction=ours.config.mlp_dim, magnitude=1.0, steps=4 * (layer + 1))


def test_every_named_architecture_has_open_clips_shapes() -> None:
    for name in ("ViT-B-16", "ViT-B-32", "ViT-L-14"):  # "-quickgelu" changes no shape
        theirs = open_clip.create_model(name, pretrained=None, device="meta").state_dict()
        config = CLIP_CONFIGS[name]
        expected = {k: tuple(v.shape) for k, v in visual_state_dict(theirs).items()}
        assert parameter_shapes(config) == expected, name


def test_refusals_are_sentences() -> None:
    with pytest.raises(CheckpointError, match="unknown CLIP model 'ViT-H-14'"):
        from_open_clip({}, "ViT-H-14")
    with pytest.raises(CheckpointError, match="no 'visual"):
        from_open_clip({"token_embedding.weight": torch.zeros(2, 2)}, "ViT-B-16")
    with pytest.raises(CheckpointError, match=r"'visual.attnpool.q' is not one this ViT implements"):
        from_open_clip({"visual.attnpool.q": torch.zeros(2)}, "ViT-B-16")


def test_text_tower_is_open_clips_with_its_tokenizer(clip_b16, caplog) -> None:
    with caplog.at_level("WARNING"):
        text = text_tower(clip_b16.state_dict(), "ViT-B-16-quickgelu")
    # open_clip's "Model initialized randomly" would mislead the server's log: the weights follow
    assert not [r for r in caplog.records if "initialized randomly" in r.getMessage()]
    assert not hasattr(text.model, "visual")
    prompts = ["cat", "dog"]
    with torch.no_grad():
        tokens = open_clip.get_tokenizer("ViT-B-16")([text.template.format(p) for p in prompts])
        expected = clip_b16.encode_text(tokens, normalize=True)
    # the same module and weights on the same input: the same arithmetic, bit for bit
    torch.testing.assert_close(text.embed(prompts), expected, atol=0, rtol=0)
    assert text.template == "a photo of {}."
    assert float(text.logit_scale) == pytest.approx(float(clip_b16.logit_scale.detach().exp()))


def test_clip_reads_a_prompt_whole_only_within_its_77_tokens(clip_b16) -> None:
    """`reads_whole` against open_clip's own tokens: each digit is one token, and the template's
    full stop is the last one kept when [start] a photo of <digits> . [end] fill 77."""
    text = text_tower(clip_b16.state_dict(), "ViT-B-16-quickgelu")
    stop = text.tokenizer.encode(".")[0]
    assert text.context_length == 77
    for digits, whole in ((71, True), (72, False)):
        prompt = "1" * digits
        tokens = open_clip.get_tokenizer("ViT-B-16")([text.template.format(prompt)])[0].tolist()
        assert text.reads_whole(prompt) is whole and (stop in tokens) is whole


def chefer_clip_relevance(model: torch.nn.Module, image: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
    """Chefer et al.'s CLIP notebook (Transformer-MM-Explainability, CLIP_explainability.ipynb,
    `interpret` with start_layer=0, every layer, as the app does; the notebook's default, -1, is
    the last layer only: docs/analysis.md), written again on open_clip's model: logits_per_image = exp(t)·cos; for each
    text, the gradient of its logit w.r.t. every block's attn_probs; cam = (grad ⊙ attn)⁺
    averaged over heads; R = R + cam @ R from R = I; the CLS row without CLS. (P, gh*gw)."""
    with torch.enable_grad():
        features, attn_probs = attention_of_open_clip(model, image, attention_probs)
        image_features = features / features.norm(dim=-1, keepdim=True)
        text_features = model.encode_text(texts)
        text_features = text_features / text_features.norm(dim=-1, keepdim=True)
        logits_per_image = model.logit_scale.exp() * image_features @ text_features.t()  # (1, P)
        rows = []
        for index in range(texts.shape[0]):
            one_hot = logits_per_image[0, index]
            grads = torch.autograd.grad(one_hot, attn_probs, retain_graph=True)
            tokens = attn_probs[0].shape[-1]
            R = torch.eye(tokens)
            for cam, grad in zip(attn_probs, grads, strict=True):
                cam = (grad * cam).reshape(-1, tokens, tokens).clamp(min=0).mean(dim=0)  # heads averaged
                R = R + cam @ R
            rows.append(R[0, 1:])
    return torch.stack(rows).detach()


def test_similarity_relevance_equals_chefers_clip_notebook(clip_b16) -> None:
    ours = from_open_clip(clip_b16, "ViT-B-16-quickgelu")
    text = text_tower(clip_b16.state_dict(), "ViT-B-16-quickgelu")
    prompts = ["a cat", "a teapot", "a rainbow"]
    tokens = open_clip.get_tokenizer("ViT-B-16")([text.template.format(p) for p in prompts])
    image = torch.randn(1, 3, 224, 224)
    expected = chefer_clip_relevance(clip_b16, image, tokens).reshape(3, 14, 14)
    logits, relevance = similarity_relevance(ours, image, text.embed(prompts), text.logit_scale)
    assert logits.shape == (1, 3) and relevance.shape == (1, 3, 14, 14)
    with torch.no_grad():
        expected_logits = zero_shot(clip_b16.encode_image(image), text.embed(prompts), text.logit_scale)
    tol = forward_tolerance(ours.config, float(expected_logits.abs().max()))
    torch.testing.assert_close(logits, expected_logits, atol=tol, rtol=0)
    # the backward pass doubles the chain of reductions the forward pass rounds in
    tol = 2 * forward_tolerance(ours.config, float(expected.abs().max()))
    torch.testing.assert_close(relevance[0], expected, atol=tol, rtol=0)
    assert not torch.allclose(relevance[0, 0], relevance[0, 1])  # each prompt has its own map


def test_similarity_relevance_refuses_a_classifier() -> None:
    model = vit.create_model("vit_cifar_nano").eval()
    with pytest.raises(ValueError, match="not a CLIP image tower"):
        similarity_relevance(model, torch.randn(1, 3, 32, 32), torch.randn(2, 10), 100.0)


def publish_open_clip(hub, tmp_path, name: str) -> torch.nn.Module:  # noqa: F811
    """open_clip's architecture for the zoo's `name` with random weights at real shapes, saved as
    open_clip's save_for_hf saves them (one safetensors of both towers), under the zoo's repo."""
    spec = PRETRAINED[name]
    model = open_clip_model(spec.config, 5)
    path = tmp_path / OPEN_CLIP_WEIGHTS
    safetensors.torch.save_file(model.state_dict(), str(path))
    hub.publish_file(spec.weights, OPEN_CLIP_WEIGHTS, path)  # 600 MB: mapped, not held in memory
    return model


def test_clip_downloads_through_the_hub_with_both_towers(hub, tmp_path) -> None:  # noqa: F811
    name = "vit_base_patch32_clip_224.openai"
    assert vit.pretrained.is_clip(name) and not vit.pretrained.is_clip("vit_base_patch16_224.dino")
    foreign = publish_open_clip(hub, tmp_path, name)
    model, meta, text = vit.pretrained.load_pretrained_clip(name)
    assert hub.downloads() == [f"/timm/vit_base_patch32_clip_224.openai/resolve/main/{OPEN_CLIP_WEIGHTS}"]
    assert meta.class_names == [] and meta.info["prompt_template"] == "a photo of {}."
    pre = meta.preprocessing
    assert (pre.resize_size, pre.crop_size, pre.interpolation) == (224, 224, "bicubic")
    assert pre.mean == open_clip.OPENAI_DATASET_MEAN and pre.std == open_clip.OPENAI_DATASET_STD
    images = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        expected = foreign.encode_image(images)
        tol = forward_tolerance(model.config, expected.abs().max().item())
        torch.testing.assert_close(model(images), expected, atol=tol, rtol=0)
        tokens = open_clip.get_tokenizer("ViT-B-32")(["a photo of a cat."])
        torch.testing.assert_close(text.embed(["a cat"]), foreign.encode_text(tokens, normalize=True), atol=0, rtol=0)
    image_only, _ = vit.load_pretrained(name)  # from the cache, without building the text tower
    assert len(hub.downloads()) == 1 and image_only.config == model.config


def test_clip_without_the_weights_is_one_sentence(hub) -> None:  # noqa: F811
    with pytest.raises(vit.PretrainedUnavailable) as caught:
        vit.pretrained.load_pretrained_clip("vit_base_patch16_clip_224.openai")
    message = str(caught.value)
    assert message.startswith("cannot load vit_base_patch16_clip_224.openai: ") and "\n" not in message
    with pytest.raises(ValueError, match="is not a CLIP model"):
        vit.pretrained.load_pretrained_clip("vit_base_patch16_224.dino")
