"""The debugging guide's demos: small Triton kernels, one with a deliberate bug, and the
command that runs each demo in a Python process of its own, with the environment that
debugging needs.

The bug is the most common one in a Triton kernel: a :term:`mask` one lane too wide
(``offs <= n`` where ``offs < n`` was meant), so the last :term:`program` reads and writes
one element past the end of its tensors. Every kernel here is a variant of that copy
(:func:`copy_kernel` is the correct one), plus a small tiled matmul whose compiled code
shows the tensor-core instructions.

Why a process per demo: Triton reads its debugging switches at set moments.
``TRITON_INTERPRET`` is read when a kernel is defined (``@triton.jit``, at import), so a
process that defined its kernels compiled cannot interpret them; ``TRITON_DEBUG``,
``MLIR_ENABLE_DUMP`` and ``TRITON_ALWAYS_COMPILE`` are read when a kernel compiles; and a
failed ``tl.device_assert`` or an illegal address leaves the process's CUDA context
unusable. So each demo runs as ``python -m gpuperf.bench.debugging DEMO`` with its
variables set (:func:`run`), as a reader runs their own script. The demos
(:data:`DEMOS`):

* ``print``: the off-by-one copy printing its last block's offsets and mask (Python's
  ``print``, which compiles to ``tl.device_print``), in the interpreter or on a GPU;
* ``pdb``: the same copy stopping at ``breakpoint()`` in the interpreter;
* ``assert``: the copy with ``tl.device_assert``, in the interpreter or on a GPU;
* ``static``: ``tl.static_print`` and a failing ``tl.static_assert``, compiled for an
  H100 (``sm_90``) on any machine (:func:`compile_offline`);
* ``loads``: the load instructions of the correct and the off-by-one copy in their PTX,
  compiled the same way;
* ``oob``: the off-by-one copy on tensors of their own on a GPU, as compute-sanitizer sees
  it, and what it does to the tensors allocated next (:func:`out_of_bounds`);
* ``oob_last``: the same copy with nothing allocated after ``y`` (:func:`out_of_bounds_last`);
* ``compile``: :func:`copy_kernel` compiled by one launch on a GPU, or for an H100
  without one (for ``MLIR_ENABLE_DUMP`` and the cache);
* ``inductor``: a small function under ``torch.compile`` on a GPU (for ``TORCH_LOGS`` and
  ``TORCH_COMPILE_DEBUG``).

In the interpreter a lane past the end reads and writes the host's memory past a tensor,
which can corrupt the Python process itself; the demos that run there copy between views
of buffers one element longer (:func:`guarded`), so the element past the end is theirs to
look at.

``scripts/debugging_capture.py`` runs the GPU demos on a GPU and keeps what they printed
as captures (:mod:`gpuperf.bench.captures`), trimmed with :func:`excerpt`; the guide
renders those (:mod:`gpuperf.pages.debugging`) and runs the interpreter and offline demos
live.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction

#: The printing demos: PRINT_N elements in blocks of PRINT_BLOCK with one warp per
#: program, so each of a warp's 32 threads holds one element. Three programs; the last
#: holds elements 64 to 95, of which 64 to 69 exist.
PRINT_N = 70
PRINT_BLOCK = 32
#: The copies on a GPU: N float32 elements (2560 bytes, a multiple of the 512 bytes
#: PyTorch's caching allocator rounds a small tensor to, so a tensor allocated next can
#: start right after) in blocks of BLOCK; the second program's lanes from N on are past
#: the end.
N = 640
BLOCK = 512
#: What the output and the element past it are filled with before a copy, and the
#: tensor allocated after the input (:func:`out_of_bounds`).
FILL = -1.0
NEIGHBOUR = 7.0
#: The matmul whose compiled code is shown: SIZE x SIZE x SIZE in float16, tiles of
#: MATMUL_TILE (BLOCK_M, BLOCK_N, BLOCK_K), 4 warps (one warpgroup), 3 pipeline stages.
SIZE = 512
MATMUL_TILE = (128, 128, 64)
#: The compiled stages a launch keeps (``handle.asm``), in the compiler's order; ``sass``
#: is disassembled from ``cubin`` when asked for.
STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
#: The target :func:`compile_offline` compiles for: an H100 (compute capability 9.0, 32
#: threads a warp).
HOPPER = ("cuda", 90, 32)


# --- the kernels ----------------------------------------------------------------------


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """``y[:n] = x[:n]``: each program copies one block of ``BLOCK`` elements."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def copy_off_by_one_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """:func:`copy_kernel` with the bug: its mask lets lane ``n`` through."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n  # the bug: offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def copy_printing_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The off-by-one copy, printing its last block's offsets and mask."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n  # the bug: offs < n
    if pid == tl.num_programs(0) - 1:  # the last program only
        print("offs", offs)  # compiled: tl.device_print("offs", offs)
        print("mask", mask)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def copy_breakpoint_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The off-by-one copy, stopping in pdb in its last program (in the interpreter:
    a compiled kernel cannot call Python)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n  # the bug: offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if pid == tl.num_programs(0) - 1:
        breakpoint()  # the interpreter runs this body as Python: pdb stops here
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def copy_asserting_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The off-by-one copy, asserting on the device that every lane it lets through is
    in bounds (compiled in only with ``TRITON_DEBUG=1`` or ``@triton.jit(debug=True)``)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n  # the bug: offs < n
    tl.device_assert(offs < n, "a lane past the end is not masked", mask=mask)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def copy_static_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The copy with two checks that run when it compiles, not when it runs."""
    tl.static_assert(x_ptr.dtype == y_ptr.dtype, "x and y must have the same dtype")
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.static_print("BLOCK =", BLOCK, "x:", x_ptr.dtype, "offs:", offs)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """``c = a @ b`` for row-major ``a`` (M, K), ``b`` (K, N), ``c`` (M, N): one
    ``BLOCK_M x BLOCK_N`` tile of ``c`` per program, accumulated in float32."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a_mask = (rm[:, None] < M) & (k + rk[None, :] < K)
        b_mask = (k + rk[:, None] < K) & (rn[None, :] < N)
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk[None, :]), mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k + rk[:, None]) * stride_bk + rn[None, :], mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# --- the demos --------------------------------------------------------------------------


