"""The ceilings' measurement: which keys it measures, which stream sets the stream bandwidth
and which matmul size sets a ceiling (the timing itself needs a GPU; here the timed calls
are replaced)."""

import pytest
import torch

from gpuperf._runtime import is_interpreter
from gpuperf.bench import hardware


def test_every_ceiling_is_measured_by_default_the_stream_bandwidth_included(monkeypatch):
    monkeypatch.setattr(hardware, "measure_copy_gbps", lambda: {"value": 3000.0, "unit": "GB/s"})
    monkeypatch.setattr(hardware, "measure_stream_gbps", lambda: {"value": 3100.0, "unit": "GB/s"})
    # A GPU without FP8 tensor cores: both FP8 ceilings are left out.
    monkeypatch.setattr(
        hardware, "measure_matmul_tflops", lambda key: None if key.startswith("fp8") else {"key": key}
    )
    out = hardware.measure_ceilings()
    assert list(out) == ["copy_gbps", "stream_gbps", "bf16_tflops", "fp16_tflops", "fp32_tflops"]
    assert out["stream_gbps"]["value"] == 3100.0 and out["fp16_tflops"] == {"key": "fp16_tflops"}
    assert hardware.CEILINGS["stream_gbps"] == ("stream bandwidth", "GB/s")
    # The datasheet gives one memory bandwidth, whatever the traffic: no stream figure.
    assert all("stream_gbps" not in sheet for sheet in hardware.DATASHEET.values())


def test_the_stream_bandwidth_is_the_fastest_stream_of_equal_traffic_and_names_each(monkeypatch):
    rates = {"copy": 3000.0, "add": 3040.0, "addcmul": 3100.0, "sum": 2970.0, "read": 3050.0}
    timed = []

    def entry(name, moved):
        timed.append((name, moved))
        rate = rates[name]
        return {"value": rate, "value_p20": rate - 5, "value_p80": rate + 5, "stream": name}

    monkeypatch.setattr(hardware, "_stream_entry", entry)
    best = hardware.measure_stream_gbps()
    # Every stream moves the same bytes, so each runs as long as the others.
    assert timed == [(name, hardware.STREAM_BYTES) for name in hardware.STREAMS]
    assert best["stream"] == "addcmul" and best["value"] == 3100.0 and best["streams"] == rates
    rates["read"] = 3200.0
    assert hardware.measure_stream_gbps()["stream"] == "read"


@pytest.mark.skipif(not is_interpreter(), reason="runs the read stream's kernel in Triton's interpreter")
def test_the_read_stream_reads_every_byte_of_its_chunks():
    # Float32 storage whose halves are finite bfloat16 values (random float32 bits read as
    # bfloat16 can be NaN).
    x = torch.randn(6 * hardware._READ_CHUNK, dtype=torch.bfloat16).view(torch.float32)
    # The kernel's one output per chunk is the sum of the chunk's bytes read as bfloat16.
    read, out = hardware._chunked_read(x)
    read()
    expected = x.view(torch.bfloat16).float().view(3, -1).sum(1)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-2)


def test_a_matmul_ceiling_is_the_best_median_over_the_sizes_and_names_its_shape(monkeypatch):
    rates = {4096: 755.0, 6144: 720.0, 8192: 694.0}
    timed = []

    def entry(key, n):
        timed.append((key, n))
        return {"value": rates[n], "value_p20": rates[n] - 5, "value_p80": rates[n] + 5, "shape": [n, n, n]}

    monkeypatch.setattr(hardware, "_matmul_entry", entry)
    best = hardware.measure_matmul_tflops("fp16_tflops")
    assert timed == [("fp16_tflops", n) for n in hardware.MATMUL_SIZES]
    assert best["value"] == 755.0 and best["shape"] == [4096, 4096, 4096]
    rates[8192] = 800.0
    assert hardware.measure_matmul_tflops("bf16_tflops")["shape"] == [8192, 8192, 8192]
    with pytest.raises(ValueError, match="key must be one of"):
        hardware.measure_matmul_tflops("copy_gbps")


def test_each_fp8_ceiling_names_its_accumulation_and_every_matmul_ceiling_its_call():
    # Fast accumulation runs past the promoted ceiling: each FP8 mode has a roof of its own.
    assert hardware.FP8_ACCUMULATION == {"fp8_tflops": "promoted", "fp8_fast_tflops": "fast"}
    compute = {key for key, (_, unit) in hardware.CEILINGS.items() if unit == "TFLOP/s"}
    assert compute == set(hardware.MATMUL_CALLS)
    assert set(hardware.FP8_ACCUMULATION) <= compute
