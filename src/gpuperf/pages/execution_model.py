"""The guide on the GPU a kernel runs on (guide 00), in tables, a chart and sentences read
from its capture and from the GPU's measured ceilings.

One capture, ``execution_model`` (``python scripts/execution_model_capture.py`` on a GPU),
holds what only a GPU can show, in four parts:

* ``device``: the limits the device reports: PyTorch's
  ``torch.cuda.get_device_properties`` (``torch``), the CUDA driver's
  ``cuDeviceGetAttribute`` (``driver``: the programs an SM holds, the shared memory the
  driver reserves per program) and Triton's view (``triton``);
* ``kernels``: what Triton's compiler reported for four gpuperf kernels: warps, registers
  and spills per thread, shared memory per program, constexprs, the layouts of the Triton
  GPU IR and the programs the launch ran;
* ``copy_sweep``: a copy kernel's time from 1 MiB to 1 GiB, with L2 flushed before each run
  and replayed in a CUDA graph with nothing in between (buffers that fit stay in L2);
* ``launch``: an empty kernel's host time per launch and its GPU time.

A part that failed is absent and ``failed`` says why; what reads it says so instead.

The HBM bandwidth every number is read against is the GPU's measured copy ceiling
(``hardware.json``: :func:`gpuperf.pages.hardware.ceilings`); the host time of whole calls
comes from the ``host_overhead`` record. :func:`occupancy` is the arithmetic of NVIDIA's
occupancy calculator (``cuda_occupancy.h`` in the CUDA toolkit): registers are allocated per
warp, in units of :data:`REGISTER_UNIT`, out of each of an SM's :data:`SUB_PARTITIONS`
quarters; shared memory per program, with what the driver reserves, in units of
:data:`SHARED_UNIT` bytes.

The renders (``*_table``, :func:`plot_copy_sweep`) take one capture, as
:func:`gpuperf.pages.captures.show` hands it; the readings take the captures shown
(``{gpu: capture}``) and write one block per GPU.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from gpuperf.bench import captures, records
from gpuperf.bench.catalog import HOST_OVERHEAD
from gpuperf.pages import captures as pages_captures
from gpuperf.pages.hardware import Ceilings, ceilings, ceilings_or_none
from gpuperf.pages.plotting import PLOT_STYLE, draw_ceiling, format_rate, short_gpu_name
from gpuperf.pages.prose import Paragraph, and_list, paragraph, percent, times
from gpuperf.pages.report import load
from gpuperf.pages.tables import Cell, Section, number, render

#: The capture this page reads.
NAME = "execution_model"

#: An SM's quarters (processing blocks), each with its own warp scheduler and a quarter of
#: the register file; registers are allocated to a warp out of one quarter. Four on every
#: NVIDIA GPU since Volta (NVIDIA's Hopper architecture whitepaper; ``cuda_occupancy.h``).
SUB_PARTITIONS = 4
#: Registers are allocated to a warp in units of this many (``cuda_occupancy.h``:
#: ``cudaOccRegAllocationGranularity``, 256 from compute capability 3.0 on).
REGISTER_UNIT = 256
#: Shared memory is allocated to a program in units of this many bytes
#: (``cuda_occupancy.h``: ``cudaOccSMemAllocationGranularity``, 128 B on compute
#: capability 8.0 and 9.0; Nsight Compute's block limits on the H100 agree).
SHARED_UNIT = 128

#: The device's limits the page reads, each from PyTorch's properties where they hold it,
#: else from the CUDA driver's attribute: ``key -> (what it is, PyTorch's field, the
#: driver's attribute without CU_DEVICE_ATTRIBUTE_)``.
DEVICE_FIELDS = {
    "sms": ("SMs", "multi_processor_count", "MULTIPROCESSOR_COUNT"),
    "warp_size": ("threads per warp", "warp_size", "WARP_SIZE"),
    "threads_per_sm": (
        "threads resident per SM, at most",
        "max_threads_per_multi_processor",
        "MAX_THREADS_PER_MULTIPROCESSOR",
    ),
    "programs_per_sm": (
        "programs (thread blocks) resident per SM, at most",
        None,
        "MAX_BLOCKS_PER_MULTIPROCESSOR",
    ),
    "threads_per_program": ("threads per program, at most", None, "MAX_THREADS_PER_BLOCK"),
    "registers_per_sm": (
        "32-bit registers per SM",
        "regs_per_multiprocessor",
        "MAX_REGISTERS_PER_MULTIPROCESSOR",
    ),
    "shared_per_sm": (
        "shared memory per SM, at most",
        "shared_memory_per_multiprocessor",
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    ),
    "shared_per_program": (
        "shared memory per program, at most",
        "shared_memory_per_block_optin",
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    ),
    "reserved_shared": (
        "shared memory the driver reserves per program",
        None,
        "RESERVED_SHARED_MEMORY_PER_BLOCK",
    ),
    "l2_bytes": ("L2 cache", "L2_cache_size", "L2_CACHE_SIZE"),
    "memory_bytes": ("HBM", "total_memory", None),
    "sm_clock_khz": ("SM clock", "clock_rate", "CLOCK_RATE"),
    "memory_clock_khz": ("memory clock", "memory_clock_rate", "MEMORY_CLOCK_RATE"),
    "memory_bus_bits": ("memory bus", "memory_bus_width", "GLOBAL_MEMORY_BUS_WIDTH"),
}

#: Bytes per element of the dtypes the kernels part names.
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}

#: The launch part's timings, in the order the table shows them: key -> what was timed.
LAUNCH_ROWS = {
    "host_jit": "host: empty_kernel[(1,)]() (Triton's launch path)",
    "host_compiled": "host: compiled[(1, 1, 1)]() (the compiled kernel's launcher)",
    "round_trip": "host clock: one launch, then torch.cuda.synchronize()",
    "gpu_events": "GPU: between two CUDA events, L2 flushed first",
    "gpu_graph": "GPU: back to back in a CUDA graph",
}
#: The copy sweep's two series: key -> how it was timed, as the chart's legend names it.
COPY_SERIES = {
    "resident": "replayed in a CUDA graph, nothing in between: what is still in L2 is read from there",
    "flushed": "L2 flushed before each run (do_bench, as every benchmark here)",
}
COPY_COLORS = {"resident": "#08306b", "flushed": "#1f77b4"}


# --- the capture ---------------------------------------------------------------------------


def _payload(capture) -> dict:
    """The payload of an ``execution_model`` capture (:func:`gpuperf.pages.captures.capture_payload`)."""
    return pages_captures.capture_payload(capture, NAME)


def _missing_part(capture: dict, part: str) -> str | None:
    """Why ``part`` of the capture is not there (None when it is)."""
    payload = _payload(capture)
    if isinstance(payload.get(part), (dict, list)) and payload[part]:
        return None
    why = (payload.get("failed") or {}).get(part, "not in the capture")
    return f"The {part} part was not captured: {why}"


def _ceilings(capture: dict) -> Ceilings | None:
    """The measured ceilings of the capture's GPU, or None where it has none."""
    return ceilings_or_none(pages_captures.gpu_folder(capture))


