"""Every TMA path against its reference, on the layouts a caller can hand it (issue 25).

A TMA tensor descriptor whose base, strides or a box's start in the last dimension is not
16-byte aligned faults the GPU ("illegal instruction"), and the CUDA context is lost with
it. Each test here draws shapes (most sizes not multiples of 8), row- and column-major
operands, slices of bigger buffers and views at a storage offset, and asserts one of two
outcomes, decided from the layouts (:func:`gpuperf.kernels.tma.tma_layout`) before the
call so that no example can pass both ways: the result matches the float32 (or float64)
reference, or, where the op's docstring says the input is rejected, a ``ValueError``
names the argument. The GPU is synchronized after every example, so that a fault
surfaces in the example that caused it. Every view sits in a buffer of NaNs: a kernel
that reads past its operand shows it in its result.

The GPU tests (one per path) run on an H100; the small tests of paths 1-3 run the same
strategies on tiny shapes, in Triton's interpreter where there is no GPU.
"""

import dataclasses
import re
from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from gpuperf.kernels import PersistentConfig, matmul_fp8, matmul_persistent, swiglu, to_fp8
from gpuperf.kernels.device import has_tma
from gpuperf.kernels.gluon import attention_fa3, matmul_fp8_promoted
from gpuperf.kernels.matmul_persistent import persistent_config
from gpuperf.kernels.swiglu import launch_config, swiglu_config
from gpuperf.kernels.tma import box_offset_aligned, tma_copy, tma_layout
from gpuperf.reference import attention_ref, matmul_fp8_ref, matmul_ref, swiglu_ref
from gpuperf.testing import assert_close
from tests._params import assert_close_fp8, randn
from tests.conftest import DEVICE
from tests.test_swiglu import dx_k

# A fault loses the CUDA context and every later call fails with it: shrinking would then
# report some other example than the one that faulted, so a GPU test reports the first
# failing example as drawn. derandomize: every run draws the same examples. Each example
# compiles kernels for its own shapes and layouts (the most of a GPU test's time): the
# slower tests take fewer examples, so that the file runs in about two minutes on an H100.
GPU_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=(HealthCheck.too_slow,),
)
# The interpreter runs a program in seconds: a handful of tiny examples.
SMALL_SETTINGS = settings(max_examples=5, deadline=None, derandomize=True)

HALF_DTYPES = (torch.float16, torch.bfloat16)
# The small tests run under the interpreter too, in both dtypes (gpuperf._interpreter).
SMALL_DTYPES = HALF_DTYPES
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
FP8_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# The head dims attention_fa3 is written for; any other must be a ValueError.
FA3_HEAD_DIMS = (64, 128)

# Interpreter-sized tiles, loaded through TMA (the tests' own RUNGS in test_matmul_persistent).
SMALL_TMA = PersistentConfig(32, 32, 32, 2, 4, 1)
# An FP8 config that asks for TMA whatever the layouts (the sweep's would fall back to pointers).
FP8_TMA = PersistentConfig(128, 128, 128, num_warps=8, num_stages=3)
# A warp-specialized SwiGLU config of the sweep's candidates: TMA loads from a producer warp.
SWIGLU_TMA_WS = PersistentConfig(128, 64, 64, 8, 4, 3, warp_specialize=True)


def sync() -> None:
    """Wait for the GPU (a fault surfaces here, in the example that caused it)."""
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def require_capability(major: int, exact: bool = False) -> None:
    """Skip unless the GPU's compute capability is ``major`` or newer (``exact``: ``major``.x)."""
    if DEVICE != "cuda":
        return
    have = torch.cuda.get_device_capability()[0]
    if have < major or (exact and have != major):
        pytest.skip(f"needs compute capability {major}.x{'' if exact else ' or newer'}, the GPU has {have}.x")


