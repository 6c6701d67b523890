"""A training step replayed as one CUDA graph (training.graphs): the same step as eager, a
resume as exact as eager's, a learning rate the graph reads in place. The GPU tests skip without
CUDA (CI has none: they run on a lent GPU machine, docs/benchmarks-training.md); what the CPU can
check, it checks here."""

from __future__ import annotations

import json

import pytest
import torch
from training_helpers import tiny_config, write_image_folder

import vit
from training.augment import AugmentConfig
from training.cli import build_parser, config_from_args
from training.config import TrainConfig
from training.device_data import Normalizer
from training.engine import Hooks, Trainer
from training.optim import make_optimizer, set_lr
from training.run_files import MODEL
from training.state import flatten_optimizer
from training.step import TrainStep
from vit.preprocessing import CIFAR10

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="a CUDA graph needs a CUDA GPU")
HEAVY = AugmentConfig(randaug_ops=2, mixup_alpha=0.8, cutmix_alpha=1.0, erase_prob=0.5)


def test_the_flag_reaches_the_config_and_a_cpu_run_is_refused_in_words(tmp_path):
    config = config_from_args(build_parser().parse_args(["--cuda-graph", "--device", "cpu"]))
    assert config.cuda_graph is True and TrainConfig().cuda_graph is False
    data = str(write_image_folder(tmp_path / "data", per_class=4, size=16))
    with pytest.raises(ValueError, match="--cuda-graph needs one CUDA GPU"):
        Trainer(tiny_config(data, tmp_path / "out", cuda_graph=True, device="cpu"), progress=False)


def test_a_tensor_learning_rate_is_set_in_place_and_saved_as_a_number():
    model = vit.create_model("vit_cifar_nano", depth=1, num_classes=3, image_size=16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-3))
    held = optimizer.param_groups[0]["lr"]
    set_lr(optimizer, 5e-4)
    assert optimizer.param_groups[0]["lr"] is held and held.item() == pytest.approx(5e-4)
    _, info = flatten_optimizer(optimizer.state_dict())
    assert json.loads(json.dumps(info))["param_groups"][0]["lr"] == pytest.approx(5e-4)


def test_a_capturable_optimizer_is_for_cuda_only():
    model = vit.create_model("vit_cifar_nano", depth=1, num_classes=3, image_size=16)
    with pytest.raises(AssertionError, match="CUDA graphs"):
        make_optimizer(model, 1e-3, 0.05, torch.device("cpu"), capturable=True)


def _cuda_step(graph: bool) -> tuple[torch.nn.Module, TrainStep]:
    torch.manual_seed(0)
    model = vit.create_model("vit_cifar_nano", depth=2, num_classes=3, image_size=16, drop_path=0.1).cuda()
    optimizer = make_optimizer(model, 1e-3, 0.05, torch.device("cuda"), capturable=graph)
    step = TrainStep(
        model,
        optimizer,
        augment=HEAVY,
        normalize=Normalizer(CIFAR10, "cuda"),
        num_classes=3,
        image_size=16,
        label_smoothing=0.1,
        clip_grad=1.0,
        cuda_graph=graph,
    )
    return model, step


@needs_cuda
def test_graphed_steps_train_as_the_eager_steps_do():
    images = torch.randint(0, 256, (5, 8, 3, 16, 16), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
    labels = torch.arange(8) % 3
    runs = {}
    for graph in (False, True):
        model, step = _cuda_step(graph)
        before = [p.detach().cpu().clone() for p in model.parameters()]
        gen = torch.Generator("cuda").manual_seed(0)
        torch.cuda.manual_seed(0)
        counts = [step(batch.cuda(), labels.cuda(), gen, 1e-3 * (i + 1)).cpu() for i, batch in enumerate(images)]
        runs[graph] = torch.stack(counts), [p.detach().cpu() for p in model.parameters()]
    (eager, eager_weights), (graphed, graphed_weights) = runs[False], runs[True]
    # Same kernels on the same draws; bf16 autocast: a loss may differ by a few bf16 roundings.
    torch.testing.assert_close(graphed, eager, rtol=2 * 2**-8, atol=0)
    for a, b in zip(graphed_weights, eager_weights, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-3)  # five steps of lr <= 5e-3: moves of ~1e-2
    assert all(not torch.equal(a, b) for a, b in zip(graphed_weights, before, strict=True))  # it did train


@needs_cuda
def test_a_graphed_run_resumes_where_it_stopped(tmp_path):
    data = str(write_image_folder(tmp_path / "data", per_class=12, size=16))
    settings = dict(epochs=3, augment=HEAVY, drop_path=0.1, device="cuda", cuda_graph=True, deterministic=False)
    Trainer(tiny_config(data, tmp_path / "straight", **settings), progress=False).run()
    first = Trainer(
        tiny_config(data, tmp_path / "resumed", **settings),
        hooks=Hooks(should_stop=lambda: first.epoch >= 1),
        progress=False,
    )
    first.run()
    resumed = Trainer(TrainConfig(out=str(tmp_path / "resumed")), resume=True, progress=False)
    assert resumed.epoch == 1 and resumed.step == first.steps_per_epoch
    resumed.run()
    (a, meta_a), (b, meta_b) = (vit.load_checkpoint(tmp_path / run / MODEL) for run in ("straight", "resumed"))
    losses_a, losses_b = ([r["val_loss"] for r in m.info["history"]] for m in (meta_a, meta_b))
    torch.testing.assert_close(torch.tensor(losses_b), torch.tensor(losses_a), rtol=1e-3, atol=0)
    for name, tensor in a.state_dict().items():
        torch.testing.assert_close(b.state_dict()[name], tensor, rtol=0, atol=1e-3, msg=name)
