"""gpuperf._interpreter: bfloat16 in Triton's CPU interpreter computed as numbers, as a GPU does.

The tiny kernels here compare the interpreter with PyTorch's CPU bfloat16, which computes
each operation in float32 and rounds to nearest even: for one ``+``, ``-``, ``*``, a
minimum, a comparison or a cast the two must agree bit for bit.
"""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter

import gpuperf.kernels  # noqa: F401  (installs the fix under the interpreter, as for every user)
from gpuperf import _interpreter
from gpuperf._interpreter import fix_bfloat16, to_bfloat16_bits, to_float32
from gpuperf._runtime import is_interpreter
from gpuperf.testing import assert_close
from tests._params import randn

needs_interpreter = pytest.mark.skipif(
    not is_interpreter(),
    reason="checks Triton's CPU interpreter, which is off here (TRITON_INTERPRET=1 turns it on)",
)

BF16 = torch.bfloat16
Builder = interpreter.InterpreterBuilder


def bits(t: torch.Tensor) -> torch.Tensor:
    """A bfloat16 tensor's bit patterns, so that NaNs and signed zeros compare too."""
    return t.view(torch.int16)


# --- the conversions, in numpy (no kernel) -------------------------------------------------

# Ties between two bfloat16 neighbours (the lower one even, then odd), the largest float32
# (rounds up to infinity), infinities, NaN, signed zeros, the smallest subnormals.
SPECIAL_FLOAT32_BITS = [0x3F808000, 0x3F818000, 0xBF808000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
                        0x7FC00000, 0x7FFFFFFF, 0x00000000, 0x80000000, 0x00000001, 0x00008000,
                        0x00018000, 0x3F80FFFF, 0x7F7F8000]  # fmt: skip


def test_rounding_to_bfloat16_matches_pytorch_bit_for_bit():
    g = np.random.default_rng(0)
    raw = np.concatenate([g.integers(0, 2**32, 100_000, dtype=np.uint64), SPECIAL_FLOAT32_BITS])
    values = raw.astype(np.uint32).view(np.float32)
    expected = torch.from_numpy(values.copy()).to(BF16)
    got = torch.from_numpy(to_bfloat16_bits(values).view(np.int16))
    nan = torch.isnan(expected)
    assert torch.equal(got[~nan], bits(expected)[~nan])
    assert torch.isnan(got.view(BF16)[nan]).all()


def test_widening_to_float32_is_exact():
    every_bf16 = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    expected = torch.from_numpy(every_bf16.view(np.int16)).view(BF16).float()
    got = torch.from_numpy(to_float32(every_bf16))
    assert torch.equal(got.view(torch.int32), expected.view(torch.int32))  # NaNs and zeros too


# --- installing the fix ---------------------------------------------------------------------


def originals(monkeypatch):
    """Put the interpreter's own methods back for the test (undone after it)."""
    for owner, name, _ in _interpreter._targets(interpreter):
        method = getattr(owner, name)
        while getattr(method, _interpreter._MARK, False):
            method = method.__wrapped__
        monkeypatch.setattr(owner, name, method)
    if getattr(getattr(Builder, "get_bf16", None), _interpreter._MARK, False):
        monkeypatch.delattr(Builder, "get_bf16")


@needs_interpreter
def test_importing_the_kernels_installs_the_fix():
    for owner, name, _ in _interpreter._targets(interpreter):
        assert getattr(getattr(owner, name), _interpreter._MARK, False), (
            f"{owner.__name__}.{name} not wrapped"
        )
    assert hasattr(Builder, "get_bf16")