def interpreted() -> bool:
    """Whether this process's kernels run in Triton's interpreter (``TRITON_INTERPRET=1``
    when this module was imported)."""
    return isinstance(copy_kernel, InterpretedFunction)


def device() -> str:
    """Where the demos' tensors live: ``"cpu"`` in the interpreter, else ``"cuda"``.

    Raises:
        RuntimeError: neither the interpreter nor a CUDA GPU.
    """
    if interpreted():
        return "cpu"
    if not torch.cuda.is_available():
        raise RuntimeError("this demo needs a CUDA GPU, or TRITON_INTERPRET=1 to run on the CPU")
    return "cuda"


def guarded(n: int, where: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x = 0, 1, ..., n-1`` and ``y`` (``n`` times :data:`FILL`), float32 on ``where``, each
    a view of a buffer one element longer, and ``after``: the element of ``y``'s buffer
    past the end of ``y`` (also :data:`FILL`). A lane past the end reads ``n`` from ``x``'s
    buffer and writes it into ``after``, not into memory that belongs to something else."""
    x = torch.arange(n + 1, dtype=torch.float32, device=where)
    y = torch.full((n + 1,), FILL, device=where)
    return x[:n], y[:n], y[n:]


def report(x: torch.Tensor, y: torch.Tensor, after: torch.Tensor) -> None:
    """Print whether the copy is right and what became of the element past its end."""
    print(f"y equals x: {torch.equal(x, y)}")
    print(f"the element after y: {after.item()} (it was {FILL})")


def print_last_block() -> None:
    """The printing copy of :data:`PRINT_N` elements: its last program prints."""
    x, y, after = guarded(PRINT_N, device())
    grid = (triton.cdiv(PRINT_N, PRINT_BLOCK),)
    copy_printing_kernel[grid](x, y, PRINT_N, BLOCK=PRINT_BLOCK, num_warps=1)
    report(x, y, after)


def stop_in_pdb() -> None:
    """The copy that calls ``breakpoint()`` in its last program (interpreter only)."""
    if not interpreted():
        raise RuntimeError("breakpoint() runs in the interpreter only: set TRITON_INTERPRET=1")
    x, y, after = guarded(PRINT_N, "cpu")
    grid = (triton.cdiv(PRINT_N, PRINT_BLOCK),)
    copy_breakpoint_kernel[grid](x, y, PRINT_N, BLOCK=PRINT_BLOCK)
    report(x, y, after)


def first_line(err: BaseException) -> str:
    """``'TypeName: first line of the message'``."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"


def assert_on_device() -> None:
    """The asserting copy of :data:`N` elements, then one more CUDA call: a failed
    ``tl.device_assert`` (compiled in with ``TRITON_DEBUG=1``) surfaces at the next
    synchronization, and leaves the CUDA context unusable."""
    where = device()
    x, y, after = guarded(N, where)
    copy_asserting_kernel[(triton.cdiv(N, BLOCK),)](x, y, N, BLOCK=BLOCK)
    try:
        report(x, y, after)  # .item() waits for the kernel
    except RuntimeError as err:
        print(f"the next synchronization raised {first_line(err)}")
        try:
            torch.ones(1, device=where).item()
        except RuntimeError as again:
            print(f"and so does any later CUDA call: {first_line(again)}")


def compile_offline(
    kernel, signature: dict[str, str], constexprs: dict, aligned: Sequence[str] = (), **options
):
    """``kernel`` compiled for an H100 (:data:`HOPPER`, ``sm_90``) on any machine, GPU or
    not, by Triton's own compiler (``triton.compile``; its wheel carries ``ptxas`` and
    ``cuobjdump``); nothing is launched. Returns the compiled kernel (``.asm``,
    ``.metadata``), as a launch on an H100 would.

    Args:
        signature: each runtime argument's type, ``{"x_ptr": "*fp32", "n": "i32"}``, and
            ``"constexpr"`` for each constexpr.
        constexprs: the constexprs' values.
        aligned: the arguments declared multiples of 16 (pointers 16-byte aligned): what a
            launch finds for aligned tensors and sizes, and specializes the kernel on.
        options: compile options (``num_warps=4``, ``num_stages=3``).

    Raises:
        triton.CompilationError: the kernel does not compile (a failed ``tl.static_assert``).
        TypeError: ``kernel`` was defined under the interpreter (``TRITON_INTERPRET=1``).
    """
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if isinstance(kernel, InterpretedFunction):
        raise TypeError("kernel was defined under TRITON_INTERPRET=1: it can be interpreted, not compiled")
    attrs = {(kernel.arg_names.index(name),): [["tt.divisibility", 16]] for name in aligned}
    source = ASTSource(kernel, signature, constexprs, attrs)
    return triton.compile(source, target=GPUTarget(*HOPPER), options=options)


#: The copy kernels' signature for :func:`compile_offline`.
COPY_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def static_checks() -> None:
    """:func:`copy_static_kernel` compiled twice for an H100: with float32 ``x`` and ``y`` (its
    ``tl.static_print`` prints), then with a float16 ``y`` (its ``tl.static_assert`` fails)."""
    for y_type in ("*fp32", "*fp16"):
        print(f"--- compiling with y_ptr: {y_type}")
        signature = {**COPY_SIGNATURE, "y_ptr": y_type}
        try:
            compile_offline(copy_static_kernel, signature, {"BLOCK": BLOCK}, aligned=("x_ptr", "y_ptr", "n"))
            print("compiled")
        except triton.CompilationError as err:
            print(f"{type(err).__name__}: {err}")


#: A PTX line that loads or stores global memory.
GLOBAL_ACCESS = re.compile(r"\b(ld|st)\.global\b")


def load_instructions() -> None:
    """The global loads and stores in the PTX of the correct and the off-by-one copy,
    compiled for an H100 with ``n`` a multiple of 16."""
    for kernel in (copy_kernel, copy_off_by_one_kernel):
        compiled = compile_offline(kernel, COPY_SIGNATURE, {"BLOCK": BLOCK}, aligned=("x_ptr", "y_ptr", "n"))
        lines = [line.strip() for line in compiled.asm["ptx"].splitlines() if GLOBAL_ACCESS.search(line)]
        print(f"{kernel.__name__}: {len(lines)} global loads and stores per thread, the first:")
        print("\n".join(f"  {line}" for line in lines[:2]))


def out_of_bounds() -> None:
    """The off-by-one copy of :data:`N` elements on a GPU, between tensors of their own,
    each followed by another (allocated right after it, where PyTorch's caching allocator
    has room): what became of ``y``, and of the tensor after it."""
    if device() != "cuda":
        raise RuntimeError("this demo writes past a tensor's end: run it on a GPU, not in the interpreter")
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    after_x = torch.full((N,), NEIGHBOUR, device="cuda")
    y = torch.full((N,), FILL, device="cuda")
    after_y = torch.full((N,), FILL, device="cuda")
    copy_off_by_one_kernel[(triton.cdiv(N, BLOCK),)](x, y, N, BLOCK=BLOCK)
    try:
        print(f"y equals x: {torch.equal(x, y)}")
        print(f"after_x starts where x ends: {after_x.data_ptr() == x.data_ptr() + x.nbytes}")
        print(f"after_y starts where y ends: {after_y.data_ptr() == y.data_ptr() + y.nbytes}")
        print(f"after_y[0]: {after_y[0].item()} (it was {FILL}; after_x[0] is {NEIGHBOUR})")
    except RuntimeError as err:
        print(f"the next synchronization raised {first_line(err)}")


def out_of_bounds_last() -> None:
    """The off-by-one copy of :data:`N` elements on a GPU with nothing allocated after ``y``
    (the last tensor made): where each tensor is its own CUDA allocation, the write past
    ``y``'s end lands outside every allocation, which compute-sanitizer reports."""
    if device() != "cuda":
        raise RuntimeError("this demo writes past a tensor's end: run it on a GPU, not in the interpreter")
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    y = torch.full((N,), FILL, device="cuda")
    copy_off_by_one_kernel[(triton.cdiv(N, BLOCK),)](x, y, N, BLOCK=BLOCK)
    try:
        print(f"y equals x: {torch.equal(x, y)}")
    except RuntimeError as err:
        print(f"the next synchronization raised {first_line(err)}")


def compile_copy() -> None:
    """Compile :func:`copy_kernel` (or take it from Triton's cache): by launching it on a
    GPU, or without one for an H100 (:func:`compile_offline`)."""
    if not torch.cuda.is_available():
        compiled = compile_offline(
            copy_kernel, COPY_SIGNATURE, {"BLOCK": BLOCK}, aligned=("x_ptr", "y_ptr", "n")
        )
        print(f"{compiled.name}: compiled for sm_{compiled.metadata.target.arch}")
        return
    x, y, after = guarded(N, device())
    copy_kernel[(triton.cdiv(N, BLOCK),)](x, y, N, BLOCK=BLOCK)
    report(x, y, after)


def rms_norm_eager(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm in eager PyTorch, a kernel per operation: ``x * rsqrt(mean(x^2) + eps) * weight``."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def compile_rms_norm() -> None:
    """:func:`rms_norm_eager` under ``torch.compile`` on a (4096, 1024) float32 input."""
    x = torch.randn(4096, 1024, device="cuda")
    weight = torch.randn(1024, device="cuda")
    out = torch.compile(rms_norm_eager)(x, weight)
    error = (out - rms_norm_eager(x, weight)).abs().max().item()
    print(f"compiled RMSNorm, largest difference from eager: {error:.1e}")


def launch_all() -> dict:
    """Launch the two copies and the matmul once on a GPU; return what each launch
    returned, the compiled kernel, by the kernel's name."""
    x, y, _ = guarded(N, "cuda")
    grid = (triton.cdiv(N, BLOCK),)
    handles = {k.__name__: k[grid](x, y, N, BLOCK=BLOCK) for k in (copy_kernel, copy_off_by_one_kernel)}
    a, b = (torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16) for _ in "ab")
    c = torch.empty_like(a)
    bm, bn, bk = MATMUL_TILE
    tiles = (triton.cdiv(SIZE, bm), triton.cdiv(SIZE, bn))
    sizes = (SIZE, SIZE, SIZE, a.stride(0), b.stride(0), c.stride(0))
    config = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": 4, "num_stages": 3}
    handles["matmul_kernel"] = matmul_kernel[tiles](a, b, c, *sizes, **config)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=0.1, rtol=0.01)
    return handles


