"""
Debugging Triton kernels
========================

A kernel with a bug rarely crashes. A :term:`mask` one lane too wide reads and writes
one element past the end of a tensor, and on a GPU that element usually belongs to
the same allocation or to the tensor next to it: the kernel returns a plausible
answer and damages something else. This guide takes that one bug through every tool
that finds it: Triton's :term:`interpreter`, where Python's ``print`` and ``pdb`` work
inside a :term:`kernel`; the prints and assertions Triton compiles into a kernel;
NVIDIA's :term:`compute-sanitizer`; and the compiled code itself, from :term:`TTIR`
down to :term:`SASS`. It ends with the Triton code ``torch.compile`` writes, and how to
read it.

**What you will learn**

* how ``TRITON_INTERPRET=1`` runs a kernel on the CPU, and how to print and step
  through one there (in a process of its own when yours has defined its kernels
  already);
* what ``tl.device_print``, ``tl.static_print``, ``tl.static_assert`` and
  ``tl.device_assert`` print, and when each runs: at compile time or on the GPU;
* what compute-sanitizer reports for an access past the end, and why PyTorch's caching
  allocator can hide it;
* how to read a compiled kernel: ``.asm`` (TTIR, :term:`TTGIR`, LLVM IR,
  :term:`PTX`, SASS), ``.metadata``, registers and spills, ``MLIR_ENABLE_DUMP``, the
  cache and ``TRITON_ALWAYS_COMPILE``;
* where ``TORCH_LOGS=output_code`` and ``TORCH_COMPILE_DEBUG=1`` put Inductor's kernels.

The interpreter's parts and everything that only compiles run live while this page
builds, with or without a GPU. What only a GPU can show (its prints, a failed
assertion, compute-sanitizer, the compiled kernels' registers) comes from captures of
one run on a GPU, each shown with where and when it was taken. The
:doc:`troubleshooting page <../troubleshooting>` reads the error messages a kernel can
raise. The answer first:
"""

from gpuperf.pages import debugging as page

print(page.in_one_paragraph())

# %%
# The bug: a mask one lane too wide
# ---------------------------------
#
# A copy, written the usual way: each :term:`program` owns a :term:`block` of
# ``BLOCK`` offsets, and the mask turns off the lanes past the end of the tensors:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: copy_kernel
#
# and the same copy with ``<=`` where ``<`` belongs. Lane ``n`` is one element past
# the end; it exists only in the last program, and only when ``n`` is not a multiple of
# ``BLOCK``, so a test at sizes that are multiples of the block never runs it:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: copy_off_by_one_kernel
#
# 1. The interpreter: ``print`` and ``pdb`` on the CPU
# ----------------------------------------------------
#
# With ``TRITON_INTERPRET=1``, ``@triton.jit`` returns a kernel that Triton runs
# in Python instead of compiling it: the programs of the grid run one after another on
# the CPU, each block is a NumPy array, and the tensors stay in host memory. Every line
# of the kernel is then Python, so ``print`` shows a block's values and ``pdb`` stops in
# it. Triton reads the variable when a kernel is *defined*, so set it before importing
# the module that defines your kernels. A process that has already defined them
# compiled (this page's, on a GPU) cannot interpret them; run the script in a process of
# its own instead, as every run below does: ``demo.run`` is ``TRITON_INTERPRET=1 python
# -m gpuperf.bench.debugging print`` in a new process, and it prints the command and
# what the process printed.
#
# The buggy copy, printing what its last program computes:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: copy_printing_kernel
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: print_last_block

from gpuperf.bench import debugging as demo

print(demo.run("print", TRITON_INTERPRET="1"))

# %%
# **Reading it.** The mask has one ``True`` too many: the lane whose offset is ``n``.
# The copy itself is right (``y`` equals ``x``), and a test that compares only ``y``
# passes; the damage is the element *after* ``y``, which now holds what the lane read
# past the end of ``x``. In the interpreter a lane past the end reads and writes the
# host's memory just past a tensor: a read returns whatever lies there, and a write can
# corrupt the Python process itself, to crash it later, far from the kernel (``double
# free or corruption``). So the demos copy between views of buffers one element
# longer than ``x`` and ``y`` (:func:`~gpuperf.bench.debugging.guarded`), where the
# element past the end is theirs to look at; do the same when you chase such a bug on
# the CPU.
#
# ``breakpoint()`` works the same way. Placed in the last program:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: copy_breakpoint_kernel
#
# Typed into pdb's prompt: print the offsets, the mask and the loaded block, then go on:

print(demo.run("pdb", TRITON_INTERPRET="1", stdin="p offs\np mask\np x\nc\n"))

