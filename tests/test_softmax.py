import importlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf.kernels import _configs, softmax
from gpuperf.reference import softmax_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, record_calls, shape_id

LONG = _configs.SOFTMAX_MAX_FUSED_COLS
SHAPES = [
    (1,),  # one row of one element
    (7,),  # rank 1
    (1, 1),
    (3, 7),  # fewer rows than a program holds
    (5, 1000),  # non-power-of-two row
    (2, 3, 129),  # rank 3, row just past a power of two
    (33, 256),
    (2, LONG),  # the longest single-pass row
    (2, LONG + 1),  # the shortest online row
    (2, 65536),  # long row: the online kernel, whole chunks
    (1, 5 * _configs.SOFTMAX_ONLINE_BLOCK_N + 123),  # online, ragged last chunk
]
LONG_SHAPES = [(3, 262144)]

# gpuperf.kernels.softmax is the function; the module is looked up by name.
softmax_module = importlib.import_module("gpuperf.kernels.softmax")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x = 3 * randn(shape, dtype, seed=sum(shape))
    out = softmax(x)
    assert out.shape == x.shape and out.dtype == dtype
    assert_close("softmax", softmax_ref(x), out)


@pytest.mark.parametrize("shape", LONG_SHAPES, ids=shape_id)
def test_very_long_rows(shape):
    x = randn(shape, torch.float32, seed=11)
    assert_close("softmax long", softmax_ref(x), softmax(x))


@pytest.mark.parametrize("n_cols", [300, 40_000], ids=["fused", "online"])
def test_minus_inf_rows_match_torch(device, n_cols):
    x = randn((4, n_cols), torch.float32, seed=12)
    x[0, : n_cols // 2] = -float("inf")  # leading -inf: the online running max starts at -inf
    x[1, ::3] = -float("inf")
    x[2] = -float("inf")  # all -inf: torch gives NaN
    out = softmax(x)
    expected = torch.softmax(x, dim=-1)
    assert torch.equal(out.isnan(), expected.isnan())
    assert out[2].isnan().all()
    assert (out[0, : n_cols // 2] == 0).all()
    assert_close("softmax -inf", softmax_ref(x), out)


@pytest.mark.parametrize("n_cols", [100, 40_000], ids=["fused", "online"])
def test_non_contiguous_inputs(n_cols):
    x = randn((n_cols, 6), torch.float32, seed=13).t()  # column stride 6
    assert not x.is_contiguous()
    assert_close("softmax transposed", softmax_ref(x), softmax(x))
    y = randn((3, 8, n_cols), torch.float32, seed=14)[:, ::2]  # row stride skips rows
    assert_close("softmax sliced", softmax_ref(y), softmax(y))


def test_empty_returns_empty():
    for shape in [(0,), (0, 8), (4, 0)]:
        out = softmax(randn(shape, torch.float32))
        assert out.shape == shape


def test_large_inputs_do_not_overflow():
    x = torch.tensor([[1e4, 1e4 - 1.0, -1e4]], device=randn((1,), torch.float32).device)
    assert_close("softmax large", softmax_ref(x), softmax(x))


@pytest.mark.parametrize("n_cols", [100, LONG + 1], ids=["fused", "online"])
def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch, n_cols):
    """The first call of a layout checks and plans; the next ones, on new tensors, skip the
    checks (none run) and compute on their own inputs, bit for bit as the op does."""
    checks = record_calls(monkeypatch, softmax_module, "check_tensors")
    softmax.plans.clear()
    outputs = []
    for seed in (1, 2, 1):
        x = randn((2, 3, n_cols), torch.float32, seed=seed)
        out = softmax(x)
        assert torch.equal(out, torch.ops.gpuperf.softmax(x))
        assert_close(f"planned softmax, seed {seed}", softmax_ref(x), out)
        outputs.append(out)
    assert len(checks) == 1 and len(softmax.plans) == 1
    assert torch.equal(outputs[2], outputs[0]) and not torch.equal(outputs[1], outputs[0])


def test_each_layout_and_dtype_has_its_own_plan():
    softmax.plans.clear()
    x = randn((5, 40), torch.float32, seed=3)
    variants = [x, x.t().contiguous().t(), x.half(), x[:, :39]]  # row-major, column-major, fp16, narrower
    for i, v in enumerate(variants):
        for _ in range(2):
            assert_close(f"softmax layout {i}", softmax_ref(v), softmax(v))
        assert len(softmax.plans) == i + 1


def test_an_input_copied_by_reshape_is_not_planned():
    """Leading dimensions that cannot be viewed as one are copied: a plan would read the copy's
    address, so there is none, and each call reads the new input."""
    softmax.plans.clear()
    for seed in (1, 2):
        x = randn((4, 3, 50), torch.float32, seed=seed).transpose(0, 1)
        out = softmax(x)
        assert_close(f"softmax of a copy, seed {seed}", softmax_ref(x), out)
        assert torch.equal(out, torch.ops.gpuperf.softmax(x))
    assert len(softmax.plans) == 0


@settings(max_examples=15, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 600),
    scale=st.floats(0.01, 30),
    seed=st.integers(0, 2**16),
)
def test_property_rows_match_reference(rows, cols, scale, seed):
    x = scale * randn((rows, cols), torch.float32, seed=seed)
    out = softmax(x)
    assert_close("softmax property", softmax_ref(x), out)
    sums = out.double().sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(4096, 1024), (8, 3000), (1024, 65536), (64, 262144)], ids=shape_id)
def test_benchmark_shapes_on_gpu(shape, dtype):
    x = randn(shape, dtype, seed=15)
    assert_close("softmax gpu", softmax_ref(x), softmax(x))