def describe(handle) -> dict:
    """What a compiled kernel (the handle a launch returns) says about itself: the code of
    each stage, and what one program needs to run."""
    return {
        "code": {stage: handle.asm[stage] for stage in STAGES},  # "sass": cuobjdump of the cubin
        "num_warps": handle.metadata.num_warps,
        "num_stages": handle.metadata.num_stages,
        "shared": handle.metadata.shared,  # bytes of shared memory per program
        "n_regs": handle.n_regs,  # registers per thread, known once loaded on the GPU
        "n_spills": handle.n_spills,  # registers spilled to local memory
    }


#: Instructions counted in each stage of the compiled code (:func:`counted`), by name: the
#: guide reads these.
COUNTED = {
    "ptx": {
        "vector loads": r"\bld\.global\.v\d",
        "loads": r"\bld\.global\b",
        "stores": r"\bst\.global\b",
        "async copies": r"\bcp\.async\.c[ag]\b",
        "wgmma": r"\bwgmma\.mma_async\b",
    },
    "sass": {
        "LDG.E.128": r"\bLDG\.E\.128\b",
        "LDG": r"\bLDG\b",
        "STG": r"\bSTG\b",
        "LDGSTS": r"\bLDGSTS\b",
        "HGMMA": r"\bHGMMA\b",
    },
}


