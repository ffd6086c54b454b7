"""Every benchmark on the site, declared once, by family.

* :mod:`~gpuperf.bench.catalog.benchmark`: :class:`~gpuperf.bench.catalog.benchmark.Benchmark`
  and :class:`~gpuperf.bench.catalog.benchmark.Provider`, the types that declare a benchmark.
* :mod:`~gpuperf.bench.catalog.memory_bound`: vector add, softmax, row mean, RMSNorm,
  RoPE, and the scale and shift of the guide on benchmarking your own kernel (GB/s).
* :mod:`~gpuperf.bench.catalog.matmul`: tutorial 03's matmul, its epilogue and program
  order, the persistent and FP8 matmuls, SwiGLU (TFLOP/s); the split-K matmul of a
  decode step's projections (GB/s).
* :mod:`~gpuperf.bench.catalog.attention`: attention forward, backward and peak memory, and
  the decode step against a KV cache.
* :mod:`~gpuperf.bench.catalog.case_studies`: the optimization-strategy guide's GELU,
  add → ReLU → multiply and strided reads.
* :mod:`~gpuperf.bench.catalog.host`: host time per call of our wrappers and PyTorch's ops.
* :mod:`~gpuperf.bench.catalog.llama`: a Llama-3-8B decoder layer end to end: prefill,
  decode and a training step (tutorial 07).
* :mod:`~gpuperf.bench.catalog.gluon`: Gluon kernels on Hopper against Triton's and the
  vendor's (tutorial 08).
* :mod:`~gpuperf.bench.catalog.moe`: the Mixture-of-Experts kernels and block (tutorial 09):
  the grouped matmul, the block-scaled FP8 matmul, and the MoE block in prefill and decode.

A new benchmark goes into its family's module and into :data:`ALL`. The same
declaration serves the tutorials (measured live or rendered from the committed
record), the ``bench`` command that refreshes the records on a GPU machine
(``python -m gpuperf.bench`` runs :data:`ALL`), and the tests, which check the
declarations against the committed records. Every name is importable from here:
``from gpuperf.bench.catalog import MATMUL``.
"""

from __future__ import annotations

from gpuperf.bench.catalog.attention import (
    ATTENTION_AXES,
    ATTENTION_BACKWARD,
    ATTENTION_DECODE,
    ATTENTION_DECODE_BATCHES,
    ATTENTION_DECODE_KV_LENS,
    ATTENTION_FORWARD,
    ATTENTION_IMPLEMENTATIONS,
    ATTENTION_MEMORY,
    ATTENTION_SEQ_LENS,
    ATTENTION_TOKENS,
    ATTENTION_WIDTH,
    attention_shape,
)
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call
from gpuperf.bench.catalog.case_studies import (
    ADD_RELU_MUL,
    ELEMENTWISE_DTYPES,
    ELEMENTWISE_SIZES,
    GELU,
    STRIDED_COPY,
    STRIDED_COPY_ELEMENTS,
)
from gpuperf.bench.catalog.gluon import GLUON_ATTENTION, GLUON_ATTENTION_SEQ_LENS, GLUON_FP8, GLUON_FP8_SHAPES
from gpuperf.bench.catalog.host import HOST_OVERHEAD
from gpuperf.bench.catalog.llama import (
    DECODE_BATCHES,
    DECODE_LENGTHS,
    LLAMA_DECODE,
    LLAMA_PREFILL,
    LLAMA_PREFILL_AUTOTUNE,
    LLAMA_SEQ_LEN,
    LLAMA_TRAIN,
    LLAMA_TRAIN_MEMORY,
    PREFILL_BATCHES,
)
from gpuperf.bench.catalog.matmul import (
    FP8_FAST_ACCUM_K_FACTOR,
    FP8_SHAPES,
    MATMUL,
    MATMUL_DTYPES,
    MATMUL_EPILOGUE,
    MATMUL_EPILOGUE_SHAPES,
    MATMUL_FP8,
    MATMUL_MODEL,
    MATMUL_ORDER,
    MATMUL_PERSISTENT,
    MATMUL_SHAPES,
    MATMUL_SMALL_M,
    MATMUL_SMALL_M_SHAPES,
    MATMUL_SQUARE,
    PERSISTENT_SHAPES,
    SWIGLU,
    SWIGLU_SHAPES,
    fp8_check_k,
)
from gpuperf.bench.catalog.memory_bound import (
    RMS_NORM,
    RMS_NORM_ROWS,
    ROPE,
    ROPE_BASE,
    ROPE_HEADS,
    ROW_MEAN,
    ROW_MEAN_ROWS,
    SCALE_SHIFT,
    SCALE_SHIFT_COLS,
    SOFTMAX,
    SOFTMAX_LONG,
    SOFTMAX_LONG_ROWS,
    SOFTMAX_ROWS,
    VECTOR_ADD,
)
from gpuperf.bench.catalog.moe import (
    FP8_BLOCKWISE_SHAPES,
    GROUPED_GEMMS,
    GROUPED_MATMUL,
    MATMUL_FP8_BLOCKWISE,
    MOE_LAYER,
    MOE_LAYER_DECODE,
    MOE_PREFILL_TOKENS,
)

