"""SwiGLU: the fused kernel on every path (TMA, TMA + warp specialization, computed pointers)
against the float64 reference, its gradients, the op torch.compile sees, and its checks."""

import importlib
import json

import pytest
import torch

from gpuperf.kernels import PersistentConfig, swiglu
from gpuperf.kernels import _persistent_configs as persistent_configs
from gpuperf.kernels.swiglu import (
    SWIGLU_CANDIDATES,
    SWIGLU_DEFAULT,
    SWIGLU_INTERPRETER,
    SWIGLU_POINTER_DEFAULT,
    SWIGLU_SMALL_M_DEFAULT,
    candidates,
    forget_tuned_configs,
    launch_config,
    stage_bytes,
    swiglu_config,
)
from gpuperf.kernels.tma import tma_layout
from gpuperf.reference import swiglu_eager, swiglu_ref
from gpuperf.testing import assert_close
from tests._params import called_ops, cases, randn, recording_backend, shape_id
from tests.conftest import DEVICE

# (gpuperf.kernels.swiglu is the function; the module is looked up by name.)
swiglu_module = importlib.import_module("gpuperf.kernels.swiglu")

HALF_DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]

# Interpreter-sized configs of each path: computed pointers, TMA, TMA + warp specialization.
POINTER = PersistentConfig(32, 32, 32, 2, 4, 1, tma=False)
PATHS = [
    pytest.param(None, id="default"),
    pytest.param(POINTER, id="pointer"),
    pytest.param(PersistentConfig(32, 32, 32, 2, 4, 2, warp_specialize=True), id="tma_ws"),
]

# (M, N, K, path the default config takes under the interpreter's 32 x 32 x 32 tiles).
SHAPES = [
    (1, 16, 32, "tma"),  # one row
    (37, 40, 72, "tma"),  # N off the tile: the last gate tile reads up-weights; K off the tile
    (70, 48, 104, "tma"),  # several tiles each way, K off the tile
    (130, 96, 64, "tma"),  # more tiles than the interpreter's 4 programs: each walks several
    (17, 33, 65, "pointer"),  # odd everything: no descriptor (2N = 66 halves is not 16-byte rows)
    (70, 70, 72, "pointer"),  # N = 70: rows of 140 halves; M and K off the tile, 9 tiles
    (3, 5, 1, "pointer"),  # K = 1
]


def inputs(m, n, k, dtype=torch.float16, seed=0):
    """``x (m, k)`` and ``w_gate_up (k, 2n)`` scaled by ``1/sqrt(k)``: g and u of order one."""
    x = randn((m, k), dtype, seed=seed)
    w = (randn((k, 2 * n), torch.float32, seed=seed + 1) * k**-0.5).to(dtype)
    return x, w


def reference(x, w):
    n = w.shape[1] // 2
    return swiglu_ref(x, w[:, :n], w[:, n:])