def counted(code: dict[str, str]) -> dict[str, dict[str, int]]:
    """How many lines of each stage of ``code`` (``{stage: text}``, :func:`describe`'s
    ``"code"``) hold each instruction of :data:`COUNTED`."""
    return {
        stage: {name: len(re.findall(f"(?m)^.*{pattern}", code[stage])) for name, pattern in patterns.items()}
        for stage, patterns in COUNTED.items()
        if stage in code
    }


def shown_code(name: str, code: dict[str, str]) -> dict[str, dict]:
    """What the guide shows of the compiled code of the demo kernel ``name``, each stage an
    :func:`excerpt` of ``code`` (``{stage: text}``): all of :func:`copy_kernel`'s TTIR but its
    location table, its layout and memory operations in TTGIR and LLVM IR, its PTX from the
    first instruction to ``ret`` and its SASS without the padding; the global loads and
    stores of the other copies; the matmul's layouts, tensor-core operations and pipelined
    copies.

    Raises:
        KeyError: a stage it shows is missing from ``code``.
    """
    if name == "matmul_kernel":
        return {
            "ttgir": excerpt(
                code["ttgir"], r"^#(mma|shared) |warp_group_dot |async_copy_global_to_local", limit=8
            ),
            "ptx": excerpt(code["ptx"], r"\bwgmma\.", limit=6),
            "sass": excerpt(code["sass"], r"\bH(G)?MMA\b", limit=6),
        }
    shown = {
        "ptx": excerpt(code["ptx"], GLOBAL_ACCESS.search, limit=8),
        "sass": excerpt(code["sass"], r"\b(LDG|STG)\b", limit=8),
    }
    if name == "copy_kernel":
        shown |= {
            "ttir": excerpt(code["ttir"], lambda line: not line.startswith("#loc")),
            "ttgir": excerpt(code["ttgir"], r"^#blocked|tt\.(load|store) ", limit=4),
            "llir": excerpt(code["llir"], r"\b(ld|st)\.global\b", limit=4),
            "ptx": excerpt(code["ptx"], between(r"^// %bb\.0:", r"^\s*ret;")),
            "sass": excerpt(
                code["sass"], lambda line: line.strip() and not line.strip().endswith("NOP;"), limit=40
            ),
        }
    return shown


