"""Block-scaled FP8 (DeepSeek-V3): the quantization against the published recipe, and the
matmul with per-step scaling against the float64 reference, in every layout the docstring
accepts, with K a multiple of 128 and not, and bad input."""

import pytest
import torch

from gpuperf.kernels import MatmulConfig, matmul_fp8_blockwise, quantize_fp8_blockwise, to_fp8
from gpuperf.kernels.configs import FP8_BLOCKWISE_CANDIDATES
from gpuperf.kernels.launch import launcher
from gpuperf.kernels.matmul_fp8_blockwise import WEIGHT_BLOCK, matmul_fp8_blockwise_launches
from gpuperf.reference import dequantize_fp8_blockwise_ref, matmul_fp8_blockwise_ref
from gpuperf.testing import assert_close, tolerance
from tests._params import called_ops, cases, randn, recording_backend
from tests.conftest import DEVICE

E4M3 = torch.float8_e4m3fn


# --- quantization --------------------------------------------------------------------------


def deepseek_v3_quant(x: torch.Tensor, block: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """DeepSeek-V3's ``act_quant`` (``block=(1, 128)``) and ``weight_quant`` (``(128, 128)``)
    transcribed to PyTorch from its reference ``inference/kernel.py``: per block
    ``s = amax(|x|) / 448.``, ``y = (x / s).to(float8_e4m3fn)``; whole blocks only, as there."""
    rows, cols = x.shape
    br, bc = block
    blocks = x.float().reshape(rows // br, br, cols // bc, bc)
    s = blocks.abs().amax(dim=(1, 3)) / 448.0
    y = (blocks / s[:, None, :, None]).to(E4M3).reshape(rows, cols)
    return y, s


@pytest.mark.parametrize("block", [(1, 128), (128, 128)], ids=["1x128", "128x128"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_quantization_is_deepseek_v3s_recipe_bit_for_bit(block, dtype):
    x = (randn((256, 384), torch.float32, seed=1) * 3).to(dtype)
    x[7, 200] = 300.0  # an outlier: its block's scale, and only its block's, grows
    x_fp8, scale = quantize_fp8_blockwise(x, block)
    y, s = deepseek_v3_quant(x, block)
    assert x_fp8.dtype == E4M3 and scale.dtype == torch.float32
    assert torch.equal(scale, s)
    assert torch.equal(x_fp8.view(torch.uint8), y.view(torch.uint8))


@pytest.mark.parametrize(
    "shape, block, scale_shape",
    [
        ((5, 300), (1, 128), (5, 3)),  # a partial block along the columns
        ((200, 300), (128, 128), (2, 3)),  # partial blocks both ways
        ((3, 40, 130), (128, 128), (3, 1, 2)),  # leading dimensions: experts' weights
        ((1, 1), (1, 128), (1, 1)),
        ((0, 256), (1, 128), (0, 2)),
    ],
)
def test_quantization_round_trips_within_e4m3_precision(shape, block, scale_shape):
    x = randn(shape, torch.float32, seed=len(shape)) * 20
    x_fp8, scale = quantize_fp8_blockwise(x, block)
    assert x_fp8.shape == x.shape and x_fp8.is_contiguous() and tuple(scale.shape) == scale_shape
    back = dequantize_fp8_blockwise_ref(x_fp8, scale, block)
    # Round to nearest: half a unit in the last place (2**-4 relative), or e4m3's smallest
    # subnormal step (2**-9 of the scale) near zero.
    expanded = scale.double().repeat_interleave(block[0], -2).repeat_interleave(block[1], -1)
    expanded = expanded[..., : shape[-2], : shape[-1]]
    assert torch.all((back - x.double()).abs() <= 2.0**-4 * x.double().abs() + expanded * 2.0**-10)
    if x.numel():  # each block's largest magnitude lands on 448: no range is wasted
        amax = x_fp8.float().abs().amax()
        assert amax == 448.0


def test_a_block_of_zeros_gets_scale_one():
    x = torch.zeros((2, 256), device=DEVICE)
    x[1, 130] = 5.0
    x_fp8, scale = quantize_fp8_blockwise(x)
    assert torch.equal(scale, torch.tensor([[1.0, 1.0], [1.0, 5.0 / 448]], device=DEVICE))
    assert torch.equal(x_fp8.float()[0], torch.zeros(256, device=DEVICE))


def test_blocks_keep_an_outlier_from_crushing_the_rest():
    # One value a million times the others: per-tensor scaling flushes them below e4m3's
    # smallest subnormal, to zero; 1 x 128 blocks keep their precision everywhere but in the
    # outlier's block.
    x = randn((64, 512), torch.float32, seed=3)
    x[0, 0] = 1e6
    blockwise = dequantize_fp8_blockwise_ref(*quantize_fp8_blockwise(x), (1, 128))
    x_fp8, scale = to_fp8(x)
    per_tensor = x_fp8.double() * scale.double()
    away = (slice(1, None), slice(None))  # the rows without the outlier
    error_blockwise = (blockwise - x.double())[away].abs().mean()
    error_per_tensor = (per_tensor - x.double())[away].abs().mean()
    assert error_blockwise * 10 < error_per_tensor


@pytest.mark.parametrize(
    "x, kwargs, error, match",
    [
        pytest.param(
            lambda: torch.ones(3, 4, dtype=torch.int32), {}, TypeError, "supported dtypes", id="int"
        ),
        pytest.param(lambda: torch.ones(4), {}, ValueError, "x must have rank 2 or more", id="1d"),
        pytest.param(
            lambda: torch.ones(2, 4), {"block": [1, 128]}, ValueError, "block must be a tuple", id="list"
        ),
        pytest.param(
            lambda: torch.ones(2, 4), {"block": (0, 128)}, ValueError, "two positive ints", id="zero"
        ),
        pytest.param(
            lambda: torch.ones(2, 4), {"block": (1, 2, 3)}, ValueError, "two positive ints", id="three"
        ),
        pytest.param(lambda: torch.tensor([[1.0, float("nan")]]), {}, ValueError, "inf or NaN", id="nan"),
    ],
)
def test_quantization_rejects(x, kwargs, error, match):
    with pytest.raises(error, match=match):
        quantize_fp8_blockwise(x(), **kwargs)


# --- the matmul ----------------------------------------------------------------------------


def operands(m, n, k, seed=0):
    """``a`` (M, K) with 1 x 128 scales and ``b`` (N, K) with 128 x 128 scales, contiguous."""
    a, scale_a = quantize_fp8_blockwise(randn((m, k), torch.float32, seed))
    b, scale_b = quantize_fp8_blockwise(randn((n, k), torch.float32, seed + 1), WEIGHT_BLOCK)
    return a, b, scale_a, scale_b


def _laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """``t`` with its values, in memory row-major (as given) or column-major (a transposed view)."""
    return t if layout == "row" else t.t().contiguous().t()


#: (M, N, K): K below one block; K a partial block after whole ones; N across two scale
#: blocks of b (and the interpreter's 32-column tiles); one row.
SHAPES = [(33, 40, 100), (37, 48, 200), (20, 130, 256), (1, 16, 128)]


@pytest.mark.parametrize(
    "shape, a_layout, b_layout, scale_layout",
    cases(SHAPES, ["row", "col"], ["row", "col"], ["row", "col"], ids=(lambda s: "x".join(map(str, s)),)),
)
def test_matches_reference(shape, a_layout, b_layout, scale_layout):
    m, n, k = shape
    a, b, scale_a, scale_b = operands(m, n, k, seed=m + k)
    a, b = _laid_out(a, a_layout), _laid_out(b, b_layout)
    scale_a, scale_b = _laid_out(scale_a, scale_layout), _laid_out(scale_b, scale_layout)
    out = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    assert out.shape == (m, n) and out.dtype == torch.bfloat16 and out.is_contiguous()
    assert_close("matmul_fp8_blockwise", matmul_fp8_blockwise_ref(a, b, scale_a, scale_b), out, k=k)


def assert_close_per_step(name, a, b, scale_a, scale_b, out):
    """``out`` against :func:`matmul_fp8_blockwise_ref` for per-row ``scale_a`` (M, K/128) and
    one row of ``scale_b`` (1, K/128), scales far from order one; and the check fails for the
    reference with each step given another step's scales.

    In the interpreter (float32 sums), :func:`assert_close`. On a GPU, Hopper's tensor cores add
    a step's FP8 products in an accumulator of about 14 significant bits before the step is
    scaled in float32 (as ``assert_close_fp8`` says), so an output is off by about ``2**-13``
    of its products' partial sums, not of its value: where a step's products cancel, far more
    than the output's relative tolerance. The absolute tolerance of each output is then
    ``2**-10`` times the root sum of squares of its scaled products, which is
    ``assert_close_fp8``'s ``2**-10 * sqrt(k)`` for products of order one."""
    k = a.shape[1]
    ref = matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)
    if not out.is_cuda:
        assert_close(name, ref, out, k=k)
        return
    steps = [(s * 128, min(k, s * 128 + 128)) for s in range(scale_a.shape[1])]
    sa = torch.cat([scale_a[:, [s]].double().expand(-1, hi - lo) for s, (lo, hi) in enumerate(steps)], 1)
    sb = torch.cat([scale_b[:, [s]].double().expand(-1, hi - lo) for s, (lo, hi) in enumerate(steps)], 1)
    scaled_a, scaled_b = a.double() * sa, b.double() * sb  # (M, K), (N, K)
    atol = 2**-10 * ((scaled_a**2) @ (scaled_b**2).T).sqrt()
    rtol = tolerance(out.dtype)[0]

    def far(reference):
        return (out.double() - reference).abs() > atol + rtol * reference.abs()

    assert not far(ref).any(), (
        f"{name}: {int(far(ref).sum())} outputs off, at {far(ref).nonzero().tolist()[:8]}"
    )
    wrong = matmul_fp8_blockwise_ref(a, b, scale_a.roll(1, 1), scale_b)  # the steps' scales rotated
    assert far(wrong).float().mean() > 0.9, f"{name}: the tolerance does not tell the steps' scales apart"


def test_each_k_step_takes_its_own_scales():
    # Scales six orders of magnitude apart from one K step to the next: applied once at the
    # end, or to the wrong step, they would be off by far more than the tolerance.
    m, n, k = 24, 40, 384
    a, b, _, _ = operands(m, n, k, seed=5)
    g = torch.Generator().manual_seed(6)
    scale_a = (10.0 ** (torch.rand((m, 3), generator=g) * 6 - 3)).to(DEVICE)
    scale_b = (10.0 ** (torch.rand((1, 3), generator=g) * 6 - 3)).to(DEVICE)
    out = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    assert_close_per_step("per-step scales", a, b, scale_a, scale_b, out)


def test_close_to_the_unquantized_product():
    # What the recipe is for: the product of block-quantized operands is within FP8's
    # rounding (a few percent of the typical output) of the bf16 product.
    x, w = randn((16, 256), torch.float32, 7), randn((48, 256), torch.float32, 8)
    (a, scale_a), (b, scale_b) = quantize_fp8_blockwise(x), quantize_fp8_blockwise(w, WEIGHT_BLOCK)
    out = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    exact = x.double() @ w.double().T
    assert (out.double() - exact).abs().mean() < 0.05 * exact.abs().mean()


def test_empty_dimensions():
    a, b, scale_a, scale_b = operands(4, 8, 0)
    assert torch.equal(
        matmul_fp8_blockwise(a, b, scale_a, scale_b), torch.zeros((4, 8), device=DEVICE).bfloat16()
    )
    a, b, scale_a, scale_b = operands(0, 8, 64)
    assert matmul_fp8_blockwise(a, b, scale_a, scale_b).shape == (0, 8)


@pytest.mark.parametrize("config", FP8_BLOCKWISE_CANDIDATES[-2:], ids=lambda c: c.label())
def test_each_config_gives_the_same_answer(config):
    a, b, scale_a, scale_b = operands(70, 130, 200, seed=9)
    out, launches = matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, config)
    for kernel, grid, args, constexprs, num_warps, num_stages in launches:
        launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages)
    assert_close("matmul_fp8_blockwise config", matmul_fp8_blockwise_ref(a, b, scale_a, scale_b), out, k=200)


def test_launches_refuse_a_config_that_is_not_one():
    a, b, scale_a, scale_b = operands(4, 8, 64)
    with pytest.raises(ValueError, match=r"config\.block_k must be the scale block, 128, got 64"):
        matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, MatmulConfig(16, 32, 64))
    with pytest.raises(TypeError, match="config must be a"):
        matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, (16, 32, 128))