# --- layouts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How an operand sits in memory.

    2-D: ``"row"`` (row-major) and ``"col"`` (column-major: a transposed view), each the
    columns ``offset .. offset + cols`` of a buffer ``pad`` elements wider (rounded up to a
    multiple of 16 elements with ``align``: a padded leading dimension), or of its
    transpose; ``"offset"`` (row-major, ``offset`` elements into its storage);
    ``"strided"`` (every other column: no unit stride). 4-D ``(B, H, S, D)``: ``"bhsd"`` and
    ``"bshd"`` (a transposed view of a ``(B, S, H, D)`` buffer), each a slice of a wider
    last dimension as above; ``"offset"`` and ``"strided"`` (every other element along D)."""

    kind: str
    offset: int = 0
    pad: int = 0
    align: bool = False

    def width(self, inner: int) -> int:
        """Elements per row of the buffer that holds rows of ``inner`` elements."""
        width = self.offset + inner + self.pad
        return -(-width // 16) * 16 if self.align else width


LAYOUTS_2D = ("row", "col", "offset", "strided")
LAYOUTS_4D = ("bhsd", "bshd", "offset", "strided")
# Offsets of 0, 8 and 16 elements keep 16-byte alignment in 16-bit dtypes (0 and 16 in FP8).
OFFSETS = (0, 8, 16, 1, 3)
PADS = (0, 8, 1, 5)


def padded_layouts(kinds=LAYOUTS_2D):
    """Layouts a descriptor describes in every dtype and at any size: row- or column-major,
    starting 0 or 16 elements into rows padded to multiples of 16 elements."""
    return st.builds(Layout, st.sampled_from(kinds[:2]), st.sampled_from((0, 16)), st.sampled_from(PADS),
                     st.just(True))  # fmt: skip


def layouts(kinds=LAYOUTS_2D):
    """Any layout: half of them padded (:func:`padded_layouts`), half anyhow (some of those
    describable by chance)."""
    anyhow = st.builds(
        Layout, st.sampled_from(kinds), st.sampled_from(OFFSETS), st.sampled_from(PADS), st.booleans()
    )
    return st.one_of(padded_layouts(kinds), anyhow)


def aligned_sizes(largest: int):
    """Multiples of 16 up to ``largest``: rows of 16-byte multiples in every dtype."""
    return st.integers(1, largest // 16).map(lambda i: 16 * i)


def sizes(largest: int):
    """Sizes from 1 to ``largest``: half of them any (mostly not multiples of 8), half
    :func:`aligned_sizes`."""
    return st.one_of(st.integers(1, largest), aligned_sizes(largest))


def _nans(shape, like: torch.Tensor) -> torch.Tensor:
    return torch.full(shape, float("nan"), device=like.device).to(like.dtype)


def place(x: torch.Tensor, layout: Layout) -> torch.Tensor:
    """The 2-D ``x``'s values in ``layout``, inside a buffer of NaNs."""
    rows, cols = x.shape
    off = layout.offset
    if layout.kind == "row":
        view = _nans((rows, layout.width(cols)), x)[:, off : off + cols]
    elif layout.kind == "col":
        view = _nans((cols, layout.width(rows)), x)[:, off : off + rows].t()
    elif layout.kind == "offset":
        view = _nans((off + rows * cols,), x)[off:].view(rows, cols)
    elif layout.kind == "strided":
        view = _nans((rows, 2 * cols), x)[:, ::2]
    else:
        raise ValueError(f"no 2-D layout {layout.kind!r}")
    view.copy_(x)
    return view


def place_4d(x: torch.Tensor, layout: Layout) -> torch.Tensor:
    """The ``(B, H, S, D)`` ``x``'s values in ``layout``, inside a buffer of NaNs."""
    b, h, s, d = x.shape
    off = layout.offset
    if layout.kind == "bhsd":
        view = _nans((b, h, s, layout.width(d)), x)[..., off : off + d]
    elif layout.kind == "bshd":
        view = _nans((b, s, h, layout.width(d)), x)[..., off : off + d].transpose(1, 2)
    elif layout.kind == "offset":
        view = _nans((off + x.numel(),), x)[off:].view(x.shape)
    elif layout.kind == "strided":
        view = _nans((b, h, s, 2 * d), x)[..., ::2]
    else:
        raise ValueError(f"no 4-D layout {layout.kind!r}")
    view.copy_(x)
    return view


def undescribable(operands: dict) -> str | None:
    """The name of the first of ``operands`` that no tensor descriptor can describe, or None."""
    return next((name for name, t in operands.items() if tma_layout(t) is None), None)


def rejected(name: str, t: torch.Tensor):
    """``pytest.raises`` for the error :func:`gpuperf.kernels.tma.check_tma_operands` (or the
    Gluon FP8 matmul's K-major check) raises on ``name``."""
    shape = re.escape(str(tuple(t.shape)))
    return pytest.raises(
        ValueError, match=rf"^{name} \(shape {shape}, .* cannot be (loaded|read K-major) through TMA"
    )


