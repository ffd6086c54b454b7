"""Running a declared benchmark on the GPU: check every provider, then time it."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
import time
import zlib
from collections.abc import Callable

import torch

from gpuperf.bench import hardware, metrics, records
from gpuperf.bench import sources as code
from gpuperf.bench.catalog import Benchmark
from gpuperf.bench.timing import (
    host_time_ms,
    host_times_ms,
    loop_time_ms,
    peak_memory_bytes,
    require_cuda,
    time_ms,
)
from gpuperf.testing import assert_close

#: A benchmark's ``timer`` -> the function that times one provider.
TIMERS = {"device": time_ms, "host": host_time_ms, "loop": loop_time_ms, "memory": peak_memory_bytes}


def run(
    benchmark: Benchmark,
    *,
    x_values=None,
    combos: list[dict] | None = None,
    ceilings: dict | None = None,
    providers: tuple[str, ...] | None = None,
    log: Callable[[str], None] = print,
    step: Callable[[str], None] | None = None,
) -> dict:
    """Measure ``benchmark`` on the current CUDA device and return its record.

    For every axis combination and x, every provider's output (mapped by its
    ``check_as``, if any) is first compared with the reference
    (:func:`gpuperf.testing.assert_close`); only a provider
    that matched is timed, on the GPU or on the host as the benchmark's
    ``timer`` says; for host time, the providers of one size that matched are timed
    together, in turn one round each (:func:`~gpuperf.bench.timing.host_times_ms`), so that
    a slow stretch of the host falls on all of them. A provider that fails or mismatches
    gets a row with status ``"error"`` or ``"mismatch"`` and its message, not a time.

    Args:
        benchmark: the declaration to run.
        x_values: x values to measure (default: ``benchmark.x_values``).
        combos: axis combinations to measure (default: all of ``benchmark.combos()``);
            with ``x_values``, :meth:`Benchmark.sweep`'s answer for a quick run.
        ceilings: ceilings measured earlier in the same run; those the benchmark
            needs and that are absent are measured now, once each.
        providers: keys of the providers to measure (default: all of them, in declared
            order); :meth:`Benchmark.measured_providers`'s answer for a quick run.
        log: called with one line per measurement.
        step: called before each provider is checked and timed, with what is about to
            be measured (``'softmax n_cols=4096 torch'``): a progress bar's hook.

    The record also says which of the package's source files ran during the providers'
    checked calls (``ran``, :func:`traced_sources`) and how long the whole run took
    (``wall_s``); each row, how long its provider's checked first call took
    (``first_call_s``: a compile, where nothing is cached) and its timing (``timing_s``),
    in seconds (None where it did not get that far).

    Raises:
        RuntimeError: no CUDA device is available.
    """
    require_cuda()
    import torch

    started = time.perf_counter()
    # The kernels package imports every kernel module when first imported; a provider that
    # imports it lazily would otherwise count their import-time code (class bodies, module
    # constants) as code its calls ran. Imported here, it is not traced.
    importlib.import_module("gpuperf.kernels")
    ran: set[str] = set()
    combos = benchmark.combos() if combos is None else list(combos)
    measured = [p for p in benchmark.providers if providers is None or p.key in providers]
    ceilings = dict(ceilings or {})
    needed = dict.fromkeys(k for c in combos if (k := benchmark.ceiling_key(**c)) is not None)
    if "stream_gbps" in needed:  # the copy is one of its streams, measured first and kept beside it
        needed = {"copy_gbps": None, **needed}
    missing = tuple(k for k in needed if k not in ceilings)
    if missing:
        ceilings.update(hardware.measure_ceilings(missing))
    timer = TIMERS[benchmark.timer]

    rows, pending = [], []
    for combo in combos:
        key = benchmark.ceiling_key(**combo)
        for x in x_values or benchmark.x_values:
            torch.manual_seed(zlib.crc32(json.dumps([x, combo]).encode()))
            inputs = benchmark.make_inputs(x, torch.device("cuda"), **combo)
            expected = benchmark.reference(*inputs)
            n_bytes, flops = benchmark.bytes(x, **combo), benchmark.flops(x, **combo)
            where = ", ".join(f"{k}={v}" for k, v in {benchmark.x_name: x, **combo}.items())
            k = benchmark.reduction(x, **combo) if benchmark.reduction else None
            for provider in measured:
                row = {
                    "x": x,
                    "axes": dict(combo),
                    "provider": provider.key,
                    "label": provider.label,
                    "status": "ok",
                    "bytes": n_bytes,
                    "flops": flops,
                    # A ceiling that could not be measured here (fp8 before sm_89) is left out.
                    "ceiling": key if key in ceilings else None,
                    "ms": None,
                    "ms_p20": None,
                    "ms_p80": None,
                    "value": None,
                    "value_p20": None,
                    "value_p80": None,
                    "config": None,
                    "first_call_s": None,
                    "timing_s": None,
                }
                if step is not None:
                    step(f"{benchmark.name} {where} {provider.key}")
                first = time.perf_counter()
                try:
                    with traced_sources(ran):
                        fn = provider.make(*inputs)
                        out = fn()
                    row["first_call_s"] = round(time.perf_counter() - first, 2)
                    out = out if provider.check_as is None else provider.check_as(out)
                    check(
                        f"{benchmark.name} {provider.key} {where}",
                        expected,
                        out,
                        k=k,
                        norm_rtol=benchmark.norm_rtol,
                    )
                    del out
                    if provider.config is not None:
                        row["config"] = provider.config(*inputs)
                        json.dumps(row["config"])  # a record must stay JSON
                    timing = time.perf_counter()
                    if benchmark.timer == "memory":
                        gib = peak_memory_bytes(fn) / metrics.GIB
                        row.update(value=gib, value_p20=gib, value_p80=gib)
                    elif benchmark.timer == "host":
                        # Timed below, the providers of this x in turn, round by round.
                        pending.append((row, fn))
                        rows.append(row)
                        continue
                    else:
                        t = timer(fn, **timer_options(benchmark, x, combo))
                    row["timing_s"] = round(time.perf_counter() - timing, 2)
                except AssertionError as err:
                    row.update(status="mismatch", message=str(err)[:500])
                except Exception as err:  # a baseline that cannot run is reported, not fatal
                    row.update(status="error", message=f"{type(err).__name__}: {err}"[:500])
                else:
                    if benchmark.timer == "memory":
                        rows.append(row)
                        log(f"{benchmark.name:>18} {where:<30} {provider.key:>16}: {row['value']:.2f} GiB")
                        continue
                    _fill(row, t, benchmark.metric)
                rows.append(row)
                _log_row(log, benchmark, where, row)
            if pending:
                timing = time.perf_counter()
                times = host_times_ms([fn for _, fn in pending], **timer_options(benchmark, x, combo))
                spent = round((time.perf_counter() - timing) / len(pending), 2)
                for (row, _), t in zip(pending, times, strict=True):
                    if isinstance(t, Exception):
                        row.update(status="error", message=f"{type(t).__name__}: {t}"[:500])
                    else:
                        _fill(row, t, benchmark.metric)
                        row["timing_s"] = spent
                    _log_row(log, benchmark, where, row)
                pending.clear()
            del inputs, expected
            torch.cuda.empty_cache()

    provenance = records.collect_provenance(benchmark.timer)
    wall_s = time.perf_counter() - started
    return records.build_record(benchmark, rows, ceilings, provenance, ran=ran, wall_s=wall_s)


def _fill(row: dict, t, metric: str) -> None:
    """Write the :class:`~gpuperf.bench.timing.Timing` ``t`` into ``row``: its times, the
    metric's values from them (the row's ``bytes`` and ``flops``), and for host time the
    process's CPU time (``cpu_ms``)."""
    value, p20, p80 = metrics.metric_values(
        metric, t.ms, t.ms_p20, t.ms_p80, n_bytes=row["bytes"], flops=row["flops"]
    )
    row.update(ms=t.ms, ms_p20=t.ms_p20, ms_p80=t.ms_p80, value=value, value_p20=p20, value_p80=p80)
    if t.cpu_ms is not None:
        row["cpu_ms"] = t.cpu_ms