def test_registered_op_and_compile_fullgraph():
    a, b, scale_a, scale_b = operands(20, 40, 160, seed=10)
    assert matmul_fp8_blockwise.registered is torch.ops.gpuperf.matmul_fp8_blockwise
    assert torch.equal(
        torch.ops.gpuperf.matmul_fp8_blockwise(a, b, scale_a, scale_b),
        matmul_fp8_blockwise(a, b, scale_a, scale_b),
    )

    def layer(a, b, scale_a, scale_b):
        return torch.relu(matmul_fp8_blockwise(a, b, scale_a * 2, scale_b)).float().sum()

    graphs, backend = recording_backend()
    out = torch.compile(layer, backend=backend, fullgraph=True)(a, b, scale_a, scale_b)
    assert len(graphs) == 1 and "gpuperf.matmul_fp8_blockwise" in called_ops(graphs[0])
    torch.testing.assert_close(out, layer(a, b, scale_a, scale_b))


def _bad(change):
    def make():
        args = dict(zip(("a", "b", "scale_a", "scale_b"), operands(8, 16, 200), strict=True))
        for name, fn in change.items():
            args[name] = fn(args[name])
        return args

    return make


@pytest.mark.parametrize(
    "make, error, match",
    [
        pytest.param(
            _bad({"a": lambda a: a.bfloat16()}), TypeError, "supported dtypes are float8_e4m3fn", id="a-bf16"
        ),
        pytest.param(
            _bad({"b": lambda b: b.to(torch.float8_e5m2)}), TypeError, "same dtype|supported", id="b-e5m2"
        ),
        pytest.param(_bad({"a": lambda a: a[0]}), ValueError, r"a must be 2-D \(M, K\)", id="a-1d"),
        pytest.param(_bad({"b": lambda b: b[None]}), ValueError, r"b must be 2-D \(N, K\)", id="b-3d"),
        pytest.param(_bad({"b": lambda b: b[:, :128]}), ValueError, "the same K", id="k-mismatch"),
        pytest.param(
            _bad({"scale_a": lambda s: s[:, :1]}), ValueError, r"scale_a must have shape \(8, 2\)", id="sa"
        ),
        pytest.param(
            _bad({"scale_b": lambda s: s[0, 0]}), ValueError, r"scale_b must have shape \(1, 2\)", id="sb"
        ),
        pytest.param(
            _bad({"scale_a": lambda s: s.double()}), TypeError, "scale_a must be float32", id="sa-f64"
        ),
        pytest.param(
            _bad({"scale_b": lambda s: s.tolist()}), TypeError, "scale_b must be a torch.Tensor", id="list"
        ),
    ],
)
def test_rejects(make, error, match):
    args = make()
    with pytest.raises(error, match=match):
        matmul_fp8_blockwise(**args)


