"""The pure helpers of bench/visitors.py (the benchmark itself starts a server: not a test)."""

import numpy as np
import pytest

from bench.visitors import ACTION_WEIGHTS, images_for, model_shape, percentile, plan, vm_hwm_bytes

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


def test_the_served_models_grid_and_depth_are_read_from_the_analysis():
    numbers = "uploaded **320 × 256** px → model input **224 × 224** px · grid **14 rows × 14 columns** = 196"
    assert model_shape(numbers, {"maximum": 12, "value": 12}) == ((14, 14), 12)
    with pytest.raises(ValueError, match="no patch grid"):
        model_shape("an error page", {"maximum": 12})
