"""Work formulas: how many bytes a kernel must move and how many FLOPs it must do.

One set of formulas for every plot and record on the site. Bytes count each
element read once plus each element written once (the minimum any
implementation must move); FLOPs count a multiply-add as two. Every record row
stores both, so any record can be placed on a roofline chart.
"""

from __future__ import annotations

GB = 1e9
TFLOP = 1e12


def elementwise_bytes(n_elements: int, element_size: int, n_inputs: int = 2, n_outputs: int = 1) -> int:
    """Bytes moved by an elementwise op: ``(n_inputs + n_outputs) * N * element_size``.

    Vector add reads two tensors and writes one: ``3 * N * element_size``.
    """
    return (n_inputs + n_outputs) * n_elements * element_size


def vector_add_flops(n_elements: int) -> int:
    """FLOPs of ``x + y`` on ``N`` elements: one addition each, ``N``."""
    return n_elements


def softmax_bytes(n_rows: int, n_cols: int, element_size: int) -> int:
    """Bytes moved by a row softmax: the input read once and the output written once."""
    return 2 * n_rows * n_cols * element_size


def softmax_flops(n_rows: int, n_cols: int) -> int:
    """FLOPs of a row softmax, an estimate: ``5 * rows * cols``.

    Five operations per element: the max, the subtraction of the max, the
    exponential, the sum and the multiplication by the reciprocal of the sum.
    An exponential costs a GPU more than an addition, and a division may be
    used instead of the multiplication; the count is a convention, good enough
    to show that softmax does about one operation per byte, far below any GPU's
    balance point.
    """
    return 5 * n_rows * n_cols


def copy_bytes(n_bytes: int) -> int:
    """Bytes moved by a device-to-device copy of ``n_bytes``: read once, written once."""
    return 2 * n_bytes