# --- on the GPU ----------------------------------------------------------------------------


@pytest.mark.gpu
def test_refuses_a_gpu_without_fp8_tensor_cores(ampere_gpu):
    a, b, scale_a, scale_b = operands(8, 16, 128)
    with pytest.raises(RuntimeError, match=r"needs FP8 tensor cores: compute capability 8\.9"):
        matmul_fp8_blockwise(a, b, scale_a, scale_b)


@pytest.mark.gpu
def test_rejects_scales_on_another_device():
    a, b, scale_a, scale_b = operands(8, 16, 128)
    with pytest.raises(ValueError, match="scale_a must be on cuda"):
        matmul_fp8_blockwise(a, b, scale_a.cpu(), scale_b)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 64, 512])
@pytest.mark.parametrize(
    "n, k", [(2048, 7168), (7168, 2048), (4096, 7168)], ids=["2048x7168", "7168x2048", "4096x7168"]
)
def test_deepseek_v3_shapes(m, n, k):
    a, b, scale_a, scale_b = operands(m, n, k, seed=11)
    out = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    # Hopper adds the FP8 products of one step in its ~14-bit accumulator before the
    # promotion: a few units of that per step, on sums of order sqrt(128).
    ref = matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)
    torch.testing.assert_close(out.double(), ref, rtol=2e-2, atol=2**-9 * k**0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compile_inductor_and_cuda_graphs(mode):
    torch._dynamo.reset()
    compiled = torch.compile(matmul_fp8_blockwise, fullgraph=True, mode=mode)
    for seed in (1, 2, 3):
        a, b, scale_a, scale_b = operands(64, 256, 384, seed=seed)
        out = compiled(a, b, scale_a, scale_b)
        assert_close(f"compiled ({mode})", matmul_fp8_blockwise_ref(a, b, scale_a, scale_b), out, k=384)


@pytest.mark.gpu
def test_eager_calls_capture_into_a_cuda_graph():
    a, b, scale_a, scale_b = operands(64, 256, 384, seed=1)
    matmul_fp8_blockwise(a, b, scale_a, scale_b)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    for t, new in zip((a, b, scale_a, scale_b), operands(64, 256, 384, seed=7), strict=True):
        t.copy_(new)
    graph.replay()
    torch.cuda.synchronize()
    assert_close("graph replay", matmul_fp8_blockwise_ref(a, b, scale_a, scale_b), out, k=384)


# --- the TMA and Gluon kernels ---------------------------------------------------------------

#: (M, N, K) the descriptor kernels take (K a multiple of 16): a partial step after whole ones,
#: partial tiles both ways, N across scale blocks of b, one row.
TMA_SHAPES = [(33, 40, 208), (20, 130, 256), (37, 200, 464), (1, 16, 128)]


def tma_config():
    """The Triton TMA kernel's config here: a small tile in the interpreter, else the default."""
    from gpuperf.kernels import PersistentConfig, configs

    if DEVICE == "cpu":
        return PersistentConfig(16, 32, 128, group_m=2, num_warps=4, num_stages=1)
    return configs.FP8_BLOCKWISE_TMA_DEFAULT


def run(a, b, scale_a, scale_b, config):
    out, launches = matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, config)
    for kernel, grid, args, constexprs, num_warps, num_stages in launches:
        launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages)
    return out


