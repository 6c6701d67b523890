"""The training loop: config, setup (data, model, optimizer, DDP), epochs, evaluation and
resumable checkpoints.

Randomness: at the start of every epoch the shuffle, the augmentation and the global torch
RNG (dropout, stochastic depth) are seeded from (seed, epoch, rank). A run resumed at an
epoch boundary therefore replays exactly what the uninterrupted run would have done, on
every DDP rank, with nothing but the epoch number to store.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm import tqdm

import vit

from .augment import AugmentConfig, augment_batch, normalize
from .data import ImageSet, check_source, holdout_split, load_split
from .models import adapt, check_model_spec, load_source
from .state import flatten_optimizer, unflatten_optimizer

LAST = "last.safetensors"  # full training state, rewritten atomically after every epoch
MODEL = "model.safetensors"  # model only: what the app and `vit.load_checkpoint` read
METRICS = "metrics.jsonl"  # one JSON line per finished epoch


class TrainingError(RuntimeError):
    """Training cannot go on; the message says why and where the last good checkpoint is."""


@dataclass
class TrainConfig:
    model: str = "vit_cifar_tiny"  # preset, pretrained name or weights file
    data: str = "cifar10"  # 'cifar10' (torchvision) or an ImageFolder root with train/ and test/
    out: str = "runs/train"
    epochs: int = 100
    batch_size: int = 128  # per process
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_epochs: float = 5.0
    label_smoothing: float = 0.1
    clip_grad: float = 1.0  # max gradient norm (0: off)
    drop_path: float | None = None  # None: the model's own rate
    image_size: int | None = None  # None: the data's size for presets, the model's own otherwise
    holdout: int = 5000  # training images set aside for validation
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    seed: int = 0
    device: str = "auto"  # 'auto', 'cpu', 'cuda', 'cuda:1', ...
    compile: bool = False
    deterministic: bool = False
    threads: int | None = None  # CPU threads for torch (None: torch's default)
    eval_batch_size: int = 500
    eval_test: bool = True  # evaluate the test split once, after the last epoch
    download: bool = True  # allow torchvision to download CIFAR-10
    data_archive: str | None = None  # archive the data came from: its sha256 is recorded

    def __post_init__(self) -> None:
        if isinstance(self.augment, dict):
            self.augment = AugmentConfig(**self.augment)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def validate(self) -> None:
        """Raise ValueError on settings that cannot work, before anything is loaded."""
        positive = {"epochs": self.epochs, "batch_size": self.batch_size, "eval_batch_size": self.eval_batch_size}
        for name, value in positive.items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}")
        if self.weight_decay < 0 or self.warmup_epochs < 0 or self.clip_grad < 0:
            raise ValueError("weight_decay, warmup_epochs and clip_grad must not be negative")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.drop_path is not None and not 0 <= self.drop_path < 1:
            raise ValueError(f"drop_path must be in [0, 1), got {self.drop_path}")
        if self.holdout < 1:
            raise ValueError(f"holdout must be at least 1 image, got {self.holdout}")
        check_model_spec(self.model)
        if self.data_archive is not None and not Path(self.data_archive).is_file():
            raise ValueError(f"--data-archive {self.data_archive}: no such file")
        resolve_device(self.device)
        check_source(self.data)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but no CUDA GPU is available")
    return device


def describe_device(device: torch.device) -> str:
    """A one-line description for people, with a warning when only the CPU is there."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if torch.cuda.is_available():
        return "cpu"
    return "cpu (no GPU found: training runs on the CPU and will be slow)"


def lr_at(step: int, total_steps: int, warmup_steps: int, base_lr: float) -> float:
    """Linear warmup from 0 to `base_lr`, then a cosine decay to 0 at `total_steps`."""
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
    return base_lr * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Decay matrices only: norms, biases, position embeddings and the CLS token are
    offsets and scales whose shrinking toward 0 only hurts."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim <= 1 or name in ("pos_embed", "cls_token") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def soft_cross_entropy(logits: Tensor, targets: Tensor, smoothing: float) -> Tensor:
    """Cross-entropy against target probabilities (N, K), with label smoothing."""
    targets = targets * (1 - smoothing) + smoothing / targets.shape[-1]
    return -(targets * logits.float().log_softmax(dim=-1)).sum(dim=-1).mean()


