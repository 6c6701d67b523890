"""training/budget.py: what a run will allocate and write, from the config alone, and the batch
that fits a budget (numbers derived by hand from the module docstring's terms)."""

import os
from dataclasses import replace

import pytest
from training_helpers import tiny_config, write_image_folder

import vit
from training.budget import (
    FILES_BYTES,
    MAX_EVAL_BATCH,
    TrainingTooBig,
    fit,
    image_set_bytes,
    parameter_count,
    run_config,
    training_cost,
)
from training.engine import Trainer
from training.registry import folder_bytes
from vit.model import CONFIGS, ViTConfig

# 8 px images in 4 px patches: a 2 x 2 grid and CLS, T = 5 tokens; D = 8, M = 16, H = 2, depth 2.
TINY = ViTConfig(image_size=8, patch_size=4, num_classes=3, dim=8, depth=2, heads=2, mlp_dim=16)
# Parameters: patch embedding 3·4·4·8 + 8 = 392, CLS 8, positions 5·8 = 40; each block: 2 LayerNorms
# 2·16, qkv 8·24 + 24 = 216, proj 8·8 + 8 = 72, fc1 8·16 + 16 = 144, fc2 16·8 + 8 = 136 (600);
# the final LayerNorm 16 and the head 8·3 + 3 = 27.
TINY_PARAMETERS = 392 + 8 + 40 + 2 * 600 + 16 + 27
# Per training image, in floats: each block 10·T·D + 2·T·M + 2·H·T² = 400 + 160 + 100 = 660, the
# input 4 copies of 3·8² = 768; evaluation: one block 6·T·D + 2·T·M + 2·H·T² = 500, the same input.
TRAIN_PER_IMAGE = 4 * (2 * 660 + 768)
EVAL_PER_IMAGE = 4 * (500 + 768)


def test_the_cost_of_a_small_model_is_what_its_terms_add_up_to():
    cost = training_cost(TINY)
    assert cost.parameters == TINY_PARAMETERS == sum(p.numel() for p in vit.VisionTransformer(TINY).parameters())
    assert cost.state_bytes == 6 * 4 * TINY_PARAMETERS  # weights, grads, 2 moments, the source, temporaries
    assert (cost.train_bytes_per_image, cost.eval_bytes_per_image) == (TRAIN_PER_IMAGE, EVAL_PER_IMAGE)
    # model.safetensors and last.safetensors, and a new last.safetensors written beside the old one
    assert cost.written_bytes == (1 + 3 + 3) * 4 * TINY_PARAMETERS + FILES_BYTES  # and its headers, metrics


def test_the_most_a_run_holds_on_disk_at_once_is_what_it_is_costed(tmp_path, monkeypatch):
    """Each save writes its file anew and then replaces the old one, so the folder is at its fullest
    just before a replace: there a run must hold no more than its written bytes (the room the runs
    folder makes for it; issue 56's soak found the folder 36 MB over its budget during a save), and
    more than the files it keeps (what the room counted before)."""
    data, out, fullest = write_image_folder(tmp_path / "data", size=16), tmp_path / "run", []
    real = os.replace

    def replace_after_measuring(src, dst):
        fullest.append(folder_bytes(out))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_measuring)
    Trainer(tiny_config(str(data), out, epochs=1, warmup_epochs=0.5), progress=False).run()
    cost = training_cost(replace(CONFIGS["vit_cifar_nano"], image_size=16, num_classes=3))
    kept = (1 + 3) * 4 * cost.parameters
    assert kept < max(fullest) <= cost.written_bytes


def test_the_batch_is_scaled_down_to_what_the_budget_holds():
    cost = training_cost(TINY)
    budget = cost.state_bytes + 10 * TRAIN_PER_IMAGE + 100  # room for 10 training images, not 11
    plan = fit(cost, 128, budget, disk_budget=10**9)
    assert (plan.batch, plan.eval_batch) == (10, (10 * TRAIN_PER_IMAGE + 100) // EVAL_PER_IMAGE)
    assert plan.scaled_down and plan.memory_bytes <= budget < plan.asked_bytes
    roomy = fit(cost, 8, 10**9, disk_budget=10**9)
    assert (roomy.batch, roomy.eval_batch, roomy.scaled_down) == (8, MAX_EVAL_BATCH, False)


def test_a_run_that_fits_neither_memory_nor_disk_is_refused_with_its_numbers():
    cost = training_cost(TINY)
    with pytest.raises(TrainingTooBig, match="even one image at a time"):
        fit(cost, 1, cost.state_bytes + TRAIN_PER_IMAGE - 1, disk_budget=10**9)
    with pytest.raises(TrainingTooBig, match="checkpoints would take"):
        fit(cost, 1, 10**9, disk_budget=cost.written_bytes - 1)
    data = image_set_bytes(50_000, 32)
    assert data == 2 * 50_000 * 3 * 32 * 32
    with pytest.raises(TrainingTooBig):  # the data the run holds counts too
        fit(cost, 1, cost.state_bytes + TRAIN_PER_IMAGE + data - 1, disk_budget=10**9, data_bytes=data)


def test_a_run_is_costed_at_the_size_it_trains(tmp_path):
    preset = run_config("vit_cifar_nano", 48)  # a preset trains at the data's side
    assert preset.image_size == 48 and preset.dim == CONFIGS["vit_cifar_nano"].dim
    assert run_config("deit_small_patch16_224.fb_in1k", 32).image_size == 224  # pretrained: its own
    assert run_config("google/vit-base-patch16-224", 32) == CONFIGS["vit_b_16"]  # transformers: bounded by B/16
    path = tmp_path / "big.safetensors"
    vit.save_checkpoint(vit.VisionTransformer(TINY), path)
    assert run_config(str(path), 32) == TINY  # a checkpoint: from its header
    (tmp_path / "foreign.bin").write_bytes(b"\0" * 10)
    assert run_config(str(tmp_path / "foreign.bin"), 32) is None


def test_vit_large_would_write_more_than_the_default_runs_budget():
    """One DeiT-S run wrote 331 MB (15 bytes a parameter); ViT-L's would pass 2 GiB."""
    large = training_cost(CONFIGS["vit_l_16"])
    assert parameter_count(CONFIGS["vit_l_16"]) > 300e6
    with pytest.raises(TrainingTooBig, match="more than the 2.1 GB"):
        fit(large, 1, 10**12, disk_budget=2 * 2**30)
