"""Hardware ceilings, measured on the GPU at hand, and datasheet peaks for reference.

A plot is read against what the chip can do: the copy bandwidth (and the read
bandwidth, the roof of read-heavy traffic) for memory-bound kernels and the matmul
throughput of the vendor library, per dtype, for compute-bound ones. All are measured
in the same run as the kernels.
"""

from __future__ import annotations

from gpuperf.bench import metrics
from gpuperf.bench.timing import time_ms

#: Bytes copied (and read) to measure bandwidth: 1 GiB, twenty times the largest L2 (H100: 50 MB).
COPY_BYTES = 2**30
#: Square matmul sizes for the compute ceilings, each large enough to fill every SM; the
#: ceiling is the best median among them. A sustained 8192³ can run at a lower clock than
#: 4096³ (power), so one size alone can sit below what cuBLAS reaches elsewhere.
MATMUL_SIZES = (4096, 6144, 8192)

#: Datasheet peaks (dense, no sparsity; SXM), for citation beside the measured ones;
#: ``fp32_tflops`` is the CUDA cores' float32 rate (not TF32 on tensor cores).
#: Source: NVIDIA H100 Tensor Core GPU datasheet; H200 Tensor Core GPU datasheet.
#: The datasheet gives one memory bandwidth, the interface's raw rate whatever the mix of
#: reads and writes, so it is listed once, as ``copy_gbps``, and has no ``read_gbps``.
DATASHEET = {
    "NVIDIA H100 80GB HBM3": {
        "copy_gbps": 3350.0,
        "bf16_tflops": 989.0,
        "fp16_tflops": 989.0,
        "fp32_tflops": 67.0,
        "fp8_tflops": 1979.0,
    },
    "NVIDIA H200": {
        "copy_gbps": 4800.0,
        "bf16_tflops": 989.0,
        "fp16_tflops": 989.0,
        "fp32_tflops": 67.0,
        "fp8_tflops": 1979.0,
    },
}

#: Ceiling key -> (label, unit).
CEILINGS = {
    "copy_gbps": ("copy bandwidth", "GB/s"),
    "read_gbps": ("read bandwidth", "GB/s"),
    "bf16_tflops": ("cuBLAS bf16 matmul", "TFLOP/s"),
    "fp16_tflops": ("cuBLAS fp16 matmul", "TFLOP/s"),
    "fp32_tflops": ("cuBLAS fp32 matmul", "TFLOP/s"),
    "fp8_tflops": ("cuBLASLt fp8 matmul", "TFLOP/s"),
}


def measure_copy_gbps() -> dict:
    """Device-to-device copy of :data:`COPY_BYTES` (read + write counted): GB/s quantiles."""
    import torch

    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    t = time_ms(lambda: dst.copy_(src))
    work = metrics.copy_bytes(COPY_BYTES)
    return _entry(work, t, "GB/s")


def measure_read_gbps() -> dict:
    """Read bandwidth: ``torch.sum`` of a float32 tensor of :data:`COPY_BYTES`, counting
    the bytes read (the 4-byte result is left out): GB/s quantiles.

    It is above the copy bandwidth because HBM streams reads alone faster than a mix: a
    copy writes one byte per byte read, and the memory loses cycles turning its bus
    around between reads and writes. It is the memory roof of traffic that is mostly
    reads (a reduction, a matrix-vector product, a decode step reading its KV cache).
    """
    import torch

    src = torch.randn(COPY_BYTES // 4, device="cuda")
    t = time_ms(lambda: src.sum())
    return _entry(COPY_BYTES, t, "GB/s")


def measure_matmul_tflops(dtype_name: str) -> dict | None:
    """``torch.matmul`` (fp8: ``torch._scaled_mm``) on random square inputs of each size of
    :data:`MATMUL_SIZES`: TFLOP/s quantiles of the size with the highest median, which
    the entry names (``shape``, ``[n, n, n]``).

    Returns None for fp8 on GPUs without fp8 tensor cores (compute capability < 8.9).
    """
    import torch

    if dtype_name == "fp8" and torch.cuda.get_device_capability() < (8, 9):
        return None
    entries = [_matmul_entry(dtype_name, n) for n in MATMUL_SIZES]
    return max(entries, key=lambda e: e["value"])


def _matmul_entry(dtype_name: str, n: int) -> dict:
    """One square ``n``³ matmul of ``dtype_name`` timed: its entry, with its ``shape``."""
    import torch

    if dtype_name == "fp8":
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt needs
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        fn = lambda: torch.matmul(a, b)
    t = time_ms(fn)
    return _entry(metrics.matmul_flops(n, n, n), t, "TFLOP/s") | {"shape": [n, n, n]}


def _entry(work: float, t, unit: str) -> dict:
    value, p20, p80 = metrics.metric_values(unit, t.ms, t.ms_p20, t.ms_p80, n_bytes=work, flops=work)
    return {"value": value, "value_p20": p20, "value_p80": p80, "unit": unit, "ms": t.ms}


def measure_ceilings(keys=tuple(CEILINGS)) -> dict:
    """Measure the ceilings named by ``keys`` (default: every key of :data:`CEILINGS`, about
    half a minute on an H100); return ``{key: {value, value_p20, value_p80, unit, ms}}``,
    the matmul ceilings with the ``shape`` that gave them."""
    out = {}
    for key in keys:
        if key == "copy_gbps":
            entry = measure_copy_gbps()
        elif key == "read_gbps":
            entry = measure_read_gbps()
        else:
            entry = measure_matmul_tflops(key.removesuffix("_tflops"))
        if entry is not None:
            out[key] = entry
    return out
