import importlib

import pytest
import torch

from gpuperf.kernels import MatmulConfig, matmul
from gpuperf.kernels.matmul import ACTIVATIONS, matmul_config
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close
from tests._params import check_planned_calls, randn, record_calls

# gpuperf.kernels.matmul is the function; the module is looked up by name.
matmul_module = importlib.import_module("gpuperf.kernels.matmul")

HALF_DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]

# (M, N, K): one element; a row or a column; sizes off every tile edge; K past
# one tile and not a multiple of BLOCK_K; a whole number of interpreter tiles.
SHAPES = [(1, 1, 1), (1, 40, 33), (37, 1, 20), (17, 33, 65), (64, 64, 64), (70, 45, 100)]


def shape_id(shape):
    return "x".join(map(str, shape))


def operands(m, n, k, dtype, seed=0):
    return randn((m, k), dtype, seed=seed), randn((k, n), dtype, seed=seed + 1)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    m, n, k = shape
    a, b = operands(m, n, k, dtype, seed=m + n + k)
    out = matmul(a, b)
    assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
    assert_close("matmul", matmul_ref(a, b), out, k=k)


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_bias_and_activation_fused(activation, dtype):
    a, b = operands(33, 50, 40, dtype, seed=3)
    bias = randn((50,), dtype, seed=5)
    out = matmul(a, b, bias=bias, activation=activation)
    assert_close(f"matmul {activation}", matmul_ref(a, b, bias, activation), out, k=40)


@pytest.mark.parametrize("bias_layout", ["stride_2", "expanded_scalar"])
def test_a_strided_bias_is_read_at_its_strides_also_after_a_contiguous_one_was_planned(bias_layout):
    a, b = operands(24, 40, 32, torch.float16, seed=11)
    contiguous = randn((40,), torch.float16, seed=12)
    strided = {
        "stride_2": randn((80,), torch.float16, seed=13)[::2],
        "expanded_scalar": randn((1,), torch.float16, seed=14).expand(40),
    }[bias_layout]
    for bias in (contiguous, strided, contiguous, strided):
        out = matmul(a, b, bias=bias, activation="gelu")
        assert_close(f"matmul bias {tuple(bias.stride())}", matmul_ref(a, b, bias, "gelu"), out, k=32)


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
def test_activation_without_bias(activation):
    a, b = operands(20, 24, 48, torch.float16, seed=7)
    assert_close("matmul", matmul_ref(a, b, None, activation), matmul(a, b, activation=activation), k=48)


@pytest.mark.parametrize(
    "layout",
    ["a_transposed", "b_transposed", "both_transposed", "a_strided"],
)
def test_any_strides_without_copies(layout):
    m, n, k = 36, 28, 44
    if layout in ("a_transposed", "both_transposed"):
        a = randn((k, m), torch.float16, seed=1).t()
    elif layout == "a_strided":
        a = randn((m, 2 * k), torch.float16, seed=1)[:, ::2]  # every other column: stride 2 along K
    else:
        a = randn((m, k), torch.float16, seed=1)
    b = randn((n, k), torch.float16, seed=2).t() if "b_" in layout or "both" in layout else None
    if b is None:
        b = randn((k, n), torch.float16, seed=2)
    assert not (a.is_contiguous() and b.is_contiguous())
    assert_close(f"matmul {layout}", matmul_ref(a, b), matmul(a, b), k=k)


def test_k_zero_gives_the_epilogue_of_zeros():
    a = torch.empty(5, 0, dtype=torch.float16, device=randn((1,), torch.float16).device)
    b = torch.empty(0, 7, dtype=torch.float16, device=a.device)
    assert torch.equal(matmul(a, b), torch.zeros(5, 7, dtype=torch.float16, device=a.device))
    bias = randn((7,), torch.float16, seed=9)
    out = matmul(a, b, bias=bias, activation="gelu")
    assert_close("matmul K=0", matmul_ref(a, b, bias, "gelu"), out)
    assert_close("torch.matmul K=0", torch.matmul(a, b).float(), matmul(a, b))