def test_fixing_twice_wraps_each_method_once(monkeypatch):
    originals(monkeypatch)
    targets = _interpreter._targets(interpreter)
    unwrapped = {(owner, name): getattr(owner, name) for owner, name, _ in targets}
    assert fix_bfloat16() is True
    first = {(owner, name): getattr(owner, name) for owner, name, _ in targets}
    get_bf16 = Builder.get_bf16
    assert fix_bfloat16() is True
    for owner, name, _ in targets:
        method = getattr(owner, name)
        assert method is first[owner, name], f"{name} wrapped again"
        assert getattr(method, _interpreter._MARK, False), f"{name} not wrapped"
        assert method.__wrapped__ is unwrapped[owner, name], f"{name} wrapped more than once"
    assert Builder.get_bf16 is get_bf16


def test_an_interpreter_with_a_real_bfloat16_is_left_alone(monkeypatch):
    """Where the interpreter stores bfloat16 as numbers (not uint16 bit patterns), widening
    its bits would be wrong: nothing is wrapped."""
    originals(monkeypatch)
    before = {name: getattr(owner, name) for owner, name, _ in _interpreter._targets(interpreter)}
    stored_as = interpreter._get_np_dtype
    monkeypatch.setattr(
        interpreter, "_get_np_dtype", lambda ty: np.dtype(np.float32) if ty == tl.bfloat16 else stored_as(ty)
    )
    assert fix_bfloat16() is False
    assert all(getattr(owner, name) is before[name] for owner, name, _ in _interpreter._targets(interpreter))
    assert not hasattr(Builder, "get_bf16")


def test_an_interpreter_without_one_of_the_methods_is_left_alone(monkeypatch):
    originals(monkeypatch)
    create_dot = Builder.create_dot
    monkeypatch.delattr(Builder, "create_fadd")
    assert fix_bfloat16() is False
    assert Builder.create_dot is create_dot


# --- kernels under the interpreter -----------------------------------------------------------


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def dot(a, b):
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), dtype=torch.float32)
    _dot_kernel[(1,)](a, b, c, M=m, N=n, K=k)
    return c


@needs_interpreter
def test_dot_of_bfloat16_blocks_is_the_float32_product():
    a, b = randn((16, 32), BF16, seed=1), randn((32, 16), BF16, seed=2)
    assert_close("tl.dot bf16", a.float() @ b.float(), dot(a, b), k=32)
    # Small integers: every product and sum is exact in float32, so the two are equal.
    a, b = (torch.randint(-8, 9, shape, generator=torch.Generator().manual_seed(3)).to(BF16)
            for shape in ((16, 32), (32, 16)))  # fmt: skip
    assert torch.equal(dot(a, b), a.float() @ b.float())


@needs_interpreter
def test_dot_of_float16_blocks_is_unchanged():
    a, b = randn((16, 32), torch.float16, seed=4), randn((32, 16), torch.float16, seed=5)
    assert_close("tl.dot fp16", a.float() @ b.float(), dot(a, b), k=32)


@triton.jit
def _binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if OP == "add":
        out = x + y
    elif OP == "sub":
        out = x - y
    elif OP == "mul":
        out = x * y
    elif OP == "div":
        out = x / y
    elif OP == "neg":
        out = -x
    elif OP == "minimum":
        out = tl.minimum(x, y)
    elif OP == "maximum":
        out = tl.maximum(x, y)
    elif OP == "clamp":
        out = tl.clamp(x, -y.abs(), y.abs())
    elif OP == "fma":
        out = tl.fma(x, y, x)
    elif OP == "less":
        out = x < y
    elif OP == "select":
        out = tl.where(x > y, x, y * 2.0)
    tl.store(out_ptr + offsets, out, mask=mask)


BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: (x.float() / y.float()).to(BF16),  # Triton divides in float32
    "neg": lambda x, y: -x,
    "minimum": torch.minimum,
    "maximum": torch.maximum,
    "clamp": lambda x, y: torch.clamp(x, -y.abs(), y.abs()),
    "fma": lambda x, y: (x.float() * y.float() + x.float()).to(BF16),
    "less": lambda x, y: x < y,
    "select": lambda x, y: torch.where(x > y, x, y * 2.0),
}


