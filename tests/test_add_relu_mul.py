import pytest
import torch

from gpuperf.kernels import add_relu_mul
from gpuperf.reference import add_relu_mul_eager, add_relu_mul_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, shape_id
from tests.conftest import DEVICE

SHAPES = [(1,), (3,), (1000,), (1024,), (2048,), (1025,), (98_432 + 17,), (3, 5, 7), (257, 129)]


def inputs(shape, dtype, seed=0):
    return tuple(randn(shape, dtype, seed=seed + i) for i in range(3))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x, y, z = inputs(shape, dtype, seed=1)
    out = add_relu_mul(x, y, z)
    assert out.shape == x.shape and out.dtype == dtype and out.device == x.device
    assert_close("add_relu_mul", add_relu_mul_ref(x, y, z), out)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_eager_formula_matches_reference(dtype):
    x, y, z = inputs((3000,), dtype, seed=2)
    assert_close("add_relu_mul_eager", add_relu_mul_ref(x, y, z), add_relu_mul_eager(x, y, z))


def test_half_of_the_sums_are_cut_to_zero():
    x, y, z = inputs((4096,), torch.float32, seed=3)
    out = add_relu_mul(x, y, z)
    zeros = (out == 0).float().mean().item()
    assert 0.4 < zeros < 0.6  # x + y < 0 for about half of random normal inputs


def test_nan_propagates_like_torch():
    nan = float("nan")
    x = torch.tensor([nan, 1.0, -1.0, 2.0], device=DEVICE)
    y = torch.tensor([0.0, nan, 0.0, -1.0], device=DEVICE)
    z = torch.tensor([1.0, 1.0, nan, 3.0], device=DEVICE)
    out = add_relu_mul(x, y, z)
    expected = add_relu_mul_eager(x, y, z)
    torch.testing.assert_close(out, expected, equal_nan=True)
    assert torch.isnan(out[:2]).all() and out[3] == 3.0


@pytest.mark.parametrize("block_size, num_warps", [(16, 1), (128, 2), (4096, 8)])
def test_launch_configuration_does_not_change_the_answer(block_size, num_warps):
    x, y, z = inputs((3001,), torch.float32, seed=4)
    out = add_relu_mul(x, y, z, block_size=block_size, num_warps=num_warps)
    assert_close("add_relu_mul", add_relu_mul_ref(x, y, z), out)


def test_non_contiguous_inputs():
    x = randn((64, 48), torch.float32, 5).t()
    y = randn((96, 64), torch.float32, 6)[::2]
    z = randn((48, 64), torch.float32, 7)
    assert_close("add_relu_mul non-contiguous", add_relu_mul_ref(x, y, z), add_relu_mul(x, y, z))


def test_empty_returns_empty():
    x = randn((0, 5), torch.float32)
    assert add_relu_mul(x, x, x).shape == (0, 5)


def test_registered_op_matches():
    x, y, z = inputs((700,), torch.float16, seed=8)
    out = torch.ops.gpuperf.add_relu_mul(x, y, z, 256, 2)
    assert_close("torch.ops.gpuperf.add_relu_mul", add_relu_mul_ref(x, y, z), out)


@pytest.mark.gpu
def test_large_tensor_crosses_many_programs():
    x, y, z = inputs((2**24 + 3,), torch.bfloat16, seed=9)
    assert_close("add_relu_mul large", add_relu_mul_ref(x, y, z), add_relu_mul(x, y, z))