# --- 1. matmul_persistent ------------------------------------------------------------------


@dataclass(frozen=True)
class MatmulCase:
    m: int
    n: int
    k: int
    dtype: torch.dtype
    a: Layout
    b: Layout
    seed: int = 0

    def operands(self):
        a = place(randn((self.m, self.k), self.dtype, seed=self.seed), self.a)
        b = place(randn((self.k, self.n), self.dtype, seed=self.seed + 1), self.b)
        return a, b


@st.composite
def matmul_cases(draw, largest: int, dtypes):
    """Half of the examples with operands TMA can load (padded layouts, any sizes), half with
    any operands (most of them rejected)."""
    layout = padded_layouts() if draw(st.booleans()) else layouts()
    m, n, k = (draw(sizes(largest)) for _ in range(3))
    return MatmulCase(
        m, n, k, draw(st.sampled_from(dtypes)), draw(layout), draw(layout), draw(st.integers(0, 2**16))
    )


def check_matmul_persistent(case: MatmulCase, config: PersistentConfig | None = None, which="best") -> None:
    """The product, or the ValueError naming the operand TMA cannot describe (docstring).
    ``which``: without a ``config``, the tuned config of that rung (``"tma_ws"``, say)."""
    a, b = case.operands()
    if config is None and which != "best":
        config = persistent_config(a, b, which)
    chosen = config or persistent_config(a, b)
    bad = undescribable({"a": a, "b": b})
    if chosen.tma and bad:
        with rejected(bad, a if bad == "a" else b):
            matmul_persistent(a, b, config=config)
    else:
        ref = matmul_ref(a, b)
        for call in ("first call", "planned call"):  # the second launches from the first's plan
            out = matmul_persistent(a, b, config=config)
            sync()
            assert out.shape == (case.m, case.n) and out.dtype == case.dtype
            assert_close(f"matmul_persistent {chosen.label()}, {call}", ref, out, k=case.k)
    sync()


@pytest.mark.gpu
@GPU_SETTINGS
@given(case=matmul_cases(320, HALF_DTYPES), which=st.sampled_from(("best", "tma_ws")))
# Issue 25: B the up half of a row-major [W_gate | W_up] with N = 300 starts 600 bytes in.
@example(case=MatmulCase(64, 300, 128, torch.bfloat16, Layout("row"), Layout("row", 300)), which="best")
@example(case=MatmulCase(37, 300, 72, torch.bfloat16, Layout("col"), Layout("row", 8, 4)), which="best")
def test_gpu_matmul_persistent_matches_or_rejects(case, which):
    require_capability(9)
    check_matmul_persistent(case, which=which)


@SMALL_SETTINGS
@given(case=matmul_cases(40, SMALL_DTYPES))
# Rows of 13 halves (26 bytes): a ValueError naming b. Odd sizes in padded rows: TMA loads them.
@example(case=MatmulCase(9, 13, 24, torch.float16, Layout("row"), Layout("row")))
@example(case=MatmulCase(33, 13, 21, torch.float16, Layout("col", 16, 1, True), Layout("row", 0, 0, True)))
def test_small_matmul_persistent_matches_or_rejects(case):
    check_matmul_persistent(case, SMALL_TMA)


# --- 2 and 3. swiglu, forward and backward -------------------------------------------------


@dataclass(frozen=True)
class Weight:
    """How ``w_gate_up`` (K, 2N) is made. ``"cat"``: ``torch.cat([w_gate, w_up], dim=1)``
    (row-major); ``"linear"``: ``torch.cat([w_gate_t, w_up_t], dim=0).t()`` of two (N, K)
    halves (nn.Linear's layout); each half in ``layout`` before the concatenation (a slice
    of a bigger buffer, say). ``"placed"``: the whole weight in ``layout``."""

    kind: str
    layout: Layout


