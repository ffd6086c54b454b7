"""Bad input gets a clear exception naming the argument, never a crash or a wrong answer."""

import pytest
import torch

from gpuperf.kernels import softmax, vector_add
from tests.conftest import DEVICE


def t(*shape, dtype=torch.float32, device=DEVICE):
    return torch.randn(*shape).to(device=device, dtype=dtype)


@pytest.mark.parametrize(
    "x, y, error, match",
    [
        pytest.param([1.0], t(1), TypeError, "x must be a torch.Tensor, got list", id="x-not-tensor"),
        pytest.param(t(1), 2.0, TypeError, "y must be a torch.Tensor, got float", id="y-not-tensor"),
        pytest.param(
            t(4, dtype=torch.int32),
            t(4),
            TypeError,
            r"x has dtype int32; supported dtypes are float32, float16, bfloat16",
            id="int-dtype",
        ),
        pytest.param(
            t(4, dtype=torch.float64), t(4, dtype=torch.float64), TypeError, "supported dtypes", id="fp64"
        ),
        pytest.param(
            t(4),
            t(4, dtype=torch.float16),
            TypeError,
            r"same dtype, got x float32, y float16",
            id="dtype-mismatch",
        ),
        pytest.param(
            t(4, 3), t(3, 4), ValueError, r"same shape, got x \(4, 3\), y \(3, 4\)", id="shape-mismatch"
        ),
        pytest.param(t(4), t(5), ValueError, r"x \(4,\), y \(5,\)", id="length-mismatch"),
    ],
)
def test_vector_add_rejects(x, y, error, match):
    with pytest.raises(error, match=match):
        vector_add(x, y)


@pytest.mark.parametrize("block_size, error", [(1000, ValueError), (0, ValueError), (64.0, TypeError)])
def test_vector_add_rejects_block_size(block_size, error):
    with pytest.raises(error, match="block_size"):
        vector_add(t(8), t(8), block_size=block_size)


@pytest.mark.parametrize(
    "x, error, match",
    [
        pytest.param("abc", TypeError, "x must be a torch.Tensor, got str", id="not-tensor"),
        pytest.param(t(3, dtype=torch.int64), TypeError, "x has dtype int64; supported dtypes are", id="int"),
        pytest.param(torch.tensor(1.0, device=DEVICE), ValueError, "at least 1 dimension.*0-d", id="0-d"),
    ],
)
def test_softmax_rejects(x, error, match):
    with pytest.raises(error, match=match):
        softmax(x)


def test_cpu_tensor_without_interpreter_is_rejected(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match=r"x must be on a CUDA device, got a tensor on cpu"):
        softmax(torch.randn(4, 4))
    with pytest.raises(ValueError, match=r"must be on a CUDA device"):
        vector_add(torch.randn(4), torch.randn(4))


@pytest.mark.gpu
def test_tensors_on_different_devices_are_rejected():
    with pytest.raises(ValueError, match=r"same device, got x on cuda:0, y on cpu"):
        vector_add(t(4, device="cuda"), t(4, device="cpu"))
