"""The fast path every op shares (gpuperf.kernels.plans) and the descriptor launches it takes
(gpuperf.kernels.launch): what a key holds, when the body runs, and what a plan replays."""

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from gpuperf.kernels import PersistentConfig
from gpuperf.kernels.launch import DescriptorLauncher
from gpuperf.kernels.plans import call_key, planned, tensor_key
from gpuperf.kernels.tma import (
    box_offset_aligned,
    check_tma_operands,
    tma_copy,
    tma_layout,
    tma_ready,
)
from tests._params import randn


def test_a_key_tells_layouts_dtypes_alignment_shapes_and_options_apart():
    """A plan skips every check: its key must hold all that the checks and Triton read."""
    a, b = randn((64, 32), torch.float16), randn((32, 48), torch.float16)
    key = call_key((a, b), (), {"config": None})
    assert key == call_key(
        (randn((64, 32), torch.float16, seed=3), randn((32, 48), torch.float16)), (), {"config": None}
    )
    others = [
        call_key((a.to(torch.bfloat16), b), (), {"config": None}),  # dtype
        call_key((a, b.t().contiguous().t()), (), {"config": None}),  # layout (strides)
        call_key((randn((64, 40), torch.float16)[:, 8:], b), (), {"config": None}),  # 16-byte alignment
        call_key((randn((65, 32), torch.float16), b), (), {"config": None}),  # shape
        call_key((a, b), (), {"config": PersistentConfig(32, 32, 32)}),  # an option
    ]
    assert all(other != key for other in others)
    assert tensor_key(a)[:3] == (a.shape, a.stride(), a.dtype)


def test_a_key_tells_options_of_equal_value_and_other_types_apart():
    """True == 1 == 1.0 as dictionary keys: an op that refuses ``causal=1`` or ``scale=True``
    must not find the plan ``causal=True`` or ``scale=1.0`` left."""
    x = randn((4, 4), torch.float16)
    keys = [call_key((x,), (), {"causal": value}) for value in (True, 1, 1.0)]
    assert len(set(keys)) == 3
    assert call_key((x,), ((64, 4, True),), {}) != call_key((x,), ((64, 4, 1),), {})  # item by item
    assert call_key((x,), (1,), {}) != call_key((x,), (True,), {})
    assert call_key((x,), (), {"scale": 0.5}) == call_key(
        (randn((4, 4), torch.float16, seed=2),), (), {"scale": 0.5}
    )

    calls = []

    @planned(tensors=1)
    def flagged(x, *, flag=False):
        if type(flag) is not bool:
            raise TypeError(f"flag must be a bool, got {type(flag).__name__}")
        calls.append(flag)
        return x + flag, (lambda t: t + flag)

    flagged(x, flag=True)
    flagged(x, flag=True)
    assert calls == [True]  # the second call took the plan
    with pytest.raises(TypeError, match="flag must be a bool, got int"):
        flagged(x, flag=1)


def test_no_key_for_a_subclass_or_a_call_autograd_records():
    a = randn((4, 4), torch.float32)

    class Tagged(torch.Tensor):
        pass

    assert call_key((a.as_subclass(Tagged),), (), {}) is None  # a subclass: its metadata may differ
    weight = torch.nn.Parameter(a.clone())
    assert call_key((weight,), (), {}) is None  # requires_grad with grad enabled: autograd records
    with torch.no_grad():
        assert call_key((weight,), (), {}) is not None  # a model's weight at inference


def test_planned_runs_the_body_once_per_key_then_its_plan():
    calls = []

    @planned(tensors=1)
    def double(x, *, factor=2):
        """Doc of the op."""
        calls.append(tuple(x.shape))
        scale = sum(factor) if isinstance(factor, list) else factor
        return x * scale, (lambda t: t * scale)

    x = torch.ones(3)
    assert torch.equal(double(x), 2 * x) and torch.equal(
        double(torch.full((3,), 5.0)), torch.full((3,), 10.0)
    )
    assert calls == [(3,)] and len(double.plans) == 1  # the second call took the plan
    double(torch.ones(4))  # another shape: the body again
    double(x, factor=3)  # another option: the body again
    assert calls == [(3,), (4,), (3,)] and len(double.plans) == 3
    double(x, factor=[3])  # an option no dictionary takes: the body, nothing kept
    assert len(calls) == 4 and len(double.plans) == 3
    assert double.__doc__ == "Doc of the op." and double.__name__ == "double"
    with pytest.raises(ValueError, match="tensors must be a positive int"):
        planned(0)


