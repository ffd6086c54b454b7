"""The optimization-strategy guide's case studies: Dynamo's counts on the CPU, the
compiled and profiled kernels on a GPU."""

import pytest
import torch

from gpuperf.bench import strategy
from gpuperf.pages import sweeps
from gpuperf.testing import assert_close
from tests._params import randn


def small_mlp_inputs(batch=8):
    return (
        randn((batch, 16), torch.float32, 1),
        randn((16, 32), torch.float32, 2),
        randn((32, 16), torch.float32, 3),
    )


def test_a_python_branch_on_a_tensor_breaks_the_graph_and_where_does_not():
    broken = strategy.explain_graph_breaks(strategy.gated_mlp_with_branch, *small_mlp_inputs())
    assert (broken["graphs"], broken["breaks"]) == (2, 1)
    assert "if h.mean() > 0" in broken["reasons"][0]
    fixed = strategy.explain_graph_breaks(strategy.gated_mlp_without_branch, *small_mlp_inputs())
    assert (fixed["graphs"], fixed["breaks"], fixed["reasons"]) == (1, 0, [])


def test_both_gated_mlps_compute_the_same_function():
    for batch, scale in ((8, 1.0), (5, -1.0)):  # both sides of the branch
        x, w1, w2 = small_mlp_inputs(batch)
        torch.testing.assert_close(
            strategy.gated_mlp_with_branch(scale * x, w1, w2),
            strategy.gated_mlp_without_branch(scale * x, w1, w2),
        )


def test_new_shapes_recompile_unless_the_dimension_is_dynamic():
    _, w1, w2 = small_mlp_inputs()
    calls = [(randn((b, 16), torch.float32, b), w1, w2) for b in range(2, 8)]
    fn = strategy.gated_mlp_without_branch
    static = strategy.count_graphs(fn, calls, dynamic=False)
    assert static["graphs"] == len(calls) and "size mismatch" in static["first_reason"]
    assert strategy.count_graphs(fn, calls)["graphs"] == 2  # automatic dynamic: one recompilation
    assert strategy.count_graphs(fn, calls, mark_dynamic=0) == {"calls": 6, "graphs": 1, "first_reason": None}


def test_mlp_block_matches_its_float32_reference():
    model, x = strategy.mlp_inputs(tokens=3, dim=8, hidden=32, device="cpu", dtype=torch.float16)
    out = model(x)
    assert out.shape == (3, 8) and out.dtype == torch.float16
    assert not any(p.requires_grad for p in model.parameters())
    ref = strategy.mlp_ref(model, x)
    assert ref.dtype == torch.float32 and model.up.weight.dtype == torch.float16  # the copy, not the model
    assert_close("mlp_block", ref, out, k=32)
    assert strategy.mlp_flops(3, 8, 32) == 2 * (2 * 3 * 8 * 32)


def test_measure_mode_refuses_unknown_names():
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            strategy.measure_mode("mlp_8_tokens", "eager")
    else:
        with pytest.raises(ValueError, match="mode one of"):
            strategy.measure_mode("mlp_8_tokens", "fastest")


@pytest.mark.gpu
def test_compile_fuses_the_gelu_formula_into_one_triton_kernel():
    from gpuperf.reference import gelu_eager

    code = strategy.inductor_triton_code(gelu_eager, torch.randn(4096, device="cuda"))
    assert len(code) == 1 and "@triton.jit" in code[0] and "tanh" in code[0]


@pytest.mark.gpu
def test_kernels_per_call_counts_eager_formula_and_fused_kernel():
    from gpuperf.kernels import gelu
    from gpuperf.reference import gelu_eager

    x = torch.randn(4096, device="cuda")
    assert len(strategy.kernels_per_call(lambda: gelu_eager(x))) == 8
    assert [name for name in strategy.kernels_per_call(lambda: gelu(x))] == ["_gelu_kernel"]


def test_config_grid_places_each_trial_and_leaves_untried_cells_empty():
    def trial(bm, warps, stages, tflops, kernel="forward", status="ok"):
        config = {"block_m": bm, "num_warps": warps, "num_stages": stages}
        return {"kernel": kernel, "config": config, "status": status, "tflops": tflops}

    trials = [trial(128, 8, 3, 500.0), trial(64, 4, 3, 300.0), trial(128, 4, 2, 100.0, status="error")]
    trials.append(trial(128, 8, 3, 999.0, kernel="dq"))
    grid = sweeps.config_grid(trials, ("block_m",), ("num_warps", "num_stages"), kernel="forward")
    assert grid["rows"] == [(128,), (64,)] and grid["cols"] == [(4, 2), (4, 3), (8, 3)]
    assert grid["tflops"] == [[None, None, 500.0], [None, 300.0, None]]
    with pytest.raises(ValueError, match="no trial matches"):
        sweeps.config_grid(trials, ("block_m",), ("num_warps",), kernel="dkdv")
    with pytest.raises(ValueError, match="config field 'block_n' is missing"):
        sweeps.config_grid(trials, ("block_n",), ("num_warps",))


def test_config_grid_reads_the_committed_attention_sweep():
    from gpuperf.bench import records, tuning

    sweep = tuning.read_tuning(records.reference_gpu(), kernel="attention")
    grid = sweeps.config_grid(
        sweep["trials"], ("block_m", "block_n"), ("num_warps", "num_stages"), kernel="forward", head_dim=128
    )
    assert sum(v is not None for row in grid["tflops"] for v in row) >= 4