def check_forward(x, w, name="swiglu", config=None):
    out = swiglu(x, w, config=config)
    assert out.shape == (x.shape[0], w.shape[1] // 2) and out.dtype == x.dtype and out.is_contiguous()
    assert_close(name, reference(x, w), out, k=x.shape[1])
    return out


def dx_k(n, k):
    """The ``k`` that checks dx = d[g | u] @ [W_gate | W_up]ᵀ: a sum of 2N terms of order
    ``1/sqrt(K)`` (the weight's scale) rounds like ``2N/K`` terms of order one; d[g | u] is
    rounded to the dtype before the product, and derived from g and u rounded too: four
    times that budget."""
    return max(1, 4 * 2 * n // k)


def check_gradients(x, w, name="swiglu", config=None, grad_out=None):
    """dx and dw against autograd through the float64 reference."""
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    m, n = x.shape[0], w.shape[1] // 2
    out = swiglu(x, w, config=config)
    if grad_out is None:
        grad_out = randn((m, n), x.dtype, seed=99)
    dx, dw = torch.autograd.grad(out, (x, w), grad_out)
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    dx_ref, dw_ref = torch.autograd.grad(reference(x64, w64), (x64, w64), grad_out.double())
    assert dx.dtype == x.dtype and dw.dtype == w.dtype and dw.shape == w.shape
    assert_close(f"{name} dx", dx_ref, dx, k=dx_k(n, x.shape[1]))
    # dw = xᵀ @ d[g | u]: M terms of order one, each carrying three bfloat16 roundings (g
    # and u recomputed in the dtype, then d): 64 times the budget of an M-term sum, for the
    # tail of ~10^8 elements at Llama's sizes (at M = 64, 4 times failed by a few elements).
    assert_close(f"{name} dw", dw_ref, dw, k=64 * m)


@pytest.mark.parametrize(
    "shape, dtype, config", cases(SHAPES, HALF_DTYPES, PATHS, ids=[lambda s: shape_id(s[:3])])
)
def test_every_path_matches_reference(shape, dtype, config):
    m, n, k, default_path = shape
    x, w = inputs(m, n, k, dtype, seed=m + n)
    chosen = launch_config(x, w, config)
    if config is None:
        assert ("tma" if chosen.tma else "pointer") == default_path
    if default_path == "pointer":
        assert not chosen.tma and not chosen.warp_specialize  # TMA cannot: computed pointers
    check_forward(x, w, f"swiglu {chosen.label()}", config)
    # The second call launches from the plan the first one made (on a GPU).
    check_forward(x, w, f"swiglu planned {chosen.label()}", config)


def test_gate_tile_reading_up_columns_is_dropped():
    """N = 40 in tiles of 32: the second gate tile spans columns 32..63, 40..63 of them
    up-weights, and the second up tile runs past 2N = 80 into TMA's zero fill. Up-weights
    far larger than the gate's would show in any output they leaked into."""
    x, w = inputs(33, 40, 64, seed=3)
    w[:, 40:] *= 64
    config = PersistentConfig(32, 32, 32, 2, 4, 1)
    assert launch_config(x, w, config).tma
    check_forward(x, w, "swiglu gate/up boundary", config)


def test_linear_layout_takes_one_dot_and_keeps_the_halves_apart():
    """nn.Linear's layout, (2N, K) row-major: one (2, BLOCK_N, BLOCK_K) box per K step holds
    the gate rows and the up rows N below them. N = 40 in tiles of 32: the second box's rows
    past N must be TMA's zeros in both halves (not the next half's rows), and K = 72 ends
    in a partial step. Up-weights 64 times the gate's would show where they leaked."""
    from gpuperf.kernels.swiglu import _fields

    x, w = inputs(33, 40, 72, seed=30)
    w[:, 40:] *= 64
    w = w.t().contiguous().t()
    config = PersistentConfig(32, 32, 32, 2, 4, 1)
    assert tma_layout(w) == "col" and launch_config(x, w, config).tma
    check_forward(x, w, "swiglu linear layout", config)
    check_forward(x, w, "swiglu linear layout, planned", config)
    out = torch.ops.gpuperf.swiglu(x, w, *_fields(config))  # the registered op, called eagerly
    assert_close("op, linear layout", reference(x, w), out, k=72)


@pytest.mark.parametrize("layout", ["x_col", "w_col", "both_col"])
def test_transposed_operands_are_read_in_place_through_tma(layout):
    x, w = inputs(40, 48, 56, seed=4)
    if layout in ("x_col", "both_col"):
        x = x.t().contiguous().t()
        assert tma_layout(x) == "col"
    if layout in ("w_col", "both_col"):
        w = w.t().contiguous().t()  # nn.Linear's layout: (2N, K) row-major
        assert tma_layout(w) == "col"
    assert launch_config(x, w).tma
    check_forward(x, w, f"swiglu {layout}")
    check_gradients(x, w, f"swiglu {layout}")


def test_strides_no_descriptor_takes_go_through_pointers():
    x = randn((72, 37), torch.float16, seed=5).t()  # column-major, 37 rows: 74-byte columns
    w = (randn((72, 100), torch.float32, seed=6) * 72**-0.5).half()[:, 10:90]  # a column slice
    assert tma_layout(x) is None
    assert not launch_config(x, w).tma
    check_forward(x, w, "swiglu strided")
    check_gradients(x, w, "swiglu strided")
    flat = randn((1 + 32 * 16,), torch.float16, seed=7)
    misaligned = flat[1:].view(32, 16)  # starts 2 bytes past a 16-byte boundary
    w2 = inputs(1, 16, 16, seed=8)[1]
    assert not launch_config(misaligned, w2).tma
    check_forward(misaligned, w2, "swiglu misaligned")


@pytest.mark.parametrize(
    "shape, dtype, config",
    cases([s for s in SHAPES if s[0] > 1], HALF_DTYPES, PATHS, ids=[lambda s: shape_id(s[:3])]),
)
def test_gradients_match_reference(shape, dtype, config):
    m, n, k, _ = shape
    check_gradients(*inputs(m, n, k, dtype, seed=m + k), config=config)


def test_gradients_of_one_input_and_a_broadcast_gradient(device):
    x, w = inputs(24, 40, 48, seed=9)
    out = swiglu(x.requires_grad_(), w)
    ones = torch.ones((), dtype=torch.float16, device=x.device)
    (dx,) = torch.autograd.grad(out, (x,), ones.expand(out.shape))
    x64 = x.detach().double().requires_grad_()
    (dx_ref,) = torch.autograd.grad(reference(x64, w.double()).sum(), (x64,))
    assert_close("swiglu dx (sum)", dx_ref, dx, k=dx_k(40, 48))
    check_gradients(x, w, "swiglu y.sum()", grad_out=ones.expand(24, 40))


def test_matches_the_eager_formula_within_its_rounding(device):
    x, w = inputs(40, 48, 64, seed=10)
    assert_close("swiglu vs eager", swiglu_eager(x, w[:, :48], w[:, 48:]), swiglu(x, w), k=64)


def test_no_grad_and_inference_mode(device):
    x, w = inputs(16, 16, 32, seed=11)
    x.requires_grad_()
    with torch.no_grad():
        out = swiglu(x, w)
    assert out.grad_fn is None
    assert_close("swiglu no_grad", reference(x.detach(), w), out, k=32)
    with torch.inference_mode():
        assert_close("swiglu inference", reference(x.detach(), w), swiglu(x.detach(), w), k=32)


@pytest.mark.parametrize("shape", [(5, 7, 0), (0, 8, 16), (8, 0, 16), (0, 0, 0)], ids=shape_id)
def test_empty_dimensions_need_no_launch(shape):
    m, n, k = shape
    x, w = randn((m, k), torch.float16), randn((k, 2 * n), torch.float16)
    out = swiglu(x, w)
    assert out.shape == (m, n) and not out.any()  # K = 0: silu(0) * 0
    x.requires_grad_()
    w.requires_grad_()
    swiglu(x, w).sum().backward()
    assert x.grad.shape == x.shape and not x.grad.any()
    assert w.grad.shape == w.shape and not w.grad.any()


# --- the torch.library op and torch.compile ------------------------------------------------


#: The op's shapes: under the interpreter, one a descriptor takes and one it cannot (every
#: shape runs through swiglu() above).
OP_SHAPES = SHAPES[1:] if DEVICE == "cuda" else [SHAPES[1], SHAPES[4]]


@pytest.mark.parametrize("config", [*PATHS[1:], pytest.param(SWIGLU_INTERPRETER, id="tma")])
def test_registered_op_and_its_autograd(config):
    """torch.ops.gpuperf.swiglu (what torch.compile calls), eagerly, and its autograd."""
    from gpuperf.kernels.swiglu import _fields

    for m, n, k, _ in OP_SHAPES:
        x, w = inputs(m, n, k, seed=12)
        x.requires_grad_()
        w.requires_grad_()
        out = torch.ops.gpuperf.swiglu(x, w, *_fields(config))
        expected = reference(x.detach(), w.detach())
        assert_close(f"torch.ops.gpuperf.swiglu {config.label()}", expected, out, k=k)
        grad_out = randn((m, n), torch.float16, seed=13)
        dx, dw = torch.autograd.grad(out, (x, w), grad_out)
        x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
        dx_ref, dw_ref = torch.autograd.grad(reference(x64, w64), (x64, w64), grad_out.double())
        assert_close("op dx", dx_ref, dx, k=dx_k(n, k))
        assert_close("op dw", dw_ref, dw, k=4 * m)


def test_backward_op_takes_strided_gradients():
    """torch.ops.gpuperf.swiglu_backward: d[g | u] in float32 from dy and [g | u]."""
    g, u = randn((9, 20), torch.float32, seed=14), randn((9, 20), torch.float32, seed=15)
    dy = randn((20, 9), torch.float16, seed=16).t()  # column-major dy
    d = torch.ops.gpuperf.swiglu_backward(dy, torch.cat([g, u], dim=1).half())
    g, u = g.half().double(), u.half().double()
    sig = torch.sigmoid(g)
    assert_close("dg", dy.double() * u * sig * (1 + g * (1 - sig)), d[:, :20])
    assert_close("du", dy.double() * g * sig, d[:, 20:])


def test_compile_fullgraph_keeps_the_op_in_one_graph():
    graphs, backend = recording_backend()

    def mlp(x, w):
        return swiglu(x * 2.0, w) * 2.0  # exact scalings in fp16

    x, w = inputs(40, 40, 72, seed=17)
    out = torch.compile(mlp, backend=backend, fullgraph=True)(x, w)
    assert len(graphs) == 1
    called = called_ops(graphs[0])
    assert "gpuperf.swiglu" in called
    assert_close("compiled swiglu", reference(x * 2.0, w) * 2.0, out, k=72)


def _mlp(x, w):
    return swiglu(x * 2.0, w) * 2.0  # exact scalings in fp16


def _swiglu_grads(fn, x, w, grad_out):
    """The output and ``(dx, dw)`` of ``fn`` (swiglu, compiled or not)."""
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    out = fn(x, w)
    return (out.detach(), *torch.autograd.grad(out, (x, w), grad_out))


@pytest.mark.parametrize("m, n, k", [(40, 40, 72), (17, 33, 65)], ids=["tma", "pointer"])
def test_compiled_training_traces_where_is_compiling_is_false(
    m, n, k, compiling_in_traced_frames_only, eager_launches_of_a_trace
):
    """AOTAutograd traces the forward and the backward (swiglu_backward on functional
    tensors: its matmuls and the elementwise op ``torch.ops.gpuperf.swiglu_backward``, not
    the in-place launch) with ``is_compiling()`` False: nothing launches eagerly on a
    trace's tensors, and the compiled step gives the eager one's output and gradients."""
    x, w = inputs(m, n, k, seed=41)
    grad_out = randn((m, n), torch.float16, seed=42)
    got = _swiglu_grads(torch.compile(_mlp, backend="aot_eager", fullgraph=True), x, w, grad_out)
    assert eager_launches_of_a_trace == []
    assert [t.shape for t in got] == [(m, n), x.shape, w.shape]
    if DEVICE == "cuda":  # (the interpreter does not run the kernels of an AOTAutograd graph)
        want = _swiglu_grads(_mlp, x, w, grad_out)
        for name, g, e in zip(("out", "dx", "dw"), got, want, strict=True):
            torch.testing.assert_close(g, e, rtol=1e-2, atol=1e-2, msg=lambda msg, n=name: f"{n}: {msg}")


def test_compiled_graph_trains_where_is_compiling_is_false(
    compiling_in_traced_frames_only, eager_launches_of_a_trace
):
    """Dynamo runs the registered op's body on fake tensors with ``is_compiling()`` False (the
    TMA config: its layouts read from the storage offsets): the graph calls the op, nothing
    launches on a fake tensor, and the output and the gradients equal the eager call's."""
    x, w = inputs(40, 40, 72, seed=43)
    grad_out = randn((40, 40), torch.float16, seed=44)
    graphs, backend = recording_backend()
    got = _swiglu_grads(torch.compile(_mlp, backend=backend, fullgraph=True), x, w, grad_out)
    assert len(graphs) == 1 and "gpuperf.swiglu" in called_ops(graphs[0])
    assert eager_launches_of_a_trace == []
    want = _swiglu_grads(_mlp, x, w, grad_out)
    for name, g, e in zip(("out", "dx", "dw"), got, want, strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=0, msg=lambda msg, n=name: f"{n}: {msg}")


# --- configs -------------------------------------------------------------------------------


def test_candidates_fit_and_cover_every_path():
    kept = candidates(8192, 14336, 4096)
    assert {persistent_configs.variant(c) for c in kept} == {"pointer", "tma", "tma_ws"}
    assert set(kept) <= set(SWIGLU_CANDIDATES)
    assert all(stage_bytes(c) * c.num_stages <= persistent_configs.SHARED_MEMORY_BYTES for c in kept)
    # Two 128 x 128 float32 tiles over 4 warps would spill.
    assert all(not (c.block_m == c.block_n == 128 and c.num_warps == 4) for c in kept)
    # A 128-row tile over a 16-row product computes mostly padding.
    assert all(c.block_m <= 32 for c in candidates(16, 14336, 4096))
    assert {c.block_m for c in candidates(64, 14336, 4096)} == {64, 128}  # decode tiles among them
    for default in (SWIGLU_DEFAULT, SWIGLU_SMALL_M_DEFAULT, SWIGLU_POINTER_DEFAULT):
        assert stage_bytes(default) * default.num_stages <= persistent_configs.SHARED_MEMORY_BYTES


def test_config_choice_on_a_gpu(monkeypatch, tmp_path):
    """Defaults by M and by TMA without a sweep; a committed sweep's nearest shape with one."""
    op = swiglu_module
    monkeypatch.setattr(op, "tuned_folder", lambda device_index: "test-gpu")
    monkeypatch.setattr(op, "capability", lambda device_index: (9, 0))
    monkeypatch.setattr(persistent_configs, "TUNED_DIR", tmp_path)
    forget_tuned_configs()
    try:
        assert op._config_for(0, 8192, 14336, 4096) == SWIGLU_DEFAULT
        assert op._config_for(0, 64, 14336, 4096) == SWIGLU_SMALL_M_DEFAULT
        tuned = {64: PersistentConfig(64, 64, 128, num_warps=4, num_stages=4)}
        tuned[8192] = PersistentConfig(128, 128, 64, num_warps=8, num_stages=4, warp_specialize=True)
        pointer = PersistentConfig(128, 64, 64, num_warps=4, num_stages=3, tma=False)
        best = [
            {"variant": "best", "shape": [m, 14336, 4096], "config": c.as_dict()} for m, c in tuned.items()
        ]
        best.append({"variant": "pointer", "shape": [8192, 14336, 4096], "config": pointer.as_dict()})
        (tmp_path / "test-gpu").mkdir()
        (tmp_path / "test-gpu" / "swiglu.json").write_text(json.dumps({"best": best}))
        forget_tuned_configs()
        assert op._config_for(0, 16384, 14336, 4096) == tuned[8192]
        assert op._config_for(0, 32, 14336, 4096) == tuned[64]
        monkeypatch.setattr(op, "capability", lambda device_index: (8, 0))
        assert op._config_for(0, 2048, 14336, 4096) == pointer
        (tmp_path / "test-gpu" / "swiglu.json").unlink()
        forget_tuned_configs()
        assert op._config_for(0, 2048, 14336, 4096) == SWIGLU_POINTER_DEFAULT
    finally:
        monkeypatch.undo()
        forget_tuned_configs()


@pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's config (a GPU reads its sweep)")
def test_interpreter_config():
    x, w = inputs(4, 8, 16)
    assert swiglu_config(x, w) == SWIGLU_INTERPRETER
    assert launch_config(x, w, POINTER) == POINTER


# --- bad inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, error, match",
    [
        pytest.param(lambda: ([[1.0]], randn((8, 8), torch.float16)), TypeError,
                     "x must be a torch.Tensor, got list", id="x-list"),
        pytest.param(lambda: (randn((4, 8), torch.float16), None), TypeError,
                     "w_gate_up must be a torch.Tensor, got NoneType", id="w-none"),
        pytest.param(lambda: (randn((4, 8), torch.float32), randn((8, 8), torch.float32)), TypeError,
                     "x has dtype float32; supported dtypes are float16, bfloat16", id="fp32"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((8, 8), torch.bfloat16)), TypeError,
                     "same dtype, got x float16, w_gate_up bfloat16", id="mixed-dtypes"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((8, 8), torch.int32)), TypeError,
                     "w_gate_up has dtype int32", id="w-int32"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((16, 8), torch.float16)), ValueError,
                     r"x's columns must match w_gate_up's rows.*\(8 != 16\)", id="k-mismatch"),
        pytest.param(lambda: (randn((2, 4, 8), torch.float16), randn((8, 8), torch.float16)), ValueError,
                     r"must be 2-D, got x \(2, 4, 8\)", id="x-3d"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((16,), torch.float16)), ValueError,
                     r"must be 2-D.*w_gate_up \(16,\)", id="w-1d"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((8, 7), torch.float16)), ValueError,
                     "w_gate_up must have an even number of columns.*got 7", id="odd-2N"),
    ],
)  # fmt: skip
def test_bad_input_is_rejected(args, error, match):
    with pytest.raises(error, match=match):
        swiglu(*args())