# %%
# **Reading it.** pdb stops in the kernel's own source, with its local variables as
# NumPy arrays. ``x`` holds the value read past the end in the lane the bug let
# through; the lanes the mask turned off read as 0 here. Triton promises nothing for
# them unless the load passes ``other=`` (compiled for an H100, the copy's PTX in
# section 4 zeroes each register before the masked load, but that is the compiler's
# choice, not the language's). The interpreter does not check bounds,
# and it runs the programs one after another, so it finds neither an out-of-bounds
# access nor a race between programs. It is for seeing values, on small sizes.
#
# 2. Printing and asserting in a compiled kernel
# ----------------------------------------------
#
# **tl.device_print.** Compiled, Python's ``print`` in a kernel *is*
# ``tl.device_print``: its first argument must be a string, the others scalars or
# blocks (an f-string cannot format a value known only at run time). Each thread
# prints the elements it holds, one line each, into a buffer that the host prints at
# its next synchronization with the GPU; lines of different threads come in no set
# order. The same demo on a GPU, without the interpreter:

from gpuperf.pages import captures

shown = captures.show(page.PRINT, page.printed)

# %%

print(page.print_reading(shown))

# %%
# Print from one program (the ``if`` above) and a small block: a print in every
# program of a large grid prints millions of lines, and a buffer that fills up drops
# them (``triton.runtime.driver.active.utils.set_printf_fifo_size`` enlarges it before
# the first kernel that prints).
#
# **tl.static_print and tl.static_assert** run when the kernel compiles, not when it
# runs: they see ``tl.constexpr`` values, dtypes and block shapes, never data. They
# need Triton's compiler, not a GPU, so this page compiles the kernel here for an H100
# (``sm_90``) with ``triton.compile``, which runs the whole compiler down to ``ptxas``
# and launches nothing:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: copy_static_kernel
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: compile_offline

print(demo.run("static", TRITON_INTERPRET="0", TRITON_ALWAYS_COMPILE="1"))

# %%
# **Reading it.** ``tl.static_print`` printed once, for the compile: the dtype of
# ``x_ptr`` and the type of ``offs``, a block of ``BLOCK`` 32-bit integers. The failed
# ``tl.static_assert`` is a ``CompileTimeAssertionFailure`` that points at its line in
# the kernel. ``TRITON_ALWAYS_COMPILE=1`` is there because Triton keeps each compiled
# kernel in its cache and, next time, takes it from there without compiling: a cached
# kernel prints nothing at compile time (section 4).
#
# **tl.device_assert** checks data on the GPU, but only in a kernel compiled with
# debugging on: ``TRITON_DEBUG=1`` in the environment (Triton 3.6 reads it once, when
# ``triton`` is imported: in a running process, set
# ``triton.knobs.runtime.debug = True`` instead) or ``@triton.jit(debug=True)``.
# Debugging is one of the compile options, so switching it on compiles the kernel
# anew; with it off, Triton leaves the assertion out. Its ``mask=`` restricts the check
# to the lanes the load will touch:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: copy_asserting_kernel
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: assert_on_device

shown = captures.show(page.ASSERT, page.runs)

# %%

print(page.assert_reading(shown))

# %%
# **Reading it.** A failed assertion stops the kernel with a trap, and CUDA reports it
# at the next call that waits for the GPU. It is a *sticky* error: the process's CUDA
# context is lost, and every CUDA call after it fails too, as after an illegal memory
# access. Restart the process; ``CUDA_LAUNCH_BLOCKING=1`` makes each launch wait for
# its kernel, so that the error surfaces at the launch that caused it. The
# interpreter does not run ``tl.device_assert`` at all (Triton 3.6 interprets with
# debugging off, whatever ``TRITON_DEBUG`` says):

print(demo.run("assert", TRITON_INTERPRET="1", TRITON_DEBUG="1"))

# %%
# 3. compute-sanitizer: every access checked
# ------------------------------------------
#
# ``compute-sanitizer --tool memcheck python script.py`` (NVIDIA's CUDA toolkit) runs a
# program with every load and store of every kernel checked against the memory CUDA
# allocated, and reports each one outside it: what kind of access, its size, the
# kernel and the source line (Triton compiles line information in), the thread and
# block, and where the address lies against the nearest allocation. The program runs
# many times slower, so give it small sizes. The off-by-one copy, between tensors of
# their own on the GPU, each followed by another allocated right after it:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: out_of_bounds
#
# memcheck knows only what CUDA allocated. PyTorch's caching allocator gets memory
# from CUDA in large segments and hands out pieces of them, so an access just past a
# tensor lands in the same segment; ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` makes every
# tensor its own CUDA allocation, but one made right after another can start where it
# ends. The same script plain, under memcheck, and under memcheck without the caching
# allocator; then, without it, a copy with nothing allocated after ``y``
# (``out_of_bounds_last``, the same kernel on ``x`` and ``y`` alone):

