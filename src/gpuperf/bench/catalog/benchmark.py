"""What a benchmark is: :class:`Benchmark` and :class:`Provider`, and what the families share.

A :class:`Benchmark` names its providers over one input generator, a baseline,
x values, optional axes (a dtype, say), a metric and the ceiling to read it
against. The families of :mod:`gpuperf.bench.catalog` declare one each.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from gpuperf.bench import hardware, metrics
from gpuperf.bench.timing import TIMING_METHODS

#: The name under which :attr:`Benchmark.quick` keeps some of the providers.
QUICK_PROVIDERS = "provider"


@dataclass(frozen=True)
class Provider:
    """One implementation being measured.

    Attributes:
        key: stable id, also the provider's colour on every plot (``"triton"``, ``"torch"``, ...).
        label: legend label.
        make: ``make(*inputs) -> fn`` returning a zero-argument callable that runs the
            implementation on ``inputs`` and returns its output. Per-size setup
            (``torch.compile`` of a fresh function, say) belongs in ``make``.
        config: optional ``config(*inputs) -> dict | None``: the launch or autotune
            configuration this provider runs on ``inputs`` (a JSON-able dict, e.g.
            ``{"BLOCK_M": 128, "num_warps": 8}``), recorded in each row. It is
            called after the provider's first call, so an autotuner has chosen.
        check_as: optional ``check_as(output) -> output``: what the provider's output
            is compared with the reference as, for a provider that computes only part
            of the op (a matmul without the fused kernel's epilogue: the floor the
            fused kernel should reach). Applied to the checked call only, never to a
            timed one.
    """

    key: str
    label: str
    make: Callable[..., Callable[[], Any]]
    config: Callable[..., dict | None] | None = None
    check_as: Callable[[Any], Any] | None = None


def call(fn: Callable[..., Any]) -> Callable[..., Callable[[], Any]]:
    """The plain provider factory: ``make(*inputs)`` returns ``lambda: fn(*inputs)``."""
    return lambda *inputs: lambda: fn(*inputs)


def _x_kind(x) -> str | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return "size"
    if isinstance(x, tuple) and x and all(isinstance(d, int) and not isinstance(d, bool) for d in x):
        return "shape"
    if isinstance(x, str):
        return "name"
    return None


@dataclass(frozen=True)
class Benchmark:
    """A sweep over x values and axis combinations comparing several providers.

    Attributes:
        name: record file name (``<name>.json``) and id.
        title: plot title.
        x_name: name of the swept parameter (``"n_elements"``, ``"shape"``).
        x_label: axis label for it.
        x_values: what is measured on a GPU, all of one kind: ints (a size, drawn
            on a log2 axis), tuples of ints (shapes such as ``(M, N, K)``) or
            strings (names, e.g. of ops); shapes and strings are drawn as
            categories in the order given here.
        make_inputs: ``make_inputs(x, device, **axes) -> tuple of inputs``; random, never zeros.
        reference: ``reference(*inputs)``, in higher precision; every provider's
            output must match it before its time is kept.
        providers: the implementations; the first is the one under study.
        baseline: key of the provider that ratios are taken against.
        metric: ``"GB/s"``, ``"TFLOP/s"`` or ``"us/call"`` (host microseconds per
            call, lower is better; goes with ``timer="host"``).
        bytes: ``bytes(x, **axes)`` -> the least bytes one call must move.
        flops: ``flops(x, **axes)`` -> the FLOPs of one call. Both are recorded in
            every row whatever the metric, so a roofline can place any record.
        ceiling: key into the measured ceilings (:data:`gpuperf.bench.hardware.CEILINGS`,
            e.g. ``"copy_gbps"``), or ``ceiling(**axes) -> key`` when it depends
            on the axes (``"bf16_tflops"`` for bfloat16, ...), or None: no
            ceiling line and no % of it.
        compute_roof: for a benchmark read against a bandwidth (its ``ceiling`` is not a
            TFLOP/s ceiling), the compute ceiling whose flat part bounds its arithmetic on
            a roofline: the engine and dtype its FLOPs run on (``"bf16_tflops"``: a
            bfloat16 matmul with a small dimension, on the tensor cores), or
            ``compute_roof(**axes) -> key``. None (the default): the CUDA cores' float32
            matmul (``"fp32_tflops"``), where elementwise kernels and reductions compute
            whatever their storage dtype. Unused when ``ceiling`` is a TFLOP/s ceiling.
        sources: the modules under ``src/gpuperf`` that the providers call (the kernel
            under study, the model); the record hashes what the device runs of them and
            of every module they import (their kernels, constants and config tables;
            every line where the timer is ``"host"``: :func:`gpuperf.bench.sources.hashes`),
            and is stale once that changes.
        axes: declared axes, each ``(name, values)``, e.g.
            ``(("dtype", ("float16", "bfloat16")),)``; every combination is
            measured at every x, and passed by keyword to ``make_inputs``,
            ``bytes``, ``flops`` and ``ceiling``.
        timer: ``"device"``: GPU time by :func:`gpuperf.bench.timing.time_ms`;
            ``"host"``: host time per call by :func:`gpuperf.bench.timing.host_time_ms`;
            ``"loop"``: time per call of back-to-back calls, host included, by
            :func:`gpuperf.bench.timing.loop_time_ms` (a decode loop); or ``"memory"``:
            peak memory by :func:`gpuperf.bench.timing.peak_memory_bytes`.
        reduction: optional ``reduction(x, **axes) -> int``: how many products each
            output element sums (a matmul's K), so the check against the reference
            allows the rounding that grows with it (:func:`gpuperf.testing.reduction_atol`).
        norm_rtol: optional: check each output norm-wise instead, ``||out - ref|| / ||ref||``
            at most this (for outputs such as a whole layer's gradients, whose elements
            sum many rounded terms that cancel, where no elementwise tolerance holds).
        runs_on: optional ``runs_on((major, minor)) -> bool``: the compute capabilities
            whose GPUs can run the kernel under study (Gluon's Hopper kernels: 9.x);
            ``python -m gpuperf.bench`` skips the benchmark elsewhere and says why.
        host_calls: optional ``host_calls(x, **axes) -> int``, for ``timer="host"``: the
            calls timed per round at ``x``, where the default
            (:data:`gpuperf.bench.timing.HOST_CALLS`) times the kernels launched would fill
            the GPU's launch queue (about a thousand), which would time the host waiting.
        quick: the part of the sweep a page measures live by default (:mod:`gpuperf.pages.announce`):
            ``(name, values)`` pairs, each naming the x (by :attr:`x_name`) or an axis and
            the values of it to measure, in declared order; a name left out keeps all its
            values. The name ``"provider"`` keeps only the providers with those keys (the
            baseline and the first provider, the one under study, always among them).
            Declared where the whole sweep is long, as the points and providers the pages'
            text reads; the page draws the committed sweep beside them. Empty (the
            default): a live page measures the whole sweep. ``python -m gpuperf.bench``
            always measures the whole sweep.

    Raises:
        ValueError: the declaration is inconsistent; the message names the field.
    """

    name: str
    title: str
    x_name: str
    x_label: str
    x_values: tuple
    make_inputs: Callable[..., tuple]
    reference: Callable[..., Any]
    providers: tuple[Provider, ...]
    baseline: str
    metric: str
    bytes: Callable[..., float]
    flops: Callable[..., float]
    ceiling: str | Callable[..., str | None] | None
    sources: tuple[str, ...]
    axes: tuple[tuple[str, tuple], ...] = ()
    timer: str = "device"
    reduction: Callable[..., int] | None = None
    norm_rtol: float | None = None
    runs_on: Callable[[tuple[int, int]], bool] | None = None
    host_calls: Callable[..., int] | None = None
    compute_roof: str | Callable[..., str] | None = None
    quick: tuple[tuple[str, tuple], ...] = ()

    def __post_init__(self):
        keys = [p.key for p in self.providers]
        if not keys:
            raise ValueError("providers must not be empty")
        if len(set(keys)) != len(keys):
            raise ValueError(f"providers must have unique keys, got {keys}")
        if self.baseline not in keys:
            raise ValueError(f"baseline must be one of the provider keys {keys}, got {self.baseline!r}")
        if self.metric not in metrics.METRICS:
            raise ValueError(f"metric must be one of {list(metrics.METRICS)}, got {self.metric!r}")
        if self.timer not in TIMING_METHODS:
            raise ValueError(f"timer must be one of {list(TIMING_METHODS)}, got {self.timer!r}")
        kinds = {_x_kind(x) for x in self.x_values}
        if not self.x_values or None in kinds or len(kinds) > 1:
            raise ValueError(
                "x_values must be a non-empty tuple of ints, of tuples of ints (shapes) or of strings, "
                f"all of one kind; got {self.x_values!r}"
            )
        if len(set(self.x_values)) != len(self.x_values):
            raise ValueError(f"x_values must be unique, got {self.x_values!r}")
        names = [axis[0] for axis in self.axes]
        if len(set(names)) != len(names) or {"device", "x"} & set(names):
            raise ValueError(f"axes must have unique names other than 'x' and 'device', got {names}")
        for name, values in self.axes:
            if not values or not all(isinstance(v, (str, int, float)) for v in values):
                raise ValueError(
                    f"axes: {name!r} needs a non-empty tuple of str/int/float values, got {values!r}"
                )
        for combo in self.combos():
            try:
                key = self.ceiling_key(**combo)
            except TypeError as err:
                shown = ", ".join(f"{k}={v!r}" for k, v in combo.items())
                raise ValueError(f"ceiling({shown}) failed: {err}") from None
            if key is None:
                continue
            if key not in hardware.CEILINGS:
                raise ValueError(f"ceiling must be a key of {list(hardware.CEILINGS)} or None, got {key!r}")
            if hardware.CEILINGS[key][1] != self.metric:
                raise ValueError(
                    f"ceiling {key!r} is in {hardware.CEILINGS[key][1]}, not in the metric {self.metric}"
                )
        compute = [k for k, (_, unit) in hardware.CEILINGS.items() if unit == "TFLOP/s"]
        for combo in self.combos() if self.compute_roof is not None else ():
            try:
                key = self.compute_roof_key(**combo)
            except TypeError as err:
                shown = ", ".join(f"{k}={v!r}" for k, v in combo.items())
                raise ValueError(f"compute_roof({shown}) failed: {err}") from None
            if key not in compute:
                raise ValueError(f"compute_roof must be one of {compute}, got {key!r}")
        self._check_quick()

    def _check_quick(self) -> None:
        keys = tuple(p.key for p in self.providers)
        declared = {self.x_name: tuple(self.x_values), **dict(self.axes), QUICK_PROVIDERS: keys}
        names = [name for name, _ in self.quick]
        if len(set(names)) != len(names):
            raise ValueError(f"quick must name each of x, the axes and {QUICK_PROVIDERS!r} once, got {names}")
        for name, values in self.quick:
            if name not in declared:
                axes = [axis for axis, _ in self.axes]
                raise ValueError(
                    f"quick: {name!r} is neither the x ({self.x_name!r}), an axis ({axes}) "
                    f"nor {QUICK_PROVIDERS!r}"
                )
            if not values or len(set(values)) != len(values) or any(v not in declared[name] for v in values):
                raise ValueError(
                    f"quick: {name!r} needs distinct values among {list(declared[name])}, got {values!r}"
                )
            if name == QUICK_PROVIDERS and not {self.baseline, keys[0]} <= set(values):
                raise ValueError(
                    f"quick: {QUICK_PROVIDERS!r} must keep the baseline {self.baseline!r} and the "
                    f"provider under study {keys[0]!r}, got {values!r}"
                )

    def sweep(self, quick: bool = False) -> tuple[tuple, list[dict]]:
        """``(x values, axis combinations)`` a run measures: all of them, or with ``quick``
        those :attr:`quick` keeps (in declared order)."""
        keep = dict(self.quick) if quick else {}
        xs = tuple(x for x in self.x_values if x in keep.get(self.x_name, self.x_values))
        combos = [c for c in self.combos() if all(v in keep.get(k, (v,)) for k, v in c.items())]
        return xs, combos

    def measured_providers(self, quick: bool = False) -> tuple[Provider, ...]:
        """The providers a run measures: all of them, or with ``quick`` those :attr:`quick`
        keeps under ``"provider"`` (in declared order)."""
        keep = dict(self.quick).get(QUICK_PROVIDERS) if quick else None
        return tuple(p for p in self.providers if keep is None or p.key in keep)

    @property
    def subject(self) -> Provider:
        """The provider under study (the first)."""
        return self.providers[0]

    def combos(self) -> list[dict]:
        """One ``{axis name: value}`` per combination of the axes, in declared order
        (``[{}]`` without axes)."""
        names = [name for name, _ in self.axes]
        return [
            dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in self.axes))
        ]

    def ceiling_key(self, **axes) -> str | None:
        """The ceiling that the combination ``axes`` is read against (None: no ceiling)."""
        return self.ceiling(**axes) if callable(self.ceiling) else self.ceiling

    def compute_roof_key(self, **axes) -> str:
        """The compute ceiling whose flat part bounds the combination ``axes`` on a
        roofline: its own ceiling when that is in TFLOP/s, else :attr:`compute_roof`
        (``"fp32_tflops"`` when that is None)."""
        own = self.ceiling_key(**axes)
        if own is not None and hardware.CEILINGS[own][1] == "TFLOP/s":
            return own
        if self.compute_roof is None:
            return "fp32_tflops"
        return self.compute_roof(**axes) if callable(self.compute_roof) else self.compute_roof


def kernels():
    """:mod:`gpuperf.kernels`, imported on first use: importing the catalog must not
    import Triton kernels (the interpreter must be chosen first)."""
    import gpuperf.kernels

    return gpuperf.kernels


def liger(module: str):
    """Liger-Kernel's ``liger_kernel.ops.<module>``, imported on use: Liger-Kernel
    (https://github.com/linkedin/Liger-Kernel, the Triton kernels most readers would install
    for these ops) is not a dependency of gpuperf, so where it is not installed its
    providers' rows hold the ``ModuleNotFoundError``.

    Raises:
        ModuleNotFoundError: Liger-Kernel is not installed.
    """
    import importlib

    return importlib.import_module(f"liger_kernel.ops.{module}")


def compiled(fn):
    """Provider factory for ``torch.compile(fn)``: a fresh compilation per size, so
    each size gets a kernel specialised to it (no dynamic-shape recompile) and the
    recompile limit is never reached."""

    def make(*inputs):
        torch._dynamo.reset()
        compiled = torch.compile(fn, dynamic=False)
        return lambda: compiled(*inputs)

    return make


def cuda_graph(step: Callable[[], Any]) -> Callable[[], Any]:
    """``step`` captured once in a CUDA graph: returns a function that replays the graph and
    returns the output the captured step made (rewritten in place by every replay).

    The step runs twice on a side stream first, as ``torch.cuda.graph`` asks, so every
    kernel is compiled and every launch planned before the capture; it runs without
    autograd. A replay launches the step's kernels with one host call, so a step bound by
    its launches (a decode step at batch 1) costs the GPU's time instead of the host's.
    """
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step()

    def replay():
        graph.replay()
        return out

    return replay


#: The measured ceiling a matmul of each input dtype is read against.
TFLOPS_CEILING = {"float16": "fp16_tflops", "bfloat16": "bf16_tflops"}
#: Bytes per element of each dtype the benchmarks take.
ELEMENT_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
