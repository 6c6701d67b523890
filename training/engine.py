"""The training loop: a `Trainer` set up from a `TrainConfig` (data, model, optimizer, DDP),
its epochs, evaluation and resumable checkpoints.

The parts live beside it: config.py (what to do), device_data.py (data on the device and the
per-epoch seeding that makes resume exact), optim.py (optimizer, schedule, loss, one step),
provenance.py (how the model was made), run_files.py (what a run writes).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm import tqdm

import vit

from .config import TrainConfig, describe_device, resolve_device
from .data import ImageSet, holdout_split, load_split
from .device_data import Normalizer, channel_stats, epoch_seed, epoch_shard, predict
from .optim import lr_at, make_optimizer, tensor_lr, warmup_steps
from .provenance import Provenance, command_line, config_argv, public_info
from .run_files import LAST, METRICS, MODEL, append_metrics, write_metrics
from .sources import adapt, load_source
from .state import flatten_optimizer, unflatten_optimizer
from .step import TrainStep

LOG_EVERY = 10  # steps between reads of the loss on the host (each read waits for the GPU)
POSITION_PREFIX = "position/"  # extra tensors of a training state saved inside an epoch


class TrainingError(RuntimeError):
    """Training cannot go on; the message says why and where the last good checkpoint is."""


@dataclass
class Hooks:
    """Callbacks for a UI (training/job.py); the CLI uses none."""

    on_start: Callable[[Trainer], None] | None = None  # after setup, before the first step
    on_step: Callable[[Trainer, int], None] | None = None  # after each step, with the step in the epoch
    on_epoch: Callable[[Trainer, dict], None] | None = None  # after each epoch's checkpoint, with its record
    should_stop: Callable[[], bool] | None = None  # polled every step: True ends the run gracefully
    # polled every step after should_stop: True saves the resumable state, in-epoch position included,
    # and returns from run() without finishing (training/chunks.py: one chunk of a run)
    should_pause: Callable[[], bool] | None = None


@dataclass
class EpochPosition:
    """Where a run left an epoch: what continuing it bit for bit needs besides the model and
    the optimizer (the shuffle is recomputed from the seed and the epoch)."""

    step: int  # steps done in the epoch
    seconds: float  # training seconds spent in it so far
    totals: Tensor  # (3,) running loss sum, correct count, images
    rng: dict[str, Tensor]  # torch's global RNG ("cpu", and "cuda" on a GPU), the augmentation generator ("augment")

    def tensors(self) -> dict[str, Tensor]:
        """The tensors a training state stores under `extra/`."""
        return {
            f"{POSITION_PREFIX}totals": self.totals,
            **{f"{POSITION_PREFIX}rng/{k}": v for k, v in self.rng.items()},
        }

    @classmethod
    def read(cls, info: dict | None, extra: dict[str, Tensor]) -> EpochPosition | None:
        """The position saved with a training state, or None when it was saved at an epoch's end."""
        if not info:
            return None
        prefix = f"{POSITION_PREFIX}rng/"
        rng = {k[len(prefix) :]: v for k, v in extra.items() if k.startswith(prefix)}
        return cls(info["step"], info["seconds"], extra[f"{POSITION_PREFIX}totals"], rng)


def read_training_state(out: Path) -> tuple[vit.VisionTransformer, vit.ModelMeta]:
    """The model and metadata of `out/last.safetensors`, for --resume."""
    path = out / LAST
    if not path.is_file():
        raise TrainingError(f"--resume: {path} does not exist (nothing to resume in {out})")
    model, meta = vit.load_checkpoint(path)
    if "train_config" not in meta.info:
        raise TrainingError(f"--resume: {path} is a model checkpoint, not a training state")
    return model, meta


def configure_torch(config: TrainConfig) -> None:
    """Process-wide torch settings a run asks for."""
    if config.threads:
        torch.set_num_threads(config.threads)
    if config.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    torch.manual_seed(config.seed)


