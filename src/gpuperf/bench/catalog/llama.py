"""Benchmarks of tutorial 07: one Llama-3-8B decoder layer, end to end, PyTorch's ops against
gpuperf's, eager and compiled.

* :data:`LLAMA_PREFILL`: the layer over 2048-token prompts, batch 1 to 8, without gradients:
  eager PyTorch, ``torch.compile`` (default mode), gpuperf's kernels, and gpuperf's kernels
  under ``torch.compile``. TFLOP/s of the layer's work. :data:`LLAMA_PREFILL_AUTOTUNE`:
  the same at batch 8 against ``torch.compile(mode="max-autotune")``.
* :data:`LLAMA_DECODE`: one decode step (one new token per sequence) against a KV cache of
  1k to 32k tokens, batch 1, 8 and 64, timed as a decode loop runs it (back to back, host
  included): eager PyTorch, ``torch.compile(mode="reduce-overhead")`` (CUDA graphs),
  gpuperf's kernels, and gpuperf's kernels captured in a CUDA graph. GB/s of the weights
  and the cache it must read.
* :data:`LLAMA_TRAIN` and :data:`LLAMA_TRAIN_MEMORY`: forward and backward of the layer
  at batch 4 x 2048, its TFLOP/s and its peak memory.

Every provider runs the same :class:`~gpuperf.models.llama.DecoderLayer` (one set of random
bfloat16 weights) with its operations switched; each is checked against the same layer in
float32 before it is timed.
"""

from __future__ import annotations

import copy
import dataclasses

import torch

from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, cuda_graph

#: Prompt length of the prefill and training benchmarks.
LLAMA_SEQ_LEN = 2048
PREFILL_BATCHES = (1, 4, 8)
DECODE_LENGTHS = (1024, 4096, 16384, 32768)
DECODE_BATCHES = (1, 8, 64)
TRAIN_BATCHES = (4,)
#: The layer's check allows the rounding of a 512-term bfloat16 sum (0.18 absolute on
#: outputs of order one): the output adds up bfloat16 intermediates (the residual, the
#: attention and MLP outputs), each rounded along the way. On the H100, eager PyTorch's
#: layer (which rounds the most: the norm before its weight, RoPE and SiLU in bf16) was
#: 0.116 from the float32 layer at batch 4, more than a 128-term sum allows (0.088).
LAYER_CHECK_TERMS = 512
#: The training check compares each gradient's projection on a fixed random direction
#: (:func:`_checked`, values of order 10^4 and more): this allowance (5.7 absolute) is small
#: beside them, so bfloat16's relative tolerance (1.6%) decides; tests/test_llama.py
#: compares every gradient with PyTorch's at 2% of its scale.
TRAIN_CHECK_TERMS = 64 * TRAIN_BATCHES[0] * LLAMA_SEQ_LEN

#: What these records hash: the layer, and through its imports every kernel it runs.
LLAMA_SOURCES = ("models/llama.py",)

_LAYERS: dict = {}


def llama_layer(device, dtype=torch.bfloat16):
    """The benchmarks' Llama-3-8B layer on ``device`` (made once, seed 0); in float32 it is a
    copy of the bfloat16 layer's weights, upcast (the reference every provider must match)."""
    from gpuperf.models.llama import LLAMA_3_8B, DecoderLayer

    key = (str(device), dtype)
    if key not in _LAYERS:
        if dtype == torch.bfloat16:
            _LAYERS[key] = DecoderLayer(LLAMA_3_8B, device=device, dtype=dtype, seed=0)
        else:
            _LAYERS[key] = copy.deepcopy(llama_layer(device)).to(dtype)
            _LAYERS[key].ops = _reference_ops()
    return _LAYERS[key]


def _attention_decode_by_sequence(q, k_cache, v_cache, cache_seqlens):
    """The PyTorch decode attention one sequence at a time: in float32 SDPA falls back to
    its math backend, which expands the KV heads for GQA, 34 GB at batch 64 x 32k."""
    from gpuperf import reference

    return torch.cat(
        [
            reference.attention_decode_sdpa(
                q[b : b + 1], k_cache[b : b + 1], v_cache[b : b + 1], cache_seqlens[b : b + 1]
            )
            for b in range(q.shape[0])
        ]
    )