#: ``python -m gpuperf.bench.debugging DEMO`` runs ``DEMOS[DEMO]``.
DEMOS: dict[str, Callable[[], None]] = {
    "print": print_last_block,
    "pdb": stop_in_pdb,
    "assert": assert_on_device,
    "static": static_checks,
    "loads": load_instructions,
    "oob": out_of_bounds,
    "oob_last": out_of_bounds_last,
    "compile": compile_copy,
    "inductor": compile_rms_norm,
}


# --- running a demo in a process of its own ---------------------------------------------


@dataclass(frozen=True)
class Ran:
    """A demo that ran in a process of its own: the command as a shell would read it
    (its environment variables first), its exit status, and what it printed (stdout and
    stderr together, in the order written).

    ``str(ran)`` is a terminal's view: ``$ command``, the output, and the exit status when
    it is not 0, with paths into this package shown from its folder (``gpuperf/...``).
    """

    command: str
    returncode: int
    output: str

    def __str__(self) -> str:
        status = "" if self.returncode == 0 else f"\n(exit status {self.returncode})"
        output = within_package(self.output.rstrip(), PACKAGE_ROOT)
        return f"$ {self.command}\n{output}{status}"

    def as_dict(self) -> dict:
        return {"command": self.command, "returncode": self.returncode, "output": self.output}


