"""Put the app on your own Hugging Face Space: `python -m bench.deploy YOU/vit-explorer` (README).

It makes the Space (Gradio, on ZeroGPU; an existing one is left as it is) and uploads, in one
commit, exactly the files git tracks among the app's (`APP_PATHS`: app.py, README.md, requirements.txt,
the packages, the bundled weights, the example photos), from this folder. What git does not track
never goes, whatever is beside them: a venv under training/, a token in ui/.hf_token.py, a scratch
module, a student's photo dropped into examples/ (issue 56: README's `hf upload --include "ui/*.py"`
sent every such file, as `*` crosses `/`). A tracked file changed since the last commit stops it
(the Space would get what no commit holds: commit, or pass `--allow-modified`).

    python -m bench.deploy YOU/vit-explorer --dry-run   # the files it would send, one a line; no Hub

It needs only huggingface_hub (installed with Gradio) and git; log in once with `hf auth login`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What a Space runs the app from, as git pathspecs (`*` also crosses `/` here, but only among
# tracked files): not the tests, benchmarks, docs and their pictures, nor examples/cifar10/pick.py.
APP_PATHS = (
    "app.py",
    "README.md",
    "requirements.txt",
    "vit",
    "explorer",
    "ui",
    "training",
    "checkpoints/vit_cifar10_tiny.safetensors",
    "examples/cifar10/*.jpg",
)
SPACE_SDK, SPACE_HARDWARE = "gradio", "zero-a10g"  # huggingface_hub's SpaceHardware name for ZeroGPU


def git(folder: Path, *args: str) -> list[str]:
    """A git command's output in `folder`, one entry per NUL-separated name (`-z`: a name with a
    newline or a quote in it is still one name, never a path git had to quote)."""
    out = subprocess.run(["git", *args], cwd=folder, capture_output=True, check=True).stdout
    return [name.decode() for name in out.split(b"\0") if name]


def app_files(folder: Path = REPO) -> list[str]:
    """The files the deploy sends: those git tracks under APP_PATHS in `folder`, sorted (a file
    in git's index that was deleted from the folder is left out: it cannot be sent)."""
    tracked = git(folder, "ls-files", "-z", "--", *APP_PATHS)
    return sorted(name for name in tracked if (folder / name).is_file())


def modified(folder: Path = REPO) -> list[str]:
    """The app's tracked files whose content differs from the last commit (staged or not)."""
    return sorted(git(folder, "diff", "--name-only", "-z", "HEAD", "--", *APP_PATHS))


def upload(space: str, folder: Path, names: list[str]) -> str:
    """Make `space` (or leave it) and commit `names` from `folder` to it, each at its own path:
    named one by one, so no pattern can take a file beside them. Returns the commit's address."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi()
    api.create_repo(space, repo_type="space", space_sdk=SPACE_SDK, space_hardware=SPACE_HARDWARE, exist_ok=True)
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=folder / name) for name in names]
    done = api.create_commit(
        space, operations, repo_type="space", commit_message=f"Deploy the app's {len(names)} tracked files"
    )
    return done.commit_url


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("space", help="the Space, as YOUR_NAME/SPACE_NAME")
    p.add_argument("--dry-run", action="store_true", help="print the files it would send and stop")
    p.add_argument("--allow-modified", action="store_true", help="send tracked files changed since the last commit")
    p.add_argument("--folder", default=str(REPO), help=argparse.SUPPRESS)  # a checkout other than this one (tests)
    args = p.parse_args(argv)
    folder = Path(args.folder)
    names = app_files(folder)
    if args.dry_run:
        print("\n".join(names))
        return 0
    changed = modified(folder)
    if changed and not args.allow_modified:
        print(f"not deployed: changed since the last commit: {', '.join(changed)}", file=sys.stderr)
        print("commit them (or pass --allow-modified to send them as they are)", file=sys.stderr)
        return 2
    print(f"{len(names)} files to {args.space}: {upload(args.space, folder, names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
