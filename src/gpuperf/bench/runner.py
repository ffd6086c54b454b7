"""Running a declared benchmark on the GPU: check every provider, then time it."""

from __future__ import annotations

from collections.abc import Callable

from gpuperf.bench import hardware, metrics, provenance, records
from gpuperf.bench.spec import Benchmark
from gpuperf.bench.timing import require_cuda, time_ms
from gpuperf.testing import assert_close


def run(
    benchmark: Benchmark,
    *,
    x_values=None,
    ceilings: dict | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Measure ``benchmark`` on the current CUDA device and return its record.

    For each size, every provider's output is first compared with the reference
    (:func:`gpuperf.testing.assert_close`); only a provider that matched is timed.
    A provider that fails or mismatches gets a row with status ``"error"`` or
    ``"mismatch"`` and its message, not a time.

    Args:
        benchmark: the declaration to run.
        x_values: sizes to measure (default: ``benchmark.x_values``).
        ceilings: ceilings measured earlier in the same run; the benchmark's own
            ceiling is measured now when absent.
        log: called with one line per measurement.

    Raises:
        RuntimeError: no CUDA device is available.
    """
    require_cuda()
    import torch

    if ceilings is None or benchmark.ceiling not in ceilings:
        ceilings = {**(ceilings or {}), **hardware.measure_ceilings((benchmark.ceiling,))}
    label, unit = hardware.CEILINGS[benchmark.ceiling]
    ceiling = {"key": benchmark.ceiling, "label": label, "unit": unit, **ceilings[benchmark.ceiling]}

    rows = []
    for x in x_values or benchmark.x_values:
        torch.manual_seed(x)
        inputs = benchmark.make_inputs(x, torch.device("cuda"))
        expected = benchmark.reference(*inputs)
        work = benchmark.work(x)
        for provider in benchmark.providers:
            row = {
                "x": x,
                "provider": provider.key,
                "label": provider.label,
                "work": work,
                "status": "ok",
                "ms": None,
                "ms_p20": None,
                "ms_p80": None,
                "value": None,
            }
            try:
                fn = provider.make(*inputs)
                assert_close(f"{benchmark.name} {provider.key} {benchmark.x_name}={x}", expected, fn())
                t = time_ms(fn)
            except AssertionError as err:
                row.update(status="mismatch", message=str(err)[:500])
            except Exception as err:  # a baseline that cannot run is reported, not fatal
                row.update(status="error", message=f"{type(err).__name__}: {err}"[:500])
            else:
                row.update(
                    ms=t.ms,
                    ms_p20=t.ms_p20,
                    ms_p80=t.ms_p80,
                    value=metrics.rate(benchmark.metric, work, t.ms),
                    value_p20=metrics.rate(benchmark.metric, work, t.ms_p80),
                    value_p80=metrics.rate(benchmark.metric, work, t.ms_p20),
                )
            rows.append(row)
            shown = f"{row['value']:.1f} {benchmark.metric}" if row["status"] == "ok" else row["status"]
            log(f"{benchmark.name:>18} {benchmark.x_name}={x:<10} {provider.key:>8}: {shown}")
        del inputs, expected
        torch.cuda.empty_cache()

    return build_record(benchmark, rows, ceiling, provenance.collect())


def build_record(benchmark: Benchmark, rows: list[dict], ceiling: dict, provenance_: dict) -> dict:
    """Assemble a record (see :mod:`gpuperf.bench.records`) from measured rows."""
    return {
        "schema_version": records.SCHEMA_VERSION,
        "benchmark": benchmark.name,
        "title": benchmark.title,
        "x_name": benchmark.x_name,
        "x_label": benchmark.x_label,
        "metric": benchmark.metric,
        "baseline": benchmark.baseline,
        "ceiling": ceiling,
        "sources_sha256": records.sources_sha256(benchmark.sources),
        "provenance": provenance_,
        "rows": rows,
    }