@pytest.mark.parametrize("shape", TMA_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("scale_layout", ["row", "col"])
def test_tma_kernel_matches_reference(shape, scale_layout):
    m, n, k = shape
    a, b, scale_a, scale_b = operands(m, n, k, seed=m + n)
    scale_a, scale_b = _laid_out(scale_a, scale_layout), _laid_out(scale_b, scale_layout)
    out = run(a, b, scale_a, scale_b, tma_config())
    assert_close("TMA kernel", matmul_fp8_blockwise_ref(a, b, scale_a, scale_b), out, k=k)


def test_tma_kernel_takes_each_steps_scales():
    m, n, k = 24, 40, 384
    a, b, _, _ = operands(m, n, k, seed=5)
    g = torch.Generator().manual_seed(6)
    scale_a = (10.0 ** (torch.rand((m, 3), generator=g) * 6 - 3)).to(DEVICE)
    scale_b = (10.0 ** (torch.rand((1, 3), generator=g) * 6 - 3)).to(DEVICE)
    out = run(a, b, scale_a, scale_b, tma_config())
    assert_close_per_step("per-step scales", a, b, scale_a, scale_b, out)


def test_descriptor_configs_refuse_operands_no_descriptor_describes():
    a, b, scale_a, scale_b = operands(8, 16, 200)  # rows of 200 bytes: not a multiple of 16
    with pytest.raises(ValueError, match="needs operands a tensor descriptor can describe"):
        matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, tma_config())