def test_bad_config_is_rejected():
    x, w = inputs(8, 8, 8)
    with pytest.raises(TypeError, match=r"config must be a gpuperf\.kernels\.PersistentConfig, got dict"):
        swiglu(x, w, config={"block_m": 32})
    swiglu(x, w)  # a plan for these inputs (on a GPU) must not let a bad config through
    with pytest.raises(TypeError, match="PersistentConfig, got str"):
        swiglu(x, w, config="tma")


def test_config_is_keyword_only():
    x, w = inputs(8, 8, 8)
    with pytest.raises(TypeError):
        swiglu(x, w, POINTER)


@pytest.mark.skipif(DEVICE != "cpu", reason="checks the device error on a machine without a GPU")
def test_tensors_on_another_device_are_rejected():
    with pytest.raises(ValueError, match=r"same device, got x on cpu, w_gate_up on meta"):
        swiglu(randn((4, 8), torch.float16), torch.empty(8, 8, dtype=torch.float16, device="meta"))


def test_cpu_tensor_is_refused_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        swiglu(torch.ones(2, 8, dtype=torch.float16), torch.ones(8, 8, dtype=torch.float16))


# --- the benchmark's declaration -----------------------------------------------------------


def test_benchmark_counts_and_checks_its_floor():
    """The cuBLAS provider runs x @ [W_gate | W_up] alone; its check applies the epilogue."""
    from gpuperf.bench import catalog

    bench = catalog.SWIGLU
    assert bench.flops((64, 14336, 4096)) == 2 * 64 * 2 * 14336 * 4096
    assert bench.bytes((64, 14336, 4096)) == 2 * (64 * 4096 + 4096 * 2 * 14336 + 64 * 14336)
    assert bench.reduction((64, 14336, 4096)) == 4096 and bench.baseline == "eager"
    assert bench.ceiling_key() == "bf16_tflops"
    shape = (12, 24, 32)
    x, w = bench.make_inputs(shape, "cpu")
    expected = bench.reference(x, w)
    assert expected.dtype == torch.float64 and expected.shape == (12, 24)
    providers = {p.key: p for p in bench.providers}
    floor = providers["cublas"].make(x, w)()
    assert floor.shape == (12, 48)  # no epilogue in what is timed
    assert_close("cublas floor", expected, providers["cublas"].check_as(floor), k=32)
    assert_close("eager", expected, providers["eager"].make(x, w)(), k=32)


