"""What a plan's key holds (gpuperf.kernels.launch: layout_key, option_key) and the descriptor
launches a plan takes (DescriptorLauncher, keyword_launch)."""

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from gpuperf.kernels import PersistentConfig
from gpuperf.kernels.launch import DescriptorLauncher, Launcher, keyword_launch, layout_key, option_key
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
    key, addresses = layout_key((a, b), 2, {"config": None})
    assert addresses == [a.data_ptr(), b.data_ptr()]
    assert (
        key
        == layout_key(
            (randn((64, 32), torch.float16, seed=3), randn((32, 48), torch.float16)), 2, {"config": None}
        )[0]
    )
    others = [
        layout_key((a.to(torch.bfloat16), b), 2, {"config": None}),  # dtype
        layout_key((a, b.t().contiguous().t()), 2, {"config": None}),  # layout (strides)
        layout_key((randn((64, 40), torch.float16)[:, 8:], b), 2, {"config": None}),  # 16-byte alignment
        layout_key((randn((65, 32), torch.float16), b), 2, {"config": None}),  # shape
        layout_key((a, b), 2, {"config": PersistentConfig(32, 32, 32)}),  # an option
        layout_key((a, a), 2, {"config": None}),  # which inputs share an address
    ]
    assert all(other[0] != key for other in others)


def test_a_key_tells_options_of_equal_value_and_other_types_apart():
    """True == 1 == 1.0 as dictionary keys: an op that refuses ``causal=1`` or ``scale=True``
    must not find the plan ``causal=True`` or ``scale=1.0`` left."""
    assert len({option_key(value) for value in (True, 1, 1.0)}) == 3
    assert option_key((64, 4, True)) != option_key((64, 4, 1))  # item by item
    assert option_key(torch.bfloat16) == (torch.dtype, torch.bfloat16)
    x = randn((4, 4), torch.float16)
    assert layout_key((x, 1), 1, {})[0] != layout_key((x, True), 1, {})[0]
    with pytest.raises(TypeError):  # an option no dictionary takes: no key, the function runs
        hash(layout_key((x,), 1, {"factor": [3]})[0])


def test_a_gluon_kernel_launches_with_its_keywords_in_its_order():
    """A Gluon kernel is launched as ``kernel[grid](*args, **constants)``: the launch takes its
    constexprs in the kernel's order, and ``num_warps`` where the kernel declares it last."""
    from gpuperf.kernels.gluon import attention, matmul_fp8

    fp8 = matmul_fp8._fp8_promoted_kernel
    constants = dict(
        num_warps=8, TMA_STORE=True, BLOCK_M=128, PINGPONG=True, GROUP_M=8, NUM_STAGES=4,
        COL_SCALE_B=False, ROW_SCALE_A=True,
    )  # fmt: skip
    launch = keyword_launch(fp8, (132,), tuple(range(8)), constants)
    assert launch.constexprs == (True, False, 4, 8, True, 128, True)
    assert (launch.num_warps, launch.num_stages) == (8, 3)
    launcher = Launcher(fp8)
    assert launcher._constants(launch.constexprs, 8) == (*launch.constexprs, 8)  # the C launcher's last
    fa3 = attention._fa3_kernel
    constants = dict(
        REGISTERS=(240, 24), CONSUMERS=2, PINGPONG=False, OVERLAP=True, CAUSAL=False, NUM_STAGES=3,
        num_warps=4,
    )  # fmt: skip
    launch = keyword_launch(fa3, (132,), tuple(range(10)), constants)
    assert launch.constexprs == (3, False, True, False, 2, (240, 24)) and launch.num_warps == 4
    assert Launcher(fa3)._constants(launch.constexprs, 4) == launch.constexprs
    with pytest.raises(KeyError):
        keyword_launch(fa3, (1,), tuple(range(10)), {"num_warps": 4})


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