def _reference_ops():
    from gpuperf.models.llama import PYTORCH_OPS

    return dataclasses.replace(PYTORCH_OPS, name="reference", attention_decode=_attention_decode_by_sequence)


def _tables(positions):
    from gpuperf.models.llama import LLAMA_3_8B, rotary_tables

    return rotary_tables(positions, LLAMA_3_8B)


# --- prefill ---------------------------------------------------------------------------


def _prefill_inputs(batch: int, device) -> tuple:
    """``(layer, x, cos, sin)``: ``batch`` prompts of :data:`LLAMA_SEQ_LEN` random tokens."""
    from gpuperf.models.llama import LLAMA_3_8B

    x = torch.randn(batch, LLAMA_SEQ_LEN, LLAMA_3_8B.hidden, device=device, dtype=torch.bfloat16)
    positions = torch.arange(LLAMA_SEQ_LEN, device=device).expand(batch, LLAMA_SEQ_LEN)
    return (llama_layer(device), x, *_tables(positions))


def _prefill_reference(layer, x, cos, sin):
    with torch.no_grad():
        return llama_layer(x.device, torch.float32)(x.float(), cos, sin)


def _prefill(ops: str, mode: str | None = None) -> callable:
    """``make(layer, x, cos, sin)`` running the layer's prefill with ``ops``, compiled by
    ``torch.compile`` in ``mode`` unless None (a fresh compilation per size)."""

    def make(layer, x, cos, sin):
        layer.ops = ops
        run = layer
        if mode is not None:
            torch._dynamo.reset()
            run = torch.compile(layer, mode=mode, dynamic=False)

        def step():
            with torch.no_grad():
                return run(x, cos, sin)

        return step

    return make


def _layer_flops(batch: int, q_len: int, kv_len: int, training: bool = False) -> float:
    from gpuperf.models.llama import LLAMA_3_8B

    return metrics.llama_layer_flops(LLAMA_3_8B, batch=batch, q_len=q_len, kv_len=kv_len, training=training)


def _layer_bytes(tokens: int, kv_len: int = 0, batch: int = 0) -> float:
    from gpuperf.models.llama import LLAMA_3_8B

    return metrics.llama_layer_bytes(LLAMA_3_8B, tokens=tokens, kv_len=kv_len, batch=batch)


LLAMA_PREFILL = Benchmark(
    name="llama_prefill",
    title=f"Llama-3-8B decoder layer, prefill of {LLAMA_SEQ_LEN}-token prompts, bfloat16",
    x_name="batch",
    x_label=f"batch (prompts of {LLAMA_SEQ_LEN} tokens)",
    x_values=PREFILL_BATCHES,
    make_inputs=_prefill_inputs,
    reference=_prefill_reference,
    providers=(
        Provider("triton", "gpuperf's kernels", _prefill("gpuperf")),
        Provider("triton_compile", "gpuperf's kernels, torch.compile", _prefill("gpuperf", "default")),
        Provider("eager", "eager PyTorch (cuBLAS, SDPA)", _prefill("pytorch")),
        Provider("compile", "torch.compile (default)", _prefill("pytorch", "default")),
    ),
    baseline="eager",
    metric="TFLOP/s",
    bytes=lambda b: _layer_bytes(b * LLAMA_SEQ_LEN),
    flops=lambda b: _layer_flops(b, LLAMA_SEQ_LEN, LLAMA_SEQ_LEN),
    ceiling="bf16_tflops",
    sources=LLAMA_SOURCES,
    reduction=lambda b: LAYER_CHECK_TERMS,
)

#: The batch ``torch.compile(mode="max-autotune")`` is measured at: it autotunes every
#: matmul shape anew, about a minute per batch on an H100, so one batch, the largest.
AUTOTUNE_BATCH = 8

