"""explorer.explain: the server-wide explanation store bounded in bytes, and the size check before a forward pass."""

from __future__ import annotations

import threading

import pytest
import torch
from PIL import Image

import vit
from explorer.explain import ExplanationStore, ExplanationTooLarge, attention_bytes, explain
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES


@pytest.fixture(scope="module")
def model() -> vit.VisionTransformer:
    torch.manual_seed(0)
    return vit.create_model("vit_cifar_nano").eval()


def explanation(model, colour=(200, 30, 30), size=(32, 32)):
    return explain(model, list(CIFAR10_CLASSES), CIFAR10, Image.new("RGB", size, colour))


def test_attention_bytes_is_what_the_maps_take(model) -> None:
    ex = explanation(model)
    assert attention_bytes(model, (32, 32)) == sum(a.nbytes for a in ex.attention) == 6 * 4 * 65 * 65 * 4
    assert ex.nbytes > attention_bytes(model, (32, 32))


def test_an_input_too_large_for_the_budget_is_refused_before_the_forward_pass(model) -> None:
    calls = []
    hook = model.register_forward_pre_hook(lambda m, a: calls.append(1))
    try:
        with pytest.raises(
            ExplanationTooLarge,
            match=r"would take [1-9][\d,]* MiB, more than this server's 0 MiB budget: use the centre-crop",
        ):
            explain(model, list(CIFAR10_CLASSES), CIFAR10, Image.new("RGB", (320, 96)), "whole", max_bytes=1000)
    finally:
        hook.remove()
    assert calls == []


def test_the_store_stays_within_its_byte_budget_evicting_the_oldest(model) -> None:
    one = explanation(model).nbytes
    store = ExplanationStore(max_bytes=2 * one + one // 2)  # room for two
    for key in "abc":
        store.get(key, lambda: explanation(model))
    assert store.nbytes <= store.max_bytes and store.nbytes == 2 * one
    computed = []
    store.get("a", lambda: computed.append("a") or explanation(model))  # "a" was evicted: computed again
    store.get("c", lambda: computed.append("c") or explanation(model))  # "c" is still there
    assert computed == ["a"]


def test_concurrent_requests_for_one_key_compute_it_once(model) -> None:
    store, computed = ExplanationStore(), []
    start = threading.Barrier(4)

    def ask() -> None:
        start.wait()
        store.get("same", lambda: computed.append(1) or explanation(model))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert computed == [1]


def test_a_picture_is_shared_within_its_network_and_a_public_one_by_all(model, tmp_path, monkeypatch) -> None:
    """Issue 56: the store answered a picture another session had analysed in a fraction of a
    fresh pass's time, telling any visitor whether anyone had analysed a given photo. Now a
    picture's pass is shared by the sessions of one network only (a class behind its router), and
    the app's own examples (public: `ExplanationStore.public`) by everyone. Passes counted, not timed."""
    from explorer import explain as explain_module
    from explorer.explain import content_digest, explain_file
    from explorer.loaded import LoadedModel

    loaded = LoadedModel("nano", "nano", model, vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10))
    photo, example = tmp_path / "photo.png", tmp_path / "cat.png"
    Image.new("RGB", (32, 32), (200, 30, 30)).save(photo)
    Image.new("RGB", (32, 32), (30, 30, 200)).save(example)
    passes = []
    real = explain_module.explain
    monkeypatch.setattr(explain_module, "explain", lambda *a, **k: passes.append(1) or real(*a, **k))
    store = ExplanationStore(public={content_digest(str(example))})
    school, elsewhere = "198.51.100.2", "203.0.113.66"

    first, ex = explain_file(loaded, str(photo), "crop", store, network=school)
    classmate, same = explain_file(loaded, str(photo), "crop", store, network=school)
    assert len(passes) == 1 and same is ex and classmate == first  # one pass for the room
    stranger, fresh = explain_file(loaded, str(photo), "crop", store, network=elsewhere)
    assert len(passes) == 2 and fresh is not ex and stranger != first  # a pass of its own: nothing learnt
    assert (first.within, stranger.within) == (school, elsewhere)

    explain_file(loaded, str(example), "crop", store, network=school)
    public, _ = explain_file(loaded, str(example), "crop", store, network=elsewhere)
    assert len(passes) == 3 and public.within == ""  # the app's own pictures: one pass for everyone
    assert store.sharing("any", None) == ""  # a caller naming no network (a script, a benchmark) shares
