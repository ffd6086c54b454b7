import pytest

from gpuperf.bench import metrics


def test_vector_add_counts_two_reads_and_one_write():
    assert metrics.elementwise_bytes(1000, element_size=4) == 12_000
    assert metrics.elementwise_bytes(10, element_size=2, n_inputs=1, n_outputs=1) == 40


def test_softmax_counts_one_read_and_one_write():
    assert metrics.softmax_bytes(4096, 1024, element_size=4) == 2 * 4096 * 1024 * 4


def test_copy_counts_read_and_write():
    assert metrics.copy_bytes(2**30) == 2**31


def test_matmul_flops():
    assert metrics.matmul_flops(2, 3, 4) == 48
    assert metrics.matmul_flops(8192, 8192, 8192) == 2 * 8192**3


@pytest.mark.parametrize(
    "causal, backward, expected",
    [(False, False, 4.0), (True, False, 2.0), (False, True, 10.0), (True, True, 5.0)],
)
def test_attention_flops(causal, backward, expected):
    # B=H=S=D=1 leaves the multiplier alone.
    assert metrics.attention_flops(1, 1, 1, 1, causal=causal, backward=backward) == expected
    assert metrics.attention_flops(4, 32, 8192, 128) == 4 * 4 * 32 * 8192**2 * 128


def test_rates():
    # 3e9 bytes in 1 ms is 3000 GB/s; 1e12 FLOPs in 1 s is 1 TFLOP/s.
    assert metrics.gb_per_s(3e9, 1.0) == pytest.approx(3000.0)
    assert metrics.gb_per_s(3e9, 1000.0) == pytest.approx(3.0)
    assert metrics.tflop_per_s(1e12, 1000.0) == pytest.approx(1.0)
    assert metrics.rate("GB/s", 1e9, 1000.0) == pytest.approx(1.0)


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError, match="metric must be one of"):
        metrics.rate("GFLOP/s", 1.0, 1.0)


def test_new_formulas():
    assert metrics.vector_add_flops(1000) == 1000
    assert metrics.softmax_flops(4096, 1024) == 5 * 4096 * 1024
    # (M*K + K*N + M*N) elements: A and B read, C written; the bias adds N.
    assert metrics.matmul_bytes(2, 3, 4, element_size=2) == (8 + 12 + 6) * 2
    assert metrics.matmul_bytes(2, 3, 4, element_size=2, bias=True) == (8 + 12 + 6 + 3) * 2
    assert metrics.attention_bytes(4, 32, 8192, 128, element_size=2) == 4 * 4 * 32 * 8192 * 128 * 2


def test_metric_value_per_metric():
    assert metrics.metric_value("GB/s", 1.0, n_bytes=3e9, flops=1.0) == pytest.approx(3000.0)
    assert metrics.metric_value("TFLOP/s", 1000.0, n_bytes=1.0, flops=1e12) == pytest.approx(1.0)
    assert metrics.metric_value("us/call", 0.0081, n_bytes=0, flops=0) == pytest.approx(8.1)
    with pytest.raises(ValueError, match="metric must be one of"):
        metrics.metric_value("GFLOP/s", 1.0, n_bytes=1.0, flops=1.0)
    with pytest.raises(ValueError, match="metric must be one of"):  # peak memory is no time
        metrics.metric_value("GiB", 1.0, n_bytes=1.0, flops=1.0)


@pytest.mark.parametrize("metric", metrics.TIMED_METRICS)
def test_metric_values_are_ordered_percentiles(metric):
    value, p20, p80 = metrics.metric_values(metric, 2.0, 1.0, 4.0, n_bytes=1e9, flops=1e12)
    assert p20 < value < p80
    if metric == "us/call":  # lower time, lower value
        assert (p20, value, p80) == pytest.approx((1000.0, 2000.0, 4000.0))
    else:  # lower time, higher rate
        assert p80 == pytest.approx(2 * value) and p20 == pytest.approx(value / 2)
