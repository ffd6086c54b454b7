"""The persistent matmul: every rung of tutorial 06's ladder against the reference, layouts, TMA's rules."""

import pytest
import torch

from gpuperf.kernels import PersistentConfig, matmul_persistent
from gpuperf.kernels._persistent_configs import PERSISTENT_CANDIDATES, candidates, variant
from gpuperf.kernels.matmul_persistent import persistent_config
from gpuperf.kernels.tma import tma_layout
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close
from tests._params import randn
from tests.conftest import DEVICE

HALF_DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]

# Interpreter-sized configs of each rung: computed pointers, TMA, TMA + warp specialization.
RUNGS = [
    pytest.param(PersistentConfig(32, 32, 32, 2, 4, 1, tma=False), id="pointer"),
    pytest.param(PersistentConfig(32, 32, 32, 2, 4, 1), id="tma"),
    pytest.param(PersistentConfig(32, 32, 32, 2, 4, 2, warp_specialize=True), id="tma_ws"),
]

# (M, N, K): M = 1; a tile edge crossed in M and N; K past one tile and not a multiple of
# BLOCK_K (a multiple of 8, as TMA's 16-byte rule needs); more tiles than programs.
SHAPES = [(1, 16, 32), (37, 24, 40), (70, 48, 104), (130, 96, 64)]


def shape_id(shape):
    return "x".join(map(str, shape))


@pytest.mark.parametrize("config", RUNGS)
@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_every_rung_matches_reference(shape, dtype, config):
    m, n, k = shape
    a, b = randn((m, k), dtype, seed=m), randn((k, n), dtype, seed=n)
    out = matmul_persistent(a, b, config=config)
    assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
    assert_close(f"matmul_persistent {variant(config)}", matmul_ref(a, b), out, k=k)


@pytest.mark.parametrize("layout", ["a_col", "b_col", "both_col"])
def test_column_major_operands_are_read_in_place(layout):
    a, b = randn((40, 48), torch.float16, seed=1), randn((48, 56), torch.float16, seed=2)
    if layout in ("a_col", "both_col"):
        a = a.t().contiguous().t()
        assert tma_layout(a) == "col"
    if layout in ("b_col", "both_col"):
        b = b.t().contiguous().t()
        assert tma_layout(b) == "col"
    assert_close("matmul_persistent", matmul_ref(a, b), matmul_persistent(a, b), k=48)


def test_strides_tma_cannot_describe_are_a_clear_error_and_pointers_take_them():
    a, b = randn((20, 24), torch.float16, seed=3), randn((24, 17), torch.float16, seed=4)
    assert tma_layout(b) is None  # a row of 17 halves is 34 bytes, not a multiple of 16
    with pytest.raises(ValueError, match=r"b \(shape \(24, 17\).*16 bytes"):
        matmul_persistent(a, b)
    pointer = PersistentConfig(32, 32, 32, 2, 4, 1, tma=False)
    assert_close("matmul_persistent", matmul_ref(a, b), matmul_persistent(a, b, config=pointer), k=24)


def test_misaligned_base_is_a_clear_error():
    flat = randn((1 + 32 * 16,), torch.float16, seed=5)
    a = flat[1:].view(32, 16)  # starts 2 bytes past a 16-byte boundary
    with pytest.raises(ValueError, match=r"^a \(shape \(32, 16\), .*address % 16 = 2\)"):
        matmul_persistent(a, randn((16, 16), torch.float16, seed=6))


@pytest.mark.parametrize("shape", [(5, 7, 0), (0, 8, 16), (8, 0, 16)], ids=shape_id)
def test_empty_dimensions_need_no_launch(shape):
    m, n, k = shape
    out = matmul_persistent(randn((m, k), torch.float16), randn((k, n), torch.float16))
    assert out.shape == (m, n) and not out.any()


@pytest.mark.parametrize(
    "args, error, match",
    [
        pytest.param(lambda: (randn((4, 8), torch.float32), randn((8, 8), torch.float32)), TypeError,
                     "supported dtypes are float16, bfloat16", id="fp32"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((8, 8), torch.bfloat16)), TypeError,
                     "same dtype", id="mixed-dtypes"),
        pytest.param(lambda: (randn((4, 8), torch.float16), randn((16, 8), torch.float16)), ValueError,
                     r"inner dimensions must match.*8 != 16", id="inner-mismatch"),
        pytest.param(lambda: (randn((2, 4, 8), torch.float16), randn((8, 8), torch.float16)), ValueError,
                     "must be 2-D", id="3d"),
        pytest.param(lambda: ([[1.0]], randn((8, 8), torch.float16)), TypeError,
                     "a must be a torch.Tensor, got list", id="list"),
    ],
)  # fmt: skip
def test_bad_input_is_rejected(args, error, match):
    with pytest.raises(error, match=match):
        matmul_persistent(*args())