def test_a_body_that_returns_no_plan_keeps_running():
    calls = []

    @planned(tensors=1)
    def copied(x):
        calls.append(1)
        return x.clone(), None

    copied(torch.ones(2))
    copied(torch.ones(2))
    assert len(calls) == 2 and len(copied.plans) == 0


def test_descriptor_launcher_keys_descriptors_by_dtype_and_block():
    """Triton compiles a kernel per descriptor dtype and block shape: so must the cache key."""

    def key_and_args(dtype, block):
        t = torch.zeros(64, 64, dtype=dtype)
        desc = TensorDescriptor(t, [64, 64], [64, 1], block)
        key, args = DescriptorLauncher._key_and_args((desc, t, 64, 7), (32, True), 4, 3, 0)
        return key, args, desc

    key, args, desc = key_and_args(torch.float16, [32, 32])
    assert args[0] is desc and args[2:] == [64, 7]  # the descriptor passes as it is
    assert key == key_and_args(torch.float16, [32, 32])[0]
    assert key != key_and_args(torch.bfloat16, [32, 32])[0]
    assert key != key_and_args(torch.float16, [64, 32])[0]


@pytest.mark.parametrize(
    "shape, strides, offset, expected",
    [
        ((64, 32), (32, 1), 0, "row"),
        ((64, 32), (1, 64), 0, "col"),
        ((64, 30), (30, 1), 0, None),  # rows of 60 bytes: no multiple of 16
        ((64, 32), (32, 1), 4, None),  # a base 8 bytes past an aligned one
        ((64, 32), (64, 2), 0, None),  # no unit stride
    ],
    ids=["row-major", "column-major", "odd-row", "misaligned-base", "no-unit-stride"],
)
def test_tma_layout_and_the_named_error(shape, strides, offset, expected):
    storage = torch.zeros(64 * 64 + 16, dtype=torch.float16)
    t = torch.as_strided(storage, shape, strides, offset)
    assert tma_layout(t) == expected
    if expected is None:
        with pytest.raises(ValueError, match=r"^w \(shape .* cannot be loaded through TMA"):
            check_tma_operands(("w",), (t,))
    else:
        check_tma_operands(("w",), (t,))


@pytest.mark.parametrize(
    "shape, strides, offset, layout, copied",
    [
        ((64, 32), (32, 1), 0, "row", False),
        ((64, 32), (1, 64), 0, "col", False),
        ((64, 32), (32, 1), 1, "row", True),  # contiguous, 2 bytes past an aligned address
        ((64, 32), (1, 64), 1, "col", True),
        ((64, 32), (32, 1), 0, "col", True),  # row-major, wanted column-major
        ((64, 32), (33, 1), 0, "row", True),  # rows of 66 bytes; the copy's are 64
        ((64, 30), (30, 1), 1, "row", False),  # rows of 60 bytes, copied or not: left as it is
        ((2, 3, 5, 64), (960, 320, 64, 1), 1, "row", True),  # (B, H, S, D) at an unaligned address
        ((1, 1, 1, 64), (67, 67, 67, 1), 0, "row", True),  # contiguous, yet a stride of 134 bytes
    ],
    ids=["row", "col", "row-misaligned", "col-misaligned", "row-as-col", "odd-rows", "odd-copy",
         "4d-misaligned", "4d-odd-strides"],
)  # fmt: skip
def test_tma_copy_copies_what_no_descriptor_describes(shape, strides, offset, layout, copied):
    storage = torch.arange(64 * 67 + 16, dtype=torch.float16)
    t = torch.as_strided(storage, shape, strides, offset)
    out = tma_copy(t, layout)
    assert torch.equal(out, t) and (out is not t) == copied
    if copied:  # (.contiguous() returns a contiguous t as it is, its address and strides too)
        assert (tma_layout(out) == layout) if out.dim() == 2 else tma_ready(out)
        assert tma_layout(t) != layout if t.dim() == 2 else not tma_ready(t)


def test_tma_copy_layouts():
    with pytest.raises(ValueError, match=r'must be "row", or "col" for a 2-D tensor; got \'col\' for 3-D'):
        tma_copy(torch.zeros(2, 2, 16), "col")
    with pytest.raises(ValueError, match="got 'diagonal'"):
        tma_copy(torch.zeros(2, 16), "diagonal")


def test_a_box_starts_aligned_only_on_a_16_byte_boundary():
    # SwiGLU's up half starts N columns into [W_gate | W_up].
    assert box_offset_aligned(304, 2) and box_offset_aligned(16, 1)
    assert not box_offset_aligned(300, 2) and not box_offset_aligned(8, 1)
