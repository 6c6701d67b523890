"""A Hugging Face Space's conventions: README.md's front matter names and preloads exactly the
Hub repos of the weights the app opens on there (docs/space.md)."""

from pathlib import Path

import yaml

import vit
from ui.settings import SPACE_MODEL, space_weights

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
    wanted = {vit.pretrained_repo(n): sorted(vit.pretrained_files(n)) for n in space_weights()}
    assert preloaded == wanted
    assert len(preloaded) <= 10  # the Hub refuses more: "preload models limited to 10"


def test_a_space_opens_on_an_imagenet_model_the_lessons_use_too():
    assert space_weights()[0] == SPACE_MODEL and space_weights().count(SPACE_MODEL) == 1
    assert SPACE_MODEL in vit.list_pretrained()