# --- on a GPU, at the sizes the benchmark runs ----------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 14336, 4096), (2048, 14336, 4096), (333, 1000, 520)], ids=shape_id)
def test_gpu_forward_and_gradients_at_real_sizes(shape):
    m, n, k = shape
    x, w = inputs(m, n, k, torch.bfloat16, seed=20)
    if m == 2048:
        assert launch_config(x, w).tma  # Hopper loads through TMA
    check_forward(x, w, "swiglu gpu")
    check_gradients(x, w, "swiglu gpu")
    assert_close("swiglu vs eager", swiglu_eager(x, w[:, :n], w[:, n:]), swiglu(x, w), k=k)


@pytest.mark.gpu
def test_gpu_without_tma_takes_pointers(ampere_gpu):
    x, w = inputs(256, 192, 320, torch.bfloat16, seed=21)
    chosen = launch_config(x, w)
    assert not chosen.tma and not chosen.warp_specialize
    check_forward(x, w, "swiglu ampere")
    check_gradients(x, w, "swiglu ampere")
    from gpuperf.kernels.swiglu import _fields

    out = torch.ops.gpuperf.swiglu(x, w, *_fields(SWIGLU_DEFAULT))
    assert_close("op ampere", reference(x, w), out, k=320)


@pytest.mark.gpu
def test_gpu_planned_calls_compute_on_their_own_inputs():
    """The second call of a layout launches from the plan the first left: on its own tensors,
    into its own output, for each dtype, layout and path."""
    plans = swiglu.plans
    plans.clear()
    cases = [(torch.float16, False, None), (torch.bfloat16, False, None), (torch.bfloat16, True, None)]
    cases.append((torch.bfloat16, False, PersistentConfig(128, 64, 64, num_warps=4, tma=False)))
    for dtype, col, config in cases:
        for seed in (1, 2, 3):
            x, w = inputs(256, 192, 320, dtype, seed=seed)
            if col:
                w = w.t().contiguous().t()
            check_forward(x, w, f"swiglu {dtype} col={col} {config} call {seed}", config)
    assert len(plans) == len(cases)
    # A model's weight is an nn.Parameter: in inference its calls launch from plans too.
    weight = torch.nn.Parameter(inputs(256, 192, 320, torch.bfloat16, seed=4)[1])
    with torch.no_grad():
        for seed in (5, 6):
            check_forward(inputs(256, 192, 320, torch.bfloat16, seed=seed)[0], weight, "swiglu parameter")
    # A plan's key holds each input's type: the Parameter's first call keeps one plan of its
    # own (its layout is that of the second case), and its second call launches from it.
    assert len(plans) == len(cases) + 1


