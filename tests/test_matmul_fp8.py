"""FP8: quantization with scales, and the scaled FP8 matmul against the float32 reference."""

import json

import pytest
import torch

from gpuperf.bench.catalog import fp8_check_k
from gpuperf.kernels import PersistentConfig, matmul_fp8, to_fp8
from gpuperf.reference import matmul_fp8_ref
from gpuperf.testing import assert_close
from tests._params import assert_close_fp8, randn
from tests.conftest import DEVICE

FP8 = [pytest.param(torch.float8_e4m3fn, id="e4m3"), pytest.param(torch.float8_e5m2, id="e5m2")]
SCALINGS = [pytest.param(None, id="tensor"), pytest.param(-1, id="row")]


@pytest.mark.parametrize("dtype", FP8)
@pytest.mark.parametrize("axis, shape", [(None, (5, 7, 3)), (None, (40, 33)), (-1, (40, 33)), (1, (6, 9)),
                                         (0, (40, 33))])  # fmt: skip
def test_to_fp8_round_trips_within_the_format_precision(dtype, axis, shape):
    x = randn(shape, torch.float32, seed=len(shape)) * 30
    x_fp8, scale = to_fp8(x, axis=axis, dtype=dtype)
    assert x_fp8.dtype == dtype and x_fp8.shape == x.shape and scale.dtype == torch.float32
    expected = {None: (), -1: (shape[0], 1), 1: (shape[0], 1), 0: (1, shape[-1])}[axis]
    assert tuple(scale.shape) == expected
    back = x_fp8.float() * scale
    # Round to nearest: half a unit in the last place, 2**-4 (e4m3) or 2**-3 (e5m2) relative.
    half_ulp = 2.0 ** -({torch.float8_e4m3fn: 3, torch.float8_e5m2: 2}[dtype] + 1)
    amax = x.abs().amax() if axis is None else x.abs().amax(dim=axis, keepdim=True)
    assert torch.all((back - x).abs() <= half_ulp * x.abs() + amax * 2.0**-9 + 1e-30)
    # The largest magnitude lands on the format's largest value: no range is wasted.
    assert torch.allclose(x_fp8.float().abs().amax(), torch.tensor(torch.finfo(dtype).max, device=x.device))


def test_to_fp8_of_zeros_is_finite():
    x = torch.zeros(4, 6, device=DEVICE)
    x[1] = randn((6,), torch.float32)
    x_fp8, scale = to_fp8(x, axis=-1)
    assert torch.isfinite(scale).all() and scale[0].item() == 1.0
    assert torch.equal(x_fp8[0].float(), torch.zeros(6, device=DEVICE))
    assert torch.isfinite(to_fp8(torch.zeros(3, device=DEVICE))[1])


@pytest.mark.parametrize(
    "kwargs, x, error, match",
    [
        pytest.param({}, lambda: torch.ones(3, dtype=torch.int32), TypeError, "supported dtypes", id="int"),
        pytest.param({"dtype": torch.float16}, lambda: torch.ones(3), TypeError, "float8_e4m3fn", id="fp16"),
        pytest.param({"axis": 2}, lambda: torch.ones(3, 3), ValueError, "axis must be None, -1, 0 or 1",
                     id="axis"),
        pytest.param({"axis": 0}, lambda: torch.ones(3), ValueError, "must be 2-D", id="1d-axis"),
        pytest.param({}, lambda: torch.tensor([1.0, float("inf")]), ValueError, "inf or NaN", id="inf"),
    ],
)  # fmt: skip
def test_to_fp8_rejects(kwargs, x, error, match):
    with pytest.raises(error, match=match):
        to_fp8(x(), **kwargs)


def operands(m, n, k, axis=None, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn, seed=0):
    """FP8 ``a`` (M, K) row-major and ``b`` (K, N) column-major with their scales."""
    a, scale_a = to_fp8(randn((m, k), torch.float32, seed=seed), axis=axis, dtype=a_dtype)
    bt, scale_bt = to_fp8(randn((n, k), torch.float32, seed=seed + 1), axis=axis, dtype=b_dtype)
    return a, bt.t(), scale_a, scale_bt.t()


@pytest.mark.parametrize("axis", SCALINGS)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("shape", [(1, 16, 32), (37, 48, 64), (70, 17, 96), (33, 40, 100)],
                         ids=lambda s: "x".join(map(str, s)))  # fmt: skip
