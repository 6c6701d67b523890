"""The pure helpers of bench/visitors.py (the benchmark itself starts a server: not a test)."""

import math

import numpy as np
import pytest

from bench.visitors import (
    ACTION_WEIGHTS,
    floor_seconds,
    forward_seconds,
    images_for,
    model_shape,
    percentile,
    plan,
    vm_hwm_bytes,
)

STATUS = """Name:\tpython
VmPeak:\t 2000000 kB
VmSize:\t 1900000 kB
VmHWM:\t  864212 kB
VmRSS:\t  800000 kB
"""


def test_percentile_interpolates_between_ranks_as_numpy_does():
    samples = [0.3, 5.0, 1.2, 0.7, 2.5, 0.1, 9.9]
    for q in (0, 50, 95, 100):
        assert percentile(samples, q) == pytest.approx(np.percentile(samples, q))
    assert percentile([4.0], 95) == 4.0


@pytest.mark.parametrize(("samples", "q"), [([], 50), ([1.0], 101), ([1.0], -1)])
def test_percentile_refuses_what_has_no_answer(samples, q):
    with pytest.raises(ValueError):
        percentile(samples, q)


def test_vm_hwm_is_read_in_bytes_from_the_peak_line_not_the_current_one():
    assert vm_hwm_bytes(STATUS) == 864212 * 1024


def test_a_status_without_a_peak_is_refused_with_a_message():
    with pytest.raises(ValueError, match="no VmHWM"):
        vm_hwm_bytes("Name:\tzombie\n")


def test_plans_are_reproducible_and_differ_between_visitors():
    assert plan(3, 12) == plan(3, 12)
    assert plan(3, 12) != plan(4, 12)
    assert set(plan(0, 200)) == set(ACTION_WEIGHTS)


def test_visitors_share_examples_and_every_third_brings_its_own(tmp_path):
    images = images_for(12, tmp_path)
    own = [p for p in images if p.parent == tmp_path]
    assert len(own) == 4 and len(set(own)) == 4
    shared = [p for p in images if p.parent != tmp_path]
    assert len(set(shared)) < len(shared)  # several visitors upload the same example


def test_with_the_same_example_everyone_uploads_one_picture_under_their_own_name(tmp_path):
    images = images_for(5, tmp_path, same=True)
    assert len({p.name for p in images}) == 5 and len({p.read_bytes() for p in images}) == 1


def test_the_floor_is_every_forward_pass_shared_by_the_cores_plus_the_last_one():
    assert floor_seconds(30, 0.13, 2) == pytest.approx(30 * 0.13 / 2 + 0.13)  # issue 30's 2.1 s
    assert floor_seconds(1, 0.5, 16) == pytest.approx(0.5 / 16 + 0.5)


def test_the_forward_pass_is_timed_on_the_bundled_model_and_not_on_a_name_it_cannot_load(tmp_path):
    assert 0 < forward_seconds("bundled", repeats=2) < 5
    assert math.isnan(forward_seconds(str(tmp_path / "vit_b_16.augreg_in21k"), repeats=2))


def test_the_served_models_grid_and_depth_are_read_from_the_analysis():
    numbers = "uploaded **320 × 256** px → model input **224 × 224** px · grid **14 rows × 14 columns** = 196"
    assert model_shape(numbers, {"maximum": 12, "value": 12}) == ((14, 14), 12)
    with pytest.raises(ValueError, match="no patch grid"):
        model_shape("an error page", {"maximum": 12})