def test_bad_config_is_rejected():
    a, b = randn((8, 8), torch.float16), randn((8, 8), torch.float16)
    with pytest.raises(TypeError, match="PersistentConfig, got dict"):
        matmul_persistent(a, b, config={"block_m": 32})
    with pytest.raises(ValueError, match="warp_specialize needs tma=True"):
        PersistentConfig(32, 32, 32, tma=False, warp_specialize=True)
    with pytest.raises(ValueError, match="block_k must be a power of two >= 16, got 24"):
        PersistentConfig(32, 32, 24)
    with pytest.raises(TypeError, match="tma must be a bool"):
        PersistentConfig(32, 32, 32, tma=1)


def test_candidates_fit_and_cover_every_rung():
    kept = candidates("matmul_persistent", 8192, 8192, 8192)
    assert {variant(c) for c in kept} == {"pointer", "tma", "tma_ws"}
    assert set(kept) <= set(PERSISTENT_CANDIDATES)
    # A 128-row tile over a 16-row product computes mostly padding.
    assert all(c.block_m <= 32 for c in candidates("matmul_persistent", 16, 14336, 4096))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(8192, 8192, 8192), (4096, 4096, 4096)], ids=shape_id)
def test_tuned_config_at_real_sizes(shape):
    m, n, k = shape
    a, b = randn((m, k), torch.bfloat16, seed=1), randn((k, n), torch.bfloat16, seed=2)
    config = persistent_config(a, b)
    assert config.tma  # the sweep's winner on Hopper loads through TMA
    assert_close("matmul_persistent", matmul_ref(a, b), matmul_persistent(a, b), k=k)


@pytest.mark.gpu
def test_gpu_without_tma_gets_a_clear_error(ampere_gpu):
    a = randn((64, 64), torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"compute capability 9\.0"):
        matmul_persistent(a, a)


def test_device_is_checked():
    if DEVICE == "cpu":
        pytest.skip("one device here")
    with pytest.raises(ValueError, match="same device"):
        matmul_persistent(randn((8, 8), torch.float16), torch.randn(8, 8).half())


@pytest.mark.gpu
def test_cached_launches_tell_dtypes_and_layouts_apart():
    """One config, launched in turn on float16, bfloat16 and a column-major operand: each
    call must get the binary compiled for its descriptors, not the previous call's."""
    config = PersistentConfig(128, 128, 64, num_stages=3)
    for dtype, col in ((torch.float16, False), (torch.bfloat16, False), (torch.float16, True)):
        a, b = randn((256, 192), dtype, seed=7), randn((192, 320), dtype, seed=8)
        if col:
            b = b.t().contiguous().t()
        out = matmul_persistent(a, b, config=config)
        assert_close(f"matmul_persistent {dtype} col={col}", matmul_ref(a, b), out, k=192)


@pytest.mark.gpu
def test_planned_calls_compute_on_their_own_inputs():
    """The second call of a shape launches from the plan the first left: on its own tensors,
    into its own output, for each dtype and layout."""
    plans = matmul_persistent.plans
    plans.clear()
    for dtype, col in ((torch.float16, False), (torch.bfloat16, False), (torch.float16, True)):
        for seed in (1, 2, 3):
            a, b = randn((256, 192), dtype, seed=seed), randn((192, 320), dtype, seed=seed + 10)
            if col:
                b = b.t().contiguous().t()
            out = matmul_persistent(a, b)
            assert_close(f"matmul_persistent {dtype} col={col} call {seed}", matmul_ref(a, b), out, k=192)
    assert len(plans) == 3  # one plan per dtype and layout, made by the first call of each


def test_bfloat16_is_right_wherever_it_runs():
    """Triton 3.6's interpreter multiplies bfloat16's raw bits in tl.dot; gpuperf._interpreter
    widens them to float32 there, so bfloat16 is right on the CPU as on a GPU, and the output
    stays bfloat16."""
    for m, n, k in ((37, 40, 48), (1, 24, 80)):
        a, b = randn((m, k), torch.bfloat16, seed=m), randn((k, n), torch.bfloat16, seed=n)
        out = matmul_persistent(a, b)
        assert out.dtype == torch.bfloat16
        assert_close(f"matmul_persistent bf16 {m}x{n}x{k}", matmul_ref(a, b), out, k=k)