def test_matches_reference(shape, out_dtype, axis):
    m, n, k = shape
    a, b, scale_a, scale_b = operands(m, n, k, axis, seed=m + k)
    out = matmul_fp8(a, b, scale_a, scale_b, out_dtype=out_dtype)
    assert out.shape == (m, n) and out.dtype == out_dtype
    assert_close_fp8("matmul_fp8", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=k)


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(PersistentConfig(32, 32, 32, 2, 4, 1, tma=False), id="pointer"),
        pytest.param(PersistentConfig(32, 32, 32, 2, 4, 1), id="tma"),
        pytest.param(PersistentConfig(32, 32, 32, 2, 4, 2, warp_specialize=True), id="tma_ws"),
    ],
)
@pytest.mark.parametrize("fast_accum", [False, True], ids=["fp32-accum", "fast-accum"])
def test_every_rung_and_accumulation(config, fast_accum):
    a, b, scale_a, scale_b = operands(45, 64, 96, axis=-1, seed=3)
    out = matmul_fp8(a, b, scale_a, scale_b, fast_accum=fast_accum, config=config)
    assert_close("matmul_fp8", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=96)


@pytest.mark.parametrize("layout", ["b_row_major", "a_col_major"])
def test_other_layouts_are_copied_into_k_major(layout):
    a, b, scale_a, scale_b = operands(24, 32, 64, seed=4)
    if layout == "b_row_major":
        b = b.contiguous()
    else:
        a = a.t().contiguous().t()
    out = matmul_fp8(a, b, scale_a, scale_b)
    assert_close("matmul_fp8", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=64)


@pytest.mark.parametrize("axis", SCALINGS)
def test_repeat_calls_launch_from_the_plan_and_a_copy_leaves_none(axis):
    """K-major operands: the second call on new operands and scales launches from the plan
    (descriptors made again on the new operands, the new scales read). An operand that had
    to be copied into K-major leaves no plan: each such call copies again."""
    matmul_fp8.plans.clear()
    outs = []
    for seed in (1, 2, 1):
        a, b, scale_a, scale_b = operands(24, 32, 64, axis=axis, seed=seed)
        outs.append(matmul_fp8(a, b, scale_a, scale_b))
        assert_close(f"planned matmul_fp8 {seed}", matmul_fp8_ref(a, b, scale_a, scale_b), outs[-1], k=64)
    assert len(matmul_fp8.plans) == 1
    assert torch.equal(outs[0], outs[2]) and not torch.equal(outs[0], outs[1])
    for _ in range(2):
        matmul_fp8(a, b.contiguous(), scale_a, scale_b)  # b row-major: copied
    assert len(matmul_fp8.plans) == 1


def test_mixed_formats():
    a, b, scale_a, scale_b = operands(16, 32, 64, b_dtype=torch.float8_e5m2, seed=5)
    out = matmul_fp8(a, b, scale_a, scale_b, out_dtype=torch.float32)
    assert_close_fp8("matmul_fp8", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=64)


def test_k_zero_gives_zeros():
    a, b, scale_a, scale_b = operands(3, 16, 0)
    out = matmul_fp8(a, b, scale_a, scale_b)
    assert out.shape == (3, 16) and not out.any()


def _bad(**changes):
    a, b, scale_a, scale_b = operands(8, 16, 32)
    args = {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b, **changes}
    return args


@pytest.mark.parametrize(
    "changes, error, match",
    [
        pytest.param(lambda: {"a": randn((8, 32), torch.float16)}, TypeError,
                     "a has dtype float16; supported dtypes are float8_e4m3fn, float8_e5m2", id="a-fp16"),
        pytest.param(lambda: {"b": [[1]]}, TypeError, "b must be a torch.Tensor", id="b-list"),
        pytest.param(lambda: {"scale_a": torch.ones((), device=DEVICE, dtype=torch.float16)}, TypeError,
                     "scale_a must be float32", id="scale-dtype"),
        pytest.param(lambda: {"scale_a": torch.ones(8, device=DEVICE)}, ValueError,
                     r"scale_a must have shape \(\) or \(8, 1\), got \(8,\)", id="scale-a-shape"),
        pytest.param(lambda: {"scale_b": torch.ones(16, 1, device=DEVICE)}, ValueError,
                     r"scale_b must have shape \(\) or \(1, 16\)", id="scale-b-shape"),
        pytest.param(lambda: {"scale_b": 1.0}, TypeError, "scale_b must be a torch.Tensor", id="scale-float"),
        pytest.param(lambda: {"b": to_fp8(randn((16, 16), torch.float32))[0]}, ValueError,
                     "inner dimensions must match", id="inner"),
        pytest.param(lambda: {"a": to_fp8(randn((2, 8, 32), torch.float32))[0]}, ValueError,
                     "must be 2-D", id="3d"),
    ],
)  # fmt: skip
def test_bad_input_is_rejected(changes, error, match):
    args = _bad(**changes())
    with pytest.raises(error, match=match):
        matmul_fp8(args["a"], args["b"], args["scale_a"], args["scale_b"])