def test_gluon_configs_are_checked():
    from gpuperf.kernels.gluon import GluonFP8Config
    from gpuperf.kernels.gluon.matmul_fp8_blockwise import check_config

    check_config(GluonFP8Config(128, 128, 128, num_stages=5))
    for config, match in [
        (GluonFP8Config(128, 128, 64), r"config\.block_k must be the scale block, 128, got 64"),
        (GluonFP8Config(128, 256, 128, num_stages=3), "64 or 128 columns"),
        (GluonFP8Config(192, 128, 128, num_warps=12), "64 or 128 rows"),
        (GluonFP8Config(128, 128, 128, persistent=False), "persistent"),
    ]:
        with pytest.raises(ValueError, match=match):
            check_config(config)


def test_gluon_config_needs_hopper_without_the_interpreter():
    if DEVICE != "cpu":
        pytest.skip("the interpreter's refusal: on a GPU the Gluon kernel runs (tests below)")
    from gpuperf.kernels.gluon import GluonFP8Config

    a, b, scale_a, scale_b = operands(8, 16, 128)
    with pytest.raises(RuntimeError, match="interpreter"):
        matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, GluonFP8Config(64, 64, 128, num_warps=4))


def test_the_gluon_tile_gives_every_sm_work_where_it_can():
    from gpuperf.kernels.configs import FP8_BLOCKWISE_GLUON_BY_SIZE, fp8_blockwise_gluon_config

    largest, middle, smallest = FP8_BLOCKWISE_GLUON_BY_SIZE
    assert fp8_blockwise_gluon_config(4096, 2112, 132) == largest  # 32 x 17 tiles of 128 x 128
    assert fp8_blockwise_gluon_config(512, 2112, 132) == middle  # 4 x 33 of 128 x 64
    assert fp8_blockwise_gluon_config(256, 4096, 132) == smallest  # 4 x 64 of 64 x 64
    assert fp8_blockwise_gluon_config(128, 2112, 132) == smallest  # too few of any: the smallest


