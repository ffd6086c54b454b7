"""Two ways to time work on this site: GPU time with ``triton.testing.do_bench``, and host time per call.

``do_bench`` records CUDA events around each run, flushes L2 before each one by
writing a 256 MiB buffer, and returns the quantiles we ask for. The first call of
the function is made, and waited for, before timing starts, so compilation
(Triton's JIT, ``torch.compile``, cuBLAS handle creation) is never timed.

Two adjustments keep the host out of the numbers. The events bracket the
launch as well as the kernel, so whenever the host falls behind the GPU its
delay is timed too; ``do_bench`` relies on the L2 flush before each run to give
the host time to enqueue the next launch. Its 256 MiB flush takes about 85 us on
an H100, and a Triton launch through a Python wrapper cost about as much on the
virtual machines these numbers come from, so small kernels flipped between
GPU-bound and host-bound timings from run to run (a 8 us softmax timed at 25-135
us between its 20th and 80th percentiles). So:

* the flush buffer is :data:`FLUSH_BYTES` (1 GiB, about 0.35 ms to clear), and
* ``do_bench`` runs :data:`ROUNDS` times; the round with the lowest median is
  kept, since host stalls only ever add time.

The host's launch overhead is real and matters for small kernels; it is
measured separately, never folded into kernel times: :func:`host_time_ms` times
the calls on the host clock while the GPU is kept busy, so that only the host's
own work per call is counted (a benchmark declared with ``timer="host"``).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Milliseconds of warm-up and of timed repetitions handed to ``do_bench``.
WARMUP_MS = 25
REP_MS = 100
#: do_bench rounds per measurement; the round with the lowest median is kept.
ROUNDS = 3
#: Bytes cleared before each timed run, in place of do_bench's 256 MiB.
FLUSH_BYTES = 2**30

TIMING_METHOD = (
    f"triton.testing.do_bench (CUDA events, L2 flushed by clearing {FLUSH_BYTES // 2**20} MiB "
    f"before each run, warmup={WARMUP_MS} ms, rep={REP_MS} ms), best of {ROUNDS} rounds by median: "
    f"median with 20th and 80th percentiles"
)

#: Calls timed per round and rounds per measurement by :func:`host_time_ms`.
HOST_CALLS = 200
HOST_ROUNDS = 5
#: GPU time (ms) queued ahead of each host-timed round, so the GPU never waits for the host.
HOST_BUSY_MS = 50.0

HOST_TIMING_METHOD = (
    f"host clock per call (time.perf_counter around {HOST_CALLS} calls, the GPU kept busy by "
    f"torch.cuda._sleep for at least {HOST_BUSY_MS:.0f} ms so the launch queue never drains, the "
    f"providers of each size timed in turn one round each), {HOST_ROUNDS} rounds: median with "
    f"20th and 80th percentiles over rounds; beside it the process's CPU time per call "
    f"(time.process_time, every thread), median over the same rounds"
)

#: Rounds of back-to-back calls by :func:`loop_time_ms`, and the GPU time each round aims for.
LOOP_ROUNDS = 7
LOOP_ROUND_MS = 20.0

LOOP_TIMING_METHOD = (
    f"back-to-back calls between two CUDA events, as a decode loop runs them (no L2 flush, the "
    f"host free to fall behind the GPU and be timed with it), calls per round sized to last "
    f"about {LOOP_ROUND_MS:.0f} ms, {LOOP_ROUNDS} rounds: median with 20th and 80th percentiles "
    f"over rounds"
)

MEMORY_METHOD = (
    "peak memory: torch.cuda.max_memory_allocated during one call, minus what was allocated "
    "before it (the inputs), after emptying PyTorch's cache"
)

#: A benchmark's ``timer`` -> the timing method its records name in their provenance.
TIMING_METHODS = {
    "device": TIMING_METHOD,
    "host": HOST_TIMING_METHOD,
    "loop": LOOP_TIMING_METHOD,
    "memory": MEMORY_METHOD,
}


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call: the median and the 20th and 80th percentiles; for host time
    (:func:`host_time_ms`), also the process's CPU time per call, median over rounds
    (``cpu_ms``, None for the other timers)."""

    ms: float
    ms_p20: float
    ms_p80: float
    cpu_ms: float | None = None


def _over_rounds(per_call: list[float], cpu_per_call: list[float] | None = None) -> Timing:
    """The :class:`Timing` of per-round times per call (ms): their median and 20th and 80th
    percentiles, and the median of the rounds' CPU times where given."""
    return Timing(
        ms=statistics.median(per_call),
        ms_p20=quantile(per_call, 0.2),
        ms_p80=quantile(per_call, 0.8),
        cpu_ms=None if cpu_per_call is None else statistics.median(cpu_per_call),
    )