def test_bad_options_are_rejected():
    a, b, scale_a, scale_b = operands(8, 16, 32)
    with pytest.raises(TypeError, match="out_dtype must be one of bfloat16, float16, float32"):
        matmul_fp8(a, b, scale_a, scale_b, out_dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="fast_accum must be a bool"):
        matmul_fp8(a, b, scale_a, scale_b, fast_accum=1)
    with pytest.raises(TypeError, match="PersistentConfig"):
        matmul_fp8(a, b, scale_a, scale_b, config=(32, 32, 32))


@pytest.mark.gpu
def test_gpu_without_fp8_tensor_cores_gets_a_clear_error(ampere_gpu):
    a, b, scale_a, scale_b = operands(64, 64, 64)
    with pytest.raises(RuntimeError, match=r"compute capability 8\.9"):
        matmul_fp8(a, b, scale_a, scale_b)


@pytest.mark.gpu
@pytest.mark.parametrize("axis", SCALINGS)
@pytest.mark.parametrize("fast_accum", [False, True], ids=["fp32-accum", "fast-accum"])
def test_real_sizes_against_scaled_mm(axis, fast_accum):
    """At 4096 x 4096 x 4096 our result and cuBLASLt's match the reference alike."""
    a, b, scale_a, scale_b = operands(4096, 4096, 4096, axis=axis, seed=9)
    ref = matmul_fp8_ref(a, b, scale_a, scale_b)
    ours = matmul_fp8(a, b, scale_a, scale_b, fast_accum=fast_accum)
    theirs = torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
    k = fp8_check_k(4096, "fast" if fast_accum else "float32")
    assert_close("matmul_fp8", ref, ours, k=k)
    assert_close("torch._scaled_mm", ref, theirs, k=k)


@pytest.mark.gpu
def test_cached_launches_tell_fp8_formats_apart():
    """The launch cache keys tensor descriptors by dtype: e5m2 after e4m3 gets its own binary."""
    for b_dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fn):
        a, b, scale_a, scale_b = operands(256, 256, 256, b_dtype=b_dtype, seed=11)
        out = matmul_fp8(a, b, scale_a, scale_b)
        assert_close(f"matmul_fp8 b {b_dtype}", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=256)


def test_float32_outputs_get_a_pipeline_that_leaves_room_for_the_output_tile():
    """On the H100, 128 x 256 x 128 with 3 stages and a float32 output asked for 278,552 bytes
    of shared memory (of 232,448): the float32 tile is staged through shared memory."""
    from gpuperf.kernels.matmul_fp8 import fit_output

    tuned = PersistentConfig(128, 256, 128, num_stages=3)
    assert fit_output(tuned, torch.float32).num_stages == 2
    assert fit_output(tuned, torch.bfloat16) == tuned
    small = PersistentConfig(128, 128, 128, num_stages=4)
    assert fit_output(small, torch.float32) == small


def _sweep_entry(accumulation, variant, shape, config):
    entry = {"variant": variant, "shape": list(shape), "config": config.as_dict(), "ms": 1.0, "tflops": 1.0}
    return entry if accumulation is None else {"accumulation": accumulation, **entry}