@dataclass(frozen=True)
class SwigluCase:
    m: int
    n: int
    k: int
    dtype: torch.dtype
    x: Layout
    w: Weight
    seed: int = 0

    def inputs(self):
        """``x`` (M, K) and ``w_gate_up`` (K, 2N) scaled by ``1/sqrt(K)``: g and u of order one."""
        x = place(randn((self.m, self.k), self.dtype, seed=self.seed), self.x)
        gate, up = ((randn((self.k, self.n), torch.float32, seed=self.seed + i) * self.k**-0.5).to(self.dtype)
                    for i in (1, 2))  # fmt: skip
        kind, layout = self.w.kind, self.w.layout
        if kind == "cat":
            w = torch.cat([place(gate, layout), place(up, layout)], dim=1)
        elif kind == "linear":
            w = torch.cat([place(gate.t(), layout), place(up.t(), layout)], dim=0).t()
        else:
            w = place(torch.cat([gate, up], dim=1), layout)
        return x, w


@st.composite
def swiglu_cases(draw, largest: int, dtypes):
    """Half of the examples with inputs TMA can load (x padded, N a multiple of 16, the weight
    concatenated, or padded, or nn.Linear's with K a multiple of 16), half with any inputs
    (most of them through computed pointers)."""
    kind = draw(st.sampled_from(("cat", "linear", "placed")))
    if draw(st.booleans()):
        x_layout, w_layout, n = padded_layouts(), padded_layouts(), draw(aligned_sizes(largest))
        k = draw(aligned_sizes(largest) if kind == "linear" else sizes(largest))
    else:
        x_layout, w_layout, n, k = layouts(), layouts(), draw(sizes(largest)), draw(sizes(largest))
    m, dtype, x, w = draw(sizes(largest)), draw(st.sampled_from(dtypes)), draw(x_layout), draw(w_layout)
    return SwigluCase(m, n, k, dtype, x, Weight(kind, w), draw(st.integers(0, 2**16)))


def swiglu_reference(x, w):
    n = w.shape[1] // 2
    return swiglu_ref(x, w[:, :n], w[:, n:])


def check_swiglu_path(x, w, config) -> None:
    """TMA is launched exactly when the GPU has it, the config asks for it, both operands
    can be described, and a row-major weight's up half starts on a 16-byte boundary."""
    n = w.shape[1] // 2
    chosen = config or swiglu_config(x, w)
    w_layout = tma_layout(w)
    describable = tma_layout(x) is not None and (
        w_layout == "col" or (w_layout == "row" and box_offset_aligned(n, w.element_size()))
    )
    assert launch_config(x, w, config).tma == (chosen.tma and has_tma(x) and describable)


def check_swiglu_forward(case: SwigluCase, config: PersistentConfig | None) -> None:
    """swiglu takes any strides (docstring): always the result, never an error."""
    x, w = case.inputs()
    check_swiglu_path(x, w, config)
    ref = swiglu_reference(x, w)
    for call in ("first call", "planned call"):
        out = swiglu(x, w, config=config)
        sync()
        assert out.shape == (case.m, case.n) and out.dtype == case.dtype
        assert_close(f"swiglu {launch_config(x, w, config).label()}, {call}", ref, out, k=case.k)


def check_swiglu_backward(case: SwigluCase, grad_layout: Layout, config: PersistentConfig | None) -> None:
    """dx and dw of a random upstream gradient against autograd through the float64 reference
    (the tolerances of tests/test_swiglu.py's check_gradients)."""
    x, w = case.inputs()
    x.requires_grad_()
    w.requires_grad_()
    check_swiglu_path(x, w, config)
    out = swiglu(x, w, config=config)
    grad_out = place(randn((case.m, case.n), case.dtype, seed=case.seed + 3), grad_layout)
    dx, dw = torch.autograd.grad(out, (x, w), grad_out)
    sync()
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    dx_ref, dw_ref = torch.autograd.grad(swiglu_reference(x64, w64), (x64, w64), grad_out.double())
    assert dx.shape == x.shape and dx.dtype == x.dtype and dw.shape == w.shape and dw.dtype == w.dtype
    assert_close("swiglu dx", dx_ref, dx, k=dx_k(case.n, case.k))
    assert_close("swiglu dw", dw_ref, dw, k=64 * case.m)


# Issue 25: a row-major (K, 2N) weight with N = 300 in bfloat16, whose up half starts 600
# bytes in; and nn.Linear's layout of the same N (the 3-D descriptor's rows N apart).
ISSUE_25 = SwigluCase(64, 300, 128, torch.bfloat16, Layout("row"), Weight("cat", Layout("row")))
ISSUE_25_LINEAR = SwigluCase(
    70, 300, 96, torch.bfloat16, Layout("col"), Weight("linear", Layout("row", 8, align=True))
)


