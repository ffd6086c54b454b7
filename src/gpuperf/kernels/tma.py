"""TMA tensor descriptors, as the persistent matmul, SwiGLU and the FP8 kernels (Triton's and
Gluon's) use them: which tensors a descriptor can describe, and making one. A kernel that
takes them is launched, and its launch replayed on new tensors, by :mod:`gpuperf.kernels.launch`.

On Hopper (compute capability 9.0) the copy engine (TMA) moves a whole box of a tensor
between global and shared memory from one instruction, computing the addresses and
zero-filling what lies past the edges itself. A descriptor needs (CUDA's
``cuTensorMapEncodeTiled``):

* a base address that is a multiple of 16 bytes,
* a unit stride in its last dimension,
* every other stride a multiple of 16 bytes.

A box may start anywhere inside the tensor, but the start of a box along the last
dimension must also be a multiple of 16 bytes in Triton 3.6's lowering: a box of the
second half of ``[W_gate | W_up]`` starting ``N`` columns in, with ``N * element size``
not a multiple of 16, is an illegal instruction on the GPU, and the whole CUDA context is
lost with it (:func:`box_offset_aligned`). A descriptor that breaks a rule is never
launched: :func:`tma_layout` (2-D) and :func:`tma_ready` (any rank) say which tensors can be
described, :func:`check_tma_operands` says why one cannot, :func:`tma_copy` copies one into a
layout that can be, and the kernels take their computed-pointer path for the others.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import is_fake
from triton.tools.tensor_descriptor import TensorDescriptor

#: The alignment, in bytes, a descriptor's base, its strides and a box's start in its last
#: dimension must have.
TMA_ALIGNMENT = 16


def tma_layout(t: torch.Tensor) -> str | None:
    """How a tensor descriptor can describe the 2-D ``t``: ``"row"`` (row-major, unit last
    stride), ``"col"`` (column-major: its transpose is row-major) or None (no descriptor
    can: the base is not 16-byte aligned, no stride is 1, or the other stride is not a
    multiple of 16 bytes)."""
    if tma_ready(_unit_inner(t)):
        return "row"
    if tma_ready(_unit_inner(t.t())):
        return "col"
    return None


def _unit_inner(t: torch.Tensor) -> torch.Tensor:
    """``t`` with a unit last stride where its last dimension has one element (whose stride
    no load steps by): the view :func:`descriptor` describes."""
    if t.shape[-1] != 1 or t.stride(-1) == 1:
        return t
    return t.as_strided(t.shape, (*t.stride()[:-1], 1))


def tma_ready(t: torch.Tensor) -> bool:
    """Whether a descriptor with ``t``'s own shape and strides can describe ``t`` (of any rank,
    its last dimension innermost): a 16-byte aligned base, a unit last stride and every other
    stride a multiple of 16 bytes. Also while torch.compile traces (:func:`address`)."""
    size = t.element_size()
    return (
        address(t) % TMA_ALIGNMENT == 0
        and t.stride(-1) == 1
        and all((s * size) % TMA_ALIGNMENT == 0 for s in t.stride()[:-1])
    )


def tracing(*values) -> bool:
    """Whether torch.compile traces the call these ``values`` (its arguments; those that are
    not tensors are skipped) were given to: ``torch.compiler.is_compiling()``, or one of them
    is a trace's tensor, which has no data and no address (a fake tensor, or a functional
    tensor wrapping one). The tensors tell where ``is_compiling()`` does not: in torch 2.11 it
    is True only in the frames Dynamo traces, and False where a compile runs an op on fake
    tensors itself (the registered op's body as Dynamo propagates fake tensors through the
    graph, the backward as AOTAutograd traces it), where ``data_ptr()`` raises."""
    return torch.compiler.is_compiling() or any(isinstance(v, torch.Tensor) and is_fake(v) for v in values)


def address(t: torch.Tensor) -> int:
    """``t.data_ptr()``; while torch.compile traces (:func:`tracing`), where a tensor has no
    address, its offset in bytes into its storage, whose base PyTorch's allocators align to
    far more than 16 bytes: what an alignment check reads of it."""
    if isinstance(t, torch.Tensor) and tracing(t):
        return t.storage_offset() * t.element_size()
    return t.data_ptr()


def tma_copy(t: torch.Tensor, layout: str = "row") -> torch.Tensor:
    """``t`` where a descriptor reads it in ``layout`` as it is, else a copy in that layout that
    a descriptor reads: ``"row"`` (last dimension innermost: :func:`tma_layout` ``"row"`` for a
    2-D ``t``, :func:`tma_ready` for any other rank) or ``"col"`` (a 2-D ``t`` column-major).
    Where no copy could be read either (a row of the copy is not a multiple of 16 bytes),
    ``t`` is returned as it is: the caller checks (:func:`check_tma_operands`) or takes its
    computed-pointer path.

    The copy is new memory, whose base is 16-byte aligned: ``.contiguous()`` returns a
    contiguous view at an unaligned address (a slice of a bigger buffer at an odd offset) as
    it is, and a descriptor of that faults the GPU.

    Raises:
        ValueError: ``layout`` is not ``"row"`` or ``"col"``, or ``"col"`` for a ``t`` not 2-D.
    """
    if layout not in ("row", "col") or (layout == "col" and t.dim() != 2):
        raise ValueError(f'layout must be "row", or "col" for a 2-D tensor; got {layout!r} for {t.dim()}-D')
    if (tma_layout(t) == layout) if t.dim() == 2 else tma_ready(t):
        return t
    view = t.t() if layout == "col" else t
    stride = 1  # the copy's strides, from the last: each the product of the sizes after it
    for dim in range(view.dim() - 1, 0, -1):
        stride *= max(view.shape[dim], 1)
        if (stride * view.element_size()) % TMA_ALIGNMENT:
            return t
    copy = view.clone(memory_format=torch.contiguous_format)
    return copy.t() if layout == "col" else copy


def box_offset_aligned(offset: int, element_size: int) -> bool:
    """Whether a box that starts ``offset`` elements into a descriptor's last dimension (beyond
    the multiples of the box width, which are aligned) starts on a 16-byte boundary."""
    return (offset * element_size) % TMA_ALIGNMENT == 0


def descriptor(t: torch.Tensor, layout: str, block_rows: int, block_cols: int) -> TensorDescriptor:
    """A descriptor of the 2-D ``t`` loading ``block_rows x block_cols`` boxes: of ``t`` itself
    when ``layout`` is ``"row"``, of its row-major transpose (``block_cols x block_rows``
    boxes) when ``"col"`` (:func:`tma_layout`)."""
    if layout == "row":
        return TensorDescriptor(t, list(t.shape), [t.stride(0), 1], [block_rows, block_cols])
    tt = t.t()  # column-major: describe the row-major transpose, load boxes of it
    return TensorDescriptor(tt, list(tt.shape), [tt.stride(0), 1], [block_cols, block_rows])


def check_tma_operands(names, tensors) -> None:
    """``ValueError`` naming the operand that no tensor descriptor can describe, and why."""
    for name, t in zip(names, tensors, strict=True):
        if tma_layout(t) is None:
            raise ValueError(
                f"{name} (shape {tuple(t.shape)}, strides {t.stride()}, {t.element_size()}-byte elements, "
                f"address % 16 = {address(t) % 16}) cannot be loaded through TMA: a tensor descriptor "
                "needs a 16-byte aligned base, one unit stride and the other stride a multiple of 16 "
                f"bytes (for {t.dtype}: {16 // t.element_size()} elements). Pass "
                "gpuperf.kernels.tma.tma_copy(t) (new, aligned memory: .contiguous() returns a "
                "contiguous view at an unaligned address as it is), pad the inner dimension to a "
                "multiple of 16 bytes, or use gpuperf.kernels.matmul."
            )


__all__ = [
    "TMA_ALIGNMENT",
    "address",
    "box_offset_aligned",
    "check_tma_operands",
    "descriptor",
    "tma_copy",
    "tma_layout",
    "tma_ready",
    "tracing",
]
