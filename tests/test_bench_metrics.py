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
