import pytest
import torch

from gpuperf.kernels import row_mean
from gpuperf.kernels.row_mean import ROW_MEAN_MAX_BLOCK_N, row_mean_launch
from gpuperf.reference import row_mean_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, shape_id

SHAPES = [
    (1,),  # one row of one element
    (7,),  # rank 1
    (1, 1),
    (3, 7),  # fewer rows than a program holds
    (5, 1000),  # non-power-of-two row, several chunks under the interpreter
    (2, 3, 129),  # rank 3, row just past a power of two
    (33, 256),
    (17, 65),  # ragged last chunk
]
GPU_SHAPES = [(4096, 4096), (3, ROW_MEAN_MAX_BLOCK_N + 1), (1000, 333), (2, 262_147)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    # An offset: a mean near 0 would let a relative tolerance pass almost anything.
    x = 2 * randn(shape, dtype, seed=sum(shape)) + 1
    out = row_mean(x)
    assert out.shape == x.shape[:-1] and out.dtype == dtype
    assert_close("row_mean", row_mean_ref(x), out)


def test_matches_torch_mean(device):
    x = randn((6, 300), torch.float32, seed=3)
    assert_close("row_mean vs torch.mean", x.mean(dim=-1), row_mean(x))


def test_non_contiguous_inputs():
    x = randn((90, 6), torch.float32, seed=4).t()  # column stride 6
    assert not x.is_contiguous()
    assert_close("row_mean transposed", row_mean_ref(x), row_mean(x))
    y = randn((3, 8, 50), torch.float32, seed=5)[:, ::2]  # rows that skip rows
    assert_close("row_mean sliced", row_mean_ref(y), row_mean(y))


def test_every_row_is_written():
    x = randn((37, 20), torch.float32, seed=6) + 5  # every mean is near 5, none near 0
    out = row_mean(x)
    assert torch.isfinite(out).all() and (out > 3).all()


def test_empty_inputs_follow_torch():
    no_rows = row_mean(randn((0, 8), torch.float32))
    assert no_rows.shape == (0,)
    empty_rows = row_mean(randn((3, 0), torch.float32))
    assert empty_rows.shape == (3,) and empty_rows.isnan().all()
    assert torch.randn(3, 0).mean(dim=-1).isnan().all()  # PyTorch's own answer


@pytest.mark.parametrize(
    "bad, error, match",
    [
        ([1.0, 2.0], TypeError, "x must be a torch.Tensor, got list"),
        (torch.ones(3, 4, dtype=torch.int32), TypeError, "x has dtype int32"),
        (torch.ones(3, 4, dtype=torch.float64), TypeError, "x has dtype float64"),
        (torch.tensor(1.0), ValueError, "x must have at least 1 dimension"),
    ],
    ids=["list", "int32", "float64", "0-d"],
)
def test_bad_inputs_are_refused(bad, error, match, device):
    if isinstance(bad, torch.Tensor):
        bad = bad.to(device)  # on the GPU, a CPU tensor would be refused for its device first
    with pytest.raises(error, match=match):
        row_mean(bad)


def test_cpu_tensor_is_refused_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        row_mean(torch.ones(2, 3))


def test_launch_rules_stay_in_bounds(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    row_mean_launch.cache_clear()
    try:
        for n_rows, n_cols in [(1, 1), (4096, 256), (4096, 32768), (3, 5000)]:
            block_m, block_n, num_warps = row_mean_launch(n_rows, n_cols)
            assert block_n <= ROW_MEAN_MAX_BLOCK_N and block_n >= min(n_cols, ROW_MEAN_MAX_BLOCK_N)
            assert 1 <= block_m <= max(1, 4096 // block_n) and block_m & (block_m - 1) == 0
            assert block_m <= max(1, n_rows) * 2 and num_warps in (1, 2, 4, 8)
    finally:
        row_mean_launch.cache_clear()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=shape_id)
def test_benchmark_shapes_on_gpu(shape, dtype):
    x = randn(shape, dtype, seed=7) + 1
    assert_close("row_mean gpu", row_mean_ref(x), row_mean(x))


# --- the CUDA C++ version (load_inline) --------------------------------------------


def test_cuda_version_refuses_bad_inputs():
    from gpuperf.kernels.row_mean_cuda import row_mean_cuda

    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor, got str"):
        row_mean_cuda("x")
    with pytest.raises(TypeError, match="x has dtype int64"):
        row_mean_cuda(torch.ones(2, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="at least 1 dimension"):
        row_mean_cuda(torch.tensor(2.0))
    with pytest.raises(ValueError, match="x must be on a CUDA device, got a tensor on cpu"):
        row_mean_cuda(torch.ones(2, 2))


def test_cuda_source_is_complete():
    from gpuperf.kernels import row_mean_cuda

    assert "__global__ void row_mean_kernel" in row_mean_cuda.CUDA_SOURCE
    assert "THREADS_PER_BLOCK" not in row_mean_cuda.CUDA_SOURCE  # the block size was filled in
    assert f"kThreads = {row_mean_cuda.THREADS};" in row_mean_cuda.CUDA_SOURCE
    assert "row_mean(torch::Tensor x)" in row_mean_cuda.CPP_SOURCE


def test_cuda_build_says_why_not_without_gpu():
    from gpuperf.kernels.row_mean_cuda import can_build, extension

    why = can_build()
    if why is None:
        pytest.skip("the extension can be built here: the GPU tests cover it")
    with pytest.raises(RuntimeError, match="cannot be built: " + why):
        extension()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 5), *GPU_SHAPES], ids=shape_id)
def test_cuda_version_matches_reference(shape, dtype):
    from gpuperf.kernels.row_mean_cuda import can_build, row_mean_cuda

    if can_build() is not None:
        pytest.skip(can_build())
    x = randn(shape, dtype, seed=8) + 1
    out = row_mean_cuda(x)
    assert out.shape == x.shape[:-1] and out.dtype == dtype
    assert_close("row_mean_cuda", row_mean_ref(x), out)
    transposed = randn((50, 9), dtype, seed=9).t()
    assert_close("row_mean_cuda transposed", row_mean_ref(transposed), row_mean_cuda(transposed))
    assert row_mean_cuda(randn((4, 0), dtype)).isnan().all()
