"""Hardware ceilings, measured on the GPU at hand, and datasheet peaks for reference.

A plot is read against what the chip can do: the stream bandwidth (the fastest of a few
streams: the roofline's memory roof) for memory-bound kernels, the copy bandwidth for a
copy, and the matmul throughput of the vendor library, per dtype, for compute-bound ones. Each benchmark run
measures the ceilings its rows are read against (kept in its record); a ``--ceilings``
run measures them all into ``hardware.json``, which the roofline reads.
"""

from __future__ import annotations

from gpuperf.bench import metrics
from gpuperf.bench.timing import time_ms

#: Bytes of each tensor of the copy that measures the copy bandwidth (:func:`measure_copy_gbps`):
#: 1 GiB, twenty times the largest L2 (H100: 50 MiB). The streams use :data:`STREAM_BYTES`.
COPY_BYTES = 2**30
#: Square matmul sizes for the compute ceilings, each large enough to fill every SM; the
#: ceiling is the best median among them. A sustained 8192³ can run at a lower clock than
#: 4096³ (power), so one size alone can sit below what cuBLAS reaches elsewhere.
MATMUL_SIZES = (4096, 6144, 8192)

#: Datasheet peaks (dense, no sparsity; SXM), for citation beside the measured ones;
#: ``fp32_tflops`` is the CUDA cores' float32 rate (not TF32 on tensor cores).
#: Source: NVIDIA H100 Tensor Core GPU datasheet; H200 Tensor Core GPU datasheet.
#: The datasheet gives one memory bandwidth, the interface's raw rate whatever the mix of
#: reads and writes, so it is listed once, as ``copy_gbps``, and has no ``stream_gbps``.
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
    "stream_gbps": ("stream bandwidth", "GB/s"),
    "bf16_tflops": ("cuBLAS bf16 matmul", "TFLOP/s"),
    "fp16_tflops": ("cuBLAS fp16 matmul", "TFLOP/s"),
    "fp32_tflops": ("cuBLAS fp32 matmul", "TFLOP/s"),
    "fp8_tflops": ("cuBLASLt fp8 matmul", "TFLOP/s"),
    "fp8_fast_tflops": ("cuBLASLt fp8 matmul", "TFLOP/s"),
}


#: The call each matmul ceiling times (:func:`measure_matmul_tflops`), by ceiling key: what a page
#: names beside the ceiling (:func:`gpuperf.pages.plotting.ceiling_label`).
MATMUL_CALLS = {
    "bf16_tflops": "torch.matmul",
    "fp16_tflops": "torch.matmul",
    "fp32_tflops": "torch.matmul",
    "fp8_tflops": "torch._scaled_mm",
    "fp8_fast_tflops": "torch._scaled_mm",
}
#: The accumulation of each FP8 ceiling, by key: ``fp8_tflops`` times ``torch._scaled_mm``
#: with its default ``use_fast_accum=False`` (cuBLASLt promotes the tensor cores' partial
#: sums to float32 as it goes), ``fp8_fast_tflops`` with ``use_fast_accum=True`` (the
#: reduced-precision accumulator is kept across K). A ceiling is a roof only for what runs
#: the same way: fast accumulation skips the promotions and runs past the promoted ceiling,
#: so fast-accumulation kernels are read against ``fp8_fast_tflops``. Each entry names its
#: mode (``accumulation``).
#: An ``fp8_tflops`` entry written before entries named their mode was measured with the
#: default too: promoted.
FP8_ACCUMULATION = {"fp8_tflops": "promoted", "fp8_fast_tflops": "fast"}


def measure_copy_gbps() -> dict:
    """Device-to-device copy of :data:`COPY_BYTES` (read + write counted): GB/s quantiles."""
    return {k: v for k, v in _stream_entry("copy", COPY_BYTES * 2).items() if k != "stream"}


#: The streams timed for the bandwidth roof (:func:`measure_stream_gbps`): name -> reads per write
#: (None: reads alone). ``read`` is a Triton kernel (:mod:`gpuperf.bench.read_stream`), the
#: others are PyTorch's calls.
STREAMS = {"copy": 1, "add": 2, "addcmul": 3, "sum": None, "read": None}
#: Bytes each stream of :data:`STREAMS` moves (read plus written): 4 GiB, so that every stream
#: runs as long as the others (about 1.4 ms on an H100). Timed over equal tensors instead, a
#: stream that moves less (a sum reads one tensor, a multiply-add reads three and writes one)
#: runs for a shorter time, and the launch and the last wave weigh more in it.
STREAM_BYTES = 4 * 2**30


def measure_stream_gbps() -> dict:
    """The stream bandwidth: the fastest of the :data:`STREAMS`, each moving
    :data:`STREAM_BYTES` (bytes read plus bytes written counted) over float32 tensors:
    ``y.copy_(x)`` (one read per write), ``torch.add`` (two), ``torch.addcmul`` (three),
    ``x.sum()`` (reads alone) and a read of the same bytes in chunks, each program of a
    Triton kernel reading its own 128 KiB (reads alone, in the pattern of a decode-time
    attention kernel reading a KV cache). GB/s quantiles of the fastest by median; the entry
    names it (``stream``) and gives every stream's median (``streams``).

    Why several: how fast HBM streams depends on the mix of reads and writes (the bus
    loses cycles turning around between them) and on how the reads are spread over the
    memory, and so does how close each kernel comes to it. A copy alone sits below what a
    kernel that reads two or three bytes per byte written reaches, so a roof drawn at the
    copy is crossed by such kernels; the fastest of these streams is a rate the memory is
    shown to reach, a roof for every mix, though not a hard limit: a kernel can pass it by a
    little.
    """
    entries = [_stream_entry(name, STREAM_BYTES) for name in STREAMS]
    best = max(entries, key=lambda e: e["value"])
    return best | {"streams": {e["stream"]: e["value"] for e in entries}}