shown = captures.show(page.SANITIZER, page.runs)

# %%

print(page.sanitizer_reading(shown))

# %%
# **Reading it.** Run without a tool, the bug passes a test of ``y``: what it damages
# is memory next to ``y``, the tensor allocated after it. memcheck checks each access
# against every allocation, not against the tensor the kernel meant: a lane one past
# ``y`` that lands in the next tensor is an access to allocated memory, and passes.
# The same goes for the read past ``x``: the last run reported the write past ``y`` but
# no read past ``x``, since ``y``, like ``after_x`` in the runs before, was most likely
# allocated where ``x`` ends, and the read landed in it. The errors counted after the
# first are the CUDA calls that failed once the kernel had been stopped. So run it with
# the caching allocator off and on inputs with nothing just after them (a test's own
# tensors, sized so the last one ends its allocation), and read the first report: its
# kernel, its source line and its thread and block point at the mask. A clean memcheck
# run is no proof of a correct mask; a masked-off lane printed in the interpreter is.
# (compute-sanitizer's other tools: ``--tool racecheck`` for shared-memory races,
# ``--tool initcheck`` for reads of memory never written.)
#
# 4. Reading the compiled kernel
# ------------------------------
#
# Triton compiles a kernel in stages, each a text you can read: :term:`TTIR` (the
# kernel as operations on whole blocks), :term:`TTGIR` (the same, each block given a
# :term:`layout`: which thread holds which elements), LLVM IR, :term:`PTX` (NVIDIA's
# virtual assembly) and the cubin, whose machine code is :term:`SASS`. A launch returns
# the compiled kernel (``kernel.warmup(*args, grid=grid, **constexprs)`` compiles
# without launching), and it tells what it is:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: describe
#
# The correct copy, every stage, as compiled on a GPU (excerpts: ``...`` marks lines
# left out, and a line cut short ends with ``...``):

captures.show(page.COMPILED, page.compiled_code("copy_kernel"))

# %%
# **Reading it.** The TTGIR's ``#blocked`` layout gives each thread 4 consecutive
# elements (``sizePerThread = [4]``), so each thread loads them with one 16-byte
# instruction: ``ld.global.v4.b32`` in PTX, ``LDG.E.128`` in SASS. Each ``.loc`` line in
# the PTX names the line of the Python source the instructions below it come from;
# ``@%p1`` is the mask, one predicate for all 4 elements. The off-by-one copy:

shown = captures.show(page.COMPILED, page.compiled_code("copy_off_by_one_kernel"))

# %%

print(page.compiled_reading(shown))

# %%
# **Reading it.** Triton vectorizes a masked load only where it can prove that the
# mask is the same for all the elements a thread loads together. With ``n`` a multiple
# of 16 (Triton checks the arguments at launch and specializes on it), ``offs < n``
# changes only at a multiple of 16; ``offs <= n`` changes after ``n``, anywhere. The
# same compile runs without a GPU, as it does here while the page builds:

print(demo.run("loads", TRITON_INTERPRET="0"))

# %%
# In a matmul, the compiled code shows whether ``tl.dot`` reached the
# :term:`tensor cores <tensor core>` and how the loads are pipelined. A plain float16
# tile loop:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: matmul_kernel

captures.show(page.COMPILED, page.compiled_code("matmul_kernel"))

# %%
# ``#mma`` with ``versionMajor = 3`` is Hopper's :term:`wgmma` layout, ``#shared``
# the swizzled :term:`shared memory` the tiles are copied into
# (``async_copy_global_to_local``, ``cp.async`` in PTX, ``LDGSTS`` in SASS), and each
# ``wgmma.mma_async`` of PTX is an ``HGMMA`` of SASS. What each program needs:

shown = captures.show(page.COMPILED, page.resources)

# %%
# **Reading it.** The matmul's shared memory is its pipeline: ``num_stages`` copies of
# an A and a B tile:

print(page.pipeline_reading(shown))