@needs_interpreter
@pytest.mark.parametrize("op", list(BINARY))
def test_elementwise_bfloat16_matches_pytorch_bit_for_bit(op):
    n = 300
    x, y = randn((n,), BF16, seed=6) * 5, randn((n,), BF16, seed=7) * 5
    expected = BINARY[op](x, y)
    out = torch.empty(n, dtype=expected.dtype)
    _binary_kernel[(1,)](x, y, out, n, OP=op, BLOCK=512)
    if op == "fma":  # float32 product and sum, rounded once or twice: within a unit
        assert_close("tl.fma", expected.float(), out)
    elif out.dtype == torch.bool:
        assert torch.equal(out, expected), op
    else:
        assert torch.equal(bits(out), bits(expected)), op


@triton.jit
def _cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x.to(out_ptr.dtype.element_ty), mask=mask)


def cast(x, dtype):
    out = torch.empty(x.shape, dtype=dtype)
    _cast_kernel[(1,)](x, out, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return out


def float32_specials():
    raw = torch.tensor(SPECIAL_FLOAT32_BITS, dtype=torch.int64).to(torch.int32)  # wraps to int32 bits
    return torch.cat([raw.view(torch.float32), randn((200,), torch.float32, seed=8) * 100])


@needs_interpreter
@pytest.mark.parametrize(
    "source, dtype",
    [
        (torch.float32, BF16),
        (torch.float64, BF16),
        (torch.float16, BF16),
        (torch.int32, BF16),
        (BF16, torch.float32),
        (BF16, torch.float64),
        (BF16, torch.float16),
        (BF16, torch.int32),
    ],
    ids=str,
)
def test_casts_to_and_from_bfloat16_match_pytorch(source, dtype):
    values = float32_specials()
    if source == torch.int32 or dtype == torch.int32:
        values = values[values.isfinite() & (values.abs() < 2**30)]
    if source == torch.float16 or dtype == torch.float16:
        values = values[values.abs() < 6e4]
    x = values.to(source)
    expected = x.to(dtype)
    out = cast(x, dtype)
    nan = expected.isnan() if expected.is_floating_point() else torch.zeros_like(expected, dtype=torch.bool)
    assert torch.equal(out.isnan() if out.is_floating_point() else nan, nan)
    assert torch.equal(out[~nan], expected[~nan]), f"{source} -> {dtype}"
    if dtype == BF16:  # signed zeros too
        assert torch.equal(bits(out[~nan]), bits(expected[~nan]))


@triton.jit
def _reduce_kernel(x_ptr, out_ptr, OP: tl.constexpr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    if OP == "max":
        tl.store(out_ptr, tl.max(x, axis=0))
    elif OP == "min":
        tl.store(out_ptr, tl.min(x, axis=0))
    elif OP == "argmax":
        tl.store(out_ptr, tl.argmax(x, axis=0))
    elif OP == "argmin":
        tl.store(out_ptr, tl.argmin(x, axis=0))
    elif OP == "sum":
        tl.store(out_ptr, tl.sum(x, axis=0))
    elif OP == "cumsum":
        tl.store(out_ptr + offsets, tl.cumsum(x, axis=0))


REDUCTIONS = {
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "argmax": lambda x: x.argmax().to(torch.int32),
    "argmin": lambda x: x.argmin().to(torch.int32),
    "sum": lambda x: x.float().sum().to(BF16),
    "cumsum": lambda x: x.float().cumsum(0).to(BF16),
}


@needs_interpreter
@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reductions_of_bfloat16_match_pytorch(op):
    # Integers of either sign: every sum is exact, so float32 and bfloat16 orders agree.
    x = torch.randint(-20, 21, (64,), generator=torch.Generator().manual_seed(9)).to(BF16)
    expected = REDUCTIONS[op](x)
    out = torch.empty(x.shape if op == "cumsum" else (1,), dtype=expected.dtype)
    _reduce_kernel[(1,)](x, out, OP=op, N=64)
    assert torch.equal(out.reshape(expected.shape), expected), op