def device_value(capture: dict, key: str) -> tuple[int | None, str | None]:
    """``(value, source)`` of one device limit of :data:`DEVICE_FIELDS`: PyTorch's field
    where the capture holds it, else the driver's attribute; ``(None, None)`` when neither
    is there. ``source`` names the call (``'torch: multi_processor_count'``).

    Raises:
        ValueError: ``key`` is not a key of :data:`DEVICE_FIELDS`, or the capture is not
            an ``execution_model`` capture.
    """
    if key not in DEVICE_FIELDS:
        raise ValueError(f"key must be one of {list(DEVICE_FIELDS)}, got {key!r}")
    device = _payload(capture).get("device") or {}
    _, field, attribute = DEVICE_FIELDS[key]
    from_torch = (device.get("torch") or {}).get(field) if field else None
    if isinstance(from_torch, int) and not isinstance(from_torch, bool) and from_torch > 0:
        return from_torch, f"torch: {field}"
    from_driver = (device.get("driver") or {}).get(attribute) if attribute else None
    if isinstance(from_driver, int) and not isinstance(from_driver, bool) and from_driver > 0:
        return from_driver, f"driver: {attribute}"
    return None, None


def _bytes(n: float) -> str:
    """``'50 MiB'``, ``'227 KiB'``, ``'79.2 GiB'``, ``'1.5 MiB'``, ``'512 B'``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            return f"{value:,.0f} {unit}" if value == round(value) or value >= 100 else f"{value:,.1f} {unit}"
    return f"{n:,.0f} B"


def _device_text(key: str, value: int, warp_size: int | None) -> str:
    if key in ("shared_per_sm", "shared_per_program", "reserved_shared", "l2_bytes", "memory_bytes"):
        return _bytes(value)
    if key == "threads_per_sm" and warp_size:
        return f"{value:,} ({value // warp_size} warps)"
    if key == "registers_per_sm":
        return f"{value:,} ({_bytes(4 * value)})"
    if key.endswith("_khz"):
        return f"{value / 1000:,.0f} MHz"
    if key == "memory_bus_bits":
        return f"{value:,} bits wide"
    return f"{value:,}"


def device_table(capture: dict) -> str:
    """What the GPU holds, as it reports it: one row per limit of :data:`DEVICE_FIELDS` the
    capture holds, with the call it came from. A render for
    :func:`gpuperf.pages.captures.show`.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
    """
    if missing := _missing_part(capture, "device"):
        return missing
    warp_size, _ = device_value(capture, "warp_size")
    section = Section("", ["", "value", "reported by"])
    for key, (what, _, _) in DEVICE_FIELDS.items():
        value, source = device_value(capture, key)
        if value is None:
            continue
        section.rows.append(
            [Cell(what, what), Cell(_device_text(key, value, warp_size), value), Cell(source)]
        )
    return render([section])


# --- occupancy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SMLimits:
    """What one SM holds at once, as the device reports it, and how it allocates.

    Attributes:
        warp_size: threads per warp (32).
        threads: threads resident per SM, at most (2,048 on the H100: 64 warps).
        programs: programs (thread blocks) resident per SM, at most (32 on the H100).
        registers: 32-bit registers per SM (65,536 on the H100).
        shared_bytes: shared memory per SM at its largest carveout, bytes (233,472 on the
            H100); the driver carves the SM's on-chip memory between shared memory and L1.
        reserved_shared: shared memory the driver reserves per program, bytes (1,024).
        program_shared: shared memory one program may have (opt-in), bytes; None: unchecked.
        program_threads: threads one program may have; None: unchecked.
        sub_partitions, register_unit, shared_unit: :data:`SUB_PARTITIONS`,
            :data:`REGISTER_UNIT`, :data:`SHARED_UNIT`.

    Raises:
        TypeError: a field is not an int (or None where allowed).
        ValueError: a field is below 1 (``reserved_shared`` below 0).
    """

    warp_size: int
    threads: int
    programs: int
    registers: int
    shared_bytes: int
    reserved_shared: int = 0
    program_shared: int | None = None
    program_threads: int | None = None
    sub_partitions: int = SUB_PARTITIONS
    register_unit: int = REGISTER_UNIT
    shared_unit: int = SHARED_UNIT

    def __post_init__(self):
        for name, value in vars(self).items():
            if value is None and name in ("program_shared", "program_threads"):
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < (0 if name == "reserved_shared" else 1):
                raise ValueError(
                    f"{name} must be at least {0 if name == 'reserved_shared' else 1}, got {value}"
                )

    @property
    def warps(self) -> int:
        """Warps resident per SM, at most: :attr:`threads` over :attr:`warp_size`."""
        return self.threads // self.warp_size


def sm_limits(capture: dict) -> SMLimits:
    """The :class:`SMLimits` of the capture's GPU, from its ``device`` part.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
        ValueError: the capture lacks a limit occupancy needs (the message names it).
    """
    needed = {
        "warp_size": "warp_size",
        "threads": "threads_per_sm",
        "programs": "programs_per_sm",
        "registers": "registers_per_sm",
        "shared_bytes": "shared_per_sm",
    }
    found = {name: device_value(capture, key)[0] for name, key in needed.items()}
    lacking = [needed[name] for name, value in found.items() if value is None]
    if lacking:
        raise ValueError(f"the capture's device part lacks {lacking}, which occupancy needs")
    return SMLimits(
        **found,
        reserved_shared=device_value(capture, "reserved_shared")[0] or 0,
        program_shared=device_value(capture, "shared_per_program")[0],
        program_threads=device_value(capture, "threads_per_program")[0],
    )


@dataclass(frozen=True)
class Occupancy:
    """How many programs of one kernel an SM holds at once, and what limits it.

    Attributes:
        num_warps, registers, shared_bytes: the kernel's warps per program, registers per
            thread and shared memory per program (bytes), as its compiler reported them.
        registers_per_warp: registers allocated to each warp (rounded up to the unit).
        shared_per_program: shared memory allocated to each program, bytes (what the driver
            reserves included, rounded up to the unit).
        by_warps, by_registers, by_shared, by_programs: the programs per SM each limit
            allows (None: that resource does not limit it).
        programs: programs resident per SM: the least of the limits (0: it cannot launch).
        warps: warps resident per SM.
        fraction: :attr:`warps` over the most an SM holds (the occupancy).
        limiters: the limits that set :attr:`programs`.
    """

    num_warps: int
    registers: int
    shared_bytes: int
    registers_per_warp: int
    shared_per_program: int
    by_warps: int
    by_registers: int | None
    by_shared: int | None
    by_programs: int
    programs: int
    warps: int
    fraction: float
    limiters: tuple[str, ...]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(num_warps: int, registers: int, shared_bytes: int, limits: SMLimits) -> Occupancy:
    """Programs (and warps) of a kernel that one SM holds at once, as NVIDIA's occupancy
    calculator computes them (``cuda_occupancy.h``): the least of four limits.

    * warps: the SM's warps over the program's;
    * registers: ``registers * warp_size`` per warp, rounded up to ``register_unit``; each
      of the SM's ``sub_partitions`` quarters holds a quarter of the registers, so as many
      warps as fit in a quarter, times the quarters, over the program's warps;
    * shared memory: the program's, plus what the driver reserves, rounded up to
      ``shared_unit``, into the SM's shared memory at its largest carveout;
    * programs: the most an SM holds, whatever their size.

    A program that needs more threads or shared memory than one program may have fits 0 times.

    Args:
        num_warps: warps per program (Triton's ``num_warps``).
        registers: registers per thread (Triton's ``compiled.n_regs``; 0: none counted).
        shared_bytes: shared memory per program, bytes (``compiled.metadata.shared``).
        limits: the SM's (:func:`sm_limits`).

    Raises:
        TypeError: an argument is not an int, or ``limits`` is not an :class:`SMLimits`.
        ValueError: ``num_warps`` is below 1, or ``registers`` or ``shared_bytes`` below 0.
    """
    for name, value in (("num_warps", num_warps), ("registers", registers), ("shared_bytes", shared_bytes)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < (1 if name == "num_warps" else 0):
            raise ValueError(f"{name} must be at least {1 if name == 'num_warps' else 0}, got {value}")
    if not isinstance(limits, SMLimits):
        raise TypeError(f"limits must be an SMLimits, got {type(limits).__name__}")
    per_warp = _round_up(registers * limits.warp_size, limits.register_unit)
    per_program = _round_up(shared_bytes + limits.reserved_shared, limits.shared_unit)
    by_warps = limits.warps // num_warps
    by_registers = None
    if per_warp:
        warps_per_quarter = limits.registers // limits.sub_partitions // per_warp
        by_registers = warps_per_quarter * limits.sub_partitions // num_warps
    by_shared = limits.shared_bytes // per_program if per_program else None
    allowed = {
        "warps": by_warps,
        "registers": by_registers,
        "shared memory": by_shared,
        "programs per SM": limits.programs,
    }
    too_many_threads = (
        limits.program_threads is not None and num_warps * limits.warp_size > limits.program_threads
    )
    too_much_shared = limits.program_shared is not None and shared_bytes > limits.program_shared
    if too_many_threads or too_much_shared:
        programs = 0
        limiters = ("threads per program",) if too_many_threads else ("shared memory per program",)
    else:
        programs = min(v for v in allowed.values() if v is not None)
        limiters = tuple(name for name, v in allowed.items() if v == programs)
    warps = programs * num_warps
    return Occupancy(
        num_warps=num_warps,
        registers=registers,
        shared_bytes=shared_bytes,
        registers_per_warp=per_warp,
        shared_per_program=per_program,
        by_warps=by_warps,
        by_registers=by_registers,
        by_shared=by_shared,
        by_programs=limits.programs,
        programs=programs,
        warps=warps,
        fraction=warps / limits.warps,
        limiters=limiters,
    )


def _programs(n: int) -> str:
    return f"{n} program" + ("" if n == 1 else "s")


def explain(occ: Occupancy, limits: SMLimits) -> list[str]:
    """The arithmetic of ``occ`` step by step, each limit on its own lines (at most 86
    characters each), ending in the programs per SM it allows, then the result."""
    w, q = limits.warp_size, limits.sub_partitions
    lines = [f"warps:      {limits.warps} per SM // {occ.num_warps} per program = {_programs(occ.by_warps)}"]
    if occ.by_registers is None:
        lines.append("registers:  none counted: no limit")
    else:
        quarter = limits.registers // q
        per_quarter = quarter // occ.registers_per_warp
        lines += [
            f"registers:  {occ.registers} per thread x {w} = {occ.registers * w:,} per warp, "
            f"in units of {limits.register_unit}: {occ.registers_per_warp:,}",
            f"            {limits.registers:,} per SM / {q} quarters = {quarter:,} per quarter "
            f"// {occ.registers_per_warp:,} = {per_quarter} warps",
            f"            {per_quarter} x {q} = {per_quarter * q} warps per SM // {occ.num_warps} per "
            f"program = {_programs(occ.by_registers)}",
        ]
    shared = f"{occ.shared_bytes:,} B"
    if limits.reserved_shared:
        shared += f" + {limits.reserved_shared:,} B reserved"
    if occ.by_shared is None:
        lines.append("shared:     none: no limit")
    else:
        lines += [
            f"shared:     {shared}, in units of {limits.shared_unit} B: {occ.shared_per_program:,} B",
            f"            {limits.shared_bytes:,} B per SM // {occ.shared_per_program:,} B "
            f"= {_programs(occ.by_shared)}",
        ]
    lines.append(f"programs:   at most {occ.by_programs} per SM")
    if occ.programs == 0:
        lines.append(f"resident:   none: the program needs more {occ.limiters[0]} than one may have")
    else:
        lines += [
            f"resident:   {_programs(occ.programs)} x {occ.num_warps} warps = {occ.warps} of "
            f"{limits.warps} warps: {percent(occ.fraction)} occupancy,",
            f"            set by {and_list(occ.limiters)}",
        ]
    return lines


def _kernels(capture: dict) -> list[dict]:
    """The kernels part's entries that were read (an entry with an ``error`` left out)."""
    return [k for k in _payload(capture).get("kernels") or [] if "error" not in k]


def _kernel_occupancy(kernel: dict, limits: SMLimits) -> Occupancy:
    return occupancy(kernel["num_warps"], kernel["registers"] or 0, kernel["shared_bytes"] or 0, limits)


def _limits_or_why(capture: dict) -> tuple[SMLimits | None, str | None]:
    missing = _missing_part(capture, "device")
    if missing:
        return None, missing
    try:
        return sm_limits(capture), None
    except ValueError as err:
        return None, f"Occupancy cannot be computed: {err}"


def occupancy_table(capture: dict) -> str:
    """Per gpuperf kernel read: its warps, registers per thread and shared memory per
    program, the programs per SM each limit allows, the programs resident, the occupancy,
    the programs its launch ran and the waves they make (programs over the SMs times the
    programs each holds). A render for :func:`gpuperf.pages.captures.show`.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
    """
    missing = _missing_part(capture, "kernels")
    limits, why = _limits_or_why(capture)
    if missing or why:
        return missing or why
    sms, _ = device_value(capture, "sms")
    header = ["kernel", "warps", "registers", "shared", "by warps", "by registers", "by shared", "resident"]
    header += ["occupancy", "grid", "waves"]
    section = Section("programs per SM allowed by each limit, and resident", header)
    for kernel in _kernels(capture):
        occ = _kernel_occupancy(kernel, limits)
        grid = kernel.get("programs")
        waves = grid / (sms * occ.programs) if grid and sms and occ.programs else None
        optional = lambda v: Cell("-") if v is None else Cell(str(v), v)
        section.rows.append(
            [
                Cell(f"{kernel['name']} ({kernel['kernel']})", kernel["name"]),
                Cell(str(occ.num_warps), occ.num_warps),
                Cell(str(occ.registers), occ.registers),
                Cell(_bytes(occ.shared_bytes), occ.shared_bytes),
                Cell(str(occ.by_warps), occ.by_warps),
                optional(occ.by_registers),
                optional(occ.by_shared),
                Cell(str(occ.programs), occ.programs),
                Cell(percent(occ.fraction), occ.fraction),
                optional(grid) if grid is None else Cell(f"{grid:,}", grid),
                number(waves, ",.1f"),
            ]
        )
    failed = [f"{k['name']}: {k['error']}" for k in _payload(capture).get("kernels") or [] if "error" in k]
    return render([section], notes=[f"not read: {f}" for f in failed])


def occupancy_worked(shown: Mapping[str, dict]) -> str:
    """For each GPU's capture, each kernel's occupancy worked out limit by limit
    (:func:`explain`), under the kernel's call.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """

    def write(capture: dict) -> list[str]:
        limits, why = _limits_or_why(capture)
        if why or _missing_part(capture, "kernels"):
            return [why or _missing_part(capture, "kernels")]
        lines = []
        for kernel in _kernels(capture):
            occ = _kernel_occupancy(kernel, limits)
            lines += [f"{kernel['kernel']}, launched by {kernel['call']}:"]
            lines += [f"  {line}" for line in explain(occ, limits)]
        return lines

    return pages_captures.per_gpu(shown, write)


def _metric(launch: dict, name: str):
    value = (launch.get("metrics") or {}).get(name, {}).get("value")
    return value if isinstance(value, (int, float)) else None


def ncu_agreement(shown: Mapping[str, dict]) -> str:
    """For each GPU's capture, :func:`occupancy` computed from what Nsight Compute reported
    for each kernel it profiled on the same GPU (the profiling guide's ``ncu_kernels``
    capture: registers per thread, threads per program, shared memory per program) beside
    Nsight Compute's own *Theoretical Occupancy*: the arithmetic checked against the tool.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """

    def write(capture: dict) -> list[str]:
        limits, why = _limits_or_why(capture)
        if why:
            return [why]
        ncu, _ = pages_captures.load("ncu_kernels", pages_captures.gpu_folder(capture))
        if ncu is None:
            return ["No Nsight Compute capture of this GPU to compare with."]
        lines = []
        for launch in ncu["payload"].get("launches") or []:
            threads, regs = _metric(launch, "Block Size"), _metric(launch, "Registers Per Thread")
            theirs = _metric(launch, "Theoretical Occupancy")
            if threads is None or regs is None or theirs is None:
                continue
            shared = (_metric(launch, "Dynamic Shared Memory Per Block") or 0) + (
                _metric(launch, "Static Shared Memory Per Block") or 0
            )
            warps = math.ceil(int(threads) / limits.warp_size)
            ours = occupancy(warps, int(regs), int(shared), limits)
            name = launch.get("op") or launch.get("kernel", "?")[:40]
            lines.append(
                f"{name}: {int(threads)} threads, {int(regs)} registers, {_bytes(shared)} shared: "
                f"Nsight Compute {theirs:g}%, the arithmetic {100 * ours.fraction:g}%"
            )
        return lines or ["The Nsight Compute capture holds no occupancy to compare with."]

    return pages_captures.per_gpu(shown, write)


# --- a program on the chip ---------------------------------------------------------------------

_BLOCKED = re.compile(
    r"sizePerThread = \[([\d, ]+)\], threadsPerWarp = \[([\d, ]+)\], warpsPerCTA = \[([\d, ]+)\]"
)


def _product(text: str) -> int:
    return math.prod(int(v) for v in text.split(","))


def program_reading(shown: Mapping[str, dict], name: str = "vector_add") -> str:
    """For each GPU's capture, how the kernel ``name`` ran: its grid of programs, the
    threads of each, and how Triton's compiler spread a program's block over them (the
    first ``#blocked`` layout of its Triton GPU IR: elements per thread, threads per warp,
    warps per program).

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """

    def write(capture: dict) -> list[str]:
        missing = _missing_part(capture, "kernels")
        kernel = next((k for k in _kernels(capture) if k["name"] == name), None)
        if missing or kernel is None:
            return [missing or f"The capture did not read {name}."]
        warp_size, _ = device_value(capture, "warp_size")
        threads = kernel["num_warps"] * (warp_size or 32)
        programs = "" if kernel.get("programs") is None else f"{kernel['programs']:,} programs of "
        said = [
            f"{kernel['call']} launched {programs}{kernel['num_warps']} warps ({threads} threads) "
            f"each, with the constexprs {kernel['constexprs']}."
        ]
        layout = next((line for line in kernel.get("layouts") or [] if _BLOCKED.search(line)), None)
        if layout is None:
            return [*textwrap.wrap(" ".join(said), 88), "Its Triton GPU IR holds no blocked layout."]
        per_thread, per_warp, warps = (_product(g) for g in _BLOCKED.search(layout).groups())
        said.append(
            f"Its layout gives {per_thread} elements per thread x {per_warp} threads per warp x {warps} "
            f"warps = {per_thread * per_warp * warps:,} elements: each thread holds {per_thread} "
            f"neighbouring elements of each tensor, and a warp covers {per_thread * per_warp} neighbours."
        )
        element = ELEMENT_BYTES.get(kernel.get("dtype", ""))
        if element:
            said.append(
                f"In {kernel['dtype']}, {per_thread} x {element} bytes = {per_thread * element} bytes per "
                f"thread: one vector load; {per_thread * per_warp * element:,} contiguous bytes per warp."
            )
        wrapped = textwrap.wrap(layout, 88, subsequent_indent="    ")
        return [*textwrap.wrap(" ".join(said), 88), "The layout, from the Triton GPU IR:", *wrapped]

    return pages_captures.per_gpu(shown, write)


# --- the memory hierarchy -------------------------------------------------------------------------


def _rate(n_bytes: int, timing: dict) -> float:
    """GB/s of a copy of ``n_bytes`` (read and written: twice that moved) taking ``timing``'s median."""
    return 2 * n_bytes / (timing["median"] * 1e-3) / 1e9


def _sweep(capture: dict) -> list[dict]:
    return sorted(_payload(capture)["copy_sweep"]["sizes"], key=lambda s: s["bytes"])


def _l2(capture: dict) -> int | None:
    return device_value(capture, "l2_bytes")[0] or capture["provenance"].get("l2_bytes")


def _resident_peak(capture: dict) -> tuple[dict, float] | None:
    """The size whose source and destination fit in L2 together with the highest rate
    replayed in a graph, and that rate (GB/s); None without such a size."""
    l2 = _l2(capture)
    fitting = [s for s in _sweep(capture) if l2 and 2 * s["bytes"] <= l2]
    if not fitting:
        return None
    best = max(fitting, key=lambda s: _rate(s["bytes"], s["resident"]))
    return best, _rate(best["bytes"], best["resident"])


def hierarchy_table(capture: dict) -> str:
    """The four levels of memory a kernel reads: registers, shared memory, L2 and HBM, with
    their sizes as the device reports them (per SM and on the whole chip) and the bandwidth
    measured for those this site measures: L2 from the copy sweep (its best rate with both
    buffers resident), HBM from the GPU's ceilings (``hardware.json``). A render for
    :func:`gpuperf.pages.captures.show`.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
    """
    if missing := _missing_part(capture, "device"):
        return missing
    value = lambda key: device_value(capture, key)[0]
    sms, not_here = value("sms"), "not measured here"
    rows = []
    if value("registers_per_sm"):
        per_sm = 4 * value("registers_per_sm")
        chip = f", {_bytes(per_sm * sms)} on the chip" if sms else ""
        rows.append(["registers", "a thread's values", f"{_bytes(per_sm)} per SM{chip}", not_here])
    if value("shared_per_sm"):
        per_sm = value("shared_per_sm")
        chip = f", {_bytes(per_sm * sms)} on the chip" if sms else ""
        rows.append(["shared memory", "a program's tiles", f"up to {_bytes(per_sm)} per SM{chip}", not_here])
    l2_rate = "-"
    if not _missing_part(capture, "copy_sweep") and (peak := _resident_peak(capture)):
        size, rate = peak
        l2_rate = (
            f"at least {format_rate(rate, 'GB/s')}: a copy of {_bytes(size['bytes'])}, both buffers "
            "in L2, each launch's cost included"
        )
    if _l2(capture):
        rows.append(["L2", "what every SM read or wrote lately", _bytes(_l2(capture)), l2_rate])
    hbm = _ceilings(capture)
    hbm_rate = "-"
    if hbm is not None:
        hbm_rate = f"{format_rate(hbm.copy_gbps, 'GB/s')}: {hbm.label('copy_gbps')}, 1 GiB"
        if "stream_gbps" in hbm.measured:
            hbm_rate += f"; {format_rate(hbm.memory_gbps, 'GB/s')}: {hbm.label('stream_gbps')}"
    if value("memory_bytes"):
        rows.append(["HBM", "every tensor", _bytes(value("memory_bytes")), hbm_rate])
    section = Section("", ["level", "holds", "size", "bandwidth, bytes read + written"])
    section.rows = [[Cell(text) for text in row] for row in rows]
    return render([section])


def _mib_tick(n_bytes: float) -> str:
    return _bytes(n_bytes).replace(".0 ", " ")


def copy_sweep_figure(capture: dict, hbm: Ceilings | None = None, notes=()):
    """Copy bandwidth (bytes read + written per second) against the size of the copy's
    source, log2, for both series of :data:`COPY_SERIES` with their 20th-80th percentile
    bands; the sizes whose source and destination fit in L2 together shaded; the GPU's
    measured copy ceiling (``hbm``, default its ``hardware.json``) drawn with the % of it
    on the right axis; the capture's and the ceiling's provenance under the plot.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
        KeyError: it has no ``copy_sweep`` part.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter

    payload = _payload(capture)
    if "copy_sweep" not in payload:
        raise KeyError("the capture has no copy_sweep part")
    sizes = _sweep(capture)
    hbm = hbm if hbm is not None else _ceilings(capture)
    xs = [s["bytes"] for s in sizes]
    lines = [f"copies: {captures.caption(capture)}"]
    if hbm is not None:
        lines.append(f"ceiling: {records.caption(hbm.provenance)}")
    wrapped = [w for line in (*lines, *notes) for w in textwrap.wrap(line, 115, subsequent_indent="    ")]
    # Inches, top to bottom: the title, the axes, their tick labels and x label, the legend
    # (one entry a row), the provenance; the legend and the caption below the axes, apart.
    width, top, axes_h, below, row, line = 8.0, 0.45, 3.6, 0.62, 0.2, 0.15
    legend_h = row * (len(COPY_SERIES) + 2) + 0.1
    caption_h = line * len(wrapped) + 0.1
    height = top + axes_h + below + legend_h + caption_h
    with plt.rc_context(PLOT_STYLE):
        fig, ax = plt.subplots(figsize=(width, height), facecolor="white")
        fig.subplots_adjust(
            left=0.75 / width,
            right=1 - 0.75 / width,
            top=1 - top / height,
            bottom=(below + legend_h + caption_h) / height,
        )
        ax.set_facecolor("white")
        top = 0.0
        for key, label in COPY_SERIES.items():
            mid = [_rate(s["bytes"], s[key]) for s in sizes]
            # The slowest run (p80 of the time) is the lowest rate.
            low = [2 * s["bytes"] / (s[key]["p80"] * 1e-3) / 1e9 for s in sizes]
            high = [2 * s["bytes"] / (s[key]["p20"] * 1e-3) / 1e9 for s in sizes]
            ax.plot(xs, mid, marker="o", ms=3.5, lw=1.8, color=COPY_COLORS[key], label=label)
            ax.fill_between(xs, low, high, color=COPY_COLORS[key], alpha=0.2, lw=0)
            top = max(top, *high)
        l2 = _l2(capture)
        if l2:
            ax.axvspan(
                min(xs) / 1.2,
                l2 / 2,
                color="#f2e6b3",
                alpha=0.5,
                lw=0,
                label=f"source + destination ≤ the L2 size the GPU reports ({_bytes(l2)})",
            )
        if hbm is not None:
            c = hbm.copy_gbps
            top = max(top, c)
            draw_ceiling(
                ax, c, f"{hbm.label('copy_gbps')}, measured: {format_rate(c, 'GB/s')}", "the copy bandwidth"
            )
        ax.set_xscale("log", base=2)
        ticks = [x for x in xs if x & (x - 1) == 0 and (x.bit_length() - 1) % 2 == 0]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.set_xticklabels([_mib_tick(x) for x in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(min(xs) / 1.2, max(xs) * 1.2)
        ax.set_ylim(0, top * 1.12)
        ax.set_xlabel(
            f"size of the copy's source ({payload['copy_sweep'].get('dtype', '')}; "
            "the destination is as large)"
        )
        ax.set_ylabel("GB/s, bytes read + written")
        ax.grid(True, which="major", color="#dddddd", lw=0.6)
        ax.set_axisbelow(True)
        fig.legend(
            loc="upper center",
            bbox_to_anchor=(0.5, (legend_h + caption_h) / height),
            ncol=1,
            frameon=False,
            fontsize=8.5,
        )
        ax.set_title(
            "A copy kernel's bandwidth as its buffers outgrow L2: "
            + short_gpu_name(capture["provenance"]["gpu"])
        )
        for i, text in enumerate(wrapped):
            fig.text(0.01, (caption_h - 0.05 - line * i) / height, text, fontsize=7.5, va="top")
    return fig


def plot_copy_sweep(capture: dict) -> str | None:
    """Draw :func:`copy_sweep_figure` of the capture (a render for
    :func:`gpuperf.pages.captures.show`, which prints the notes and provenance); say why
    instead when the capture has no copy sweep.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
    """
    if missing := _missing_part(capture, "copy_sweep"):
        return missing
    copy_sweep_figure(capture)
    return None


def memory_reading(shown: Mapping[str, dict]) -> str:
    """For each GPU's capture, what the copy sweep says: the best rate replayed with both
    buffers in L2 against the measured HBM copy ceiling; the rates at the largest size; the
    smallest flushed copy's time against the time its bytes take at the ceiling and against
    an empty kernel timed the same way (the launch part); and HBM's peak from its
    interface's clock and width (two transfers per clock) against the ceiling.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """

    def write(capture: dict) -> list[str]:
        if missing := _missing_part(capture, "copy_sweep"):
            return [missing]
        hbm, sizes, peak = _ceilings(capture), _sweep(capture), _resident_peak(capture)
        ceiling = format_rate(hbm.copy_gbps, "GB/s") if hbm is not None else None
        said = []
        if peak is not None:
            size, rate = peak
            said.append(
                f"Replayed with both buffers in the {_bytes(_l2(capture))} L2, the copy peaked at "
                f"{format_rate(rate, 'GB/s')} with a {_bytes(size['bytes'])} source"
                + (f": {times(rate / hbm.copy_gbps)} the {ceiling} of a 1 GiB copy from HBM." if hbm else ".")
            )
            said += _launch_share(capture, size)
            said += _l2_shortfall(capture, size, hbm)
        last = sizes[-1]
        graph, flushed = _rate(last["bytes"], last["resident"]), _rate(last["bytes"], last["flushed"])
        said.append(
            f"At {_bytes(last['bytes'])}, far past L2, it ran at {format_rate(graph, 'GB/s')} replayed "
            f"and {format_rate(flushed, 'GB/s')} flushed"
            + (
                f" ({percent(graph / hbm.copy_gbps)} and {percent(flushed / hbm.copy_gbps)} of {ceiling})."
                if hbm
                else "."
            )
        )
        first = sizes[0]
        if hbm is not None:
            floor_us = 2 * first["bytes"] / (hbm.copy_gbps * 1e9) * 1e6
            sentence = (
                f"With L2 flushed, the {_bytes(first['bytes'])} copy took "
                f"{first['flushed']['median'] * 1e3:,.1f} µs, of which moving its "
                f"{_bytes(2 * first['bytes'])} at {ceiling} accounts for {floor_us:,.1f} µs"
            )
            empty = (
                _launch_timings(capture).get("gpu_events") if not _missing_part(capture, "launch") else None
            )
            if empty:
                sentence += f"; an empty kernel timed the same way takes {empty['median'] * 1e3:,.1f} µs"
            said.append(sentence + ".")
        clock, _ = device_value(capture, "memory_clock_khz")
        bus, _ = device_value(capture, "memory_bus_bits")
        peak_gbps = 2 * clock * 1e3 * bus / 8 / 1e9 if clock and bus else None
        # A reported clock that would put the measured copy above the interface's peak is not
        # the data rate this formula assumes: say nothing rather than something false.
        if peak_gbps and hbm is not None and hbm.copy_gbps <= peak_gbps:
            said.append(
                f"HBM's interface moves at most 2 x {clock / 1000:,.0f} MHz x {bus:,} bits / 8 = "
                f"{format_rate(peak_gbps, 'GB/s')} (two transfers per clock); the 1 GiB copy reached "
                f"{percent(hbm.copy_gbps / peak_gbps)} of it."
            )
        return textwrap.wrap(" ".join(said), 88)

    return pages_captures.per_gpu(shown, write)


def _l2_shortfall(capture: dict, peak: dict, hbm: Ceilings | None) -> list[str]:
    """A sentence on the sizes past the replayed copy's peak whose two buffers still fit in
    the L2 the GPU reports: their rates, the largest one's against the HBM ceiling, and the
    share of L2 its buffers fill; nothing when no such size was timed."""
    l2 = _l2(capture)
    beyond = [s for s in _sweep(capture) if s["bytes"] > peak["bytes"] and 2 * s["bytes"] <= l2]
    if not beyond:
        return []
    rates = [
        f"{format_rate(_rate(s['bytes'], s['resident']), 'GB/s')} with a {_bytes(s['bytes'])} source"
        for s in beyond
    ]
    largest = beyond[-1]
    against = ""
    if hbm is not None:
        against = (
            f" ({percent(_rate(largest['bytes'], largest['resident']) / hbm.copy_gbps)} of the "
            f"{hbm.label('copy_gbps')}, a 1 GiB copy from HBM)"
        )
    return [
        f"Past the peak the rate falls while both buffers still fit in the reported L2: {and_list(rates)}"
        f"{against}, whose two buffers would fill {percent(2 * largest['bytes'] / l2)} of it."
    ]


def _launch_share(capture: dict, peak: dict) -> list[str]:
    """A sentence on how much of each peak copy's time in the graph an empty kernel takes in
    a graph too (the launch part, one program): that much of it is any kernel's cost, so L2
    moved the bytes faster than the copy's rate; nothing without the launch part."""
    if _missing_part(capture, "launch"):
        return []
    empty = _launch_timings(capture).get("gpu_graph")
    if not empty:
        return []
    copy_us, empty_us = peak["resident"]["median"] * 1e3, empty["median"] * 1e3
    return [
        f"The peak rate counts each copy's whole {copy_us:,.2f} µs in the graph, of which an empty kernel "
        f"replayed the same way takes {empty_us:,.2f} µs ({percent(empty_us / copy_us)}): L2 itself "
        "moves the bytes faster than that."
    ]


# --- what a launch costs -----------------------------------------------------------------------


def _launch_timings(capture: dict) -> dict:
    """``{key of LAUNCH_ROWS: timing}`` of the launch part; ``gpu_graph`` is one program's."""
    launch = _payload(capture)["launch"]
    found = {k: launch[k] for k in LAUNCH_ROWS if isinstance(launch.get(k), dict)}
    one = next((g for g in launch.get("grids") or [] if g.get("programs") == 1), None)
    if one is not None:
        found["gpu_graph"] = one["gpu_graph"]
    return found


def launch_table(capture: dict) -> str:
    """The empty kernel's launch, each way it was timed (:data:`LAUNCH_ROWS`): the median
    and the 20th-80th percentiles in µs, and the bytes HBM moves in that time at the GPU's
    measured copy bandwidth; then its GPU time per launch in a CUDA graph as the grid grows.
    A render for :func:`gpuperf.pages.captures.show`.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``execution_model`` capture.
    """
    if missing := _missing_part(capture, "launch"):
        return missing
    hbm = _ceilings(capture)
    moved = "HBM moves meanwhile" + (f" (at {format_rate(hbm.copy_gbps, 'GB/s')})" if hbm else "")
    section = Section("one empty kernel, one program", ["timed", "µs", "p20-p80 µs", moved])
    for key, timing in _launch_timings(capture).items():
        us = timing["median"] * 1e3
        bytes_moved = Cell("-") if hbm is None else Cell(_bytes(hbm.copy_gbps * 1e9 * us * 1e-6), us)
        section.rows.append(
            [
                Cell(LAUNCH_ROWS[key]),
                Cell(f"{us:,.2f}", us),
                Cell(f"{timing['p20'] * 1e3:,.2f}-{timing['p80'] * 1e3:,.2f}"),
                bytes_moved,
            ]
        )
    grids = Section(
        "the same kernel over more programs, back to back in a CUDA graph", ["programs", "GPU µs per launch"]
    )
    for grid in _payload(capture)["launch"].get("grids") or []:
        us = grid["gpu_graph"]["median"] * 1e3
        grids.rows.append([Cell(f"{grid['programs']:,}", grid["programs"]), Cell(f"{us:,.2f}", us)])
    return render([section, grids])


def launch_reading(shown: Mapping[str, dict]) -> str:
    """For each GPU's capture: the empty kernel's host time per launch against its GPU time
    (how many launches' worth of GPU time one launch costs the host), the bytes HBM moves in
    the host's time, what each extra program costs on the GPU, and what a whole call of a
    real op costs the host (the ``host_overhead`` record of the same GPU, when it has one).

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """

    def write(capture: dict) -> list[str]:
        if missing := _missing_part(capture, "launch"):
            return [missing]
        timings, hbm, said = _launch_timings(capture), _ceilings(capture), []
        host, gpu = timings.get("host_jit"), timings.get("gpu_graph")
        if host and gpu:
            host_us, gpu_us = host["median"] * 1e3, gpu["median"] * 1e3
            moved = f", time in which HBM moves {_bytes(hbm.copy_gbps * 1e3 * host_us)}" if hbm else ""
            said.append(
                f"Launching the empty kernel through kernel[grid] takes the host {host_us:,.1f} µs{moved}; "
                f"the GPU runs it in {gpu_us:,.2f} µs when launches come back to back: one launch "
                f"costs the host {times(host_us / gpu_us, 0)} what it costs the GPU."
            )
        compiled = timings.get("host_compiled")
        if host and compiled:
            launcher = f"the compiled kernel's own launcher takes {compiled['median'] * 1e3:,.1f} µs."
            if compiled["median"] < host["median"] / 2:
                said.append(f"Most of the host's time is Triton's Python: {launcher}")
            else:
                said.append(launcher[0].upper() + launcher[1:])
        grids = sorted(_payload(capture)["launch"].get("grids") or [], key=lambda g: g["programs"])
        if len(grids) > 1 and grids[0]["programs"] == 1:
            big = grids[-1]
            extra = (
                (big["gpu_graph"]["median"] - grids[0]["gpu_graph"]["median"]) * 1e6 / (big["programs"] - 1)
            )
            said.append(
                f"Programs are cheap once launched: {big['programs']:,} empty programs took "
                f"{big['gpu_graph']['median'] * 1e3:,.1f} µs, {extra:,.2f} ns per program beyond the first."
            )
        record = load(HOST_OVERHEAD, pages_captures.gpu_folder(capture))
        if record.record is not None:
            torch_us, ours_us = record.values("torch").get("vector_add"), record.values().get("vector_add")
            if torch_us and ours_us:
                said.append(
                    f"A whole call costs more than its launch: the host_overhead record times PyTorch's "
                    f"addition at {torch_us:,.1f} µs of host time per call and gpuperf's vector_add at "
                    f"{ours_us:,.1f} µs (the profiling guide has every op)."
                )
        return textwrap.wrap(" ".join(said), 88) + [note for note in record.notes]

    return pages_captures.per_gpu(shown, write)


# --- the opening paragraph ---------------------------------------------------------------------------


def _chip_sentence(capture: dict) -> str | None:
    value = lambda key: device_value(capture, key)[0]
    sms, threads, warp, programs = (
        value("sms"),
        value("threads_per_sm"),
        value("warp_size"),
        value("programs_per_sm"),
    )
    if not (sms and threads and warp and programs):
        return None
    extra = ""
    if value("registers_per_sm") and value("shared_per_sm"):
        extra = (
            f", sharing {_bytes(4 * value('registers_per_sm'))} of registers and up to "
            f"{_bytes(value('shared_per_sm'))} of shared memory"
        )
    return (
        f"A kernel runs on the {short_gpu_name(capture['provenance']['gpu'])}'s {sms} SMs as programs "
        f"of warps: each SM holds at most {threads:,} threads ({threads // warp} warps of {warp}) in at "
        f"most {programs} programs at once{extra}."
    )


def _occupancy_sentence(capture: dict) -> str | None:
    limits, why = _limits_or_why(capture)
    kernels = {k["name"]: k for k in _kernels(capture)}
    if why or "matmul" not in kernels:
        return None
    matmul = kernels["matmul"]
    occ = _kernel_occupancy(matmul, limits)
    dtype = f"{matmul['dtype']} " if matmul.get("dtype") else ""
    sentence = (
        f"gpuperf's {dtype}matmul needs {occ.registers} registers per thread and {_bytes(occ.shared_bytes)} "
        f"of shared memory per program, so an SM holds {_programs(occ.programs)} of it at once: "
        f"{percent(occ.fraction)} occupancy"
    )
    if "vector_add" in kernels:
        sentence += (
            f", where vector_add reaches {percent(_kernel_occupancy(kernels['vector_add'], limits).fraction)}"
        )
    return sentence + "."


def in_one_paragraph() -> Paragraph:
    """The guide's headline, from the reference GPU's capture and ceilings: the SMs and what
    each holds, how much faster than HBM a copy runs from L2, the matmul's occupancy, and
    what an empty launch costs the host and the GPU. Without the capture, the GPU's size
    from its ceilings' record, with the capture's note.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`, with a note when the capture is missing
        or stale.
    """
    capture, notes = pages_captures.load(NAME)
    try:
        hbm = ceilings(records.reference_gpu())
    except FileNotFoundError as err:
        hbm, notes = None, [*notes, f"MISSING: {err}"]
    sentences = []
    if capture is None:
        if hbm is not None:
            p = hbm.provenance
            sentences.append(
                f"The {hbm.name} runs a kernel on {p['sm_count']} SMs, beside {_bytes(p['l2_bytes'])} of L2 "
                f"and {p['memory_gib']} GiB of HBM, which a 1 GiB copy crosses at "
                f"{format_rate(hbm.copy_gbps, 'GB/s')}."
            )
        return paragraph(*sentences, notes=notes)
    payload = _payload(capture)
    if "device" in payload:
        sentences.append(_chip_sentence(capture) or "")
    if "copy_sweep" in payload and (peak := _resident_peak(capture)) and hbm is not None:
        faster = peak[1] > hbm.copy_gbps
        sentences.append(
            f"Data that stays in the {_bytes(_l2(capture))} L2 "
            + ("moves faster than HBM allows" if faster else "moves no faster than HBM here")
            + f": a copy replayed with both buffers there peaked at {format_rate(peak[1], 'GB/s')}, "
            f"against {format_rate(hbm.copy_gbps, 'GB/s')} for a 1 GiB copy from HBM."
        )
    if "kernels" in payload:
        sentences.append(_occupancy_sentence(capture) or "")
    if "launch" in payload:
        timings = _launch_timings(capture)
        host, gpu = timings.get("host_jit"), timings.get("gpu_graph")
        if host and gpu:
            moved = f": time in which HBM moves {_bytes(hbm.copy_gbps * 1e6 * host['median'])}" if hbm else ""
            sentences.append(
                f"Launching an empty Triton kernel costs the host {host['median'] * 1e3:,.1f} µs and the GPU "
                f"{gpu['median'] * 1e3:,.2f} µs{moved}."
            )
    return paragraph(*sentences, notes=notes)


__all__ = [
    "DEVICE_FIELDS",
    "NAME",
    "Occupancy",
    "SMLimits",
    "copy_sweep_figure",
    "device_table",
    "device_value",
    "explain",
    "hierarchy_table",
    "in_one_paragraph",
    "launch_reading",
    "launch_table",
    "memory_reading",
    "ncu_agreement",
    "occupancy",
    "occupancy_table",
    "occupancy_worked",
    "plot_copy_sweep",
    "program_reading",
    "sm_limits",
]