def channel_stats(data: ImageSet) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of a data set in [0, 1]: how models trained from scratch standardise."""
    x = data.images.float() / 255  # (N, 3, H, W)
    mean = tuple(round(v, 4) for v in x.mean(dim=(0, 2, 3)).tolist())
    std = tuple(round(v, 4) for v in x.std(dim=(0, 2, 3)).tolist())
    return mean, std


def _epoch_seed(seed: int, epoch: int, rank: int) -> int:
    return (seed * 1_000_003 + epoch) * 1_009 + rank


def git_commit() -> str | None:
    """The commit of the code being run, with '+dirty' when it has uncommitted changes."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def command_line() -> str:
    return shlex.join([Path(sys.executable).name, "-m", "training", *sys.argv[1:]])


@dataclass
class Hooks:
    """Callbacks for a UI (training/job.py); the CLI uses none."""

    on_start: Callable[[Trainer], None] | None = None  # after setup, before the first step
    on_step: Callable[[Trainer, int], None] | None = None  # after each step, with the step in the epoch
    on_epoch: Callable[[Trainer, dict], None] | None = None  # after each epoch's checkpoint, with its record
    should_stop: Callable[[], bool] | None = None  # polled every step: True ends the run gracefully


def train_step(
    forward: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: Tensor,
    targets: Tensor,
    label_smoothing: float,
    clip_grad: float,
) -> tuple[Tensor, Tensor]:
    """One optimizer step on a prepared batch: (loss, logits), detached."""
    with _autocast(x.device):
        logits = forward(x)
    loss = soft_cross_entropy(logits, targets, label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip_grad > 0:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, clip_grad)
    optimizer.step()
    return loss.detach(), logits.detach()


@torch.no_grad()
def predict(model: nn.Module, images: Tensor, mean: Tensor, std: Tensor, image_size: int, batch_size: int) -> Tensor:
    """Logits (N, K) for uint8 images (N, 3, H, W) on the model's device, in eval mode."""
    was_training = model.training
    model.eval()
    device = mean.device
    out = []
    for start in range(0, len(images), batch_size):
        x = model_input(images[start : start + batch_size].to(device), mean, std, image_size)
        with _autocast(device):
            out.append(model(x).float())
    model.train(was_training)
    return torch.cat(out) if out else torch.empty(0, 0, device=device)


def model_input(images: Tensor, mean: Tensor, std: Tensor, image_size: int) -> Tensor:
    """uint8 images (N, 3, H, W) -> the normalised float batch the model takes, without augmentation."""
    return _resize(normalize(images, mean, std), image_size)


def _resize(x: Tensor, size: int) -> Tensor:
    """Upsample a batch to the model's resolution (fine-tuning 224px models on 32px data)."""
    if x.shape[-1] == size and x.shape[-2] == size:
        return x
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=True)


