"""A Hugging Face Space's conventions: README.md's front matter names and preloads exactly the
Hub repos of the weights the app opens on there (docs/space.md)."""

from pathlib import Path

import yaml

import vit
from ui.settings import NOT_PRELOADED, SPACE_MODEL, preloaded_weights, space_weights

README = Path(__file__).resolve().parents[1] / "README.md"


def front_matter() -> dict:
    _, block, _ = README.read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(block)


def test_the_front_matter_names_exactly_the_repos_a_space_opens_on():
    repos = [vit.pretrained_repo(name) for name in space_weights()]
    assert front_matter()["models"] == repos


def test_the_front_matter_preloads_every_file_those_weights_load_from():
    preloaded = {}
    for entry in front_matter()["preload_from_hub"]:
        repo, files = entry.split()  # "repo file1,file2": no commit, the Hub's main as the app downloads it
        preloaded[repo] = sorted(files.split(","))
    wanted = {vit.pretrained_repo(n): sorted(vit.pretrained_files(n)) for n in preloaded_weights()}
    assert preloaded == wanted
    assert len(preloaded) <= 10  # the Hub refuses more: "preload models limited to 10"


def test_the_build_preloads_only_safetensors_files_every_public_snapshot_has():
    """A file the front matter names that a repo lacks fails the Space's build for everyone: CLIP
    B/16's repo listed only a pickle in a public snapshot (issue 60), so the app downloads it itself."""
    files = [f for entry in front_matter()["preload_from_hub"] for f in entry.split()[1].split(",")]
    assert files and all(f.endswith((".safetensors", ".json")) for f in files)  # never a pickle
    assert set(NOT_PRELOADED) <= set(space_weights())  # still opened on, downloaded by the app itself
    assert not set(NOT_PRELOADED) & set(preloaded_weights())


def test_a_space_opens_on_an_imagenet_model_the_lessons_use_too():
    assert space_weights()[0] == SPACE_MODEL and space_weights().count(SPACE_MODEL) == 1
    assert SPACE_MODEL in vit.list_pretrained()


# ZeroGPU's supported versions (hub-docs docs/hub/spaces-zerogpu.md, "Supported Versions", as of
# 2026-11; the PyTorch list grew by 2.12.1 and 2.13.0 in hub-docs PR #2763): a Space whose
# Python or torch is not listed fails to build ("No candidate PyTorch version found for ZeroGPU").
ZEROGPU_PYTHONS = ("3.12", "3.10")
ZEROGPU_TORCH = ("2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0")
TORCHVISION_FOR = {"2.13.0": "0.28.0"}  # the pair released together, installed and imported together here


def pins() -> dict[str, str]:
    lines = (README.parent / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return dict(line.split("#")[0].strip().split("==") for line in lines if "==" in line.split("#")[0])


def test_a_zerogpu_space_builds_with_these_pins():
    assert str(front_matter()["python_version"]) in ZEROGPU_PYTHONS
    assert pins()["torch"] in ZEROGPU_TORCH
    assert pins()["torchvision"] == TORCHVISION_FOR[pins()["torch"]]  # the pair PyTorch releases together
    assert "spaces" in pins()  # @spaces.GPU (ui/zerogpu.py); inert off ZeroGPU


def test_ci_runs_the_readme_test_command_verbatim():
    readme = README.read_text(encoding="utf-8")
    command = (README.parent / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert f"```bash\n{command}\n```" in readme
    assert "PIP_FIND_LINKS=$(mktemp -d)" in command  # PyPI's torch, not a local CPU-only wheel (README)