LLAMA_PREFILL_AUTOTUNE = dataclasses.replace(
    LLAMA_PREFILL,
    name="llama_prefill_autotune",
    title=f"Llama-3-8B layer, prefill of {AUTOTUNE_BATCH} x {LLAMA_SEQ_LEN} tokens, against max-autotune",
    x_values=(AUTOTUNE_BATCH,),
    providers=(
        Provider("triton", "gpuperf's kernels", _prefill("gpuperf")),
        Provider("eager", "eager PyTorch (cuBLAS, SDPA)", _prefill("pytorch")),
        Provider("compile_max", 'torch.compile(mode="max-autotune")', _prefill("pytorch", "max-autotune")),
    ),
    # Read against what its title names: ours over max-autotune (eager is llama_prefill's).
    baseline="compile_max",
)

# --- decode ------------------------------------------------------------------------------


def _decode_inputs(kv_len: int, device, batch: int = 1) -> tuple:
    """``(layer, x, cos, sin, k_cache, v_cache, lengths)``: one new token per sequence, each
    sequence holding ``kv_len - 1`` cached tokens of random keys and values, so that the
    step writes the last slot of a cache of ``kv_len`` and attends over all of it."""
    from gpuperf.models.llama import LLAMA_3_8B as c

    x = torch.randn(batch, 1, c.hidden, device=device, dtype=torch.bfloat16)
    lengths = torch.full((batch,), kv_len - 1, dtype=torch.int32, device=device)
    cache_shape = (batch, c.n_kv_heads, kv_len, c.head_dim)
    k_cache = torch.randn(cache_shape, device=device, dtype=torch.bfloat16)
    v_cache = torch.randn(cache_shape, device=device, dtype=torch.bfloat16)
    return (llama_layer(device), x, *_tables(lengths.long()[:, None]), k_cache, v_cache, lengths)


def _decode_reference(layer, x, cos, sin, k_cache, v_cache, lengths):
    with torch.no_grad():
        ref = llama_layer(x.device, torch.float32)
        return ref.decode(x.float(), cos, sin, k_cache.float(), v_cache.float(), lengths)


def _decode(ops: str, how: str = "eager") -> callable:
    """``make(...)`` running one decode step with ``ops``: eagerly, under
    ``torch.compile(mode="reduce-overhead")`` (``how="compile"``), or replaying a CUDA graph
    captured from one eager step (``how="graph"``)."""

    def make(layer, x, cos, sin, k_cache, v_cache, lengths):
        layer.ops = ops
        args = (x, cos, sin, k_cache, v_cache, lengths)
        if how == "eager":

            def step():
                with torch.no_grad():
                    return layer.decode(*args)

            return step
        if how == "compile":
            torch._dynamo.reset()
            # The step writes the new token into the caches: CUDA graphs (which the
            # "reduce-overhead" mode records) accept that only for tensors whose
            # address stays put.
            for cache in (k_cache, v_cache):
                torch._dynamo.mark_static_address(cache)
            compiled = torch.compile(layer.decode, mode="reduce-overhead", dynamic=False)

            def step():
                with torch.no_grad():
                    return compiled(*args)

            return step
        return cuda_graph(lambda: layer.decode(*args))

    return make


LLAMA_DECODE = Benchmark(
    name="llama_decode",
    title="Llama-3-8B decoder layer, one decode step (one new token per sequence), bfloat16",
    x_name="kv_len",
    x_label="tokens in the KV cache per sequence",
    x_values=DECODE_LENGTHS,
    make_inputs=_decode_inputs,
    reference=_decode_reference,
    providers=(
        Provider("triton", "gpuperf's kernels", _decode("gpuperf")),
        Provider("triton_graph", "gpuperf's kernels, one CUDA graph", _decode("gpuperf", "graph")),
        Provider("eager", "eager PyTorch (cuBLAS, SDPA with a mask)", _decode("pytorch")),
        Provider(
            "compile_ro", 'torch.compile(mode="reduce-overhead"): CUDA graphs', _decode("pytorch", "compile")
        ),
    ),
    baseline="eager",
    metric="GB/s",
    bytes=lambda n, batch: _layer_bytes(batch, kv_len=n, batch=batch),
    flops=lambda n, batch: _layer_flops(batch, 1, n),
    ceiling="stream_gbps",
    # A bfloat16 layer: nearly all its FLOPs are matmuls, on the tensor cores.
    compute_roof="bf16_tflops",
    sources=LLAMA_SOURCES,
    axes=(("batch", DECODE_BATCHES),),
    timer="loop",
    reduction=lambda n, batch: LAYER_CHECK_TERMS,
    # A quick live build: batch 1, the launch-bound step tutorial 07 tabulates, at every
    # cache length (each point compiles the step for torch.compile and captures a graph).
    quick=(("batch", (1,)),),
)