@pytest.mark.gpu
@settings(GPU_SETTINGS, max_examples=12)
@given(case=swiglu_cases(320, HALF_DTYPES), warp_specialize=st.booleans())
@example(case=ISSUE_25, warp_specialize=False)
@example(case=ISSUE_25_LINEAR, warp_specialize=True)
def test_gpu_swiglu_matches_the_reference(case, warp_specialize):
    check_swiglu_forward(case, SWIGLU_TMA_WS if warp_specialize else None)


@pytest.mark.gpu
@settings(GPU_SETTINGS, max_examples=6)
@given(case=swiglu_cases(320, HALF_DTYPES), grad_layout=layouts())
@example(case=ISSUE_25, grad_layout=Layout("row"))
def test_gpu_swiglu_gradients_match_the_reference(case, grad_layout):
    check_swiglu_backward(case, grad_layout, None)


@SMALL_SETTINGS
@given(case=swiglu_cases(40, SMALL_DTYPES))
# N = 12 in float16: the up half of a row-major weight starts 24 bytes in (pointers, not TMA).
@example(case=SwigluCase(9, 12, 16, torch.float16, Layout("row"), Weight("cat", Layout("row", 3))))
# nn.Linear's layout, K = 24: one 3-D descriptor of both halves.
@example(
    case=SwigluCase(
        17, 16, 24, torch.float16, Layout("col", align=True), Weight("linear", Layout("offset", 3))
    )
)
def test_small_swiglu_matches_the_reference(case):
    check_swiglu_forward(case, SMALL_TMA)


@SMALL_SETTINGS
@given(case=swiglu_cases(40, SMALL_DTYPES), grad_layout=layouts())
def test_small_swiglu_gradients_match_the_reference(case, grad_layout):
    check_swiglu_backward(case, grad_layout, SMALL_TMA)


# --- 4 and 5. FP8: matmul_fp8 and Gluon's matmul_fp8_promoted -------------------------------


@dataclass(frozen=True)
class FP8Case:
    m: int
    n: int
    k: int
    a_dtype: torch.dtype
    b_dtype: torch.dtype
    scaling: str  # "tensor" (one scale each) or "row" (per row of a, per column of b)
    out_dtype: torch.dtype
    a: Layout
    b: Layout
    seed: int = 0

    def operands(self):
        axis = None if self.scaling == "tensor" else -1
        a, scale_a = to_fp8(
            randn((self.m, self.k), torch.float32, seed=self.seed), axis=axis, dtype=self.a_dtype
        )
        bt, scale_bt = to_fp8(randn((self.n, self.k), torch.float32, seed=self.seed + 1), axis=axis,
                              dtype=self.b_dtype)  # fmt: skip
        return place(a, self.a), place(bt.t(), self.b), scale_a, scale_bt.t()


fp8_cases = st.builds(
    FP8Case, sizes(320), sizes(320), sizes(320), st.sampled_from(FP8_DTYPES), st.sampled_from(FP8_DTYPES),
    st.sampled_from(("tensor", "row")), st.sampled_from(FP8_OUT_DTYPES), layouts(), layouts(),
    st.integers(0, 2**16),
)  # fmt: skip


def k_major_copies(a, b) -> tuple[torch.Tensor, torch.Tensor]:
    """The operands as the FP8 matmuls' wrappers pass them on (their docstrings): ``a`` copied
    unless TMA reads it row-major, ``b`` unless column-major, where TMA can read the copy
    (:func:`gpuperf.kernels.tma.tma_copy`; a contiguous view at an unaligned address is
    copied too)."""
    return tma_copy(a, "row"), tma_copy(b, "col")


def copied_undescribable(a, b) -> str | None:
    """matmul_fp8 copies its operands K-major (:func:`k_major_copies`), and its kernel reads
    either orientation: the operand, if any, no descriptor describes after that."""
    a, b = k_major_copies(a, b)
    return undescribable({"a": a, "b": b})


