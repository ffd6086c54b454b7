"""The ``read`` stream of the stream bandwidth (:func:`gpuperf.bench.hardware.measure_stream_gbps`):
a Triton kernel that reads a tensor in chunks, one program per chunk, in the pattern of a
decode-time attention kernel reading a KV cache, and writes one float32 per chunk so that
the loads are not dropped.

Its own module because it imports Triton: :mod:`gpuperf.bench.hardware` is imported by the
pages before Triton's interpreter may be turned on, and imports this one only where a
stream is timed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

#: Float32 elements each program reads: 128 KiB.
CHUNK = 32768


@triton.jit
def chunked_read_kernel(x_ptr, out_ptr, rows_per_chunk, D: tl.constexpr, BLOCK_ROWS: tl.constexpr):
    """Program ``i`` reads rows ``[i * rows_per_chunk, (i + 1) * rows_per_chunk)`` of ``x``
    (rows of ``D`` elements), ``BLOCK_ROWS`` at a time, and writes their float32 sum."""
    base = x_ptr + tl.program_id(0).to(tl.int64) * rows_per_chunk * D
    offsets = tl.arange(0, BLOCK_ROWS)[:, None] * D + tl.arange(0, D)[None, :]
    acc = tl.zeros([BLOCK_ROWS, D], dtype=tl.float32)
    for start in range(0, rows_per_chunk, BLOCK_ROWS):
        acc += tl.load(base + start * D + offsets).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc))


def chunked_read(x: torch.Tensor):
    """The ``read`` stream over ``x`` (float32, a multiple of :data:`CHUNK` elements):
    ``(call, out)``, where ``call()`` launches one program per 128 KiB chunk, which reads it
    as bfloat16 tiles of 64 x 128 (16 KiB), three loads in flight, and writes its float32 sum
    into ``out`` (one per chunk).

    Raises:
        ValueError: ``x`` is not float32 or not a multiple of :data:`CHUNK` elements.
    """
    if x.dtype != torch.float32 or x.numel() % CHUNK:
        raise ValueError(
            f"x must be float32 with a multiple of {CHUNK} elements, got {x.dtype} with {x.numel()}"
        )
    data = x.view(torch.bfloat16)
    chunks = x.numel() // CHUNK
    out = torch.empty(chunks, device=x.device)
    rows = CHUNK * 2 // 128
    grid = (chunks,)

    def call():
        chunked_read_kernel[grid](data, out, rows, D=128, BLOCK_ROWS=64, num_warps=4, num_stages=3)

    return call, out


__all__ = ["CHUNK", "chunked_read", "chunked_read_kernel"]
