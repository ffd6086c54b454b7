"""Declaring a benchmark once: providers over one input generator, a baseline, x values, a metric.

The same declaration serves the tutorials (measured live or rendered from the
committed record), the ``bench`` command that refreshes the records on a GPU
machine, and the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Provider:
    """One implementation being measured.

    Attributes:
        key: stable id, also the provider's colour on every plot (``"triton"``, ``"torch"``, ...).
        label: legend label.
        make: ``make(*inputs) -> fn`` returning a zero-argument callable that runs the
            implementation on ``inputs`` and returns its output. Per-size setup
            (``torch.compile`` of a fresh function, say) belongs in ``make``.
    """

    key: str
    label: str
    make: Callable[..., Callable[[], torch.Tensor]]


def call(fn: Callable[..., torch.Tensor]) -> Callable[..., Callable[[], torch.Tensor]]:
    """The plain provider factory: ``make(*inputs)`` returns ``lambda: fn(*inputs)``."""
    return lambda *inputs: lambda: fn(*inputs)


@dataclass(frozen=True)
class Benchmark:
    """A sweep over one size parameter comparing several providers.

    Attributes:
        name: record file name (``<name>.json``) and id.
        title: plot title.
        x_name: name of the swept parameter (``"n_elements"``, ``"n_cols"``).
        x_label: axis label for it.
        x_values: sizes measured on a GPU.
        make_inputs: ``make_inputs(x, device) -> tuple of tensors``; random, never zeros.
        reference: ``reference(*inputs)``, in higher precision; every provider's
            output must match it before its time is kept.
        providers: the implementations; the first is the one under study.
        baseline: key of the provider that ratios are taken against.
        metric: ``"GB/s"`` or ``"TFLOP/s"``.
        work: ``work(x)`` -> bytes (GB/s) or FLOPs (TFLOP/s) of one call.
        ceiling: key into the measured ceilings (``"copy_gbps"``, ``"bf16_tflops"``).
        sources: files under ``src/gpuperf`` whose change makes a committed record stale.
    """

    name: str
    title: str
    x_name: str
    x_label: str
    x_values: tuple[int, ...]
    make_inputs: Callable[[int, torch.device], tuple[torch.Tensor, ...]]
    reference: Callable[..., torch.Tensor]
    providers: tuple[Provider, ...]
    baseline: str
    metric: str
    work: Callable[[int], float]
    ceiling: str
    sources: tuple[str, ...]

    def __post_init__(self):
        keys = [p.key for p in self.providers]
        if self.baseline not in keys:
            raise ValueError(f"baseline must be one of the provider keys {keys}, got {self.baseline!r}")
        if len(set(keys)) != len(keys):
            raise ValueError(f"provider keys must be unique, got {keys}")

    @property
    def subject(self) -> Provider:
        """The provider under study (the first)."""
        return self.providers[0]