#: The module the child processes run.
MODULE = "gpuperf.bench.debugging"
#: The package's folder, and its parent: put on the child's ``PYTHONPATH`` so it imports
#: this gpuperf.
PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])
_SRC = str(Path(PACKAGE_ROOT).parent)


def within_package(text: str, root: str) -> str:
    """``text`` with each path into the package folder ``root`` (``/x/src/gpuperf/bench/a.py``)
    written from the package's name (``gpuperf/bench/a.py``)."""
    return text.replace(root.rstrip("/") + "/", Path(root).name + "/") if root else text


#: pdb's prompt, after which :func:`run` writes the command it fed (``echo``).
PDB_PROMPT = "(Pdb) "


def run(
    demo: str,
    *,
    stdin: str | None = None,
    prefix: Sequence[str] = (),
    cwd: str | os.PathLike | None = None,
    timeout: float = 300.0,
    setup: dict[str, str] | None = None,
    **env: str,
) -> Ran:
    """Run the demo ``demo`` (:data:`DEMOS`) as ``python -m gpuperf.bench.debugging DEMO`` in
    a new Python process, with the environment variables ``env`` set on top of this one's.

    Args:
        stdin: what to type into it (pdb's commands, one a line). Each command is written
            back after the pdb prompt that read it, as a terminal would show it.
        prefix: a command that runs Python (``["compute-sanitizer", "--tool", "memcheck"]``).
        cwd: the folder it runs in (default: this one).
        timeout: seconds before it is stopped.
        setup: variables set without being shown in the command: where the run keeps its
            caches, say (a fresh folder makes it a first run).
        env: variables to set, such as ``TRITON_INTERPRET="1"``.

    Returns:
        A :class:`Ran`; a demo that failed has a non-zero ``returncode``, and one stopped
        at ``timeout`` says so in its output.

    Raises:
        ValueError: an unknown demo, or a variable's value that is not a string.
    """
    if demo not in DEMOS:
        raise ValueError(f"demo must be one of {sorted(DEMOS)}, got {demo!r}")
    bad = {k: v for k, v in {**(setup or {}), **env}.items() if not isinstance(v, str)}
    if bad:
        raise ValueError(f"environment values must be strings, got {bad}")
    child_env = {**os.environ, **(setup or {}), **env, "PYTHONUNBUFFERED": "1"}
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC, os.environ.get("PYTHONPATH")) if p)
    argv = [*prefix, sys.executable, "-m", MODULE, demo]
    # The command as typed: a tool by its name, not by the path it was found at.
    tool = [Path(prefix[0]).name, *prefix[1:]] if prefix else []
    shown = [*(f"{k}={shlex.quote(v)}" for k, v in env.items()), *tool, "python", "-m", MODULE, demo]
    try:
        done = subprocess.run(
            argv,
            input=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=child_env,
            cwd=cwd,
            timeout=timeout,
        )
        output, returncode = done.stdout, done.returncode
    except subprocess.TimeoutExpired as err:
        partial = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else err.stdout or ""
        output, returncode = partial + f"\n(stopped after {timeout:.0f} s)", -9
    if stdin is not None:
        output = echo_commands(output, stdin.splitlines())
    return Ran(" ".join(shown), returncode, output)