def k_major_undescribable(a, b) -> str | None:
    """Gluon's kernel reads ``a`` row-major and ``b`` column-major only (K-major, as
    ``torch._scaled_mm``), and its wrapper copies an operand TMA cannot read so
    (:func:`k_major_copies`): the operand, if any, that no descriptor describes so after
    that. (A copy needs K a multiple of 16 bytes.)"""
    a, b = k_major_copies(a, b)
    if tma_layout(a) != "row":
        return "a"
    if tma_layout(b) != "col":
        return "b"
    return None


def check_fp8(op, case: FP8Case, undescribable_operand=None, **kwargs) -> None:
    """The scaled product, or, where the op loads through TMA (``undescribable_operand``
    given), the ValueError naming the operand that function says TMA cannot read."""
    a, b, scale_a, scale_b = case.operands()
    bad = undescribable_operand and undescribable_operand(a, b)
    if bad:
        with rejected(bad, a if bad == "a" else b):
            op(a, b, scale_a, scale_b, out_dtype=case.out_dtype, **kwargs)
    else:
        ref = matmul_fp8_ref(a, b, scale_a, scale_b)
        for call in ("first call", "planned call"):
            out = op(a, b, scale_a, scale_b, out_dtype=case.out_dtype, **kwargs)
            sync()
            assert out.shape == (case.m, case.n) and out.dtype == case.out_dtype
            assert_close_fp8(f"{op.__name__}, {call}", ref, out, k=case.k)
    sync()


E4M3 = torch.float8_e4m3fn


@pytest.mark.gpu
@settings(GPU_SETTINGS, max_examples=15)
@given(case=fp8_cases, config=st.sampled_from((None, FP8_TMA)))
@example(
    case=FP8Case(64, 300, 200, E4M3, E4M3, "row", torch.bfloat16, Layout("row", 3), Layout("col")),
    config=FP8_TMA,
)
def test_gpu_matmul_fp8_matches_or_rejects(case, config):
    """By default any layout is computed (copied to K-major, or computed pointers where TMA
    cannot describe even the copy); a config that asks for TMA it cannot have is a ValueError."""
    require_capability(9)
    check_fp8(matmul_fp8, case, copied_undescribable if config is not None else None, config=config)


@pytest.mark.gpu
@settings(GPU_SETTINGS, max_examples=12)
@given(case=fp8_cases)
# K = 1: b (1, N) is row-major, and no column-major copy of it has 16-byte rows.
@example(
    case=FP8Case(
        5, 7, 1, E4M3, E4M3, "row", torch.bfloat16, Layout("row", align=True), Layout("row", align=True)
    )
)
@example(case=FP8Case(64, 300, 200, E4M3, E4M3, "tensor", torch.float32, Layout("row"), Layout("row", 16)))
def test_gpu_matmul_fp8_promoted_matches_or_rejects(case):
    """Gluon's kernel loads through TMA only, K-major: an operand it can read so neither in
    place nor as a copy is a ValueError (K = 1 among them)."""
    require_capability(9, exact=True)
    check_fp8(matmul_fp8_promoted, case, k_major_undescribable)


# --- 6. Gluon's attention_fa3 --------------------------------------------------------------


@dataclass(frozen=True)
class AttentionCase:
    batch: int
    kv_heads: int
    group: int  # query heads per key/value head
    seq_q: int
    seq_k: int
    head_dim: int
    causal: bool
    dtype: torch.dtype
    q: Layout
    k: Layout
    v: Layout
    seed: int = 0

    def inputs(self):
        heads = self.kv_heads * self.group
        q = randn((self.batch, heads, self.seq_q, self.head_dim), self.dtype, seed=self.seed)
        k, v = (randn((self.batch, self.kv_heads, self.seq_k, self.head_dim), self.dtype, seed=self.seed + i)
                for i in (1, 2))  # fmt: skip
        return place_4d(q, self.q), place_4d(k, self.k), place_4d(v, self.v)


@st.composite
def attention_cases(draw):
    causal = draw(st.booleans())
    seq_q = draw(sizes(300))
    return AttentionCase(
        batch=draw(st.integers(1, 2)),
        kv_heads=draw(st.integers(1, 2)),
        group=draw(st.integers(1, 3)),
        seq_q=seq_q,
        seq_k=seq_q if causal else draw(sizes(300)),
        # Two in three of the supported dims; the others (some not multiples of 8) are errors.
        head_dim=draw(st.sampled_from((64, 128, 64, 128, 32, 40, 72, 100, 256))),
        causal=causal,
        dtype=draw(st.sampled_from(HALF_DTYPES)),
        q=draw(layouts(LAYOUTS_4D)),
        k=draw(layouts(LAYOUTS_4D)),
        v=draw(layouts(LAYOUTS_4D)),
        seed=draw(st.integers(0, 2**16)),
    )


