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
