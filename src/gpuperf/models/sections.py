"""Named parts of a model's step, for a profiler to add up: ``with SECTIONS("router"): ...``.

A model wraps each part of its forward (the router, a matmul, the combine) in its
:class:`Sections`. Normally that costs only a name check and an empty context on the
host. Inside ``with SECTIONS.recording():`` each part opens a
``torch.profiler.record_function`` range named ``<prefix><part>``, so a ``torch.profiler``
trace can add the GPU time of every kernel launched inside it to that part
(:func:`gpuperf.bench.traces.kernel_time_by_range`).
Inside ``with SECTIONS.timing() as marks:`` each part records a CUDA event where it starts
and where it ends instead, and ``marks`` collects ``(part, start, end)``: the GPU time
between them counts the part's kernels *and* any time the GPU waited for the host to
launch the next one, which the profiler's kernel sum leaves out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


class Sections:
    """The parts of one model's step, by name, each a context a profiler can see.

    Args:
        prefix: the profiler ranges' prefix, e.g. ``"moe."``.
        names: every part's name, in the order the step runs them.

    Raises:
        ValueError: (when called) a name that is not one of ``names``.
    """

    def __init__(self, prefix: str, names: tuple[str, ...]):
        self.prefix = prefix
        self.names = tuple(names)
        self._mode: str | None = None
        self._marks: list | None = None

    def __call__(self, name: str) -> contextlib.AbstractContextManager:
        """The context of part ``name``: a profiler range, a pair of CUDA events, or nothing."""
        if name not in self.names:
            raise ValueError(f"name must be one of {self.names}, got {name!r}")
        if self._mode == "ranges":
            return torch.profiler.record_function(self.prefix + name)
        if self._mode == "events":
            return self._events(name)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def _events(self, name: str) -> Iterator[None]:
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        yield
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self._marks.append((name, start, end))

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Inside this block each part opens a ``record_function`` range ``prefix + name``."""
        self._mode = "ranges"
        try:
            yield
        finally:
            self._mode = None

    @contextlib.contextmanager
    def timing(self) -> Iterator[list]:
        """Inside this block each part records CUDA events at its ends; yields the list of
        ``(name, start_event, end_event)`` it fills (read them after a synchronize)."""
        self._mode, self._marks = "events", []
        try:
            yield self._marks
        finally:
            self._mode = None


def event_times_us(marks: list, steps: int) -> dict[str, float]:
    """Microseconds per step of each part, from the marks of :meth:`Sections.timing` over
    ``steps`` steps (after ``torch.cuda.synchronize()``)."""
    parts: dict[str, float] = {}
    for name, start, end in marks:
        parts[name] = parts.get(name, 0.0) + start.elapsed_time(end) * 1e3 / steps
    return parts


__all__ = ["Sections", "event_times_us"]