def _stream_entry(name: str, moved: int) -> dict:
    """One stream of :data:`STREAMS` moving about ``moved`` bytes: its entry, with its name
    (``stream``)."""
    import torch

    from gpuperf.bench import read_stream  # (imports Triton: only where a stream is timed)

    reads = STREAMS[name]
    tensors = (reads or 0) + 1
    numel = moved // (4 * tensors) // read_stream.CHUNK * read_stream.CHUNK
    t = [torch.randn(numel, device="cuda") for _ in range(tensors)]
    calls = {
        "copy": lambda: t[1].copy_(t[0]),
        "add": lambda: torch.add(t[0], t[1], out=t[2]),
        "addcmul": lambda: torch.addcmul(t[0], t[1], t[2], out=t[3]),
        "sum": lambda: t[0].sum(),
        "read": read_stream.chunked_read(t[0])[0] if name == "read" else None,
    }
    return _entry(numel * 4 * tensors, time_ms(calls[name]), "GB/s") | {"stream": name}


def measure_matmul_tflops(key: str) -> dict | None:
    """The matmul ceiling ``key`` (a TFLOP/s key of :data:`CEILINGS`): ``torch.matmul``
    (FP8: ``torch._scaled_mm`` with the accumulation of :data:`FP8_ACCUMULATION`;
    :data:`MATMUL_CALLS`) on random square ``(n, n)`` inputs of each size ``n`` of
    :data:`MATMUL_SIZES`, timed by :func:`gpuperf.bench.timing.time_ms`: the entry
    (``value``, ``value_p20``, ``value_p80`` in TFLOP/s, ``ms``) of the size with the highest
    median, which it names (``shape``, ``[n, n, n]``; FP8: and ``accumulation``).

    Inputs are bfloat16, float16 or float32 as the key says (float32 as PyTorch's float32
    matmul setting leaves it: full float32 unless the process allowed TF32); FP8 takes
    ``float8_e4m3fn`` operands (the second column-major), unit scales and a bfloat16 output.
    FLOPs are ``2 n³``. Needs a CUDA GPU.

    Returns None for FP8 on GPUs without FP8 tensor cores (compute capability < 8.9).

    Raises:
        ValueError: ``key`` is not a matmul ceiling of :data:`MATMUL_CALLS`.
    """
    import torch

    if key not in MATMUL_CALLS:
        raise ValueError(f"key must be one of {list(MATMUL_CALLS)}, got {key!r}")
    if key in FP8_ACCUMULATION and torch.cuda.get_device_capability() < (8, 9):
        return None
    entries = [_matmul_entry(key, n) for n in MATMUL_SIZES]
    return max(entries, key=lambda e: e["value"])


def _matmul_entry(key: str, n: int) -> dict:
    """One square ``n``³ matmul of the ceiling ``key`` timed: its entry, with its ``shape``
    (and, FP8, its ``accumulation``: :data:`FP8_ACCUMULATION`)."""
    import torch

    if key in FP8_ACCUMULATION:
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt needs
        one = torch.ones((), device="cuda")
        fast = FP8_ACCUMULATION[key] == "fast"
        fn = lambda: torch._scaled_mm(
            a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast
        )
        extra = {"accumulation": FP8_ACCUMULATION[key]}
    else:
        dtype = {"bf16_tflops": torch.bfloat16, "fp16_tflops": torch.float16, "fp32_tflops": torch.float32}[
            key
        ]
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        fn = lambda: torch.matmul(a, b)
        extra = {}
    t = time_ms(fn)
    return _entry(metrics.matmul_flops(n, n, n), t, "TFLOP/s") | {"shape": [n, n, n], **extra}


def _entry(work: float, t, unit: str) -> dict:
    value, p20, p80 = metrics.metric_values(unit, t.ms, t.ms_p20, t.ms_p80, n_bytes=work, flops=work)
    return {"value": value, "value_p20": p20, "value_p80": p80, "unit": unit, "ms": t.ms}


def measure_ceilings(keys=tuple(CEILINGS)) -> dict:
    """Measure the ceilings named by ``keys`` (default: every key of :data:`CEILINGS`, about
    half a minute on an H100); return ``{key: {value, value_p20, value_p80, unit, ms}}``,
    the matmul ceilings with the ``shape`` (FP8: and the ``accumulation``) and the stream
    bandwidth with the ``stream`` that set it and every stream's median (``streams``)."""
    out = {}
    for key in keys:
        if key == "copy_gbps":
            entry = measure_copy_gbps()
        elif key == "stream_gbps":
            entry = measure_stream_gbps()
        else:
            entry = measure_matmul_tflops(key)
        if entry is not None:
            out[key] = entry
    return out
