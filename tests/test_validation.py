"""Bad input gets a clear exception naming the argument, never a crash or a wrong answer."""

import pytest
import torch

from gpuperf.kernels import MatmulConfig, matmul, softmax, vector_add
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


def test_vector_add_rejects_num_warps():
    for bad in (3, 0, [4]):
        with pytest.raises(ValueError, match="num_warps must be a power of two"):
            vector_add(t(8), t(8), num_warps=bad)


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
    # A plan keys on the inputs, not on the interpreter, which a process sets once; this test
    # turns it off mid-process, so it starts without the plans earlier tests left (a CPU input
    # of the same layout would launch from one of them, unchecked).
    for op in (softmax, vector_add, matmul):
        op.plans.clear()
    with pytest.raises(ValueError, match=r"x must be on a CUDA device, got a tensor on cpu"):
        softmax(torch.randn(4, 4))
    with pytest.raises(ValueError, match=r"must be on a CUDA device"):
        vector_add(torch.randn(4), torch.randn(4))
    with pytest.raises(ValueError, match=r"a must be on a CUDA device"):
        matmul(torch.randn(4, 4).half(), torch.randn(4, 4).half())


@pytest.mark.gpu
def test_tensors_on_different_devices_are_rejected():
    with pytest.raises(ValueError, match=r"same device, got x on cuda:0, y on cpu"):
        vector_add(t(4, device="cuda"), t(4, device="cpu"))


def h(*shape, dtype=torch.float16, device=DEVICE):
    return t(*shape, dtype=dtype, device=device)


@pytest.mark.parametrize(
    "a, b, kwargs, error, match",
    [
        pytest.param(
            [[1.0]], h(1, 1), {}, TypeError, "a must be a torch.Tensor, got list", id="a-not-tensor"
        ),
        pytest.param(
            h(1, 1), None, {}, TypeError, "b must be a torch.Tensor, got NoneType", id="b-not-tensor"
        ),
        pytest.param(
            t(4, 4),
            t(4, 4),
            {},
            TypeError,
            "a has dtype float32; supported dtypes are float16, bfloat16",
            id="fp32",
        ),
        pytest.param(
            h(4, 4),
            h(4, 4, dtype=torch.bfloat16),
            {},
            TypeError,
            "same dtype, got a float16, b bfloat16",
            id="dtype-mismatch",
        ),
        pytest.param(h(4), h(4, 4), {}, ValueError, r"2-D, got a \(4,\) and b \(4, 4\)", id="a-1d"),
        pytest.param(h(2, 4, 4), h(4, 4), {}, ValueError, r"2-D, got a \(2, 4, 4\)", id="a-3d"),
        pytest.param(
            h(3, 4),
            h(5, 6),
            {},
            ValueError,
            r"inner dimensions must match: a is \(3, 4\) and b is \(5, 6\)",
            id="inner-mismatch",
        ),
        pytest.param(
            h(3, 4),
            h(4, 6),
            {"bias": h(5)},
            ValueError,
            r"bias must have shape \(6,\) for N = 6, got \(5,\)",
            id="bias-shape",
        ),
        pytest.param(
            h(3, 4), h(4, 6), {"bias": h(1, 6)}, ValueError, r"bias must have shape \(6,\)", id="bias-2d"
        ),
        pytest.param(
            h(3, 4), h(4, 6), {"bias": t(6)}, TypeError, "bias has dtype float32; supported", id="bias-dtype"
        ),
        pytest.param(
            h(3, 4),
            h(4, 6),
            {"bias": h(6, dtype=torch.bfloat16)},
            TypeError,
            "same dtype, got a float16, b float16, bias bfloat16",
            id="bias-dtype-mismatch",
        ),
        pytest.param(
            h(3, 4),
            h(4, 6),
            {"activation": "silu"},
            ValueError,
            r"activation must be one of \[None, 'relu', 'leaky_relu', 'gelu'\], got 'silu'",
            id="activation",
        ),
        pytest.param(
            h(3, 4),
            h(4, 6),
            {"config": (64, 64, 32)},
            TypeError,
            "config must be a gpuperf.kernels.MatmulConfig",
            id="config-type",
        ),
    ],
)
def test_matmul_rejects(a, b, kwargs, error, match):
    with pytest.raises(error, match=match):
        matmul(a, b, **kwargs)


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"block_m": 48}, "block_m must be a power of two >= 16, got 48"),
        ({"block_k": 8}, "block_k"),
        ({"num_warps": 3}, "num_warps must be a power of two"),
        ({"num_stages": 0}, "num_stages must be a positive"),
    ],
)
def test_matmul_config_rejects(fields, match):
    with pytest.raises(ValueError, match=match):
        MatmulConfig(**{"block_m": 64, "block_n": 64, "block_k": 32, **fields})


@pytest.mark.parametrize(
    "call, bad_call",
    [
        pytest.param(lambda: vector_add(t(8), t(8)), lambda: vector_add(t(8), t(9)), id="vector_add"),
        pytest.param(lambda: softmax(t(4, 8)), lambda: softmax(t(4, 8, dtype=torch.int32)), id="softmax"),
        pytest.param(lambda: matmul(h(8, 8), h(8, 8)), lambda: matmul(h(8, 8), h(9, 8)), id="matmul"),
    ],
)
def test_wrappers_validate_on_every_call(call, bad_call):
    """The launch caches must not skip the checks once a kernel is warm."""
    for _ in range(3):
        call()
    with pytest.raises((TypeError, ValueError)):
        bad_call()