# --- training ----------------------------------------------------------------------------


def _train_inputs(batch: int, device) -> tuple:
    """``(layer, x, cos, sin, grad_out)``, ``x`` requiring its gradient."""
    layer, x, cos, sin = _prefill_inputs(batch, device)
    return layer, x.requires_grad_(), cos, sin, torch.randn_like(x)


def _grads(run, layer, x, cos, sin, grad_out) -> tuple:
    """Gradients of ``<run(x, cos, sin), grad_out>`` with respect to ``x`` and every weight."""
    return torch.autograd.grad(run(x, cos, sin), (x, *layer.parameters()), grad_out)


#: The gradients the training benchmark's check compares: the input's and the four projections'
#: (positions in ``(x, *layer.parameters())``). The two norm weights' gradients sum 8192
#: products that largely cancel: tests/test_llama.py checks them against PyTorch's.
CHECKED_GRADS = (0, 2, 3, 5, 6)


def _checked(grads: tuple) -> tuple:
    return tuple(grads[i] for i in CHECKED_GRADS)


#: The training check's norm-wise tolerance, ``||out - ref|| / ||ref||`` per gradient. On the
#: H100 eager PyTorch's bf16 gradients were 2-3% from the float32 layer's (measured along
#: a random direction); elementwise they were up to 9 off at elements of order 1.
TRAIN_NORM_RTOL = 0.05


def _train_reference(layer, x, cos, sin, grad_out):
    ref = llama_layer(x.device, torch.float32)
    x32 = x.detach().float().requires_grad_()
    return _checked(_grads(ref, ref, x32, cos, sin, grad_out.float()))


def _train(ops: str, mode: str | None = None) -> callable:
    def make(layer, x, cos, sin, grad_out):
        layer.ops = ops
        run = layer
        if mode is not None:
            torch._dynamo.reset()
            run = torch.compile(layer, mode=mode, dynamic=False)
        return lambda: _grads(run, layer, x, cos, sin, grad_out)

    return make


_TRAIN_PROVIDERS = (
    Provider("triton", "gpuperf's kernels (Triton backward)", _train("gpuperf"), check_as=_checked),
    Provider("eager", "eager PyTorch (cuBLAS, SDPA)", _train("pytorch"), check_as=_checked),
    Provider("compile", "torch.compile (default)", _train("pytorch", "default"), check_as=_checked),
)

LLAMA_TRAIN = Benchmark(
    name="llama_train",
    title=f"Llama-3-8B decoder layer, forward + backward, {LLAMA_SEQ_LEN}-token sequences, bfloat16",
    x_name="batch",
    x_label=f"batch (sequences of {LLAMA_SEQ_LEN} tokens)",
    x_values=TRAIN_BATCHES,
    make_inputs=_train_inputs,
    reference=_train_reference,
    providers=_TRAIN_PROVIDERS,
    baseline="eager",
    metric="TFLOP/s",
    bytes=lambda b: _layer_bytes(b * LLAMA_SEQ_LEN),
    flops=lambda b: _layer_flops(b, LLAMA_SEQ_LEN, LLAMA_SEQ_LEN, training=True),
    ceiling="bf16_tflops",
    sources=LLAMA_SOURCES,
    reduction=lambda b: TRAIN_CHECK_TERMS,
    norm_rtol=TRAIN_NORM_RTOL,
)

#: The same training step, its peak memory beyond the inputs.
LLAMA_TRAIN_MEMORY = dataclasses.replace(
    LLAMA_TRAIN,
    name="llama_train_memory",
    title=f"Peak memory of one training step of the layer, {LLAMA_SEQ_LEN}-token sequences, bfloat16",
    metric="GiB",
    ceiling=None,
    timer="memory",
)
