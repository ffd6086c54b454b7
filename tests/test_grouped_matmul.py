"""The grouped matmul: each expert's rows times its weight, against the float64 reference, on
uneven groups (empty experts, one expert with every row, rows past the last offset), every
layout the docstring accepts, and bad input."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf.kernels import grouped_matmul
from gpuperf.kernels.configs import (
    GROUPED_DECODE_ROWS_PER_EXPERT,
    GROUPED_MATMUL_CANDIDATES,
    GROUPED_MATMUL_TMA_CANDIDATES,
    GROUPED_MATMUL_TMA_DECODE,
    GROUPED_MATMUL_TMA_DEFAULT,
)
from gpuperf.kernels.grouped_matmul import (
    check_offsets,
    grid_size,
    grouped_matmul_config,
    grouped_matmul_launches,
)
from gpuperf.kernels.launch import launcher
from gpuperf.reference import grouped_matmul_loop, grouped_matmul_ref
from gpuperf.testing import assert_close
from tests._params import called_ops, cases, randn, recording_backend
from tests.conftest import DEVICE

HALF = [pytest.param(torch.float16, id="fp16"), pytest.param(torch.bfloat16, id="bf16")]

#: Rows per expert, and the rows of ``a`` (None: their sum). Crosses the interpreter's 16-row
#: tile: groups of 0, 1, 5, 23 (a partial tile after whole ones) rows.
GROUPS = {
    "uneven": ([5, 0, 23, 1, 11], None),
    "empty-at-both-ends": ([0, 17, 0, 0, 9, 0], None),
    "all-on-one-expert": ([0, 0, 30, 0], None),
    "rows-past-the-last-offset": ([7, 9], 21),
    "one-expert": ([19], None),
    "no-rows": ([0, 0, 0], None),
}


def offsets(sizes) -> torch.Tensor:
    return torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).to(DEVICE)


def _a(m, k, dtype, layout, seed):
    """``a`` (M, K) laid out as named: row-major; column-major (a transposed view); rows of a
    wider buffer (row stride > K); at an odd element offset (not 16-byte aligned)."""
    if layout == "row":
        return randn((m, k), dtype, seed)
    if layout == "col":
        return randn((k, m), dtype, seed).t()
    if layout == "wide-rows":
        return randn((m, k + 7), dtype, seed)[:, 3 : 3 + k]
    if layout == "offset":
        return randn((m * k + 1,), dtype, seed)[1:].view(m, k)
    raise AssertionError(layout)


def _b(e, k, n, dtype, layout, seed):
    """``b`` (E, K, N): row-major; a transposed view of (E, N, K) weights (as ``nn.Linear``
    keeps them); every other expert of a larger stack with a column slice."""
    if layout == "row":
        return randn((e, k, n), dtype, seed)
    if layout == "linear":
        return randn((e, n, k), dtype, seed).transpose(1, 2)
    if layout == "strided":
        return randn((2 * e, k, n + 5), dtype, seed)[::2, :, 2 : 2 + n]
    raise AssertionError(layout)


A_LAYOUTS = ["row", "col", "wide-rows", "offset"]
B_LAYOUTS = ["row", "linear", "strided"]


def check(a, b, offs, out, name="grouped_matmul"):
    end = int(offs[-1]) if offs.numel() else 0
    assert out.shape == (a.shape[0], b.shape[2]) and out.dtype == a.dtype and out.is_contiguous()
    assert_close(name, grouped_matmul_ref(a, b, offs)[:end], out[:end], k=a.shape[1])


@pytest.mark.parametrize("dtype, groups, a_layout, b_layout", cases(HALF, list(GROUPS), A_LAYOUTS, B_LAYOUTS))
def test_matches_reference(dtype, groups, a_layout, b_layout):
    sizes, rows = GROUPS[groups]
    m, k, n = rows or sum(sizes), 40, 50  # K and N: a partial tile after whole ones
    a = _a(m, k, dtype, a_layout, seed=1)
    b = _b(len(sizes), k, n, dtype, b_layout, seed=2)
    offs = offsets(sizes)
    check(a, b, offs, grouped_matmul(a, b, offs))


@pytest.mark.parametrize("dtype", HALF)
def test_a_second_call_with_other_offsets_groups_by_them(dtype):
    # The same layout twice (on a GPU the second call runs from the plan): the schedule is
    # read from offs on the device, so new offsets regroup the rows without a new plan.
    a, b = randn((30, 40), dtype, 3), randn((3, 40, 24), dtype, 4)
    for sizes in ([10, 0, 20], [0, 29, 1], [30, 0, 0]):
        offs = offsets(sizes)
        check(a, b, offs, grouped_matmul(a, b, offs))


@pytest.mark.gpu
def test_a_gpu_call_keeps_a_plan_and_reads_no_offsets_on_the_host():
    a, b = randn((64, 32), torch.bfloat16, 5), randn((4, 32, 48), torch.bfloat16, 6)
    offs = offsets([16, 0, 40, 8])
    grouped_matmul.plans.clear()
    check(a, b, offs, grouped_matmul(a, b, offs))
    assert len(grouped_matmul.plans) == 1
    # A decreasing offset is not checked on the GPU (that would synchronize); the kernel
    # clamps the group to nothing and stays inside its tensors.
    torch.cuda.synchronize()
    out = grouped_matmul(a, b, offsets([16, 0, 40, 8]).flip(0).contiguous())
    torch.cuda.synchronize()
    assert out.shape == (64, 48)


def test_on_the_cpu_every_call_checks_offsets_and_keeps_no_plan():
    if DEVICE != "cpu":
        pytest.skip("offsets on the CPU are read without a synchronization only where the kernel runs there")
    a, b = randn((30, 16), torch.float16, 3), randn((3, 16, 16), torch.float16, 4)
    grouped_matmul(a, b, offsets([10, 10, 10]))
    with pytest.raises(ValueError, match=r"offs must be non-decreasing from 0: offs\[1\] = 5"):
        grouped_matmul(a, b, torch.tensor([10, 5, 30], dtype=torch.int32))
    assert len(grouped_matmul.plans) == 0


def test_the_cublas_loop_baseline_matches_the_reference():
    a, b = randn((40, 24), torch.float16, 7), randn((5, 24, 8), torch.float16, 8)
    offs = offsets([5, 0, 23, 1, 9])
    out = grouped_matmul_loop(a, b, offs)
    assert_close("grouped_matmul_loop", grouped_matmul_ref(a, b, offs), out, k=24)


def test_matches_torch_grouped_mm():
    # F.grouped_mm (bfloat16; row strides of 16 bytes) on the same operands.
    grouped_mm = getattr(torch.nn.functional, "grouped_mm", None)
    if grouped_mm is None:
        pytest.skip(f"torch {torch.__version__} has no torch.nn.functional.grouped_mm")
    a, b = randn((48, 32), torch.bfloat16, 9), randn((4, 32, 40), torch.bfloat16, 10)
    offs = offsets([13, 0, 30, 5])
    try:
        expected = grouped_mm(a, b, offs=offs)
    except (RuntimeError, NotImplementedError) as err:
        pytest.skip(f"F.grouped_mm does not run here: {err}")
    out = grouped_matmul(a, b, offs)
    assert_close("grouped_matmul vs F.grouped_mm", expected[:48], out[:48], k=32)


@pytest.mark.parametrize("dtype", HALF)
def test_k_zero_gives_zeros_and_n_or_e_zero_launch_nothing(dtype):
    offs = offsets([2, 0, 3])
    out = grouped_matmul(randn((5, 0), dtype, 1), randn((3, 0, 8), dtype, 2), offs)
    assert torch.equal(out, torch.zeros((5, 8), dtype=dtype, device=DEVICE))
    assert grouped_matmul(randn((5, 4), dtype, 1), randn((3, 4, 0), dtype, 2), offs).shape == (5, 0)
    empty = torch.zeros((0,), dtype=torch.int32, device=DEVICE)
    assert grouped_matmul(randn((5, 4), dtype, 1), randn((0, 4, 8), dtype, 2), empty).shape == (5, 8)


@settings(max_examples=10, deadline=None)
@given(sizes=st.lists(st.integers(0, 20), min_size=1, max_size=6), k=st.integers(1, 40), n=st.integers(1, 40))
def test_any_grouping_matches_reference(sizes, k, n):
    a, b = randn((sum(sizes), k), torch.float16, 11), randn((len(sizes), k, n), torch.float16, 12)
    offs = offsets(sizes)
    check(a, b, offs, grouped_matmul(a, b, offs))


@pytest.mark.parametrize("config", GROUPED_MATMUL_CANDIDATES[-3:], ids=lambda c: c.label())
def test_each_config_gives_the_same_answer(config):
    # The launches a tuning sweep times: the op's own function with a chosen config.
    a, b = randn((70, 64), torch.float16, 13), randn((3, 64, 72), torch.float16, 14)
    offs = offsets([0, 65, 3])
    out, launches = grouped_matmul_launches(a, b, offs, config)
    for kernel, grid, args, constexprs, num_warps, num_stages in launches:
        launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages)
    check(a, b, offs, out)


def test_the_grid_is_one_program_per_sm_or_the_most_tiles_there_can_be():
    config = grouped_matmul_config(torch.empty(0, device=DEVICE))
    device_index = torch.empty(0, device=DEVICE).get_device()
    sms = grid_size(device_index, 10**6, 10**4, 8, config)
    # One row of tiles per expert at most (1 row, E experts), one column: E programs.
    assert grid_size(device_index, 1, 1, 2, config) == min(sms, 3)
    assert grid_size(device_index, 1, 1, 0, config) == 1


def test_registered_op_and_compile_fullgraph():
    a, b = randn((20, 16), torch.float16, 15), randn((2, 16, 24), torch.float16, 16)
    offs = offsets([12, 8])
    assert grouped_matmul.registered is torch.ops.gpuperf.grouped_matmul
    assert torch.equal(torch.ops.gpuperf.grouped_matmul(a, b, offs), grouped_matmul(a, b, offs))

    def layer(a, b, offs):
        return torch.relu(grouped_matmul(a * 2, b, offs)).sum()

    graphs, backend = recording_backend()
    out = torch.compile(layer, backend=backend, fullgraph=True)(a, b, offs)
    assert len(graphs) == 1 and "gpuperf.grouped_matmul" in called_ops(graphs[0])
    torch.testing.assert_close(out, layer(a, b, offs))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compile_inductor_and_cuda_graphs(mode):
    torch._dynamo.reset()
    compiled = torch.compile(grouped_matmul, fullgraph=True, mode=mode)
    for seed, sizes in ((1, [30, 0, 34]), (2, [0, 64, 0]), (3, [1, 2, 61])):
        a, b = randn((64, 48), torch.bfloat16, seed), randn((3, 48, 40), torch.bfloat16, seed + 1)
        offs = offsets(sizes)
        check(a, b, offs, compiled(a, b, offs), name=f"compiled grouped_matmul ({mode})")


@pytest.mark.gpu
def test_eager_calls_capture_into_a_cuda_graph():
    a, b = randn((64, 48), torch.bfloat16, 1), randn((3, 48, 40), torch.bfloat16, 2)
    offs = offsets([30, 0, 34])
    grouped_matmul(a, b, offs)  # compiles and plans outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = grouped_matmul(a, b, offs)
    a.copy_(randn((64, 48), torch.bfloat16, 3))
    offs.copy_(offsets([0, 60, 4]))  # new routing, same graph: the schedule is read on the device
    graph.replay()
    torch.cuda.synchronize()
    check(a, b, offs, out)


@pytest.mark.gpu
@pytest.mark.parametrize("model, experts, top_k, d, ffn", [("mixtral", 8, 2, 4096, 14336),
                                                           ("qwen3-30b-a3b", 128, 8, 2048, 768),
                                                           ("deepseek-v3", 256, 8, 7168, 2048)])  # fmt: skip
def test_model_shapes_with_skewed_routing(model, experts, top_k, d, ffn):
    # The experts' up projection at 512 tokens, routed with a skew (half the pairs to expert 0);
    # the operands made on the GPU (DeepSeek-V3's weights are 7.5 GB of bfloat16).
    pairs = 512 * top_k
    g = torch.Generator().manual_seed(0)
    sizes = torch.multinomial(torch.ones(experts), pairs // 2, replacement=True, generator=g).bincount(
        minlength=experts
    )
    sizes[0] += pairs - int(sizes.sum())
    g = torch.Generator(device=DEVICE).manual_seed(1)
    a = torch.randn((pairs, d), generator=g, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn((experts, d, ffn), generator=g, device=DEVICE, dtype=torch.bfloat16).mul_(d**-0.5)
    offs = offsets(sizes.tolist())
    check(a, b, offs, grouped_matmul(a, b, offs), name=f"grouped_matmul {model}")


@pytest.mark.parametrize(
    "change, error, match",
    [
        pytest.param({"a": lambda a: a.int()}, TypeError, "supported dtypes", id="a-int"),
        pytest.param(
            {"a": lambda a: a.float(), "b": lambda b: b.float()}, TypeError, "supported dtypes", id="fp32"
        ),
        pytest.param({"b": lambda b: b.bfloat16()}, TypeError, "same dtype", id="mixed-dtypes"),
        pytest.param({"a": lambda a: a[None]}, ValueError, r"a must be 2-D \(M_total, K\)", id="a-3d"),
        pytest.param({"b": lambda b: b[0]}, ValueError, r"b must be 3-D \(E, K, N\)", id="b-2d"),
        pytest.param({"b": lambda b: b[:, :7]}, ValueError, "a and b must have the same K", id="k-mismatch"),
        pytest.param(
            {"offs": lambda o: o.long()}, TypeError, "offs must be int32, got int64", id="offs-int64"
        ),
        pytest.param(
            {"offs": lambda o: o.tolist()}, TypeError, "offs must be a torch.Tensor", id="offs-list"
        ),
        pytest.param(
            {"offs": lambda o: o[:2]}, ValueError, r"offs must have shape \(E,\) = \(3,\)", id="offs-short"
        ),
        pytest.param({"offs": lambda o: o[None]}, ValueError, "offs must have shape", id="offs-2d"),
    ],
)
def test_rejects(change, error, match):
    args = {
        "a": randn((9, 8), torch.float16, 1),
        "b": randn((3, 8, 4), torch.float16, 2),
        "offs": offsets([2, 3, 4]),
    }
    for name, fn in change.items():
        args[name] = fn(args[name])
    with pytest.raises(error, match=match):
        grouped_matmul(args["a"], args["b"], args["offs"])


@pytest.mark.parametrize(
    "values, match",
    [
        pytest.param([3, 2, 9], r"offs\[1\] = 2 is less than offs\[0\] = 3", id="decreasing"),
        pytest.param([-1, 2, 9], r"offs\[0\] = -1 is negative", id="negative"),
        pytest.param(
            [3, 4, 10], r"offs\[-1\] must be at most the rows of a \(M_total = 9\), got 10", id="past-m"
        ),
    ],
)
def test_check_offsets_rejects(values, match):
    offs = torch.tensor(values, dtype=torch.int32, device=DEVICE)
    with pytest.raises(ValueError, match=match):
        check_offsets(offs, 9)
    if DEVICE == "cpu":  # the op itself checks offsets that are on the CPU
        with pytest.raises(ValueError, match=match):
            grouped_matmul(randn((9, 8), torch.float16, 1), randn((3, 8, 4), torch.float16, 2), offs)


@pytest.mark.gpu
def test_rejects_offsets_on_another_device():
    a, b = randn((9, 8), torch.float16, 1), randn((3, 8, 4), torch.float16, 2)
    with pytest.raises(ValueError, match="offs must be on cuda"):
        grouped_matmul(a, b, torch.tensor([2, 3, 4], dtype=torch.int32))


def test_launches_refuse_a_config_that_is_not_one():
    a, b = randn((9, 8), torch.float16, 1), randn((3, 8, 4), torch.float16, 2)
    with pytest.raises(TypeError, match=r"config must be a gpuperf\.kernels\.MatmulConfig"):
        grouped_matmul_launches(a, b, offsets([2, 3, 4]), config=(64, 64, 32))


# --- the TMA kernel (Hopper; the interpreter runs its descriptors on the CPU) ----------------


def tma_config():
    """The TMA kernel's config here: the interpreter's small tile, or the default on a GPU."""
    from gpuperf.kernels import configs

    if DEVICE == "cpu":
        return configs.GROUPED_MATMUL_TMA_INTERPRETER
    return configs.GROUPED_MATMUL_TMA_DEFAULT


def run_tma(a, b, offs, config=None):
    out, launches = grouped_matmul_launches(a, b, offs, config or tma_config())
    assert all(launch.kernel.__name__ == "_grouped_matmul_tma_kernel" for launch in launches)
    for kernel, grid, args, constexprs, num_warps, num_stages in launches:
        launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages)
    return out


@pytest.mark.parametrize("dtype, groups, b_layout", cases(HALF, list(GROUPS), ["row", "linear"]))
def test_tma_kernel_matches_reference(dtype, groups, b_layout):
    # Every grouping, with the weights row-major per expert and as nn.Linear keeps them:
    # the flat tile list crosses experts with no rows, tiles past a group's end read the
    # next group's rows (computed, never stored), and rows past the last offset stay unwritten.
    sizes, rows = GROUPS[groups]
    m, k, n = rows or sum(sizes), 48, 40
    a = _a(m, k, dtype, "row", seed=1)
    b = _b(len(sizes), k, n, dtype, b_layout, seed=2)
    offs = offsets(sizes)
    check(a, b, offs, run_tma(a, b, offs))


@settings(max_examples=8, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=40), n=st.sampled_from([8, 40, 64]))
def test_tma_kernel_any_grouping_of_many_experts(sizes, n):
    # Up to 40 experts (a 64-lane schedule vector), many of them empty.
    a, b = randn((sum(sizes), 32), torch.bfloat16, 11), randn((len(sizes), 32, n), torch.bfloat16, 12)
    offs = offsets(sizes)
    check(a, b, offs, run_tma(a, b, offs))


def test_tma_operands_says_what_a_descriptor_can_describe():
    from gpuperf.kernels import configs
    from gpuperf.kernels.grouped_matmul import tma_operands

    a = randn((30, 48), torch.bfloat16, 1)
    assert tma_operands(a, _b(3, 48, 40, torch.bfloat16, "row", 2)) == "row"
    assert tma_operands(a, _b(3, 48, 40, torch.bfloat16, "linear", 2)) == "col"
    # Rows of 55 elements (110 bytes, not a multiple of 16); a column-major a; an odd offset.
    assert tma_operands(a, _b(3, 48, 40, torch.bfloat16, "strided", 2)) is None
    b = _b(3, 48, 40, torch.bfloat16, "row", 2)
    assert tma_operands(_a(30, 48, torch.bfloat16, "col", 1), b) is None
    assert tma_operands(_a(30, 48, torch.bfloat16, "offset", 1), b) is None
    many = configs.GROUPED_TMA_MAX_EXPERTS + 1
    assert tma_operands(a, torch.empty((many, 48, 8), dtype=torch.bfloat16, device=DEVICE)) is None


def test_a_tma_config_refuses_operands_no_descriptor_describes():
    a, b = _a(30, 48, torch.bfloat16, "col", 1), randn((3, 48, 40), torch.bfloat16, 2)
    with pytest.raises(ValueError, match="a TMA config needs operands a tensor descriptor can describe"):
        grouped_matmul_launches(a, b, offsets([10, 10, 10]), tma_config())


@pytest.mark.gpu
def test_the_default_on_hopper_is_the_tma_kernel_where_descriptors_describe_the_operands():
    from gpuperf.kernels import PersistentConfig
    from gpuperf.kernels.device import capability

    if capability(torch.cuda.current_device())[0] < 9:
        pytest.skip("TMA needs compute capability 9.0 or newer")
    a, b = randn((64, 48), torch.bfloat16, 1), randn((3, 48, 40), torch.bfloat16, 2)
    for weights in (b, b.transpose(1, 2).contiguous().transpose(1, 2)):
        config = grouped_matmul_config(a, weights)
        assert isinstance(config, PersistentConfig) and config.tma
    assert not getattr(grouped_matmul_config(a.t().contiguous().t(), b), "tma", False)
    # Decode (a few rows per expert on average) takes the decode tile; prefill the default.
    rows = GROUPED_DECODE_ROWS_PER_EXPERT * 3
    assert grouped_matmul_config(randn((rows, 48), torch.bfloat16, 1), b) == GROUPED_MATMUL_TMA_DECODE
    assert grouped_matmul_config(randn((rows + 1, 48), torch.bfloat16, 1), b) == GROUPED_MATMUL_TMA_DEFAULT


@pytest.mark.gpu
@pytest.mark.parametrize("b_layout", ["row", "linear"])
@pytest.mark.parametrize(
    "config", (*GROUPED_MATMUL_TMA_CANDIDATES, GROUPED_MATMUL_TMA_DECODE), ids=lambda c: c.label()
)
def test_each_tma_config_gives_the_same_answer(config, b_layout):
    # Experts of 0 to 300 rows (several row tiles, partial ones), K and N across partial tiles.
    sizes = [0, 300, 1, 129, 0, 64, 200]
    a = randn((sum(sizes) + 5, 200), torch.bfloat16, 3)
    b = _b(len(sizes), 200, 264, torch.bfloat16, b_layout, 4)
    offs = offsets(sizes)
    check(a, b, offs, run_tma(a, b, offs, config))


# --- autograd ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, groups, b_layout", cases(HALF, list(GROUPS), ["row", "linear"]))
def test_gradients_match_the_float64_reference(dtype, groups, b_layout):
    # da through the forward kernel on bᵀ (its rows past the last offset zero), db by the
    # weight-gradient kernel (an expert with no rows gets zeros), against autograd through
    # the float64 loop over experts.
    sizes, rows = GROUPS[groups]
    m, k, n = rows or sum(sizes), 40, 24
    a = _a(m, k, dtype, "row", seed=1).requires_grad_()
    b = _b(len(sizes), k, n, dtype, b_layout, seed=2).requires_grad_()
    offs = offsets(sizes)
    grad_out = randn((m, n), dtype, 3)
    grouped_matmul(a, b, offs).backward(grad_out)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    grouped_matmul_ref(a64, b64, offs).backward(grad_out.double())
    assert a.grad.shape == a.shape and a.grad.dtype == dtype
    assert b.grad.shape == b.shape and b.grad.dtype == dtype
    assert_close("da", a64.grad, a.grad, k=n)
    assert_close("db", b64.grad, b.grad, k=max(sizes, default=1))


def test_the_registered_op_is_differentiable_and_offs_takes_no_gradient():
    a = randn((30, 16), torch.bfloat16, 1).requires_grad_()
    b = randn((3, 16, 8), torch.bfloat16, 2).requires_grad_()
    offs = offsets([10, 0, 20])
    out = torch.ops.gpuperf.grouped_matmul(a, b, offs)
    da, db = torch.autograd.grad(out, (a, b), torch.ones_like(out))
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    grouped_matmul_ref(a64, b64, offs).sum().backward()
    assert_close("da", a64.grad, da, k=8)
    assert_close("db", b64.grad, db, k=20)
    assert db[1].abs().max() == 0  # the expert with no rows


def test_the_weight_gradient_refuses_a_gradient_of_other_rows():
    from gpuperf.kernels.grouped_matmul import grouped_matmul_wgrad

    a, grad_out = randn((9, 8), torch.float16, 1), randn((10, 4), torch.float16, 2)
    with pytest.raises(ValueError, match="same rows"):
        grouped_matmul_wgrad(a, grad_out, offsets([4, 5]))


def test_compiled_training_traces_the_backward_ops(
    compiling_in_traced_frames_only, eager_launches_of_a_trace
):
    """AOTAutograd traces the forward and the backward (the forward op on bᵀ and the op
    ``torch.ops.gpuperf.grouped_matmul_wgrad``) on fake tensors: nothing launches eagerly on
    a trace's tensors, and the compiled step gives the eager one's gradients."""

    def step(a, b, offs, grad_out):
        a, b = a.detach().requires_grad_(), b.detach().requires_grad_()
        out = grouped_matmul(a, b, offs)
        return torch.autograd.grad(out, (a, b), grad_out)

    a, b = randn((48, 32), torch.bfloat16, 1), randn((3, 32, 16), torch.bfloat16, 2)
    offs, grad_out = offsets([20, 0, 28]), randn((48, 16), torch.bfloat16, 3)

    def loss(a, b, offs):
        return (grouped_matmul(a, b, offs) * grad_out).sum()

    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    a_, b_ = a.detach().requires_grad_(), b.detach().requires_grad_()
    got = torch.autograd.grad(compiled(a_, b_, offs), (a_, b_))
    assert eager_launches_of_a_trace == []
    assert [g.shape for g in got] == [a.shape, b.shape]
    if DEVICE == "cuda":  # (the interpreter does not run the kernels of an AOTAutograd graph)
        want = step(a, b, offs, grad_out)
        for name, g, e in zip(("da", "db"), got, want, strict=True):
            torch.testing.assert_close(g, e, rtol=1e-2, atol=1e-2, msg=lambda msg, n=name: f"{n}: {msg}")
