"""Headlines: each benchmark's result in one line, derived from its baseline and ceiling."""

import pytest

from gpuperf.bench import catalog
from gpuperf.pages.plotting import format_x
from gpuperf.pages.report import Result, headline, measured_when
from tests.test_bench_records import HOST_LIKE, MATMUL_LIKE, synthetic_record


def test_rate_headline_gives_the_ratio_range_and_the_best_share_of_the_ceiling():
    # triton 1 ms at the first size, 0.5 ms after; torch always 2 ms.
    record = synthetic_record(ms=lambda c, i, p: [1.0 if i == 0 else 0.5, 2.0][p])
    line = headline(Result(catalog.VECTOR_ADD, record, "committed"))
    x = catalog.VECTOR_ADD.x_values[2]  # the largest of the three sizes: the most bytes in 0.5 ms
    best = catalog.VECTOR_ADD.bytes(x) / 0.5e-3 / 1e9 / 3100
    # The share prints its divisor (the record's stream ceiling), names it from its entry
    # (the stream that set it) and names the x.
    assert line == (
        f"2.00–4.00× the speed of PyTorch x + y; up to {100 * best:.0f}% of the 3.10 TB/s of stream "
        f"bandwidth (addcmul), reached at elements per tensor = {format_x(x)}"
    )


def test_headline_names_the_axis_values_and_ceiling_of_its_best_point():
    # triton 1 ms, cuBLAS 3 ms everywhere; bfloat16 twice as slow for triton.
    ms = lambda c, i, p: [1.0, 2.0, 3.0][p] * (2.0 if c == 1 and p == 0 else 1.0)
    line = headline(Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE, ms=ms), "committed"))
    best = 2 * 8192 * 4096 * 14336 / 1e-3 / 1e12 / 700  # the largest product, float16 (700 TFLOP/s)
    # The ceiling is named from its entry (this synthetic one has no shape, and says so),
    # apart from the x where the share was reached.
    assert line == (
        f"1.50–3.00× the speed of cuBLAS; up to {100 * best:.0f}% of the 700 TFLOP/s of cuBLAS fp16 "
        "matmul (torch.matmul), shape not recorded, reached at M×N×K = 8192×4096×14336, dtype=float16"
    )


def test_host_time_and_memory_headlines_say_what_the_ratio_means():
    host = synthetic_record(HOST_LIKE, ms=lambda c, i, p: [0.030, 0.010][p])
    assert headline(Result(HOST_LIKE, host, "committed")) == "0.33× the speed of torch on the host"
    assert headline(Result(catalog.SOFTMAX, None, "missing")) is None
    with pytest.raises(TypeError, match=r"result must be a gpuperf\.pages\.Result, got dict"):
        headline(host)


def test_measured_when_is_the_results_own_record():
    record = synthetic_record()
    record["provenance"] |= {"date": "2026-01-02T03:04:05Z", "gpuperf_commit": "aaa"}
    assert measured_when(Result(catalog.VECTOR_ADD, record, "committed")) == ("2026-01-02", "aaa")
    assert measured_when(Result(catalog.VECTOR_ADD, None, "missing")) is None
    with pytest.raises(TypeError, match=r"result must be a gpuperf\.pages\.Result, got dict"):
        measured_when(record)