def _check_counts(calls: int, rounds: int) -> None:
    if calls < 1 or rounds < 1:
        raise ValueError(f"calls and rounds must be at least 1, got calls={calls}, rounds={rounds}")


def require_cuda() -> None:
    """Raise ``RuntimeError`` unless PyTorch sees a CUDA device."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            "timing needs a CUDA GPU and none is visible to PyTorch; without one, "
            "render the committed measurements instead (gpuperf.pages.run_or_load)"
        )


def time_ms(
    fn: Callable[[], object], *, warmup: int = WARMUP_MS, rep: int = REP_MS, rounds: int = ROUNDS
) -> Timing:
    """Time ``fn()`` with ``triton.testing.do_bench``; return :class:`Timing` in milliseconds.

    Of ``rounds`` calls of ``do_bench``, the one with the lowest median is returned.

    Raises:
        RuntimeError: no CUDA device is available.
    """
    require_cuda()
    import torch
    from triton.testing import do_bench

    fn()  # compile and warm caches outside the timed region
    torch.cuda.synchronize()
    best = None
    with _flush_buffer(FLUSH_BYTES):
        for _ in range(rounds):
            median, p20, p80 = do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5, 0.2, 0.8])
            if best is None or median < best.ms:
                best = Timing(ms=median, ms_p20=p20, ms_p80=p80)
    return best


def host_time_ms(fn: Callable[[], object], *, calls: int = HOST_CALLS, rounds: int = HOST_ROUNDS) -> Timing:
    """Host time per call of ``fn()``, in milliseconds: what Python, the dispatcher and the
    launcher cost on the CPU for each call, with the GPU's own time left out.

    ``fn`` is called once (compilation, caches) and waited for. Each round then
    queues a ``torch.cuda._sleep`` long enough to outlast the round, times
    ``calls`` calls of ``fn`` with :func:`time.perf_counter` and waits for the GPU.
    With the GPU busy the whole round, each launch only appends to its queue:
    the host never waits on the GPU, and what is timed is the host's own work.
    The process's CPU time (:func:`time.process_time`, over all its threads: autograd runs
    a CUDA backward on a thread of its own) is read around the same calls: the wall clock
    counts the time the process waited for a core (another process, or on a virtual
    machine the hypervisor, ran instead), its CPU time does not.
    The sleep lasts at least :data:`HOST_BUSY_MS`, and twice as long as an
    untimed first round took, so slow calls are covered too; its length in
    cycles comes from the device's clock rate. Keep ``calls`` times the kernels
    launched per call below the driver's launch queue depth (about a thousand),
    or the host blocks on a full queue and that wait is timed.

    Returns:
        :class:`Timing`: the median over rounds of the time per call, the 20th and 80th
        percentiles over rounds, and the median over rounds of the CPU time per call
        (``cpu_ms``).

    Raises:
        RuntimeError: no CUDA device is available.
        ValueError: ``calls`` or ``rounds`` is below 1.
    """
    _check_counts(calls, rounds)
    require_cuda()
    import torch

    fn()  # compile and warm caches outside the timed region
    torch.cuda.synchronize()
    busy_ms = HOST_BUSY_MS
    per_call, cpu_per_call = [], []
    for i in range(rounds + 1):  # round 0 is untimed: it sizes the sleep for the others
        torch.cuda.synchronize()
        torch.cuda._sleep(_sleep_cycles(busy_ms))
        cpu_start, start = time.process_time(), time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed_ms = (time.perf_counter() - start) * 1e3
        cpu_ms = (time.process_time() - cpu_start) * 1e3
        torch.cuda.synchronize()
        if i == 0:
            busy_ms = max(HOST_BUSY_MS, 2 * elapsed_ms)
        else:
            per_call.append(elapsed_ms / calls)
            cpu_per_call.append(cpu_ms / calls)
    return _over_rounds(per_call, cpu_per_call)


def host_times_ms(
    fns: list[Callable[[], object]], *, calls: int = HOST_CALLS, rounds: int = HOST_ROUNDS
) -> list[Timing | Exception]:
    """:func:`host_time_ms` of several functions (our op and PyTorch's, say), timed in turn
    one round each, ``rounds`` times: a slow stretch of the host (another process on the
    machine, a lower clock) then falls on every function alike, and their ratio holds
    where each one's own time moves. Each turn is one :func:`host_time_ms` round, with its
    untimed warm call and sizing round before it, so a measurement takes about twice
    :func:`host_time_ms`'s time.

    Returns:
        One :class:`Timing` per function, in order (median, 20th and 80th percentiles over
        its rounds, and its median CPU time), or the exception that function raised (it
        is timed no further).

    Raises:
        RuntimeError: no CUDA device is available.
        ValueError: ``calls`` or ``rounds`` is below 1.
    """
    _check_counts(calls, rounds)
    require_cuda()
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    failed: list[Exception | None] = [None] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            if failed[i] is not None:
                continue
            try:
                t = host_time_ms(fn, calls=calls, rounds=1)
            except Exception as err:  # reported in that function's place
                failed[i] = err
                continue
            wall[i].append(t.ms)
            cpu[i].append(t.cpu_ms)
    return [failed[i] if failed[i] is not None else _over_rounds(wall[i], cpu[i]) for i in range(len(fns))]


def loop_time_ms(
    fn: Callable[[], object], *, rounds: int = LOOP_ROUNDS, round_ms: float = LOOP_ROUND_MS
) -> Timing:
    """Time per call of ``fn()`` called back to back, in milliseconds: what a loop of such
    calls (a decode loop, one step after another) sees, host included.

    :func:`time_ms` keeps the host out of a kernel's time (an L2 flush before each run
    gives the host a head start). A decode step at batch 1 is the opposite case: tens of
    small kernels whose launches take longer on the CPU than their work on the GPU, so
    the GPU waits for the host and the host's time is the step's time. Here each round
    records a CUDA event, calls ``fn`` ``n`` times without waiting, records a second
    event and synchronizes; the time per call is the events' interval over ``n``, and
    nothing else runs between the calls. ``n`` is sized from an untimed round so a
    round lasts about ``round_ms``. A step streams its weights (hundreds of MB for a
    Llama layer) through L2, so back-to-back calls do not find them cached.

    Returns:
        :class:`Timing`: the median over rounds of the time per call, and the 20th
        and 80th percentiles over rounds.

    Raises:
        RuntimeError: no CUDA device is available.
        ValueError: ``rounds`` is below 1 or ``round_ms`` not positive.
    """
    if rounds < 1 or not round_ms > 0:
        raise ValueError(f"rounds must be at least 1 and round_ms positive, got {rounds}, {round_ms}")
    require_cuda()
    import torch

    fn()  # compile, capture and warm caches outside the timed region
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls, per_call = 1, []
    for i in range(rounds + 1):  # round 0 is untimed: it sizes the others
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end)
        if i == 0:
            calls = max(1, min(10_000, round(round_ms / max(elapsed, 1e-3))))
        else:
            per_call.append(elapsed / calls)
    return _over_rounds(per_call)


def peak_memory_bytes(fn: Callable[[], object]) -> int:
    """Bytes of GPU memory one call of ``fn()`` allocates at its peak, beyond what was
    allocated before it (its inputs), as PyTorch's caching allocator counts them.

    ``fn`` is called once first (compilation and workspaces outside the count), its
    result dropped, and PyTorch's cache emptied; then the peak statistic is reset
    and ``fn`` called again. What ``fn`` returns is part of its peak.

    Raises:
        RuntimeError: no CUDA device is available.
    """
    require_cuda()
    import torch

    fn()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del result
    return peak


def _sleep_cycles(ms: float) -> int:
    """GPU clock cycles that ``torch.cuda._sleep`` must spin to last about ``ms`` milliseconds.

    The device's clock rate is in kHz, that is cycles per millisecond. Where
    PyTorch does not report it, 2 GHz is assumed (an H100's boost clock is
    1.98 GHz; a slower clock only makes the sleep longer, which is safe).
    """
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    khz = getattr(props, "clock_rate", None) or 2_000_000
    return int(ms * khz)


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values``, interpolating linearly between order statistics."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@contextlib.contextmanager
def _flush_buffer(n_bytes: int):
    """Have ``do_bench`` clear ``n_bytes`` before each run instead of 256 MiB.

    ``do_bench`` asks the active Triton driver for its flush buffer; this lends it
    a larger one for the duration and puts the driver's own method back after.
    """
    import torch
    from triton.runtime import driver

    active = driver.active
    buffer = torch.empty(n_bytes // 4, dtype=torch.int32, device="cuda")
    active.get_empty_cache_for_benchmark = lambda: buffer
    try:
        yield
    finally:
        del active.get_empty_cache_for_benchmark  # the class's method shows through again
