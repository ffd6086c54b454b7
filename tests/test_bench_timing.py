"""Timing: the quantile helper everywhere, the timers themselves on a GPU."""

import time

import pytest
import torch

from gpuperf.bench import timing


def testquantile_interpolates_between_order_statistics():
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert timing.quantile(values, 0.5) == 3.0
    assert timing.quantile(values, 0.2) == pytest.approx(1.8)
    assert timing.quantile(values, 0.8) == pytest.approx(4.2)
    assert timing.quantile([7.0], 0.8) == 7.0


def test_every_timer_has_a_method_for_the_record():
    assert set(timing.TIMING_METHODS) == {"device", "host", "loop", "memory"}
    assert "do_bench" in timing.TIMING_METHODS["device"]
    assert "back-to-back" in timing.TIMING_METHODS["loop"]
    assert "torch.cuda._sleep" in timing.TIMING_METHODS["host"]
    assert "max_memory_allocated" in timing.TIMING_METHODS["memory"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_peak_memory_without_gpu_fails_clearly():
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        timing.peak_memory_bytes(lambda: None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_loop_timer_without_gpu_fails_clearly():
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        timing.loop_time_ms(lambda: None)
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        timing.loop_time_ms(lambda: None, rounds=0)


@pytest.mark.gpu
def test_loop_timer_counts_the_host_when_it_is_slower_than_the_gpu():
    """A call whose host work (a 2 ms sleep) outlasts its GPU work is timed at the host's pace
    by the loop timer."""
    x = torch.randn(1024, device="cuda")

    def slow_host():
        time.sleep(2e-3)
        return x + 1

    looped = timing.loop_time_ms(slow_host, rounds=3, round_ms=20.0)
    # The host's pace, with a margin no clock can cross: the GPU's clock and the host's sleep
    # disagree by a fraction of a percent (1.9927 ms was seen for the 2 ms), while the GPU's
    # own work, x + 1 on 4 KB, takes microseconds.
    assert looped.ms > 1.0
    assert looped.ms_p20 <= looped.ms <= looped.ms_p80


@pytest.mark.gpu
def test_peak_memory_counts_what_one_call_allocates():
    n = 2**24
    assert timing.peak_memory_bytes(lambda: torch.empty(n, dtype=torch.uint8, device="cuda")) == n
    x = torch.randn(2**20, device="cuda")
    # x * 2 then + 1: two temporaries of 4 MiB alive together at the peak.
    assert timing.peak_memory_bytes(lambda: (x * 2) + 1) == 2 * x.numel() * 4


def test_host_timing_needs_positive_counts():
    with pytest.raises(ValueError, match="calls and rounds must be at least 1"):
        timing.host_time_ms(lambda: None, calls=0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_host_timing_without_gpu_fails_clearly():
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        timing.host_time_ms(lambda: None)


@pytest.mark.gpu
def test_host_time_counts_the_host_not_the_gpu():
    x = torch.randn(2**26, device="cuda")  # 256 MiB: about 0.1 ms of GPU time per x * 2
    gpu = timing.time_ms(lambda: x * 2).ms
    t = timing.host_time_ms(lambda: x * 2)
    assert t.ms_p20 <= t.ms <= t.ms_p80
    # The GPU is kept busy, so the host time is the launch cost alone: far below the GPU time.
    assert t.ms < gpu / 2, (t, gpu)
    assert t.ms < 0.2  # a PyTorch op costs microseconds of host time


@pytest.mark.gpu
def test_host_time_includes_host_work():
    t = timing.host_time_ms(lambda: time.sleep(0.001), calls=10, rounds=3)
    assert 1.0 <= t.ms < 3.0


@pytest.mark.gpu
def test_sleep_cycles_scale_with_milliseconds():
    assert timing._sleep_cycles(50.0) == pytest.approx(10 * timing._sleep_cycles(5.0), rel=1e-6)
    assert timing._sleep_cycles(50.0) > 10_000_000  # any GPU clock is above 200 MHz


@pytest.mark.gpu
def test_host_times_read_each_functions_host_work_in_turn():
    """Two calls whose host work differs by a 1 ms sleep: timed in turn, each keeps its own
    time, and the sleeping one's CPU time stays far below its clock time (a sleep is no work)."""
    x = torch.randn(1024, device="cuda")

    def sleeps():
        time.sleep(1e-3)
        return x + 1

    quick, slow = timing.host_times_ms([lambda: x + 1, sleeps], calls=5, rounds=3)
    assert slow.ms > 0.9 and quick.ms < 0.5
    assert slow.cpu_ms < 0.5 * slow.ms
    assert quick.ms_p20 <= quick.ms <= quick.ms_p80