def _log_row(log, benchmark: Benchmark, where: str, row: dict) -> None:
    shown = f"{row['value']:.1f} {benchmark.metric}" if row["status"] == "ok" else row["status"]
    log(f"{benchmark.name:>18} {where:<30} {row['provider']:>16}: {shown}")


def timer_options(benchmark: Benchmark, x, combo: dict) -> dict:
    """Keyword arguments of the benchmark's timer at ``x``: the host timer's ``calls``
    where the benchmark declares them (:attr:`Benchmark.host_calls`), else none."""
    if benchmark.timer == "host" and benchmark.host_calls is not None:
        return {"calls": benchmark.host_calls(x, **combo)}
    return {}


#: The ``sys.monitoring`` tool id :func:`traced_sources` asks for (Python 3.12+), if free.
_MONITORING_TOOL = 4


@contextlib.contextmanager
def traced_sources(found: set[str]):
    """Add to ``found`` the package's source files (paths relative to ``src/gpuperf``, of
    the code under study: :func:`gpuperf.bench.sources.followed`) whose functions run in
    this block. A record keeps them as ``ran``: the evidence that it hashed every module
    that ran (a test checks ``ran`` against ``sources``).

    Python 3.12+ watches function starts with ``sys.monitoring``, each code object once;
    older Pythons use ``sys.setprofile``, slower while it lasts (it sees every call).
    """
    root = str(code.PACKAGE_ROOT) + "/"
    seen: set[str] = set()
    monitoring = getattr(sys, "monitoring", None)
    tool = _MONITORING_TOOL
    if monitoring is not None and monitoring.get_tool(tool) is None:
        events = monitoring.events

        def started(code_object, offset):
            if code_object.co_name != "<module>":
                seen.add(code_object.co_filename)
            return monitoring.DISABLE  # this code object need not be seen again

        monitoring.use_tool_id(tool, "gpuperf.bench.runner")
        monitoring.register_callback(tool, events.PY_START, started)
        monitoring.restart_events()
        monitoring.set_events(tool, events.PY_START)
        try:
            yield
        finally:
            monitoring.set_events(tool, 0)
            monitoring.register_callback(tool, events.PY_START, None)
            monitoring.free_tool_id(tool)
    else:

        def profile(frame, event, arg):
            if event == "call" and frame.f_code.co_name != "<module>":
                seen.add(frame.f_code.co_filename)

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            yield
        finally:
            sys.setprofile(previous)
    for path in seen:
        if path.startswith(root) and code.followed(rel := path[len(root) :]):
            found.add(rel)