@pytest.mark.parametrize("shape", [(0, 5, 3), (4, 0, 3), (0, 0, 0)], ids=shape_id)
def test_empty_output_returns_without_a_launch(shape):
    m, n, k = shape
    a, b = operands(m, n, k, torch.float16)
    out = matmul(a, b, bias=randn((n,), torch.float16))
    assert out.shape == (m, n) and out.dtype == torch.float16


@pytest.mark.parametrize(
    "config",
    [
        MatmulConfig(16, 16, 16, group_m=1, num_warps=4, num_stages=1),  # row-major order
        MatmulConfig(32, 16, 64, group_m=2, num_warps=4, num_stages=2),
        MatmulConfig(16, 64, 32, group_m=8, num_warps=4, num_stages=1),
    ],
    ids=lambda c: c.label().replace(" ", "-"),
)
def test_config_changes_speed_not_the_answer(config):
    a, b = operands(45, 70, 50, torch.float16, seed=11)
    assert_close(f"matmul {config.label()}", matmul_ref(a, b), matmul(a, b, config=config), k=50)


def test_default_config_is_a_matmul_config():
    a, b = operands(8, 8, 8, torch.float16)
    assert isinstance(matmul_config(a, b), MatmulConfig)


def fields(config: MatmulConfig) -> tuple[int, ...]:
    """The config as ``torch.ops.gpuperf.matmul`` takes it."""
    c = config
    return (c.block_m, c.block_n, c.block_k, c.group_m, c.num_warps, c.num_stages)


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of a layout and options checks and plans; the next ones, on new tensors
    (and a new bias), skip the checks (none run) and compute on their own inputs, bit for bit
    as the op does."""
    checks = record_calls(monkeypatch, matmul_module, "check_tensors")
    matmul.plans.clear()
    config = MatmulConfig(16, 32, 16, group_m=2, num_warps=4, num_stages=1)

    def cases(seed):
        a, b = operands(20, 40, 50, torch.float16, seed=seed)
        bias = randn((40,), torch.float16, seed=seed + 10)
        options = ({}, {"bias": bias, "activation": "gelu"}, {"activation": "relu", "config": config})
        return [((a, b), kwargs) for kwargs in options]

    def registered(a, b, bias=None, activation=None, config=None):
        # (No config: its fields all None, the tuned config, as the op's call takes it.)
        return torch.ops.gpuperf.matmul(a, b, bias, activation, *(fields(config) if config else ()))

    def reference(a, b, bias=None, activation=None, config=None):
        return matmul_ref(a, b, bias, activation)

    check_planned_calls(matmul, registered, reference, cases, k=50)
    assert len(checks) == 3 and len(matmul.plans) == 3  # one per options


def test_each_layout_dtype_bias_and_option_has_its_own_plan():
    matmul.plans.clear()
    a, b = operands(12, 20, 24, torch.float16, seed=3)
    bias = randn((20,), torch.float16, seed=4)
    variants = [
        (a, b, {}),
        (a.t().contiguous().t(), b, {}),  # a column-major
        (a, b.t().contiguous().t(), {}),  # b column-major
        (a[:7], b, {}),  # another M
        (a.bfloat16(), b.bfloat16(), {}),
        (a, b, {"bias": bias}),
        (a, b, {"bias": randn((21,), torch.float16, seed=5)[1:]}),  # a bias 2 bytes off 16
        (a, b, {"activation": "leaky_relu"}),
        (a, b, {"config": MatmulConfig(16, 16, 16, group_m=1, num_warps=4, num_stages=1)}),
    ]
    for i, (a_v, b_v, kwargs) in enumerate(variants):
        for _ in range(2):
            ref = matmul_ref(a_v, b_v, kwargs.get("bias"), kwargs.get("activation"))
            assert_close(f"matmul variant {i}", ref, matmul(a_v, b_v, **kwargs), k=24)
        assert len(matmul.plans) == i + 1


def test_k_zero_launches_the_epilogue_from_its_plan_and_empty_outputs_leave_none():
    """K = 0 launches the epilogue alone, the output standing in for A and B: its plan does
    the same on the new output and reads the new bias. An empty output launches nothing and
    leaves no plan."""
    matmul.plans.clear()
    a, b = operands(5, 7, 0, torch.float16)
    for seed in (1, 2):
        bias = randn((7,), torch.float16, seed=seed)
        out = matmul(a, b, bias=bias, activation="gelu")
        assert_close(f"matmul K=0, seed {seed}", matmul_ref(a, b, bias, "gelu"), out)
        assert torch.equal(matmul(a, b), torch.zeros(5, 7, dtype=torch.float16, device=a.device))
        assert matmul(*operands(0, 7, 3, torch.float16)).shape == (0, 7)
    assert len(matmul.plans) == 2  # K = 0 with a bias and without


def test_bad_arguments_are_refused_after_a_planned_call():
    """A plan skips the checks of inputs like those it was made for, and only those."""
    a, b = operands(8, 6, 4, torch.float16)
    bias = randn((6,), torch.float16, seed=1)
    matmul.plans.clear()
    for _ in range(2):
        matmul(a, b, bias=bias, activation="relu")
        matmul(a, b)
    assert len(matmul.plans) == 2
    with pytest.raises(ValueError, match=r"activation must be one of .*, got 'silu'"):
        matmul(a, b, bias=bias, activation="silu")
    with pytest.raises(TypeError, match=r"config must be a gpuperf\.kernels\.MatmulConfig, got tuple"):
        matmul(a, b, config=fields(matmul_config(a, b)))
    with pytest.raises(TypeError, match=r"bias must be a torch\.Tensor, got list"):
        matmul(a, b, bias=bias.tolist(), activation="relu")
    with pytest.raises(TypeError, match="bias has dtype float32"):
        matmul(a, b, bias=bias.float(), activation="relu")
    with pytest.raises(ValueError, match=r"bias must have shape \(6,\) for N = 6, got \(5,\)"):
        matmul(a, b, bias=bias[:5], activation="relu")
    with pytest.raises(ValueError, match=r"inner dimensions must match.*\(4 != 3\)"):
        matmul(a, b[:3])
    with pytest.raises(TypeError, match="same dtype, got a float16, b bfloat16"):
        matmul(a, b.bfloat16())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize(
    "shape",
    [(1024, 1024, 1024), (4096, 4096, 4096), (16, 14336, 4096), (1000, 1000, 1000), (4099, 257, 3001)],
    ids=shape_id,
)
def test_large_shapes_on_gpu(shape, dtype):
    m, n, k = shape
    a, b = operands(m, n, k, dtype, seed=1)
    bias = randn((n,), dtype, seed=2)
    assert_close("matmul", matmul_ref(a, b), matmul(a, b), k=k)
    assert_close(
        "matmul gelu", matmul_ref(a, b, bias, "gelu"), matmul(a, b, bias=bias, activation="gelu"), k=k
    )


@pytest.mark.gpu
def test_tuned_config_is_used_on_a_tuned_gpu():
    from gpuperf._runtime import gpu_slug
    from gpuperf.kernels import _configs

    slug = gpu_slug(torch.cuda.get_device_name())
    if not (_configs.TUNED_DIR / slug / "matmul.json").exists():
        pytest.skip(f"no committed tuning sweep for {slug}")
    a, b = operands(4096, 4096, 4096, torch.float16)
    assert matmul_config(a, b) == _configs.matmul_config(slug, "float16", 4096, 4096, 4096)
    assert matmul_config(a, b) != _configs.MATMUL_INTERPRETER