def echo_commands(output: str, commands: Sequence[str], prompt: str = PDB_PROMPT) -> str:
    """``output`` with each of ``commands`` written after the prompt that read it (a
    terminal echoes what is typed; a pipe does not)."""
    parts = output.split(prompt)
    echoed = [parts[0]]
    for i, part in enumerate(parts[1:]):
        command = commands[i] if i < len(commands) else ""
        echoed.append(f"{prompt}{command}\n{part}" if command else f"{prompt}{part}")
    return "".join(echoed)


# --- keeping part of a long output -------------------------------------------------------


def excerpt(
    text: str,
    keep: str | Callable[[str], bool] | None = None,
    *,
    context: int = 0,
    after: int = 0,
    limit: int | None = None,
    first: int = 0,
    last: int = 0,
) -> dict:
    """The lines of ``text`` worth keeping, verbatim, with where they were.

    Args:
        keep: a regular expression searched in each line, or a predicate called on each
            line in order (it may keep a state: :func:`between`); the lines it accepts
            are kept (None: none but ``first`` and ``last``).
        context: lines kept before and after each accepted line.
        after: more lines kept after each accepted line.
        limit: at most this many accepted lines, the first ones (their context too).
        first, last: the first and the last lines of ``text`` kept whatever ``keep`` says.

    Returns:
        A dict ``{"total": n, "blocks": [[first, lines], ...]}``: ``n`` is the number of
        lines in ``text``, and each block a run of consecutive kept lines, in order, with
        the line number (1-based) of its first line.

    Raises:
        TypeError: ``keep`` is neither a string, a callable nor None.
        ValueError: a negative ``context``, ``after``, ``limit``, ``first`` or ``last``.
    """
    if keep is not None and not isinstance(keep, str) and not callable(keep):
        raise TypeError(f"keep must be a regular expression, a predicate or None, got {type(keep).__name__}")
    numbers = {"context": context, "after": after, "limit": limit or 0, "first": first, "last": last}
    for name, value in numbers.items():
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    lines = text.splitlines()
    accepts = (lambda line: re.search(keep, line) is not None) if isinstance(keep, str) else keep
    kept = set(range(min(first, len(lines)))) | set(range(max(len(lines) - last, 0), len(lines)))
    accepted = 0
    for i, line in enumerate(lines):
        if accepts is None or (limit is not None and accepted >= limit):
            break
        if accepts(line):
            accepted += 1
            kept.update(range(max(i - context, 0), min(i + context + after + 1, len(lines))))
    blocks: list[list] = []
    for i in sorted(kept):
        if blocks and blocks[-1][0] + len(blocks[-1][1]) == i + 1:
            blocks[-1][1].append(lines[i])
        else:
            blocks.append([i + 1, [lines[i]]])
    return {"total": len(lines), "blocks": blocks}


def between(start: str, end: str) -> Callable[[str], bool]:
    """A predicate for :func:`excerpt` that accepts each line from one that matches the regular
    expression ``start`` through the next that matches ``end``, both included, as often as
    they come. Called on the lines in order; use a new one for each text."""
    inside = False

    def accepts(line: str) -> bool:
        nonlocal inside
        if not inside and re.search(start, line):
            inside = re.search(end, line) is None
            return True
        if inside and re.search(end, line):
            inside = False
            return True
        return inside

    return accepts


def either(*keeps: str | Callable[[str], bool]) -> Callable[[str], bool]:
    """A predicate for :func:`excerpt` that accepts a line any of ``keeps`` (regular
    expressions or predicates) accepts; each is asked about every line, so that a
    stateful one (:func:`between`) sees them all."""
    tests = [(lambda line, k=k: re.search(k, line) is not None) if isinstance(k, str) else k for k in keeps]

    def accepts(line: str) -> bool:
        return any([test(line) for test in tests])

    return accepts


def excerpt_lines(kept: dict) -> list[str]:
    """The lines an :func:`excerpt` kept, in order, without where they were."""
    return [line for _, lines in kept["blocks"] for line in lines]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gpuperf.bench.debugging DEMO``: run one demo of :data:`DEMOS`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1 or argv[0] not in DEMOS:
        print(f"usage: python -m {MODULE} {{{','.join(DEMOS)}}}", file=sys.stderr)
        return 2
    DEMOS[argv[0]]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
