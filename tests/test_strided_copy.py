import pytest
import torch

from gpuperf.kernels import strided_copy
from gpuperf.reference import strided_copy_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("n", [1, 3, 1024, 1025, 4099, 20_000])
@pytest.mark.parametrize("stride", [1, 2, 3, 8, 33])
def test_matches_reference(n, stride, dtype):
    x = randn((n,), dtype, seed=n + stride)
    out = strided_copy(x, stride)
    assert out.shape == ((n + stride - 1) // stride,) and out.dtype == dtype
    assert_close("strided_copy", strided_copy_ref(x, stride), out)


def test_stride_longer_than_the_tensor_keeps_the_first_element():
    x = randn((5,), torch.float32, seed=1)
    assert strided_copy(x, 100).tolist() == x[:1].tolist()


def test_empty_returns_empty():
    assert strided_copy(randn((0,), torch.float32), 4).shape == (0,)


@pytest.mark.gpu
def test_offsets_past_2_to_the_31_elements():
    # The last elements read lie past element 2**31: the offsets must be computed in int64.
    x = torch.randn(2**31 + 5000, device="cuda", dtype=torch.float16)
    assert_close("strided_copy large", strided_copy_ref(x, 4096), strided_copy(x, 4096))