@pytest.mark.gpu
def test_the_default_on_hopper_is_the_gluon_kernel():
    from gpuperf.kernels.device import capability
    from gpuperf.kernels.gluon import GluonFP8Config
    from gpuperf.kernels.matmul_fp8_blockwise import fp8_blockwise_config

    if capability(torch.cuda.current_device())[0] != 9:
        pytest.skip("the Gluon kernel is written for Hopper (compute capability 9.x)")
    a, b, _, _ = operands(256, 512, 256)
    assert isinstance(fp8_blockwise_config(a, b), GluonFP8Config)
    assert isinstance(fp8_blockwise_config(a, b.t().contiguous().t()), MatmulConfig)  # N-major b


def _descriptor_configs():
    from gpuperf.kernels.configs import FP8_BLOCKWISE_GLUON_CANDIDATES, FP8_BLOCKWISE_TMA_CANDIDATES

    return [*FP8_BLOCKWISE_TMA_CANDIDATES, *FP8_BLOCKWISE_GLUON_CANDIDATES]


def _config_id(config) -> str:
    kind = "gluon" if type(config).__name__ == "GluonFP8Config" else "tma"
    extra = f" {config.schedule}" if kind == "gluon" else ""
    return f"{kind} {config.block_m}x{config.block_n} w{config.num_warps} s{config.num_stages}{extra}"


@pytest.mark.gpu
@pytest.mark.parametrize("config", _descriptor_configs(), ids=_config_id)
@pytest.mark.parametrize(
    "shape", [*TMA_SHAPES, (128, 2112, 7168), (300, 7168, 2048)], ids=lambda s: "x".join(map(str, s))
)
def test_each_descriptor_config_matches_the_float64_product(config, shape):
    from gpuperf.kernels.device import capability

    if type(config).__name__ == "GluonFP8Config" and capability(torch.cuda.current_device())[0] != 9:
        pytest.skip("the Gluon kernel is written for Hopper (compute capability 9.x)")
    m, n, k = shape
    a, b, scale_a, scale_b = operands(m, n, k, seed=12)
    ref = matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)
    torch.testing.assert_close(
        run(a, b, scale_a, scale_b, config).double(), ref, rtol=2e-2, atol=2**-9 * k**0.5
    )
