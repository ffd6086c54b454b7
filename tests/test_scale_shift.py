import pytest
import torch

from gpuperf.bench import catalog
from gpuperf.kernels import scale_shift
from gpuperf.reference import scale_shift_eager, scale_shift_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, shape_id
from tests.conftest import DEVICE

# One element; a partial tile in each direction; exactly one tile (8 x 256); one more
# row and one more column than a tile; several column tiles; non-powers of two; 1-D
# (one row) and 3-D (rows flattened) inputs.
SHAPES = [(1,), (1, 1), (3, 5), (8, 256), (9, 257), (4, 1000), (33, 70), (300,), (2, 3, 129)]


def inputs(shape, dtype, seed=0):
    n = shape[-1]
    return randn(shape, dtype, seed), randn((n,), dtype, seed + 1), randn((n,), dtype, seed + 2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x, scale, shift = inputs(shape, dtype, seed=1)
    out = scale_shift(x, scale, shift)
    assert out.shape == x.shape and out.dtype == dtype and out.device == x.device
    assert_close("scale_shift", scale_shift_ref(x, scale, shift), out)


def test_each_column_gets_its_own_scale_and_shift():
    x = torch.ones(3, 4, device=DEVICE)
    scale = torch.tensor([1.0, 2.0, 3.0, 4.0], device=DEVICE)
    shift = torch.tensor([0.5, -1.0, 0.0, 10.0], device=DEVICE)
    expected = torch.tensor([1.5, 1.0, 3.0, 14.0], device=DEVICE).expand(3, 4)
    assert torch.equal(scale_shift(x, scale, shift), expected)


def test_eager_formula_matches_reference_in_float32():
    x, scale, shift = inputs((40, 300), torch.float32, seed=2)
    assert_close("scale_shift_eager", scale_shift_ref(x, scale, shift), scale_shift_eager(x, scale, shift))


def test_nan_and_infinity_propagate_like_the_formula():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[nan, 1.0, inf, 2.0]], device=DEVICE)
    scale = torch.tensor([1.0, nan, 0.5, 3.0], device=DEVICE)
    shift = torch.tensor([0.0, 1.0, -1.0, inf], device=DEVICE)
    out = scale_shift(x, scale, shift)
    torch.testing.assert_close(out, scale_shift_eager(x, scale, shift), equal_nan=True)
    assert torch.isnan(out[0, :2]).all() and out[0, 2] == inf and out[0, 3] == inf


@pytest.mark.parametrize("block_m, block_n, num_warps", [(1, 16, 1), (2, 64, 2), (16, 512, 8)])
def test_launch_configuration_does_not_change_the_answer(block_m, block_n, num_warps):
    # Two blocks and a part each way: a grid of several programs whose last row and column
    # of blocks are masked (the interpreter's time goes by the number of programs).
    shape = (2 * block_m + 1, 2 * block_n + 7)
    x, scale, shift = inputs(shape, torch.float32, seed=3)
    out = scale_shift(x, scale, shift, block_m=block_m, block_n=block_n, num_warps=num_warps)
    assert_close("scale_shift", scale_shift_ref(x, scale, shift), out)


def test_non_contiguous_inputs():
    x = randn((64, 48), torch.float32, 4).t()  # (48, 64), strides (1, 48)
    scale = randn((128,), torch.float32, 5)[::2]
    shift = randn((64,), torch.float32, 6)
    out = scale_shift(x, scale, shift)
    assert out.is_contiguous() and out.shape == x.shape
    assert_close("scale_shift non-contiguous", scale_shift_ref(x, scale, shift), out)


@pytest.mark.parametrize("shape", [(0,), (0, 5), (4, 0)], ids=shape_id)
def test_empty_returns_empty(shape):
    x, scale, shift = inputs(shape, torch.float32)
    assert scale_shift(x, scale, shift).shape == shape


def test_registered_op_matches():
    x, scale, shift = inputs((5, 70), torch.float16, seed=7)
    out = torch.ops.gpuperf.scale_shift(x, scale, shift, 4, 32, 2)
    assert_close("torch.ops.gpuperf.scale_shift", scale_shift_ref(x, scale, shift), out)


def test_bad_inputs_are_refused_with_what_was_expected():
    x, scale, shift = inputs((4, 6), torch.float32)
    with pytest.raises(TypeError, match=r"scale must be a torch\.Tensor, got list"):
        scale_shift(x, [1.0] * 6, shift)
    with pytest.raises(TypeError, match="same dtype"):
        scale_shift(x, scale.half(), shift)
    with pytest.raises(TypeError, match="int64"):
        scale_shift(x.long(), scale.long(), shift.long())
    with pytest.raises(
        ValueError, match=r"shift must have shape \(N,\) with N = x.shape\[-1\] = 6, got \(5,\)"
    ):
        scale_shift(x, scale, shift[:5])
    with pytest.raises(ValueError, match=r"scale must have shape .* got \(1, 6\)"):
        scale_shift(x, scale[None], shift)
    with pytest.raises(ValueError, match="at least 1 dimension"):
        scale_shift(x[0, 0], scale[:1], shift[:1])
    with pytest.raises(ValueError, match="block_n must be a power of two, got 100"):
        scale_shift(x, scale, shift, block_n=100)
    with pytest.raises(TypeError, match="num_warps must be an int, got float"):
        scale_shift(x, scale, shift, num_warps=4.0)
    with pytest.raises(ValueError, match="more than 65535 column tiles; use block_n >= 2"):
        n = 65536 + 1
        scale_shift(
            torch.zeros(1, n, device=DEVICE),
            torch.ones(n, device=DEVICE),
            torch.ones(n, device=DEVICE),
            block_n=1,
        )


def test_benchmark_declaration_counts_the_work():
    bench = catalog.SCALE_SHIFT
    cols = catalog.SCALE_SHIFT_COLS
    assert bench.bytes(512) == (2 * 512 * cols + 2 * cols) * 4
    assert bench.flops(512) == 2 * 512 * cols
    assert bench.ceiling == "stream_gbps" and bench.subject.key == "triton"
    assert catalog.by_name("scale_shift") is bench and bench in catalog.ALL


def test_benchmark_inputs_and_providers_agree_on_the_cpu():
    bench = catalog.SCALE_SHIFT
    x, scale, shift = bench.make_inputs(3, DEVICE)
    assert x.shape == (3, catalog.SCALE_SHIFT_COLS) and scale.shape == shift.shape == (
        catalog.SCALE_SHIFT_COLS,
    )
    expected = bench.reference(x, scale, shift)
    for provider in bench.providers:
        if provider.key == "compile" and DEVICE == "cpu":
            continue  # Inductor would build C++ for the CPU: measured on a GPU only
        assert_close(provider.key, expected, provider.make(x, scale, shift)())


@pytest.mark.gpu
def test_large_tensor_crosses_many_programs():
    x, scale, shift = inputs((4099, 4096 + 3), torch.bfloat16, seed=8)
    assert_close("scale_shift large", scale_shift_ref(x, scale, shift), scale_shift(x, scale, shift))


@pytest.mark.gpu
def test_compiled_model_keeps_one_graph_with_the_kernel():
    torch._dynamo.reset()
    fn = torch.compile(lambda x, a, b: torch.relu(scale_shift(x * 2.0, a, b)), fullgraph=True)
    x, scale, shift = inputs((64, 300), torch.float16, seed=9)
    expected = torch.relu(scale_shift_ref(x * 2.0, scale, shift))
    assert_close("compiled scale_shift", expected, fn(x, scale, shift))