class Trainer:
    """One training run: `Trainer(config).run()`. With `resume=True` it continues from
    `out/last.safetensors`, whose saved config replaces `config`. `command` is what the
    checkpoints record as the command (the CLI's own; default: the options that repeat `config`)."""

    def __init__(
        self,
        config: TrainConfig,
        *,
        resume: bool = False,
        hooks: Hooks | None = None,
        progress: bool = True,
        command: str | None = None,
    ):
        self.hooks = hooks or Hooks()
        self.command = command or command_line(config_argv(config, TrainConfig()))
        self.out = Path(config.out)
        saved = read_training_state(self.out) if resume else None
        if saved is not None:
            config = TrainConfig.from_dict({**saved[1].info["train_config"], "out": str(self.out)})
        config.validate()
        self.config = config
        self._init_distributed()
        self.progress = progress and self.rank == 0
        configure_torch(config)
        full = self._load_data()
        self._build_model(saved, full)
        self._build_optimizer()
        self._init_run_state(saved)

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
        if self.config.cuda_graph and (device.type != "cuda" or self.world > 1):
            raise ValueError("--cuda-graph needs one CUDA GPU and one process (not torchrun's DDP)")
        self.device = device

    def _load_data(self) -> ImageSet:
        """The training split, less the held-out validation images, on the device; returns the whole split."""
        full = load_split(self.config.data, "train", download=self.config.download)
        self.class_names = full.class_names
        train, val = holdout_split(full, self.config.holdout, seed=self.config.seed)
        self.train_set, self.val_set = train.to(self.device), val.to(self.device)
        return full

    def _build_model(self, saved: tuple[vit.VisionTransformer, vit.ModelMeta] | None, full: ImageSet) -> None:
        """The model to train (restored, or loaded and adapted), its preprocessing, and its forward."""
        c = self.config
        if saved is not None:
            self.model, meta = saved
            if meta.class_names != self.class_names:
                raise TrainingError(f"--resume: the data's classes {self.class_names} differ from {meta.class_names}")
            self.preprocessing = meta.preprocessing
        else:
            source, preprocessing = load_source(c.model)
            size = c.image_size or (full.image_size[0] if preprocessing is None else source.config.image_size)
            self.model = adapt(source, len(self.class_names), size, c.drop_path)
            # Training resizes whole images to `size` (no crop), so the model's record says exactly that.
            mean, std = (preprocessing.mean, preprocessing.std) if preprocessing else channel_stats(full)
            self.preprocessing = vit.Preprocessing(resize_size=size, crop_size=size, mean=mean, std=std)
        self.model.to(self.device).train()
        self.normalize = Normalizer(self.preprocessing, self.device)
        self.image_size = self.model.config.image_size
        self.forward: nn.Module = self.model
        if self.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.forward = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)

    def _build_optimizer(self) -> None:
        c = self.config
        self.optimizer = make_optimizer(self.model, c.lr, c.weight_decay, self.device, capturable=c.cuda_graph)
        # A CUDA graph replays one batch shape, so a graphed epoch drops its last, smaller batch
        # (each epoch's shuffle leaves out different images).
        per_rank = len(self.train_set) // self.world
        self.steps_per_epoch = per_rank // c.batch_size if c.cuda_graph else math.ceil(per_rank / c.batch_size)
        if self.steps_per_epoch == 0:
            raise ValueError(f"--batch-size {c.batch_size} is larger than the {per_rank} training images per process")
        self.total_steps = self.steps_per_epoch * c.epochs
        self.warmup_steps = warmup_steps(c.warmup_epochs, self.steps_per_epoch, self.total_steps)
        self.train_step = TrainStep(
            self.forward,
            self.optimizer,
            augment=c.augment,
            normalize=self.normalize,
            num_classes=len(self.class_names),
            image_size=self.image_size,
            label_smoothing=c.label_smoothing,
            clip_grad=c.clip_grad,
            compile=c.compile,
            cuda_graph=c.cuda_graph,
        )

    def _init_run_state(self, saved: tuple[vit.VisionTransformer, vit.ModelMeta] | None) -> None:
        """Counters, history and provenance: fresh, or continued from the saved state."""
        self.epoch = 0  # finished epochs
        self.step = 0  # finished optimizer steps
        self.history: list[dict] = []
        self.elapsed = 0.0  # training wall-clock seconds over all sessions
        self.stopped = False
        self.paused = False
        self.position: EpochPosition | None = None  # inside the epoch to continue, if saved there
        self.final: dict | None = None  # the accuracies measured after the last epoch
        self.provenance = Provenance.now(self.config.data_archive, hash_archive=self.rank == 0, command=self.command)
        if saved is None:
            return
        meta = saved[1]
        info = meta.info
        self.optimizer.load_state_dict(unflatten_optimizer(meta.extra, info["optimizer"]))
        tensor_lr(self.optimizer)
        self.epoch, self.step = info["epoch"], info["step"]
        self.history = info["history"]
        self.elapsed = info["train_seconds"]
        self.position = EpochPosition.read(info.get("position"), meta.extra)
        self.provenance = self.provenance.after(info)
        if self.rank == 0:
            write_metrics(self.out, self.history)

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> dict:
        """Train the remaining epochs, then evaluate; returns the final summary."""
        self._announce()
        if self.hooks.on_start:
            self.hooks.on_start(self)
        while self.epoch < self.config.epochs and not (self.stopped or self.paused):
            started = time.perf_counter() - (self.position.seconds if self.position else 0.0)
            train_loss, train_acc, img_per_s = self._train_epoch()
            if self.stopped or self.paused:
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
                "lr": float(self.optimizer.param_groups[0]["lr"]),
                "img_per_s": img_per_s,
                "seconds": seconds,
                "elapsed_seconds": self.elapsed,  # cumulative, over all sessions: time-to-accuracy plots
            }
            self._end_epoch(record)
        if self.paused:
            if self.rank == 0:
                self._save_last()
            return {"epochs_done": self.epoch, "stopped": False, "paused": True}
        summary = self._finish()
        if self.world > 1:
            dist.barrier()
        return summary

    def _announce(self) -> None:
        if self.rank != 0:
            return
        c = self.config
        self.out.mkdir(parents=True, exist_ok=True)
        self._log(
            f"training {c.model} ({sum(p.numel() for p in self.model.parameters()):,} parameters) on "
            f"{describe_device(self.device)}, {self.world} process(es): {len(self.train_set)} train / "
            f"{len(self.val_set)} validation images, epochs {self.epoch + 1}..{c.epochs}, "
            f"checkpoints in {self.out}"
        )

    def _end_epoch(self, record: dict) -> None:
        """Record a finished epoch: history, checkpoints, metrics line, log, hook."""
        self.history.append(record)
        if self.rank == 0:
            self._save_last()
            self._save_model()
            append_metrics(self.out, record)
            self._log(
                f"epoch {self.epoch}/{self.config.epochs}: train loss {record['train_loss']:.4f} "
                f"acc {record['train_acc']:.4f}, val loss {record['val_loss']:.4f} acc {record['val_acc']:.4f}, "
                f"{record['img_per_s']:.0f} img/s, {record['seconds']:.0f} s"
            )
        if self.hooks.on_epoch:
            self.hooks.on_epoch(self, record)

    def _epoch_start(self) -> tuple[torch.Generator, Tensor, int, float]:
        """(augmentation generator, running totals, first step, seconds spent) of the epoch:
        seeded from (seed, epoch, rank) at its start, or restored where a saved state left it."""
        seed = epoch_seed(self.config.seed, self.epoch, self.rank)
        torch.manual_seed(seed)  # dropout and stochastic depth
        gen = torch.Generator(self.device).manual_seed(seed)  # augmentation
        position, self.position = self.position, None
        if position is None:
            return gen, torch.zeros(3, device=self.device), 0, 0.0  # loss sum, correct, images: on the device
        torch.set_rng_state(position.rng["cpu"])
        if "cuda" in position.rng:
            torch.cuda.set_rng_state(position.rng["cuda"], self.device)
        gen.set_state(position.rng["augment"])
        return gen, position.totals.to(self.device), position.step, position.seconds

    def _interrupted(self) -> bool:
        """Whether a hook ends (stop) or pauses (chunk budget used up) the run before the next step."""
        self.stopped = bool(self.hooks.should_stop and self.hooks.should_stop())
        self.paused = not self.stopped and bool(self.hooks.should_pause and self.hooks.should_pause())
        return self.stopped or self.paused

    def _rng_states(self, gen: torch.Generator) -> dict[str, Tensor]:
        states = {"cpu": torch.get_rng_state(), "augment": gen.get_state()}
        if self.device.type == "cuda":
            states["cuda"] = torch.cuda.get_rng_state(self.device)
        return states

    def _train_epoch(self) -> tuple[float, float, float]:
        """One pass over this rank's shard, or its rest: (mean loss, accuracy, images per second)."""
        c = self.config
        shard = epoch_shard(len(self.train_set), c.seed, self.epoch, self.rank, self.world, self.device)
        self.forward.train()
        gen, totals, first, spent = self._epoch_start()
        started = time.perf_counter() - spent
        bar = tqdm(
            total=self.steps_per_epoch,
            initial=first,
            desc=f"epoch {self.epoch + 1}/{c.epochs}",
            disable=not self.progress,
            dynamic_ncols=True,
            leave=False,
        )
        for i in range(first, self.steps_per_epoch):
            if self._interrupted():
                self.position = EpochPosition(i, time.perf_counter() - started, totals.clone(), self._rng_states(gen))
                break
            index = shard[i * c.batch_size : (i + 1) * c.batch_size]
            lr = lr_at(self.step, self.total_steps, self.warmup_steps, c.lr)
            totals += self.train_step(self.train_set.images[index], self.train_set.labels[index], gen, lr)
            self.step += 1
            # After the first step too: a live curve shows its first point within seconds of Start.
            if i % LOG_EVERY == LOG_EVERY - 1 or i in (0, self.steps_per_epoch - 1):
                self._report(bar, totals, time.perf_counter() - started)
            bar.update(1)
            if self.hooks.on_step:
                self.hooks.on_step(self, i + 1)
        bar.close()
        seconds = time.perf_counter() - started
        loss_sum, correct, seen = self._all_reduce(totals).tolist()
        count = max(seen, 1)
        return loss_sum / count, correct / count, seen / max(seconds, 1e-9)

    def _report(self, bar: tqdm, totals: Tensor, seconds: float) -> None:
        """Read the running totals on the host: stop on a non-finite loss, refresh the bar."""
        loss_sum, correct, seen = totals.tolist()
        if not math.isfinite(loss_sum):
            last = self.out / LAST
            kept = f"the last good checkpoint is {last} (epoch {self.epoch})" if last.is_file() else "no checkpoint yet"
            raise TrainingError(
                f"the training loss became {loss_sum} in epoch {self.epoch + 1} (step {self.step}); "
                f"stopping, {kept}. Try a lower --lr, a longer --warmup-epochs or --clip-grad."
            )
        rate = seen * self.world / max(seconds, 1e-9)
        # (epochs done, as a fraction; mean train loss of this epoch so far): a UI's live curve
        self.running_loss = (self.step / self.steps_per_epoch, loss_sum / max(seen, 1))
        bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.3f}", img_s=f"{rate:.0f}")

    def _all_reduce(self, t: Tensor) -> Tensor:
        if self.world > 1:
            dist.all_reduce(t)
        return t

    def evaluate(self, data: ImageSet) -> dict:
        """Loss and accuracy on `data`, each rank scoring its share and the sums combined."""
        index = torch.arange(self.rank, len(data), self.world, device=data.labels.device)
        logits = predict(self.model, data.images[index], self.normalize, self.image_size, self.config.eval_batch_size)
        labels = data.labels[index].to(self.device)
        loss = F.cross_entropy(logits, labels, reduction="sum") if len(index) else torch.zeros((), device=self.device)
        correct = (logits.argmax(dim=-1) == labels).sum().to(loss.dtype)
        totals = self._all_reduce(torch.stack([loss, correct, loss.new_full((), float(len(index)))]))
        return {"loss": totals[0].item() / totals[2].item(), "acc": totals[1].item() / totals[2].item()}

    def _finish(self) -> dict:
        """After the last epoch: clean accuracies on train / validation / test, saved with the model."""
        summary: dict = {"epochs_done": self.epoch, "stopped": self.stopped}
        if self.stopped:
            if self.rank == 0:
                self._save_last()  # resumable at the step it stopped
                self._save_model()
                self._log(f"stopped in epoch {self.epoch + 1}; the model so far is in {self.out / MODEL}")
            return summary
        summary["train_acc"] = self.evaluate(self.train_set)["acc"]
        summary["val_acc"] = self.history[-1]["val_acc"] if self.history else None
        if self.config.eval_test:
            test = load_split(self.config.data, "test", download=self.config.download)
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

    def _info(self, resumable: bool = False) -> dict:
        """What a checkpoint records about how it was made, with no path of this machine
        (`public_info`), except in the training state (`resumable`): --resume reads the data
        folder and archive from its config."""
        config = self.config.to_dict()
        info = {
            **self.provenance.to_info(),
            "data": self.config.data,
            "data_archive": self.config.data_archive,
            "device": describe_device(self.device),
            "processes": self.world,
            "epochs": self.config.epochs,
            "epoch": self.epoch,
            "step": self.step,
            "train_seconds": self.elapsed,
            "history": self.history,
            "final": self.final,
            "train_config": config,
        }
        return {**public_info(info), "train_config": config} if resumable else public_info(info)

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
        rng = {
            "scheme": "torch.manual_seed(f(seed, epoch, rank)) at every epoch start; "
            f"inside an epoch, the states under extra/{POSITION_PREFIX}rng/",
            "seed": self.config.seed,
        }
        p = self.position
        vit.save_checkpoint(
            self.model,
            self.out / LAST,
            class_names=self.class_names,
            preprocessing=self.preprocessing,
            extra={**tensors, **(p.tensors() if p else {})},
            optimizer=optimizer,
            scheduler=scheduler,
            rng=rng,
            position={"step": p.step, "seconds": p.seconds} if p else None,
            **self._info(resumable=True),
        )

    def _log(self, message: str) -> None:
        if self.progress:
            tqdm.write(message)


def train(
    config: TrainConfig,
    *,
    resume: bool = False,
    hooks: Hooks | None = None,
    progress: bool = True,
    command: str | None = None,
) -> dict:
    """Run (or resume) a training run; returns the final summary."""
    return Trainer(config, resume=resume, hooks=hooks, progress=progress, command=command).run()