#: Every benchmark, in the order ``python -m gpuperf.bench`` measures them.
ALL: tuple[Benchmark, ...] = (
    VECTOR_ADD,
    SOFTMAX,
    SOFTMAX_LONG,
    HOST_OVERHEAD,
    MATMUL,
    MATMUL_EPILOGUE,
    MATMUL_ORDER,
    ATTENTION_FORWARD,
    ATTENTION_BACKWARD,
    ATTENTION_MEMORY,
    MATMUL_PERSISTENT,
    MATMUL_FP8,
    ROW_MEAN,
    GELU,
    ADD_RELU_MUL,
    STRIDED_COPY,
    RMS_NORM,
    ROPE,
    SWIGLU,
    LLAMA_PREFILL,
    LLAMA_PREFILL_AUTOTUNE,
    LLAMA_DECODE,
    LLAMA_TRAIN,
    LLAMA_TRAIN_MEMORY,
    ATTENTION_DECODE,
    MATMUL_SMALL_M,
    GLUON_FP8,
    GLUON_ATTENTION,
    SCALE_SHIFT,
    GROUPED_MATMUL,
    MATMUL_FP8_BLOCKWISE,
    MOE_LAYER,
    MOE_LAYER_DECODE,
)


def by_name(name: str) -> Benchmark:
    """Return the benchmark called ``name``; ``KeyError`` listing the known names otherwise."""
    for b in ALL:
        if b.name == name:
            return b
    raise KeyError(f"no benchmark {name!r}; known: {[b.name for b in ALL]}")


__all__ = [
    "ADD_RELU_MUL",
    "ALL",
    "ATTENTION_AXES",
    "ATTENTION_BACKWARD",
    "ATTENTION_DECODE",
    "ATTENTION_DECODE_BATCHES",
    "ATTENTION_DECODE_KV_LENS",
    "ATTENTION_FORWARD",
    "ATTENTION_IMPLEMENTATIONS",
    "ATTENTION_MEMORY",
    "ATTENTION_SEQ_LENS",
    "ATTENTION_TOKENS",
    "ATTENTION_WIDTH",
    "DECODE_BATCHES",
    "DECODE_LENGTHS",
    "ELEMENTWISE_DTYPES",
    "ELEMENTWISE_SIZES",
    "FP8_BLOCKWISE_SHAPES",
    "FP8_FAST_ACCUM_K_FACTOR",
    "FP8_SHAPES",
    "GELU",
    "GLUON_ATTENTION",
    "GLUON_ATTENTION_SEQ_LENS",
    "GLUON_FP8",
    "GLUON_FP8_SHAPES",
    "GROUPED_GEMMS",
    "GROUPED_MATMUL",
    "HOST_OVERHEAD",
    "LLAMA_DECODE",
    "LLAMA_PREFILL",
    "LLAMA_PREFILL_AUTOTUNE",
    "LLAMA_SEQ_LEN",
    "LLAMA_TRAIN",
    "LLAMA_TRAIN_MEMORY",
    "MATMUL",
    "MATMUL_DTYPES",
    "MATMUL_EPILOGUE",
    "MATMUL_EPILOGUE_SHAPES",
    "MATMUL_FP8",
    "MATMUL_FP8_BLOCKWISE",
    "MATMUL_MODEL",
    "MATMUL_ORDER",
    "MATMUL_PERSISTENT",
    "MATMUL_SHAPES",
    "MATMUL_SMALL_M",
    "MATMUL_SMALL_M_SHAPES",
    "MATMUL_SQUARE",
    "MOE_LAYER",
    "MOE_LAYER_DECODE",
    "MOE_PREFILL_TOKENS",
    "PERSISTENT_SHAPES",
    "PREFILL_BATCHES",
    "RMS_NORM",
    "RMS_NORM_ROWS",
    "ROPE",
    "ROPE_BASE",
    "ROPE_HEADS",
    "ROW_MEAN",
    "ROW_MEAN_ROWS",
    "SCALE_SHIFT",
    "SCALE_SHIFT_COLS",
    "SOFTMAX",
    "SOFTMAX_LONG",
    "SOFTMAX_LONG_ROWS",
    "SOFTMAX_ROWS",
    "STRIDED_COPY",
    "STRIDED_COPY_ELEMENTS",
    "SWIGLU",
    "SWIGLU_SHAPES",
    "VECTOR_ADD",
    "Benchmark",
    "Provider",
    "attention_shape",
    "by_name",
    "call",
    "fp8_check_k",
]
