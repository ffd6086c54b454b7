import importlib

import pytest
import torch

from gpuperf.kernels import vector_add
from gpuperf.kernels._configs import VECTOR_ADD_BLOCK_SIZE, VECTOR_ADD_NUM_WARPS
from gpuperf.reference import vector_add_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, randn, record_calls, shape_id

# 1 element; one partial block; exactly one and two blocks; non-powers of two;
# several dimensions (flattened by the wrapper).
SHAPES = [(1,), (3,), (1000,), (4096,), (8192,), (4097,), (98_432 + 17,), (3, 5, 7), (257, 129)]

# gpuperf.kernels.vector_add is the function; the module is looked up by name.
vector_add_module = importlib.import_module("gpuperf.kernels.vector_add")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x, y = randn(shape, dtype, seed=1), randn(shape, dtype, seed=2)
    out = vector_add(x, y)
    assert out.shape == x.shape and out.dtype == dtype and out.device == x.device
    assert_close("vector_add", vector_add_ref(x, y), out)


@pytest.mark.parametrize("block_size", [1, 16, 1024], ids=lambda b: f"block{b}")
def test_block_size_does_not_change_the_answer(block_size):
    # Three blocks and a part: several programs and a masked last block (at one program per
    # element, the interpreter's time goes by the number of programs, not their size).
    n = 3 * block_size + 7
    x, y = randn((n,), torch.float32, 3), randn((n,), torch.float32, 4)
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


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of a layout and options checks and plans; the next ones, on new tensors,
    skip the checks (none run) and compute on their own inputs, bit for bit as the op does."""
    checks = record_calls(monkeypatch, vector_add_module, "check_tensors")
    vector_add.plans.clear()
    outputs = []
    for seed in (1, 2, 1):
        x, y = randn((3, 700), torch.float32, seed=seed), randn((3, 700), torch.float32, seed=seed + 10)
        for kwargs in ({}, {"block_size": 128, "num_warps": 2}):
            out = vector_add(x, y, **kwargs)
            options = {"block_size": VECTOR_ADD_BLOCK_SIZE, "num_warps": VECTOR_ADD_NUM_WARPS, **kwargs}
            assert torch.equal(out, torch.ops.gpuperf.vector_add(x, y, *options.values()))
            assert_close(f"planned vector_add {kwargs}, seed {seed}", vector_add_ref(x, y), out)
            outputs.append(out)
    assert len(checks) == 2 and len(vector_add.plans) == 2  # one per options
    assert torch.equal(outputs[4], outputs[0]) and not torch.equal(outputs[2], outputs[0])


def test_each_shape_and_dtype_has_its_own_plan():
    vector_add.plans.clear()
    x = randn((5, 40), torch.float32, seed=3)
    variants = [x, x.half(), x[:4], x.view(40, 5)]
    for i, v in enumerate(variants):
        for _ in range(2):
            assert_close(f"vector_add variant {i}", vector_add_ref(v, v), vector_add(v, v))
        assert len(vector_add.plans) == i + 1


def test_non_contiguous_inputs_are_not_planned():
    """Non-contiguous inputs are copied: a plan would read the copies' addresses, so there is
    none, and each call reads the new inputs."""
    vector_add.plans.clear()
    for seed in (1, 2):
        x, y = randn((64, 48), torch.float32, seed).t(), randn((48, 64), torch.float32, seed + 1)
        out = vector_add(x, y)
        assert_close(f"vector_add of a copy, seed {seed}", vector_add_ref(x, y), out)
    assert len(vector_add.plans) == 0


def test_a_plan_lets_no_bad_option_through():
    """block_size=True equals 1 as a dictionary key; a plan made for block_size=1 must not let
    it past the check."""
    x = randn((20,), torch.float32, seed=4)
    for _ in range(2):
        vector_add(x, x, block_size=1, num_warps=1)
    with pytest.raises(TypeError, match="block_size must be an int, got bool"):
        vector_add(x, x, block_size=True, num_warps=1)
    with pytest.raises(ValueError, match="num_warps must be a power of two, got True"):
        vector_add(x, x, block_size=1, num_warps=True)


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
