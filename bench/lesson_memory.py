"""Peak memory of the app with every lesson's default models loaded, printed as Markdown.

    python -m bench.lesson_memory --model /tmp/vit_s16.safetensors   # the Explore model beside them

Starts the app with timm's pretrained download replaced by `timm.create_model(pretrained=False)`
(random weights of the real shapes, through the app's own conversion `vit.from_timm`), so it
runs with no network. Then one visitor on the Explore tab (/analyze) and one on each lesson
(/lesson_compare with its three models, /lesson_token_norms with the two ViT-L/14, /lesson_heads_off)
all at once, for `--rounds` rounds; prints the server's peak resident memory (VmHWM) after
each step against a free Hugging Face Space's 16 GB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.serving import gradio_client
from bench.visitors import EXAMPLES, Server, load_average, machine

SPACE_BYTES = 16 * 10**9  # a free CPU Space: 16 GB of RAM (2 vCPUs)


def offline_timm(timm, name: str):  # noqa: ANN001, ANN201 - stands in for vit.weights._create_timm_pretrained
    """timm's model of the real shape, random weights: what the download would have filled."""
    return timm.create_model(name, pretrained=False)


def serve(app_args: list[str]) -> None:
    """Run app.py with the offline stand-in for pretrained timm weights."""
    import app
    import vit.weights

    vit.weights._create_timm_pretrained = offline_timm
    app.main(app_args)


def visits(image: str) -> dict[str, dict]:
    """One visitor per endpoint: the Explore tab and each lesson with its default models."""
    from gradio_client import handle_file

    from explorer.lessons import COMPARED, RANKED, WITH_REGISTERS, WITHOUT_REGISTERS

    picture = handle_file(image)
    return {
        "analyze": {"image": picture, "model_key": "bundled", "mode": "crop"},
        "lesson_compare": {"image": picture, "models": list(COMPARED), "cmap": "inferno"},
        "lesson_token_norms": {
            "image": picture,
            "with_registers": WITH_REGISTERS,
            "without_registers": WITHOUT_REGISTERS,
            "layer": 24,
            "cmap": "inferno",
        },
        "lesson_heads_off": {"image": picture, "model_key": RANKED, "heads": "1.1"},
    }


def one_round(url: str, image: str) -> dict[str, str]:
    """Every visit at once, each its own client; returns seconds (or the error) per endpoint."""
    results: dict[str, str] = {}

    def visit(name: str, kwargs: dict) -> None:
        client = gradio_client(url)
        began = time.perf_counter()
        try:
            client.predict(**kwargs, api_name=f"/{name}")
            results[name] = f"{time.perf_counter() - began:.1f} s"
        except Exception as e:  # noqa: BLE001 - reported, the other visits go on
            results[name] = f"error: {type(e).__name__}: {e}"[:300]
        client.close()

    threads = [threading.Thread(target=visit, args=item) for item in visits(image).items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="the Explore tab's model (app.py --model); default: the bundled one")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--serve", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)  # the server process itself
    args = p.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp), 2048, model=args.model, module="bench.lesson_memory")
        try:
            server.wait()
            print(f"machine: {machine()}; {load_average()}")
            print(f"server: `{' '.join(server.command[1:])}`")
            print(f"after start-up: VmHWM {server.peak_bytes() / 2**20:.0f} MiB")
            for r in range(args.rounds):
                results = one_round(server.url, str(EXAMPLES / "cat.jpg"))
                done = ", ".join(f"{k} {v}" for k, v in results.items())
                print(f"round {r + 1}: {done}; VmHWM {server.peak_bytes() / 2**20:.0f} MiB ({load_average()})")
            peak = server.peak_bytes()
            print(f"peak {peak / 2**30:.2f} GiB = {peak / SPACE_BYTES:.0%} of a free Space's 16 GB")
        finally:
            server.stop()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