@pytest.mark.gpu
def test_gpu_every_candidate_runs():
    x, w = inputs(300, 1000, 520, torch.bfloat16, seed=22)
    for config in candidates(300, 1000, 520):
        check_forward(x, w, f"swiglu {config.label()}", config)


@pytest.mark.gpu
def test_gpu_compile_fullgraph_trains_through_one_graph():
    x, w = inputs(512, 1024, 768, torch.bfloat16, seed=23)

    def mlp(x, w):
        return swiglu(x * 2.0, w) * 2.0

    torch._dynamo.reset()
    xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
    out = torch.compile(mlp, fullgraph=True)(xs, ws)
    grad_out = randn(tuple(out.shape), torch.bfloat16, seed=24)
    out.backward(grad_out)
    x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
    ref = reference(x64 * 2.0, w64) * 2.0
    ref.backward(grad_out.double())
    assert_close("compiled swiglu", ref, out, k=768)
    # Both scalings by 2 scale the gradients' terms by 4: 16 times the rounding budget.
    assert_close("compiled swiglu dx", x64.grad, xs.grad, k=16 * dx_k(1024, 768))
    assert_close("compiled swiglu dw", w64.grad, ws.grad, k=16 * 64 * 512)


@pytest.mark.gpu
def test_gpu_compile_reduce_overhead_replays_the_op():
    """Inductor launches the op's kernel (descriptors made on the device, scratch memory from
    the allocator) inside the CUDA graph it records and replays."""
    x, w = inputs(256, 512, 384, torch.bfloat16, seed=27)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, w: swiglu(x, w) + 1.0, mode="reduce-overhead", fullgraph=True)
    for step in range(3):  # a later call records the graph, the next replays it
        x.copy_(randn((256, 384), torch.bfloat16, seed=28 + step))
        out = compiled(x, w)
        assert_close(f"swiglu reduce-overhead call {step}", reference(x, w) + 1.0, out, k=384)