@pytest.mark.gpu
@settings(GPU_SETTINGS, max_examples=10)
@given(case=attention_cases())
@example(case=AttentionCase(1, 2, 2, 77, 77, 128, True, torch.bfloat16, Layout("bhsd", 3, 1),
                            Layout("bshd"), Layout("offset", 8)))  # fmt: skip
def test_gpu_attention_fa3_matches_or_rejects(case):
    """Any layout is read in place or copied (docstring); a head dim other than 64 or 128 is a
    ValueError naming it."""
    require_capability(9, exact=True)
    q, k, v = case.inputs()
    if case.head_dim not in FA3_HEAD_DIMS:
        with pytest.raises(ValueError, match=rf"head dim {case.head_dim} is not supported"):
            attention_fa3(q, k, v, causal=case.causal)
    else:
        ref = attention_ref(q, k, v, case.causal)
        for call in ("first call", "planned call"):
            out = attention_fa3(q, k, v, causal=case.causal)
            sync()
            assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
            assert_close(f"attention_fa3, {call}", ref, out, k=case.seq_k)
    sync()


# --- 7. A contiguous operand at an unaligned address (issue 34) ----------------------------
#
# ``buf[1:].view(...)`` is contiguous, so ``.contiguous()`` returns it as it is, but its base
# is one element (2 bytes, or 1 in FP8) past a 16-byte boundary: a descriptor of it faults the
# GPU, and Triton's TensorDescriptor asserts on it. Each op with a TMA path checks on the host
# first and does what its docstring says: computes the result (the operand copied, or read
# through computed pointers), or raises a ValueError naming the operand and its address % 16.
# The Triton ops' tests run in the interpreter too (their checks come before any GPU's).

MISALIGNED = Layout("offset", 1)  # contiguous, one element past a 16-byte boundary


def tma_config(fp8: bool = False) -> PersistentConfig:
    """A config that loads through TMA: interpreter-sized tiles on the CPU."""
    if DEVICE == "cpu":
        return SMALL_TMA
    return FP8_TMA if fp8 else PersistentConfig(128, 128, 64, 8, 8, 3)


def misaligned_error(name: str, t: torch.Tensor):
    """``pytest.raises`` for the ValueError naming ``name`` and its address's miss of 16 bytes."""
    shape, miss = re.escape(str(tuple(t.shape))), t.data_ptr() % 16
    return pytest.raises(ValueError, match=rf"^{name} \(shape {shape}, .*address % 16 = {miss}\)")


def fp8_operands(misplaced: str):
    """FP8 ``a`` (40, 64) row-major and ``b`` (64, 48) column-major, per-row scales, the one
    ``misplaced`` names contiguous at an unaligned address (``b`` through its transpose)."""
    a, scale_a = to_fp8(randn((40, 64), torch.float32, seed=11), axis=-1)
    bt, scale_bt = to_fp8(randn((48, 64), torch.float32, seed=12), axis=-1)
    a = place(a, MISALIGNED) if misplaced == "a" else a
    bt = place(bt, MISALIGNED) if misplaced == "b" else bt
    assert (a if misplaced == "a" else bt).data_ptr() % 16
    return a, bt.t(), scale_a, scale_bt.t()


@pytest.mark.parametrize("operand", ["a", "b"])
def test_matmul_persistent_names_a_misaligned_operand(operand):
    """A TMA config refuses the operand, named (docstring); the pointer config computes it."""
    require_capability(9)
    layouts = (MISALIGNED, Layout("row")) if operand == "a" else (Layout("row"), MISALIGNED)
    a, b = MatmulCase(40, 48, 32, torch.float16, *layouts, seed=13).operands()
    config = tma_config()
    with misaligned_error(operand, a if operand == "a" else b):
        matmul_persistent(a, b, config=config)
    out = matmul_persistent(a, b, config=dataclasses.replace(config, tma=False, warp_specialize=False))
    sync()
    assert_close("matmul_persistent, pointers", matmul_ref(a, b), out, k=32)