# %%
# ``n_regs`` and ``n_spills`` come from the compiled binary once it is loaded on a GPU;
# a kernel that :term:`spills <spill>` registers to local memory shows it here first.
#
# **Every pass of the compiler.** ``MLIR_ENABLE_DUMP=1`` prints the IR before each
# MLIR pass, for every kernel compiled, to stderr (``MLIR_ENABLE_DUMP=copy_kernel``:
# that kernel's only; ``MLIR_DUMP_PATH=file`` writes it to a file instead). It is long;
# filter it, here to the passes' names and the layouts they leave:

captures.show(page.MLIR_DUMP, page.mlir_dump)

# %%
# The coalescing pass is where the copy's layout gets its 4 elements per thread. A
# dump, like a ``tl.static_print``, is printed only while Triton compiles, and Triton
# compiles a kernel once: it keeps the result in ``TRITON_CACHE_DIR``
# (``~/.triton/cache`` by default) under a hash of the source, the arguments' types
# and the options, and of the compiler's switches set in the environment
# (``MLIR_ENABLE_DUMP`` and ``MLIR_DUMP_PATH`` among them), and later processes load it
# from there. So the first run with a dump switched on compiles afresh, and a rerun
# with the same setting finds it cached; ``TRITON_ALWAYS_COMPILE=1`` compiles anyway.
# Three runs on one cache folder, all three with the same dump setting:

captures.show(page.MLIR_DUMP, page.cache)

# %%
# The cache holds each stage's file beside the cubin and the compile's metadata
# (``.json``); deleting the folder is always safe. ``TRITON_KERNEL_DUMP=1`` writes the
# same files, SASS included, into ``TRITON_DUMP_DIR`` for every kernel compiled.
#
# 5. Inductor's kernels
# ---------------------
#
# :term:`torch.compile` hands each graph it captures to :term:`Inductor`, which writes
# a Python module with Triton kernels in it, compiles and caches them, and calls them.
# ``TORCH_LOGS=output_code`` prints that module when it is written, and its path. An
# RMSNorm, one kernel per operation in eager PyTorch:
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: rms_norm_eager
#
# .. literalinclude:: ../../src/gpuperf/bench/debugging.py
#    :pyobject: compile_rms_norm

captures.show(page.INDUCTOR, page.output_code)

# %%
# **Reading it.** Eager PyTorch's operations (the comment above the launch names them)
# became one kernel. Each kernel is a string passed to ``async_compile.triton``,
# named after the operations it fused (``per``: a persistent reduction, each row reduced
# whole in one block, ``XBLOCK`` rows per program; ``red``: a reduction that loops over
# the row; ``poi``: pointwise); ``call`` allocates the outputs and launches the
# kernels. The file whose path is printed runs on its own (``python <path>``
# benchmarks the compiled code on random inputs): a starting point for debugging one
# of Inductor's kernels like any other, with every tool above.
# ``TORCH_COMPILE_DEBUG=1`` keeps more, in a folder ``torch_compile_debug/`` of the
# working folder: for each graph, the ATen graph Inductor was given (after
# AOTAutograd: ``fx_graph_readable.py``, and ``fx_graph_runnable.py`` that runs it on
# its own), Inductor's IR before and after fusion, and the output code, among the files
# listed here:

captures.show(page.INDUCTOR, page.debug_files)

# %%
# What to take away
# -----------------
#
# * A bug past the end of a tensor seldom fails: check the elements around your output,
#   and test sizes that are not multiples of your block.
# * ``TRITON_INTERPRET=1``, set before the kernels are defined, runs a kernel on the CPU
#   where ``print`` and ``breakpoint()`` work; copy between views of larger buffers so
#   that an access past the end stays in memory you own.
# * Compiled, ``print`` is ``tl.device_print``: one line per element per thread, so
#   print from one program. ``tl.static_print`` and ``tl.static_assert`` run when the
#   kernel compiles (and not when it comes from the cache); ``tl.device_assert`` needs
#   ``TRITON_DEBUG=1`` set before Triton is imported (or ``@triton.jit(debug=True)``)
#   and costs the process its CUDA context when it fails.
# * ``PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python
#   script.py`` names the kernel, the line, the thread and the address of an access
#   outside every allocation; one that lands in a neighbouring tensor passes.
# * A launch returns the compiled kernel: read ``.asm["ttgir"]`` for layouts,
#   ``.asm["ptx"]`` and ``.asm["sass"]`` for the instructions (vector loads, ``wgmma``),
#   ``.metadata.shared``, ``.n_regs`` and ``.n_spills`` for what a program needs;
#   ``MLIR_ENABLE_DUMP`` with ``TRITON_ALWAYS_COMPILE=1`` for every pass between them.
# * ``TORCH_LOGS=output_code`` prints the Triton code ``torch.compile`` wrote, and the
#   path of a file that runs it on its own.
