"""`python -m training`: train or fine-tune a ViT from the command line."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

import vit

from .augment import AugmentConfig
from .config import TrainConfig
from .data import DataError
from .engine import TrainingError, train
from .provenance import command_line

# CLI option -> (TrainConfig or AugmentConfig field, type, help). Defaults come from the dataclasses.
_TRAIN_OPTIONS = {
    "model": (str, "preset, pretrained name or weights file (presets: {presets})"),
    "data": (str, "'cifar10' (torchvision, downloads) or a folder root/{{train,test}}/<class>/*.jpg"),
    "epochs": (int, "epochs to train"),
    "batch_size": (int, "images per step and process"),
    "lr": (float, "peak AdamW learning rate"),
    "weight_decay": (float, "AdamW weight decay (not on norms, biases, pos_embed, cls_token)"),
    "warmup_epochs": (
        float,
        "linear warm-up in epochs before the cosine decay, shorter than --epochs (None: 10%% "
        "of the run, at least one step)",
    ),
    "label_smoothing": (float, "label smoothing"),
    "clip_grad": (float, "max gradient norm, 0 for none"),
    "drop_path": (float, "stochastic depth rate (default: the model's own)"),
    "image_size": (int, "training resolution (default: the data's for presets, the model's otherwise)"),
    "holdout": (int, "training images held out for validation"),
    "seed": (int, "random seed"),
    "device": (str, "auto, cpu, cuda or cuda:N"),
    "threads": (int, "CPU threads for torch"),
    "eval_batch_size": (int, "batch size for evaluation"),
    "data_archive": (str, "archive the data folder was unpacked from: its sha256 goes into the checkpoint"),
}
_AUGMENT_OPTIONS = {
    "crop_padding": (int, "random crop after padding by this many pixels, 0 for none"),
    "randaug_ops": (int, "RandAugment-style ops per image, 0 for none"),
    "randaug_magnitude": (float, "their strength, 0..1"),
    "mixup_alpha": (float, "MixUp Beta alpha, 0 for none"),
    "cutmix_alpha": (float, "CutMix Beta alpha, 0 for none"),
    "erase_prob": (float, "random erasing probability"),
}
_FLAGS = {  # boolean options: --name / --no-name
    "compile": "torch.compile the model",
    "cuda_graph": "replay each training step as one CUDA graph (one CUDA GPU; drops each epoch's last, smaller batch)",
    "deterministic": "deterministic algorithms (bitwise reproducible on one machine)",
    "eval_test": "evaluate the test split after the last epoch",
    "download": "let torchvision download CIFAR-10",
    "flip": "random horizontal flips",
}


def _default(name: str) -> object:
    for cls in (TrainConfig, AugmentConfig):
        for f in fields(cls):
            if f.name == name:
                return getattr(cls(), name)
    raise KeyError(name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training",
        description="Train a ViT from scratch or fine-tune one. Every epoch writes OUT/last.safetensors (the "
        "full training state, for --resume), OUT/model.safetensors (the model, for vit.load_checkpoint and the app) "
        "and a line of OUT/metrics.jsonl. Runs under `torchrun --nproc_per_node=N -m training` as DDP.",
    )
    parser.add_argument("--out", default=_default("out"), help="output folder (default: %(default)s)")
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --out exactly; its saved config is used"
    )
    presets = ", ".join(vit.list_models())
    for group, options in (("training", _TRAIN_OPTIONS), ("augmentation", _AUGMENT_OPTIONS)):
        g = parser.add_argument_group(group)
        for name, (kind, text) in options.items():
            # default=None marks "not given", so --resume can refuse options it would ignore.
            text = text.format(presets=presets) + f" (default: {_default(name)})"
            g.add_argument(f"--{name.replace('_', '-')}", type=kind, default=None, help=text)
    g = parser.add_argument_group("switches")
    for name, text in _FLAGS.items():
        g.add_argument(
            f"--{name.replace('_', '-')}",
            action=argparse.BooleanOptionalAction,
            default=None,
            help=f"{text} (default: {_default(name)})",
        )
    return parser


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    given = {k: v for k, v in vars(args).items() if v is not None and k not in ("out", "resume")}
    augment_names = {f.name for f in fields(AugmentConfig)}
    augment = AugmentConfig(**{k: v for k, v in given.items() if k in augment_names})
    return TrainConfig(out=args.out, augment=augment, **{k: v for k, v in given.items() if k not in augment_names})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    given = sorted(k for k, v in vars(args).items() if v is not None and k not in ("out", "resume"))
    if args.resume and given:
        print(f"error: --resume continues with the saved config; drop {['--' + k.replace('_', '-') for k in given]}")
        return 2
    try:
        train(config_from_args(args), resume=args.resume, command=command_line(argv))
    except (ValueError, TrainingError) as e:  # DataError and CheckpointError are ValueErrors
        kind = "data error" if isinstance(e, DataError) else "error"
        print(f"{kind}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; resume with: python -m training --resume --out " + args.out, file=sys.stderr)
        return 130
    return 0
