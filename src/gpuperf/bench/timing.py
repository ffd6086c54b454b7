"""One way to time GPU work on this site: ``triton.testing.do_bench``.

``do_bench`` records CUDA events around each run, flushes L2 before each one by
writing a 256 MB buffer, and returns the quantiles we ask for. The first call of
the function is made, and waited for, before timing starts, so compilation
(Triton's JIT, ``torch.compile``, cuBLAS handle creation) is never timed.

Before each measurement the GPU is kept busy for :data:`SPIN_UP_MS` with
memory writes. Without it, a kernel timed right after the GPU sat idle (during
a JIT compile, say) measured 3-5 times slower than the same kernel a moment
later in some runs; ``do_bench``'s own warm-up does not help when the kernel is
tiny, since its warm-up calls then leave the GPU mostly idle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: Milliseconds of warm-up and of timed repetitions handed to ``do_bench``.
WARMUP_MS = 25
REP_MS = 100
#: Milliseconds of memory writes that bring the GPU out of idle before timing.
SPIN_UP_MS = 100

TIMING_METHOD = (
    f"triton.testing.do_bench (CUDA events, L2 flushed before each run, "
    f"{SPIN_UP_MS} ms GPU spin-up, warmup={WARMUP_MS} ms, rep={REP_MS} ms): "
    f"median with 20th and 80th percentiles"
)


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call: the median and the 20th and 80th percentiles."""

    ms: float
    ms_p20: float
    ms_p80: float


def require_cuda() -> None:
    """Raise ``RuntimeError`` unless PyTorch sees a CUDA device."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            "timing needs a CUDA GPU and none is visible to PyTorch; without one, "
            "render the committed measurements instead (gpuperf.bench.run_or_load)"
        )


def time_ms(fn: Callable[[], object], *, warmup: int = WARMUP_MS, rep: int = REP_MS) -> Timing:
    """Time ``fn()`` with ``triton.testing.do_bench``; return :class:`Timing` in milliseconds.

    Raises:
        RuntimeError: no CUDA device is available.
    """
    require_cuda()
    import torch
    from triton.testing import do_bench

    fn()  # compile and warm caches outside the timed region
    torch.cuda.synchronize()
    spin_up()
    median, p20, p80 = do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5, 0.2, 0.8])
    return Timing(ms=median, ms_p20=p20, ms_p80=p80)


def spin_up(ms: float = SPIN_UP_MS) -> None:
    """Keep the GPU busy writing a 256 MB buffer for about ``ms`` milliseconds."""
    import torch

    buffer = torch.empty(2**26, dtype=torch.float32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    elapsed = 0.0
    while elapsed < ms:
        for _ in range(20):
            buffer.zero_()
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end)
