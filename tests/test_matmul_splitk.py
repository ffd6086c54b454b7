"""matmul_splitk: the split-K matmul of a decode step's projections, against the float64
reference; rows, columns and K off every tile, forced slice counts, nn.Linear's layout, the
plan path, every bad input, the launch rule, torch.compile and CUDA graphs."""

import importlib

import pytest
import torch

from gpuperf.kernels import matmul_splitk
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels.matmul_splitk import (
    SPLITK_BLOCK_K,
    SPLITK_MIN_K_PER_SPLIT,
    SPLITK_PROGRAMS_PER_SM,
    splitk_launch,
    splitk_splits,
)
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close
from tests._params import called_ops, check_planned_calls, randn, record_calls, recording_backend, shape_id
from tests.conftest import DEVICE

DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]

# gpuperf.kernels.matmul_splitk is the function; the module is looked up by name.
splitk_module = importlib.import_module("gpuperf.kernels.matmul_splitk")

# (M, N, K): M of 1, 3, 16, 17 (two row blocks' worth of tl.dot rows), 64; N off the column
# block (16 under the interpreter, 64 on a GPU); K of 1, off BLOCK_K, and long enough for
# several slices under the interpreter's rule.
SHAPES = [(1, 33, 300), (3, 33, 300), (16, 40, 129), (17, 33, 300), (64, 20, 96), (1, 7, 1), (3, 1, 65)]
# 19 slices: one per tile of 16 under the interpreter, more than one step (16 partials) of the
# reduction kernel.
SPLITS = [pytest.param(s, id=f"split{s}") for s in (1, 2, 3, 7, 19)] + [pytest.param(None, id="rule")]


def operands(m, n, k, dtype, seed=0):
    return randn((m, k), dtype, seed=seed), randn((k, n), dtype, seed=seed + 1)


def check(a, b, name="matmul_splitk", **kwargs):
    out = matmul_splitk(a, b, **kwargs)
    m, n = a.shape[0], b.shape[1]
    assert out.shape == (m, n) and out.dtype == a.dtype and out.is_contiguous()
    assert_close(name, matmul_ref(a, b), out, k=a.shape[1])
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    a, b = operands(*shape, dtype, seed=sum(shape))
    check(a, b)


@pytest.mark.parametrize("split_k", SPLITS)
@pytest.mark.parametrize("shape", [(1, 33, 300), (17, 40, 300)], ids=shape_id)
def test_every_slice_count_gives_the_reference(shape, split_k):
    a, b = operands(*shape, torch.float16, seed=5)
    check(a, b, f"split_k={split_k}", split_k=split_k)


@pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's 16-key tiles")
def test_forced_slices_are_launched_as_asked_where_k_has_the_tiles():
    m, n, k = 3, 33, 300
    block_k = splitk_launch(m, n, k, -1).block_k
    assert k // block_k >= 7  # 300 keys make 19 tiles of 16 here: room for 7 slices
    for s in (1, 2, 3, 7, 19):
        assert splitk_launch(m, n, k, -1, s).split_k == s
    assert 19 > splitk_module.SPLITK_REDUCE_MAX_BLOCK_S
    # More slices than tiles: lowered to one slice per tile, none empty.
    assert splitk_launch(m, n, 40, -1, 50).split_k == -(-40 // block_k)
    assert splitk_launch(m, n, 1, -1, 7).split_k == 1


def test_the_rule_splits_k_here():
    """Under the interpreter (8 "SMs", 16-column tiles) 33 columns give 3 tiles: 2 slices."""
    if DEVICE == "cpu":
        assert splitk_launch(1, 33, 300, -1).split_k == 2
    a, b = operands(1, 33, 300, torch.float16, seed=6)
    check(a, b, "rule")


def test_the_same_result_on_every_run():
    a, b = operands(3, 33, 300, torch.float16, seed=8)
    first = matmul_splitk(a, b, split_k=7)
    assert torch.equal(first, matmul_splitk(a, b, split_k=7))


@pytest.mark.parametrize("layout", ["b_linear", "a_transposed", "a_strided", "both"])
def test_any_strides_without_copies(layout):
    m, n, k = 5, 33, 200
    if layout in ("a_transposed", "both"):
        a = randn((k, m), torch.float16, seed=1).t()
    elif layout == "a_strided":
        a = randn((m, 2 * k), torch.float16, seed=1)[:, ::2]
    else:
        a = randn((m, k), torch.float16, seed=1)
    # nn.Linear keeps its weight as (N, K): the model passes w.t().
    b = randn((n, k), torch.float16, seed=2).t() if layout in ("b_linear", "both") else None
    if b is None:
        b = randn((k, n), torch.float16, seed=2)
    assert not (a.is_contiguous() and b.is_contiguous())
    for split_k in (None, 1, 3):
        check(a, b, f"{layout} split_k={split_k}", split_k=split_k)


def test_k_zero_gives_zeros_and_empty_shapes_give_empty():
    a, b = operands(5, 7, 0, torch.float16)
    assert torch.equal(matmul_splitk(a, b), torch.zeros(5, 7, dtype=torch.float16, device=a.device))
    for m, n in ((0, 7), (5, 0), (0, 0)):
        a, b = operands(m, n, 16, torch.float16)
        out = matmul_splitk(a, b)
        assert out.shape == (m, n) and out.dtype == torch.float16


def test_second_call_reads_new_inputs():
    """The second call with like inputs launches from the plan: new tensors, new addresses, a
    new output each time."""
    matmul_splitk.plans.clear()
    outs = []
    for seed in range(3):
        for split_k in (None, 1, 3):
            a, b = operands(4, 33, 300, torch.float16, seed=10 + seed)
            outs.append(check(a, b, f"call {seed} split_k={split_k}", split_k=split_k))
    assert len({o.data_ptr() for o in outs[-3:]}) == 3
    assert len(matmul_splitk.plans) == 3


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of a layout and split_k checks and plans; the next ones, on new tensors,
    skip the checks (none run) and compute on their own inputs, bit for bit as the op does,
    with one slice and with several (the workspace and the reduction)."""
    checks = record_calls(monkeypatch, splitk_module, "_check")
    matmul_splitk.plans.clear()
    check_planned_calls(
        matmul_splitk,
        lambda a, b, split_k: torch.ops.gpuperf.matmul_splitk(a, b, split_k),
        lambda a, b, split_k: matmul_ref(a, b),
        lambda seed: [(operands(3, 33, 300, torch.float16, seed), {"split_k": s}) for s in (None, 1, 7)],
        k=300,
    )
    assert len(checks) == 3 and len(matmul_splitk.plans) == 3  # one per split_k


def test_each_layout_dtype_and_split_has_its_own_plan():
    matmul_splitk.plans.clear()
    a, b = operands(5, 33, 200, torch.float16, seed=3)
    variants = [
        (a, b, None),
        (a.t().contiguous().t(), b, None),  # a column-major
        (a, b.t().contiguous().t(), None),  # b in nn.Linear's layout
        (a[:2], b, None),  # another M
        (a.bfloat16(), b.bfloat16(), None),
        (a, b, 2),
        (a, b, 3),
    ]
    for i, (a_v, b_v, split_k) in enumerate(variants):
        for _ in range(2):
            check(a_v, b_v, f"matmul_splitk variant {i}", split_k=split_k)
        assert len(matmul_splitk.plans) == i + 1


def test_k_zero_and_empty_outputs_are_not_planned():
    matmul_splitk.plans.clear()
    for _ in range(2):
        a, b = operands(5, 7, 0, torch.float16)
        assert torch.equal(matmul_splitk(a, b), torch.zeros(5, 7, dtype=torch.float16, device=a.device))
        assert matmul_splitk(*operands(0, 7, 16, torch.float16)).shape == (0, 7)
    assert len(matmul_splitk.plans) == 0


def test_inputs_that_require_grad_are_refused():
    a, b = operands(2, 16, 32, torch.float16)
    for _ in range(2):  # a plan for these inputs, which needs no gradient
        matmul_splitk(a, b)
    with pytest.raises(RuntimeError, match=r"not differentiable.*gpuperf\.kernels\.matmul for training"):
        matmul_splitk(a, b.requires_grad_())
    with torch.no_grad():
        check(a, b, "under no_grad")
    check(a, b.detach(), "detached")


def _t(*shape, dtype=torch.float16):
    return torch.zeros(shape, dtype=dtype, device=DEVICE)


BAD_INPUTS = [
    pytest.param({"a": [[1.0]]}, TypeError, "a must be a torch.Tensor, got list", id="a-list"),
    pytest.param({"b": 2.0}, TypeError, "b must be a torch.Tensor, got float", id="b-float"),
    pytest.param(
        {"a": _t(2, 8, dtype=torch.float32), "b": _t(8, 4, dtype=torch.float32)},
        TypeError,
        "a has dtype float32; supported dtypes are float16, bfloat16",
        id="float32",
    ),
    pytest.param(
        {"b": _t(8, 4, dtype=torch.bfloat16)},
        TypeError,
        "same dtype, got a float16, b bfloat16",
        id="mixed-dtypes",
    ),
    pytest.param({"a": _t(8)}, ValueError, r"2-D, got a \(8,\) and b \(8, 4\)", id="a-1d"),
    pytest.param({"b": _t(1, 8, 4)}, ValueError, r"2-D, got a \(2, 8\) and b \(1, 8, 4\)", id="b-3d"),
    pytest.param({"b": _t(7, 4)}, ValueError, r"inner dimensions must match.*\(8 != 7\)", id="inner"),
    pytest.param({"split_k": 0}, ValueError, "split_k must be a positive int, got 0", id="split-0"),
    pytest.param({"split_k": -2}, ValueError, "positive int, got -2", id="split-negative"),
    pytest.param({"split_k": 2.0}, TypeError, "split_k must be None or an int, got float", id="split-float"),
    pytest.param({"split_k": True}, TypeError, "got bool", id="split-bool"),
    pytest.param({"split_k": "4"}, TypeError, "got str", id="split-str"),
]


@pytest.mark.parametrize(("changes", "error", "message"), BAD_INPUTS)
def test_bad_input_raises_a_clear_error(changes, error, message):
    args = {"a": _t(2, 8), "b": _t(8, 4)}
    kwargs = {}
    for name, value in changes.items():
        (args if name in args else kwargs)[name] = value
    with pytest.raises(error, match=message):
        matmul_splitk(*args.values(), **kwargs)


def test_bad_split_is_refused_after_a_planned_call():
    """A plan made with split_k=1 must not let split_k=True (equal to 1 as a key) through."""
    a, b = operands(2, 16, 32, torch.float16)
    matmul_splitk.plans.clear()
    matmul_splitk(a, b, split_k=1)
    matmul_splitk(a, b, split_k=1)
    assert len(matmul_splitk.plans) == 1
    with pytest.raises(TypeError, match="got bool"):
        matmul_splitk(a, b, split_k=True)
    with pytest.raises(ValueError, match=r"inner dimensions must match.*\(32 != 31\)"):
        matmul_splitk(a, b[:31], split_k=1)
    with pytest.raises(TypeError, match="same dtype, got a float16, b bfloat16"):
        matmul_splitk(a, b.bfloat16(), split_k=1)


def test_split_k_is_keyword_only():
    a, b = operands(2, 16, 32, torch.float16)
    with pytest.raises(TypeError):
        matmul_splitk(a, b, 2)


@pytest.mark.skipif(DEVICE != "cpu", reason="checks the device error on a machine without a GPU")
def test_tensors_on_another_device_are_rejected():
    with pytest.raises(ValueError, match=r"same device, got a on cpu, b on meta"):
        matmul_splitk(_t(2, 8), torch.empty(8, 4, dtype=torch.float16, device="meta"))


def test_cpu_tensor_is_refused_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="a must be on a CUDA device"):
        matmul_splitk(torch.ones(2, 8, dtype=torch.float16), torch.ones(8, 4, dtype=torch.float16))


# --- the launch rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tiles, k, expected",
    [
        pytest.param(192, 4096, 1, id="qkv-M1: 192 column tiles, more than a wave"),
        pytest.param(128, 4096, 1, id="o-M1: 128 column tiles fill the wave"),
        pytest.param(128, 14336, 1, id="down-M1: 128 column tiles fill the wave"),
        pytest.param(64, 14336, 2, id="64 tiles: two slices of 7168"),
        pytest.param(896, 4096, 1, id="gate-up-M1: one wave without a split"),
        pytest.param(16, 4096, 8, id="N512: limited by the least slice of 512"),
        pytest.param(64, 300, 1, id="K under the least slice"),
        pytest.param(1, 640, 1, id="640 = one slice of 512 and a rest: 1"),
        pytest.param(10, 1100, 2, id="1100: two slices of 768 and 332"),
    ],
)
def test_launch_rule_on_an_h100(tiles, k, expected):
    assert splitk_splits(tiles, k, 132) == expected


def test_launch_rule_bounds():
    for tiles in (1, 7, 64, 96, 264, 265, 1000):
        for k in (1, 127, 128, 511, 512, 4096, 14336, 100_000):
            s = splitk_splits(tiles, k, 132)
            k_per_split = cdiv(cdiv(k, SPLITK_BLOCK_K), s) * SPLITK_BLOCK_K
            assert 1 <= s <= max(1, k // SPLITK_MIN_K_PER_SPLIT), (tiles, k, s)
            assert (s - 1) * k_per_split < k <= s * k_per_split, (tiles, k, s)  # no empty slice
            assert s == 1 or tiles * s <= 132 * SPLITK_PROGRAMS_PER_SM, (tiles, k, s)  # one wave


def test_launch_tiles_follow_m():
    assert [splitk_launch(m, 64, 64, -1).block_m for m in (1, 16, 17, 33, 64, 65, 500)] == [
        16,
        16,
        32,
        64,
        64,
        64,
        64,
    ]
    assert splitk_launch(1, 64, 64, -1).as_dict().keys() == {
        "block_m",
        "block_n",
        "block_k",
        "split_k",
        "num_warps",
        "num_stages",
    }


def test_more_rows_than_the_meant_for_still_compute():
    a, b = operands(70, 20, 40, torch.float16, seed=12)  # two row blocks of 64
    check(a, b, "M=70", split_k=2)


# --- torch.library and torch.compile -----------------------------------------------------------


def test_registered_op():
    a, b = operands(3, 33, 300, torch.float16, seed=16)
    for split_k in (None, 1, 5):  # None takes the launch rule
        out = torch.ops.gpuperf.matmul_splitk(a, b, split_k)
        assert_close(f"torch.ops.gpuperf.matmul_splitk {split_k}", matmul_ref(a, b), out, k=300)
    a0, b0 = operands(3, 5, 0, torch.float16)
    zeros = torch.zeros(3, 5, dtype=torch.float16, device=a0.device)
    assert torch.equal(torch.ops.gpuperf.matmul_splitk(a0, b0), zeros)


def test_compile_fullgraph_keeps_the_op_in_one_graph():
    graphs, backend = recording_backend()

    def step(x, w):
        return matmul_splitk(x * 2.0, w.t()) * 2.0  # exact scalings; w in nn.Linear's layout

    x, w = randn((3, 300), torch.float16, seed=17), randn((33, 300), torch.float16, seed=18)
    out = torch.compile(step, backend=backend, fullgraph=True)(x, w)
    assert len(graphs) == 1
    called = called_ops(graphs[0])
    assert "gpuperf.matmul_splitk" in called
    assert_close("compiled matmul_splitk", matmul_ref(x * 2.0, w.t()) * 2.0, out, k=300)


# --- on a GPU, at the sizes of Llama-3-8B's decode step -----------------------------------------

#: (N, K) of the fused QKV, the output, the down- and the fused gate/up projections.
LLAMA_PROJECTIONS = [(6144, 4096), (4096, 4096), (4096, 14336), (28672, 4096)]


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 8, 64])
@pytest.mark.parametrize("nk", LLAMA_PROJECTIONS, ids=shape_id)
@pytest.mark.parametrize("layout", ["kn", "linear"])
def test_gpu_llama_decode_projections(m, nk, layout):
    n, k = nk
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    if layout == "kn":
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g) * k**-0.5
    else:
        w = (torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) * k**-0.5).t()
    out = check(x, w, f"llama M={m}")
    # cuBLAS rounds once too: two bfloat16 units of the largest output apart at most.
    atol = 2 * torch.finfo(torch.bfloat16).eps * out.abs().max().item()
    torch.testing.assert_close(out, x @ w, rtol=1.6e-2, atol=atol)


@pytest.mark.gpu
def test_gpu_launch_rule_fills_one_wave():
    """The rule launches as many slices as one wave of programs holds: none for the decode
    projections, whose column tiles fill the GPU already (on the H100, one slice measured
    fastest there: 2119 GB/s at 1 x 4096 x 14336 against 2031 for two), and several for a
    narrow N that leaves SMs idle."""
    slots = SPLITK_PROGRAMS_PER_SM * torch.cuda.get_device_properties(0).multi_processor_count
    for n, k in ((4096, 14336), (4096, 4096), (6144, 4096), (28672, 4096), (1024, 4096)):
        launch = splitk_launch(1, n, k, 0)
        tiles = -(-n // launch.block_n)
        assert tiles * launch.split_k <= max(slots, tiles), (n, k, launch)
        assert launch.split_k == 1 or tiles * (launch.split_k + 1) > slots, (n, k, launch)
    if slots >= 64:  # 32 column tiles leave at least half the SMs idle without a split
        assert splitk_launch(1, 1024, 4096, 0).split_k > 1


@pytest.mark.gpu
def test_gpu_planned_launches_read_new_inputs():
    matmul_splitk.plans.clear()
    for m, n, k in ((1, 4096, 14336), (1, 28672, 4096)):  # several slices, and one
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) * k**-0.5
        for step in range(3):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            check(x, w, f"{m}x{n}x{k} step {step}")
    assert len(matmul_splitk.plans) == 2


@pytest.mark.gpu
def test_gpu_cuda_graph_replays_with_new_inputs():
    """Captured once; x changes in place between replays, as a decode loop does."""
    w = torch.randn(4096, 14336, device="cuda", dtype=torch.bfloat16).t() * 14336**-0.5
    x = torch.randn(8, 14336, device="cuda", dtype=torch.bfloat16)
    for split_k in (None, 1):
        matmul_splitk(x, w, split_k=split_k)  # compile and plan outside the capture
        matmul_splitk(x, w, split_k=split_k)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = matmul_splitk(x, w, split_k=split_k)
        for step in range(3):
            x.normal_()
            graph.replay()
            assert_close(f"graph replay {step} split_k={split_k}", matmul_ref(x, w), out, k=14336)


@pytest.mark.gpu
def test_gpu_compile_inductor():
    x = torch.randn(4, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(6144, 4096, device="cuda", dtype=torch.bfloat16) * 4096**-0.5
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, w: matmul_splitk(x, w.t()), fullgraph=True)
    assert_close("inductor", matmul_ref(x, w.t()), compiled(x, w), k=4096)


# --- the benchmark's declaration -----------------------------------------------------------


def test_benchmark_declaration():
    from gpuperf.bench import catalog

    bench = catalog.MATMUL_SMALL_M
    assert bench in catalog.ALL and catalog.by_name("matmul_small_m") is bench
    assert bench.metric == "GB/s" and bench.ceiling_key() == "stream_gbps" and bench.baseline == "cublas"
    assert [p.key for p in bench.providers] == ["triton", "triton_persistent", "triton_t03", "cublas"]
    shape = (1, 4096, 14336)
    assert shape in bench.x_values and all(s[0] <= 64 for s in bench.x_values)
    assert bench.bytes(shape) == 2 * (14336 + 14336 * 4096 + 4096)
    assert bench.flops(shape) == 2 * 4096 * 14336 and bench.reduction(shape) == 14336
    assert "kernels/matmul_splitk.py" in bench.sources
    a, b = bench.make_inputs((3, 33, 40), "cpu")
    assert a.dtype == b.dtype == torch.bfloat16 and a.shape == (3, 40) and b.shape == (40, 33)
    assert bench.reference(a, b).shape == (3, 33)