@pytest.mark.gpu
def test_matmul_tensors_on_different_devices_are_rejected():
    with pytest.raises(ValueError, match=r"same device, got a on cuda:0, b on cpu"):
        matmul(h(4, 4, device="cuda"), h(4, 4, device="cpu"))


# --- the optimization-strategy guide's kernels ------------------------------------------


@pytest.mark.parametrize(
    "x, kwargs, error, match",
    [
        pytest.param([1.0], {}, TypeError, "x must be a torch.Tensor, got list", id="not-tensor"),
        pytest.param(t(4, dtype=torch.int32), {}, TypeError, "x has dtype int32; supported", id="int"),
        pytest.param(t(4, dtype=torch.float64), {}, TypeError, "x has dtype float64; supported", id="fp64"),
        pytest.param(t(4), {"block_size": 1000}, ValueError, "block_size must be a power of two", id="bs"),
        pytest.param(
            t(4), {"block_size": 64.0}, TypeError, "block_size must be an int, got float", id="bs-t"
        ),
        pytest.param(t(4), {"num_warps": 3}, ValueError, "num_warps must be a power of two, got 3", id="nw"),
        pytest.param(t(4), {"num_warps": 0}, ValueError, "num_warps must be a power of two, got 0", id="nw0"),
        pytest.param(t(4), {"num_warps": "4"}, TypeError, "num_warps must be an int, got str", id="nw-t"),
    ],
)
def test_gelu_rejects(x, kwargs, error, match):
    from gpuperf.kernels import gelu

    with pytest.raises(error, match=match):
        gelu(x, **kwargs)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        pytest.param((None, t(4), t(4)), {}, TypeError, "x must be a torch.Tensor, got NoneType", id="x"),
        pytest.param((t(4), 1.0, t(4)), {}, TypeError, "y must be a torch.Tensor, got float", id="y"),
        pytest.param((t(4), t(4), [1]), {}, TypeError, "z must be a torch.Tensor, got list", id="z"),
        pytest.param(
            (t(4), t(4), t(4, dtype=torch.int64)), {}, TypeError, "z has dtype int64; supported", id="z-int"
        ),
        pytest.param(
            (t(4), t(4, dtype=torch.float16), t(4)),
            {},
            TypeError,
            "same dtype, got x float32, y float16, z float32",
            id="dtype-mismatch",
        ),
        pytest.param(
            (t(4), t(4), t(5)), {}, ValueError, r"same shape, got x \(4,\), y \(4,\), z \(5,\)", id="shape"
        ),
        pytest.param(
            (t(4, 1), t(4), t(4)), {}, ValueError, r"same shape, got x \(4, 1\)", id="no-broadcasting"
        ),
        pytest.param((t(4),) * 3, {"block_size": 3}, ValueError, "block_size must be a power", id="bs"),
        pytest.param((t(4),) * 3, {"num_warps": 6}, ValueError, "num_warps must be a power", id="nw"),
    ],
)
def test_add_relu_mul_rejects(args, kwargs, error, match):
    from gpuperf.kernels import add_relu_mul

    with pytest.raises(error, match=match):
        add_relu_mul(*args, **kwargs)


@pytest.mark.parametrize(
    "x, stride, error, match",
    [
        pytest.param("x", 2, TypeError, "x must be a torch.Tensor, got str", id="not-tensor"),
        pytest.param(t(8, dtype=torch.int32), 2, TypeError, "x has dtype int32; supported", id="int"),
        pytest.param(t(8), 2.0, TypeError, "stride must be an int, got float", id="stride-type"),
        pytest.param(t(8), True, TypeError, "stride must be an int, got bool", id="stride-bool"),
        pytest.param(t(8), 0, ValueError, "stride must be at least 1, got 0", id="stride-0"),
        pytest.param(t(8), -2, ValueError, "stride must be at least 1, got -2", id="stride-neg"),
        pytest.param(t(2, 4), 2, ValueError, r"1-D contiguous tensor, got shape \(2, 4\)", id="2d"),
        pytest.param(
            t(8)[::2], 2, ValueError, r"1-D contiguous tensor, got shape \(4,\), strides \(2,\)", id="nc"
        ),
    ],
)
def test_strided_copy_rejects(x, stride, error, match):
    from gpuperf.kernels import strided_copy

    with pytest.raises(error, match=match):
        strided_copy(x, stride)


def test_new_elementwise_ops_reject_cpu_tensors_without_interpreter(monkeypatch):
    from gpuperf.kernels import add_relu_mul, gelu, strided_copy
    from gpuperf.kernels.launch import uncached

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    # A process's interpreter is on or off for its whole life; this test turns it off after
    # other tests in the same worker ran these ops in it, and left plans for CPU inputs of
    # these shapes. Without plans, each call checks its inputs, as a new process's first does.
    with uncached():
        with pytest.raises(ValueError, match=r"x must be on a CUDA device, got a tensor on cpu"):
            gelu(torch.randn(4))
        with pytest.raises(ValueError, match=r"x must be on a CUDA device"):
            add_relu_mul(torch.randn(4), torch.randn(4), torch.randn(4))
        with pytest.raises(ValueError, match=r"x must be on a CUDA device"):
            strided_copy(torch.randn(4), 2)


@pytest.mark.gpu
def test_add_relu_mul_tensors_on_different_devices_are_rejected():
    from gpuperf.kernels import add_relu_mul

    with pytest.raises(ValueError, match=r"same device, got x on cuda:0, y on cuda:0, z on cpu"):
        add_relu_mul(t(4, device="cuda"), t(4, device="cuda"), t(4, device="cpu"))
