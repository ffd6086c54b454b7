import pytest
import torch

from gpuperf.kernels import gelu
from gpuperf.reference import gelu_eager, gelu_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, shape_id
from tests.conftest import DEVICE

# 1 element; a partial block; exactly one and two blocks; one more than a block;
# non-powers of two; several dimensions (flattened by the wrapper).
SHAPES = [(1,), (3,), (1000,), (1024,), (2048,), (1025,), (98_432 + 17,), (3, 5, 7), (257, 129)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x = 3 * randn(shape, dtype, seed=1)  # wide enough to reach both tails of the curve
    out = gelu(x)
    assert out.shape == x.shape and out.dtype == dtype and out.device == x.device
    assert_close("gelu", gelu_ref(x), out)


def test_matches_torch_gelu_tanh():
    x = 4 * randn((5000,), torch.float32, seed=2)
    expected = torch.nn.functional.gelu(x, approximate="tanh")
    torch.testing.assert_close(gelu(x), expected, rtol=1e-5, atol=1e-6)


def test_reference_and_eager_formula_agree_in_float32():
    x = 4 * randn((4000,), torch.float32, seed=3)
    assert_close("gelu_eager", gelu_ref(x), gelu_eager(x))


def test_tails_and_nan():
    x = torch.tensor([-30.0, -10.0, -5.0, -1e-20, 0.0, 1e-20, 5.0, 10.0, 30.0, float("nan")], device=DEVICE)
    out = gelu(x)
    assert_close("gelu tails", gelu_ref(x), out)
    assert torch.isnan(out[-1]) and out[4] == 0


@pytest.mark.parametrize("block_size, num_warps", [(16, 1), (128, 2), (4096, 8)])
def test_launch_configuration_does_not_change_the_answer(block_size, num_warps):
    x = randn((3001,), torch.float32, seed=4)
    assert_close("gelu", gelu_ref(x), gelu(x, block_size=block_size, num_warps=num_warps))


def test_non_contiguous_input():
    x = randn((64, 48), torch.float16, seed=5).t()
    assert not x.is_contiguous()
    out = gelu(x)
    assert out.is_contiguous() and out.shape == x.shape
    assert_close("gelu non-contiguous", gelu_ref(x), out)


def test_empty_returns_empty():
    out = gelu(randn((0, 5), torch.float32))
    assert out.shape == (0, 5)


def test_registered_op_matches():
    x = randn((700,), torch.float32, seed=6)
    assert_close("torch.ops.gpuperf.gelu", gelu_ref(x), torch.ops.gpuperf.gelu(x, 256, 2))


@pytest.mark.gpu
def test_large_tensor_crosses_many_programs():
    x = randn((2**24 + 3,), torch.bfloat16, seed=7)
    assert_close("gelu large", gelu_ref(x), gelu(x))


@pytest.mark.gpu
def test_compiled_model_keeps_one_graph_with_the_kernel():
    torch._dynamo.reset()
    fn = torch.compile(lambda x: gelu(x * 2.0) + 1.0, fullgraph=True)
    x = randn((1000,), torch.float16, seed=8)
    assert_close("compiled gelu", gelu_ref(x * 2.0) + 1.0, fn(x))