def test_each_accumulation_reads_its_own_sweep(tmp_path, monkeypatch):
    """Promotion stalls the tensor cores once per step along K, so float32-promoted FP8 is
    tuned apart from fast accumulation; a sweep entry that names no accumulation is fast."""
    from gpuperf.kernels import _persistent_configs as configs

    fast, promoted, legacy = (PersistentConfig(128, 256, 128), PersistentConfig(128, 128, 256),
                              PersistentConfig(128, 128, 128, num_stages=4))  # fmt: skip
    best = [
        _sweep_entry("fast", "best", (4096, 4096, 4096), fast),
        _sweep_entry("float32", "best", (4096, 4096, 4096), promoted),
        _sweep_entry(None, "tma", (4096, 4096, 4096), legacy),
    ]
    (tmp_path / "gpu-x").mkdir()
    (tmp_path / "gpu-x" / "matmul_fp8.json").write_text(json.dumps({"best": best}))
    monkeypatch.setattr(configs, "TUNED_DIR", tmp_path)
    configs.forget_tuned()
    try:
        assert configs.tuned_config("matmul_fp8", "gpu-x", 4000, 4000, 4000) == fast
        assert configs.tuned_config("matmul_fp8", "gpu-x", 4000, 4000, 4000, "best", "float32") == promoted
        assert configs.tuned_config("matmul_fp8", "gpu-x", 4000, 4000, 4000, "tma", "fast") == legacy
        assert configs.tuned_config("matmul_fp8", "gpu-x", 4000, 4000, 4000, "tma", "float32") is None
    finally:
        monkeypatch.undo()
        configs.forget_tuned()


def test_promoted_candidates_include_deeper_steps():
    from gpuperf.kernels._persistent_configs import FP8_PROMOTED_CANDIDATES, candidates, variant

    kept = candidates("matmul_fp8", 8192, 8192, 4096, "float32")
    assert set(kept) <= set(FP8_PROMOTED_CANDIDATES)
    assert {c.block_k for c in kept} == {128, 256}
    assert {variant(c) for c in kept} == {"pointer", "tma", "tma_ws"}
    assert 256 not in {c.block_k for c in candidates("matmul_fp8", 8192, 8192, 4096, "fast")}


def test_sweep_table_shows_each_accumulation():
    from gpuperf.pages.persistent import sweep_section
    from gpuperf.pages.tables import to_text

    config = PersistentConfig(128, 128, 256)
    trials = [
        {"shape": [64, 64, 64], "accumulation": acc, "status": "ok", "variant": "tma"}
        for acc in ("fast", "float32")
    ]
    speeds = (("fast", 900.0), ("float32", 700.0))
    best = [_sweep_entry(acc, "best", (64, 64, 64), config) | {"tflops": t} for acc, t in speeds]
    sweep = {"trials": trials, "best": best, "provenance": {"gpu": "NVIDIA H100 80GB HBM3"}}
    table = to_text([sweep_section("matmul_fp8", sweep)]).splitlines()
    assert "accumulation" in table[1]
    assert "fast" in table[3] and "float32" in table[4] and "128x128x256" in table[4]


@pytest.mark.gpu
@pytest.mark.parametrize("axis", SCALINGS)
def test_planned_calls_compute_on_their_own_inputs(axis):
    """Later calls like a first one launch from its plan, with their own operands and scales;
    a call whose operand had to be copied into the K-major layout makes no plan."""
    plans = matmul_fp8.plans
    plans.clear()
    for seed in (1, 2, 3):
        a, b, scale_a, scale_b = operands(256, 192, 128, axis=axis, seed=seed)
        out = matmul_fp8(a, b, scale_a, scale_b)
        assert_close(f"matmul_fp8 call {seed}", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=128)
    assert len(plans) == 1
    a, b, scale_a, scale_b = operands(256, 192, 128, axis=axis, seed=4)
    b = b.contiguous()  # row-major: copied to column-major on every call
    out = matmul_fp8(a, b, scale_a, scale_b)
    assert_close("matmul_fp8 row-major b", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=128)
    assert len(plans) == 1


@pytest.mark.gpu
def test_a_plan_lets_no_bad_option_through():
    """fast_accum=1 equals True as a dictionary key: the plan of fast_accum=True must not let
    it past the type check."""
    a, b, scale_a, scale_b = operands(256, 192, 128, seed=5)
    for _ in range(2):
        matmul_fp8(a, b, scale_a, scale_b, fast_accum=True)
    assert len(matmul_fp8.plans) >= 1
    with pytest.raises(TypeError, match="fast_accum must be a bool"):
        matmul_fp8(a, b, scale_a, scale_b, fast_accum=1)