@pytest.mark.gpu
def test_gpu_eager_call_captures_into_a_cuda_graph():
    x, w = inputs(128, 512, 256, torch.bfloat16, seed=25)
    swiglu(x, w)  # compile, and leave a plan
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        swiglu(x, w)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = swiglu(x, w)
    x.copy_(randn((128, 256), torch.bfloat16, seed=26))
    graph.replay()
    assert_close("swiglu in a CUDA graph", reference(x, w), out, k=256)


def test_bfloat16_is_right_wherever_it_runs():
    """Triton 3.6's interpreter multiplies bfloat16's raw bits in tl.dot; gpuperf._interpreter
    widens them to float32 there, so bfloat16 SwiGLU is right on the CPU too, in bfloat16."""
    for m, n, k in ((9, 24, 32), (1, 40, 48)):
        x = randn((m, k), torch.bfloat16, seed=m)
        w = randn((k, 2 * n), torch.bfloat16, seed=n) * k**-0.5
        out = swiglu(x, w)
        assert out.dtype == torch.bfloat16
        assert_close(f"swiglu bf16 {m}x{n}x{k}", swiglu_ref(x, w[:, :n], w[:, n:]), out, k=k)


@pytest.mark.gpu
def test_gpu_compile_reduce_overhead_trains_through_cuda_graphs():
    """reduce-overhead records CUDA graphs of the forward (descriptors made on the device)
    and of the backward (matmuls and the elementwise op) and replays them on new inputs."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, w: swiglu(x, w) * 2.0, mode="reduce-overhead", fullgraph=True)
    for step in range(3):  # a later call records the graphs, the next replays them
        x, w = inputs(256, 512, 384, torch.bfloat16, seed=40 + step)
        xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
        out = compiled(xs, ws)
        grad_out = randn(tuple(out.shape), torch.bfloat16, seed=50 + step)
        out.backward(grad_out)
        x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
        ref = reference(x64, w64) * 2.0
        ref.backward(grad_out.double())
        assert_close(f"reduce-overhead swiglu, call {step}", ref, out, k=384)
        assert_close(f"reduce-overhead swiglu dx, call {step}", x64.grad, xs.grad, k=4 * dx_k(512, 384))
        assert_close(f"reduce-overhead swiglu dw, call {step}", w64.grad, ws.grad, k=4 * 64 * 256)