def check(name: str, expected, out, *, k: int | None = None, norm_rtol: float | None = None) -> None:
    """:func:`gpuperf.testing.assert_close` on one output, or on each of a tuple of them
    (the gradients of a backward pass, say), named ``name[0]``, ``name[1]``, ...; with
    ``norm_rtol``, the relative error ``||out - ref|| / ||ref||`` of each instead."""
    if isinstance(expected, tuple):
        if not isinstance(out, tuple) or len(out) != len(expected):
            raise AssertionError(f"{name}: expected {len(expected)} outputs, got {type(out).__name__}")
        for i, (e, o) in enumerate(zip(expected, out, strict=True)):
            check(f"{name}[{i}]", e, o, k=k, norm_rtol=norm_rtol)
    elif norm_rtol is not None:
        if out.shape != expected.shape:
            raise AssertionError(f"{name}: shape {tuple(out.shape)} != reference {tuple(expected.shape)}")
        ref = expected.to(device=out.device, dtype=torch.float64)
        err = ((out.double() - ref).norm() / ref.norm()).item()
        if not err <= norm_rtol:  # (NaN fails too)
            raise AssertionError(f"{name}: ||out - ref|| / ||ref|| = {err:.3g}, more than {norm_rtol}")
    else:
        assert_close(name, expected, out, k=k)
