import pytest
import torch

from gpuperf.kernels import vector_add
from gpuperf.reference import vector_add_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, shape_id

# 1 element; one partial block; exactly one and two blocks; non-powers of two;
# several dimensions (flattened by the wrapper).
SHAPES = [(1,), (3,), (1000,), (4096,), (8192,), (4097,), (98_432 + 17,), (3, 5, 7), (257, 129)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x, y = randn(shape, dtype, seed=1), randn(shape, dtype, seed=2)
    out = vector_add(x, y)
    assert out.shape == x.shape and out.dtype == dtype and out.device == x.device
    assert_close("vector_add", vector_add_ref(x, y), out)


@pytest.mark.parametrize("block_size", [1, 16, 1024], ids=lambda b: f"block{b}")
def test_block_size_does_not_change_the_answer(block_size):
    x, y = randn((3000,), torch.float32, 3), randn((3000,), torch.float32, 4)
    assert_close("vector_add", vector_add_ref(x, y), vector_add(x, y, block_size=block_size))


def test_non_contiguous_inputs_are_right():
    x = randn((64, 48), torch.float32, 5).t()
    y = randn((96, 64), torch.float32, 7)[::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    assert_close("vector_add non-contiguous", vector_add_ref(x, y), vector_add(x, y))


def test_empty_returns_empty():
    x = randn((0, 5), torch.float32)
    out = vector_add(x, x)
    assert out.shape == (0, 5)


@pytest.mark.gpu
def test_large_tensor_crosses_many_programs():
    n = 2**24 + 3
    x, y = randn((n,), torch.float32, 8), randn((n,), torch.float32, 9)
    assert_close("vector_add large", vector_add_ref(x, y), vector_add(x, y))


def test_grid_helpers_match_triton():
    import triton

    from gpuperf.kernels._grid import cdiv, next_power_of_2

    for n in [0, 1, 2, 3, 4, 5, 255, 256, 257, 32768, 32769, 2**31 + 1]:
        assert next_power_of_2(n) == triton.next_power_of_2(n), n
        for d in [1, 2, 3, 1024]:
            assert cdiv(n, d) == triton.cdiv(n, d), (n, d)