def _autocast(device: torch.device):
    """bf16 on CUDA (no loss scaling needed, unlike fp16); full fp32 on the CPU."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()


class Trainer:
    """One training run: `Trainer(config).run()`. With `resume=True` it continues from
    `out/last.safetensors`, whose saved config replaces `config`."""

    def __init__(self, config: TrainConfig, *, resume: bool = False, hooks: Hooks | None = None, progress: bool = True):
        self.hooks = hooks or Hooks()
        self.out = Path(config.out)
        saved = self._read_last() if resume else None
        if saved is not None:
            config = TrainConfig.from_dict(saved[1].info["train_config"])
            config.out = str(self.out)
        config.validate()
        self.config = c = config
        self._init_distributed()
        self.progress = progress and self.rank == 0
        if c.threads:
            torch.set_num_threads(c.threads)
        if c.deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
        torch.manual_seed(c.seed)

        full = load_split(c.data, "train", download=c.download)
        self.class_names = full.class_names
        train, val = holdout_split(full, c.holdout, seed=c.seed)
        self.train_set, self.val_set = train.to(self.device), val.to(self.device)

        if saved is not None:
            self.model, self.preprocessing = self._restore_model(saved)
        else:
            source, preprocessing = load_source(c.model)
            size = c.image_size or (full.image_size[0] if preprocessing is None else source.config.image_size)
            self.model = adapt(source, len(self.class_names), size, c.drop_path)
            # Training resizes whole images to `size` (no crop), so the model's record says exactly that.
            mean, std = (preprocessing.mean, preprocessing.std) if preprocessing else channel_stats(full)
            self.preprocessing = vit.Preprocessing(resize_size=size, crop_size=size, mean=mean, std=std)
        self.model.to(self.device).train()
        self.mean = torch.tensor(self.preprocessing.mean, device=self.device)
        self.std = torch.tensor(self.preprocessing.std, device=self.device)
        self.image_size = self.model.config.image_size

        self.optimizer = torch.optim.AdamW(param_groups(self.model, c.weight_decay), lr=c.lr)
        self.steps_per_epoch = math.ceil(len(self.train_set) // self.world / c.batch_size)
        self.total_steps = self.steps_per_epoch * c.epochs
        self.warmup_steps = round(c.warmup_epochs * self.steps_per_epoch)
        self.forward = self.model
        if self.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.forward = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        if c.compile:
            self.forward = torch.compile(self.forward)

        self.epoch = 0  # finished epochs
        self.step = 0  # finished optimizer steps
        self.history: list[dict] = []
        self.elapsed = 0.0  # training wall-clock seconds over all sessions
        self.commands = [command_line()]
        self.code_commits = [git_commit()]  # read now: the worktree may move on while a long run trains
        self.data_sha256 = sha256_file(c.data_archive) if c.data_archive and self.rank == 0 else None
        self.stopped = False
        self.final: dict | None = None  # the accuracies measured after the last epoch
        if saved is not None:
            self._restore_state(saved)

    # -- setup ---------------------------------------------------------------------------

    def _init_distributed(self) -> None:
        """torchrun sets WORLD_SIZE/RANK/LOCAL_RANK: one process per GPU (or CPU share)."""
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        device = resolve_device(self.config.device)
        if self.world > 1:
            if device.type == "cuda":
                device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
                torch.cuda.set_device(device)
            if not dist.is_initialized():
                dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        self.device = device

    def _read_last(self) -> tuple[vit.VisionTransformer, vit.ModelMeta]:
        path = self.out / LAST
        if not path.is_file():
            raise TrainingError(f"--resume: {path} does not exist (nothing to resume in {self.out})")
        model, meta = vit.load_checkpoint(path)
        if "train_config" not in meta.info:
            raise TrainingError(f"--resume: {path} is a model checkpoint, not a training state")
        return model, meta

    def _restore_model(self, saved) -> tuple[vit.VisionTransformer, vit.Preprocessing]:
        model, meta = saved
        if meta.class_names != self.class_names:
            raise TrainingError(f"--resume: the data's classes {self.class_names} differ from {meta.class_names}")
        return model, meta.preprocessing

    def _restore_state(self, saved) -> None:
        _, meta = saved
        info = meta.info
        self.optimizer.load_state_dict(unflatten_optimizer(meta.extra, info["optimizer"]))
        self.epoch, self.step = info["epoch"], info["step"]
        self.history = info["history"]
        self.elapsed = info["train_seconds"]
        self.commands = info["commands"] + self.commands
        self.code_commits = info["code_commits"] + self.code_commits  # one per session, like commands
        self.data_sha256 = info.get("data_sha256")
        if self.rank == 0:  # the metrics file may hold an epoch the checkpoint does not
            self._rewrite_metrics()

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> dict:
        """Train the remaining epochs, then evaluate; returns the final summary."""
        c = self.config
        if self.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            self._log(
                f"training {c.model} ({sum(p.numel() for p in self.model.parameters()):,} parameters) on "
                f"{describe_device(self.device)}, {self.world} process(es): {len(self.train_set)} train / "
                f"{len(self.val_set)} validation images, epochs {self.epoch + 1}..{c.epochs}, "
                f"checkpoints in {self.out}"
            )
        if self.hooks.on_start:
            self.hooks.on_start(self)
        while self.epoch < c.epochs and not self.stopped:
            started = time.perf_counter()
            train_loss, train_acc, img_per_s = self._train_epoch()
            if self.stopped:
                break
            val = self.evaluate(self.val_set)
            seconds = time.perf_counter() - started
            self.elapsed += seconds
            self.epoch += 1
            record = {
                "epoch": self.epoch,
                "train_loss": train_loss,
                "train_acc": train_acc,
                "val_loss": val["loss"],
                "val_acc": val["acc"],
                "lr": self.optimizer.param_groups[0]["lr"],
                "img_per_s": img_per_s,
                "seconds": seconds,
            }
            self.history.append(record)
            if self.rank == 0:
                self._save_last()
                self._save_model()
                with open(self.out / METRICS, "a") as f:
                    f.write(json.dumps(record) + "\n")
                self._log(
                    f"epoch {self.epoch}/{c.epochs}: train loss {train_loss:.4f} acc {train_acc:.4f}, "
                    f"val loss {val['loss']:.4f} acc {val['acc']:.4f}, {img_per_s:.0f} img/s, {seconds:.0f} s"
                )
            if self.hooks.on_epoch:
                self.hooks.on_epoch(self, record)
        summary = self._finish()
        if self.world > 1:
            dist.barrier()
        return summary

    def _train_epoch(self) -> tuple[float, float, float]:
        """One pass over this rank's shard: (mean loss, accuracy, images per second)."""
        c = self.config
        seed = _epoch_seed(c.seed, self.epoch, self.rank)
        torch.manual_seed(seed)  # dropout and stochastic depth
        gen = torch.Generator(self.device).manual_seed(seed)  # augmentation
        # Every rank draws the same permutation, then takes every world-th index of it.
        order = torch.randperm(
            len(self.train_set), generator=torch.Generator().manual_seed(_epoch_seed(c.seed, self.epoch, 0))
        )
        per_rank = len(order) // self.world
        shard = order[self.rank : per_rank * self.world : self.world].to(self.device)
        self.forward.train()
        loss_sum = torch.zeros((), device=self.device)
        correct = torch.zeros((), device=self.device, dtype=torch.long)
        seen = 0
        started = time.perf_counter()
        bar = tqdm(
            total=self.steps_per_epoch,
            desc=f"epoch {self.epoch + 1}/{c.epochs}",
            disable=not self.progress,
            dynamic_ncols=True,
            leave=False,
        )
        for i in range(self.steps_per_epoch):
            if self.hooks.should_stop and self.hooks.should_stop():
                self.stopped = True
                break
            index = shard[i * c.batch_size : (i + 1) * c.batch_size]
            labels = self.train_set.labels[index]
            x, targets = augment_batch(
                self.train_set.images[index], labels, len(self.class_names), c.augment, self.mean, self.std, gen
            )
            x = _resize(x, self.image_size)
            for group in self.optimizer.param_groups:
                group["lr"] = lr_at(self.step, self.total_steps, self.warmup_steps, c.lr)
            loss, logits = train_step(self.forward, self.optimizer, x, targets, c.label_smoothing, c.clip_grad)
            self.step += 1
            loss_sum += loss * len(index)
            correct += (logits.argmax(dim=-1) == labels).sum()
            seen += len(index)
            # Check for divergence and refresh the bar every few steps: each check waits for the GPU.
            if i % 10 == 9 or i == self.steps_per_epoch - 1:
                self._check_finite(loss_sum)
                rate = seen * self.world / (time.perf_counter() - started)
                bar.set_postfix(
                    loss=f"{loss_sum.item() / seen:.3f}", acc=f"{correct.item() / seen:.3f}", img_s=f"{rate:.0f}"
                )
            bar.update(1)
            if self.hooks.on_step:
                self.hooks.on_step(self, i + 1)
        bar.close()
        seconds = time.perf_counter() - started
        totals = self._all_reduce(
            torch.stack([loss_sum, correct.to(loss_sum.dtype), torch.tensor(float(seen), device=self.device)])
        )
        count = max(totals[2].item(), 1)
        return totals[0].item() / count, totals[1].item() / count, totals[2].item() / max(seconds, 1e-9)

    def _check_finite(self, loss_sum: Tensor) -> None:
        if not torch.isfinite(loss_sum):
            last = self.out / LAST
            kept = f"the last good checkpoint is {last} (epoch {self.epoch})" if last.is_file() else "no checkpoint yet"
            raise TrainingError(
                f"the training loss became {loss_sum.item()} in epoch {self.epoch + 1} (step {self.step}); "
                f"stopping, {kept}. Try a lower --lr, a longer --warmup-epochs or --clip-grad."
            )

    def _all_reduce(self, t: Tensor) -> Tensor:
        if self.world > 1:
            dist.all_reduce(t)
        return t

    def evaluate(self, data: ImageSet) -> dict:
        """Loss and accuracy on `data`, each rank scoring its share and the sums combined."""
        index = torch.arange(self.rank, len(data), self.world, device=data.labels.device)
        logits = predict(
            self.model, data.images[index], self.mean, self.std, self.image_size, self.config.eval_batch_size
        )
        labels = data.labels[index].to(self.device)
        loss = F.cross_entropy(logits, labels, reduction="sum") if len(index) else torch.zeros((), device=self.device)
        correct = (logits.argmax(dim=-1) == labels).sum().to(loss.dtype)
        totals = self._all_reduce(torch.stack([loss, correct, torch.tensor(float(len(index)), device=self.device)]))
        return {"loss": totals[0].item() / totals[2].item(), "acc": totals[1].item() / totals[2].item()}

    def _finish(self) -> dict:
        """After the last epoch: clean accuracies on train / validation / test, saved with the model."""
        c = self.config
        summary: dict = {"epochs_done": self.epoch, "stopped": self.stopped}
        if self.stopped:
            if self.rank == 0:
                self._save_model()
                self._log(f"stopped in epoch {self.epoch + 1}; the model so far is in {self.out / MODEL}")
            return summary
        summary["train_acc"] = self.evaluate(self.train_set)["acc"]
        summary["val_acc"] = self.history[-1]["val_acc"] if self.history else None
        if c.eval_test:
            test = load_split(c.data, "test", download=c.download)
            if test.class_names != self.class_names:
                raise TrainingError(f"test classes {test.class_names} differ from train classes {self.class_names}")
            summary["test_acc"] = self.evaluate(test.to(self.device))["acc"]
        self.final = summary
        if self.rank == 0:
            self._save_last()
            self._save_model()
            self._log(
                "final: " + ", ".join(f"{k} {v:.4f}" for k, v in summary.items() if k.endswith("acc") and v is not None)
            )
            self._log(f"model: {self.out / MODEL}   training state: {self.out / LAST}   metrics: {self.out / METRICS}")
        return summary

    # -- checkpoints ---------------------------------------------------------------------

    def _info(self) -> dict:
        """What a model checkpoint records about how it was made."""
        return {
            "trained_with": "python -m training",
            "command": self.commands[0],
            "commands": self.commands,
            "code_commit": self.code_commits[0],
            "code_commits": self.code_commits,
            "data": self.config.data,
            "data_archive": self.config.data_archive,
            "data_sha256": self.data_sha256,
            "device": describe_device(self.device),
            "processes": self.world,
            "torch": torch.__version__,
            "epochs": self.config.epochs,
            "epoch": self.epoch,
            "step": self.step,
            "train_seconds": self.elapsed,
            "history": self.history,
            "final": self.final,
            "train_config": self.config.to_dict(),
        }

    def _save_model(self) -> None:
        vit.save_checkpoint(
            self.model,
            self.out / MODEL,
            class_names=self.class_names,
            preprocessing=self.preprocessing,
            stopped=self.stopped,
            **self._info(),
        )

    def _save_last(self) -> None:
        tensors, optimizer = flatten_optimizer(self.optimizer.state_dict())
        scheduler = {
            "name": "warmup_cosine",
            "step": self.step,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }
        rng = {"scheme": "torch.manual_seed(f(seed, epoch, rank)) at every epoch start", "seed": self.config.seed}
        vit.save_checkpoint(
            self.model,
            self.out / LAST,
            class_names=self.class_names,
            preprocessing=self.preprocessing,
            extra=tensors,
            optimizer=optimizer,
            scheduler=scheduler,
            rng=rng,
            **self._info(),
        )

    def _rewrite_metrics(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.out / METRICS, "w") as f:
            f.writelines(json.dumps(record) + "\n" for record in self.history)

    def _log(self, message: str) -> None:
        if self.progress:
            tqdm.write(message)


def train(config: TrainConfig, *, resume: bool = False, hooks: Hooks | None = None, progress: bool = True) -> dict:
    """Run (or resume) a training run; returns the final summary."""
    return Trainer(config, resume=resume, hooks=hooks, progress=progress).run()