@pytest.mark.parametrize("operand", ["x", "w_gate_up"])
def test_swiglu_computes_a_misaligned_operand_through_pointers(operand):
    """swiglu takes any strides (docstring): TMA is left for computed pointers."""
    require_capability(9)
    x_layout, w_layout = (MISALIGNED, Layout("row")) if operand == "x" else (Layout("row"), MISALIGNED)
    case = SwigluCase(40, 48, 32, torch.float16, x_layout, Weight("placed", w_layout), seed=14)
    x, w = case.inputs()
    assert (x if operand == "x" else w).data_ptr() % 16
    assert not launch_config(x, w, tma_config()).tma
    check_swiglu_forward(case, tma_config())


@pytest.mark.parametrize("operand", ["a", "b"])
def test_matmul_fp8_copies_a_misaligned_operand(operand):
    """An operand TMA cannot describe is copied K-major (docstring), by default and with a
    config that asks for TMA."""
    require_capability(9)
    a, b, scale_a, scale_b = fp8_operands(operand)
    ref = matmul_fp8_ref(a, b, scale_a, scale_b)
    for config in (None, tma_config(fp8=True)):
        out = matmul_fp8(a, b, scale_a, scale_b, config=config)
        sync()
        assert_close_fp8(f"matmul_fp8, config {config}", ref, out, k=64)


@pytest.mark.gpu
@pytest.mark.parametrize("operand", ["a", "b"])
def test_gpu_matmul_fp8_promoted_copies_a_misaligned_operand(operand):
    """Gluon's kernel reads through TMA only: the operand is copied K-major (docstring)."""
    require_capability(9, exact=True)
    a, b, scale_a, scale_b = fp8_operands(operand)
    out = matmul_fp8_promoted(a, b, scale_a, scale_b)
    sync()
    assert_close_fp8("matmul_fp8_promoted", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=64)


@pytest.mark.gpu
@pytest.mark.parametrize("operand", ["q", "k", "v"])
@pytest.mark.parametrize("head_dim", FA3_HEAD_DIMS)
def test_gpu_attention_fa3_copies_a_misaligned_input(operand, head_dim):
    """An input a descriptor cannot describe is copied (docstring), a contiguous view at an
    unaligned address included; the result is the reference's, on the first call and the next."""
    require_capability(9, exact=True)
    layouts = {name: MISALIGNED if name == operand else Layout("bhsd") for name in ("q", "k", "v")}
    case = AttentionCase(2, 2, 2, 77, 77, head_dim, True, torch.bfloat16, **layouts, seed=15)
    q, k, v = case.inputs()
    t = {"q": q, "k": k, "v": v}[operand]
    assert t.is_contiguous() and t.data_ptr() % 16
    ref = attention_ref(q, k, v, True)
    for call in ("first call", "second call"):
        out = attention_fa3(q, k, v, causal=True)
        sync()
        assert_close(f"attention_fa3, {operand} misaligned, {call}", ref, out, k=77)


# 8. tma_layout is tma_ready in each orientation ------------------------------------------


def _layout_by_strides(t) -> str | None:
    """The rule written out for a 2-D ``t``: row-major where the last stride is 1 (or its
    one column is never stepped over) and the row stride is a multiple of 16 bytes;
    column-major the other way round; nothing at an unaligned base."""
    if t.data_ptr() % 16:
        return None
    (rows, cols), (s0, s1), size = t.shape, t.stride(), t.element_size()
    if (s1 == 1 or cols == 1) and (s0 * size) % 16 == 0:
        return "row"
    if (s0 == 1 or rows == 1) and (s1 * size) % 16 == 0:
        return "col"
    return None


@settings(max_examples=300, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    s0=st.integers(1, 40),
    s1=st.integers(1, 40),
    offset=st.integers(0, 9),
    dtype=st.sampled_from([torch.float16, torch.float32, torch.float8_e4m3fn]),
)
def test_tma_layout_reads_each_orientation_as_tma_ready_does(rows, cols, s0, s1, offset, dtype):
    storage = torch.zeros(offset + rows * s0 + cols * s1 + 64, dtype=torch.float32).to(dtype)
    t = storage.as_strided((rows, cols), (s0, s1), offset)
    assert tma_layout(t) == _layout_by_strides(t)