def matmul_bytes(m: int, n: int, k: int, element_size: int, *, bias: bool = False) -> int:
    """Bytes moved by ``(M, K) @ (K, N) [+ bias (N,)]``: each operand read once and the
    ``(M, N)`` output written once, ``(M*K + K*N + M*N [+ N]) * element_size``."""
    return (m * k + k * n + m * n + (n if bias else 0)) * element_size


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of ``(M, K) @ (K, N)``: ``2 * M * N * K`` (one multiply and one add per term)."""
    return 2 * m * n * k


def attention_bytes(batch: int, heads: int, seq_len: int, head_dim: int, element_size: int) -> int:
    """Bytes moved by attention forward with ``(B, H, S, D)`` tensors: ``q``, ``k`` and ``v``
    read once and ``o`` written once, ``4 * B * H * S * D * element_size``."""
    return 4 * batch * heads * seq_len * head_dim * element_size


def attention_flops(
    batch: int, heads: int, seq_len: int, head_dim: int, *, causal: bool = False, backward: bool = False
) -> float:
    """FLOPs of attention: ``4 * B * H * S**2 * D`` forward (two matmuls), half when
    causal, 2.5 times the forward for the backward pass (five matmuls instead of two)."""
    flops = 4.0 * batch * heads * seq_len * seq_len * head_dim
    if causal:
        flops /= 2
    if backward:
        flops *= 2.5
    return flops


def gb_per_s(n_bytes: float, ms: float) -> float:
    """Bandwidth in GB/s (10**9 bytes per second) for ``n_bytes`` moved in ``ms`` milliseconds."""
    return n_bytes / (ms * 1e-3) / GB


def tflop_per_s(flops: float, ms: float) -> float:
    """Throughput in TFLOP/s (10**12 per second) for ``flops`` done in ``ms`` milliseconds."""
    return flops / (ms * 1e-3) / TFLOP


#: Unit name -> converter from (work, ms) to the unit.
RATE = {"GB/s": gb_per_s, "TFLOP/s": tflop_per_s}

#: The metrics a benchmark may report: the two rates (higher is better),
#: ``"us/call"``, host microseconds per call, and ``"GiB"``, peak memory (both
#: lower is better).
METRICS = ("GB/s", "TFLOP/s", "us/call", "GiB")
#: The metrics computed from a time (all but peak memory).
TIMED_METRICS = ("GB/s", "TFLOP/s", "us/call")
#: The metrics where less is better, drawn as bars.
LOWER_IS_BETTER = ("us/call", "GiB")
#: Bytes in a GiB.
GIB = 2**30


def rate(metric: str, work: float, ms: float) -> float:
    """Convert ``work`` (bytes for GB/s, FLOPs for TFLOP/s) done in ``ms`` into ``metric``."""
    try:
        return RATE[metric](work, ms)
    except KeyError:
        raise ValueError(f"metric must be one of {sorted(RATE)}, got {metric!r}") from None


def metric_value(metric: str, ms: float, *, n_bytes: float, flops: float) -> float:
    """One call's ``metric``: GB/s from ``n_bytes``, TFLOP/s from ``flops``, or, for
    ``"us/call"``, the time itself in microseconds."""
    if metric == "us/call":
        return ms * 1e3
    if metric not in RATE:
        raise ValueError(f"metric must be one of {list(TIMED_METRICS)}, got {metric!r}")
    return rate(metric, n_bytes if metric == "GB/s" else flops, ms)


def metric_values(
    metric: str, ms: float, ms_p20: float, ms_p80: float, *, n_bytes: float, flops: float
) -> tuple[float, float, float]:
    """``(value, value_p20, value_p80)`` for the median and the 20th and 80th percentile times.

    The percentiles are those of the value: for a rate the fastest runs (the
    20th percentile of time) give the highest value, the 80th percentile.
    """
    value = lambda t: metric_value(metric, t, n_bytes=n_bytes, flops=flops)
    a, b = value(ms_p20), value(ms_p80)
    return value(ms), min(a, b), max(a, b)


def row_mean_bytes(n_rows: int, n_cols: int, element_size: int) -> int:
    """Bytes moved by a row mean: the input read once, one value per row written."""
    return (n_rows * n_cols + n_rows) * element_size


def row_mean_flops(n_rows: int, n_cols: int) -> int:
    """FLOPs of a row mean: one addition per element (the divisions per row are negligible)."""
    return n_rows * n_cols


def rms_norm_bytes(n_rows: int, n_cols: int, element_size: int) -> int:
    """Bytes moved by RMSNorm: ``x`` and the weight read once and ``y`` written once,
    ``(2 * rows * cols + cols) * element_size`` (the per-row statistics stay on chip)."""
    return (2 * n_rows * n_cols + n_cols) * element_size


def rms_norm_flops(n_rows: int, n_cols: int) -> int:
    """FLOPs of RMSNorm, by convention ``4 * rows * cols``: per element the square, its
    addition to the row sum, the multiplication by the reciprocal root and by the
    weight (the root and the division per row are negligible)."""
    return 4 * n_rows * n_cols


def gelu_flops(n_elements: int) -> int:
    """FLOPs of GELU's tanh formula on ``N`` elements, by convention ``9 * N``.

    ``x**3`` (two multiplies), ``0.044715 *``, ``x +``, ``sqrt(2/pi) *``, ``tanh``
    (counted as one, like softmax's exponential), ``1 +``, ``* x`` and ``0.5 *``.
    """
    return 9 * n_elements


#: Tensors of the input's size that GELU's formula, written in eager PyTorch
#: (:func:`gpuperf.reference.gelu_eager`), reads and writes: eight kernels, ten
#: reads (two of them read two tensors) and eight writes.
GELU_EAGER_TENSORS = 18


def gelu_eager_bytes(n_elements: int, element_size: int) -> int:
    """Bytes the eager GELU formula moves: :data:`GELU_EAGER_TENSORS` tensors of
    ``N * element_size``, nine times the fused kernel's ``2 * N * element_size``."""
    return GELU_EAGER_TENSORS * n_elements * element_size


def add_relu_mul_flops(n_elements: int) -> int:
    """FLOPs of ``relu(x + y) * z`` on ``N`` elements: an add, a max and a multiply, ``3 * N``."""
    return 3 * n_elements


def add_relu_mul_eager_bytes(n_elements: int, element_size: int) -> int:
    """Bytes ``relu(x + y) * z`` moves in eager PyTorch, three kernels: the add reads two
    tensors and writes one, the ReLU reads one and writes one, the multiply reads two
    and writes one; ``8 * N * element_size`` against the fused kernel's ``4 * N * element_size``."""
    return 8 * n_elements * element_size


def llama_layer_flops(config, *, batch: int, q_len: int, kv_len: int, training: bool = False) -> float:
    """FLOPs of one Llama decoder layer (``config``: a :class:`gpuperf.models.llama.LlamaConfig`)
    on ``batch`` sequences of ``q_len`` new tokens that attend to ``kv_len`` keys each.

    The four projections (QKV, output, gate and up, down), ``2 * tokens * weights``, plus
    attention, ``4 * B * H * q_len * kv_len * D``, halved when the queries are the whole
    sequence (prefill, causal: ``q_len == kv_len``). Norms, RoPE and SwiGLU's elementwise
    work are left out (under 0.1%). ``training`` counts forward and backward: three times
    the projections (the backward does two matmuls per forward one) and 3.5 times the
    attention (its backward is 2.5 times its forward).
    """
    c = config
    weights = c.hidden * c.qkv_width + c.n_heads * c.head_dim * c.hidden + 3 * c.hidden * c.mlp
    projections = 2.0 * batch * q_len * weights
    attention = 4.0 * batch * c.n_heads * q_len * kv_len * c.head_dim
    if q_len == kv_len:
        attention /= 2
    return 3 * projections + 3.5 * attention if training else projections + attention


def llama_layer_bytes(config, *, tokens: int, kv_len: int = 0, batch: int = 0, element_size: int = 2) -> int:
    """The fewest bytes one step of a Llama decoder layer moves: every weight read once, the
    ``tokens`` inputs read and outputs written once, and in decode (``kv_len`` > 0) the KV
    cache of ``batch`` sequences read once, ``2 * B * H_kv * kv_len * D`` elements, and the
    new tokens' keys and values written. In a decode step these are nearly all of it, which
    is why decode is read against the copy bandwidth."""
    c = config
    weights = c.hidden * c.qkv_width + c.n_heads * c.head_dim * c.hidden + 3 * c.hidden * c.mlp + 2 * c.hidden
    activations = 2 * tokens * c.hidden
    cache = 2 * batch * c.n_kv_heads * kv_len * c.head_dim + 2 * tokens * c.n_kv_heads * c.head_dim
    return (weights + activations + (cache if kv_len else 0)) * element_size


def rope_bytes(
    batch: int, seq_len: int, n_heads: int, n_kv_heads: int, head_dim: int, element_size: int,
    table_element_size: int = 4,
) -> int:  # fmt: skip
    """Bytes moved by RoPE on ``q`` ``(B, H, S, D)`` and ``k`` ``(B, H_kv, S, D)``: both read
    once and written once, and the ``(B, S, D)`` tables ``cos`` and ``sin`` (float32 by
    default) read once, ``2 * B * S * (H + H_kv) * D * element_size + 2 * B * S * D *
    table_element_size``."""
    tokens = batch * seq_len
    return (
        2 * tokens * (n_heads + n_kv_heads) * head_dim * element_size
        + 2 * tokens * head_dim * table_element_size
    )


def rope_flops(batch: int, seq_len: int, n_heads: int, n_kv_heads: int, head_dim: int) -> int:
    """FLOPs of RoPE, by convention 3 per output element (``x * cos``, ``rotate_half(x) *
    sin`` and their sum): ``3 * B * S * (H + H_kv) * D``."""
    return 3 * batch * seq_len * (n_heads + n_kv_heads) * head_dim


def swiglu_flops(m: int, n: int, k: int) -> int:
    """FLOPs of SwiGLU, ``silu(x @ W_gate) * (x @ W_up)`` with ``x`` ``(M, K)`` and the weight
    ``[W_gate | W_up]`` ``(K, 2N)``: the two products, ``2 * M * 2N * K`` (the SiLU and the
    multiplication, a few per output element, are left out)."""
    return 2 * m * (2 * n) * k


def swiglu_bytes(m: int, n: int, k: int, element_size: int) -> int:
    """Bytes moved by SwiGLU: ``x`` ``(M, K)`` and the weight ``(K, 2N)`` read once and the
    ``(M, N)`` output written once, ``(M*K + K*2N + M*N) * element_size`` (the products
    themselves need never reach memory)."""
    return (m * k + k * 2 * n + m * n) * element_size


def attention_decode_bytes(
    batch: int, heads: int, kv_heads: int, seq_q: int, kv_len: int, head_dim: int, element_size: int
) -> int:
    """Bytes the decode step of attention must move: the KV cache's ``kv_len`` keys and
    values read once, ``2 * B * H_kv * L * D``, plus ``q`` read and the output written,
    ``2 * B * H * S_q * D``, times ``element_size`` (the split partials of Flash-Decoding,
    written and read back in float32, are not counted: they are the kernel's overhead)."""
    return (2 * batch * kv_heads * kv_len * head_dim + 2 * batch * heads * seq_q * head_dim) * element_size


def attention_decode_flops(batch: int, heads: int, seq_q: int, kv_len: int, head_dim: int) -> float:
    """FLOPs of the decode step of attention: ``4 * B * H * S_q * L * D`` (two matmuls
    against ``L`` cached keys; the causal mask among the last ``S_q`` keys is not subtracted)."""
    return 4.0 * batch * heads * seq_q * kv_len * head_dim
