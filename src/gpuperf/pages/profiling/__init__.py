"""Tables and figures of the profiling guide, read from the captures of one GPU run.

``scripts/profile_capture.py`` writes the captures on a GPU (:mod:`gpuperf.bench.captures`);
the functions here turn them into what the guide shows, on any machine: the timing
methods side by side, host time against a loop's time per call as a kernel grows, the
``torch.profiler`` table and a timeline drawn from its Chrome trace, Nsight Compute's
counters, and proton's tree. Tables come out as text or HTML, as
:func:`gpuperf.pages.tables.render` is asked.

The guide's topic module too: :func:`in_one_paragraph` opens it with its headline
measurements for every GPU with captures or records, and the sentences it prints under
each capture (:func:`timing_gaps`, :func:`crossovers`, :func:`ncu_findings` and the
others) are written from the captures, each taking one capture as
:func:`gpuperf.pages.captures.show` hands it over, and refusing any other.

One module per job, every name of theirs re-exported here (``profiling.timeline(...)``):
:mod:`~gpuperf.pages.profiling.timings` (the ``timing_methods`` and ``launch_bound``
tables), :mod:`~gpuperf.pages.profiling.traces` (``torch.profiler``'s tables and its
trace), :mod:`~gpuperf.pages.profiling.ncu` (Nsight Compute's counters),
:mod:`~gpuperf.pages.profiling.proton` (proton's kernels),
:mod:`~gpuperf.pages.profiling.figures` (the matplotlib figures),
:mod:`~gpuperf.pages.profiling.sentences` (the sentences under each capture),
:mod:`~gpuperf.pages.profiling.opening` (the opening paragraph); what they all check they
were handed is :func:`gpuperf.pages.captures.capture_payload` and
:func:`gpuperf.pages.report.check_result`.
"""

from gpuperf.pages.captures import capture_payload
from gpuperf.pages.profiling.figures import launch_bound_figure, plot_launch_bound, timeline, timeline_figure
from gpuperf.pages.profiling.ncu import NCU_ROWS, TENSOR_PIPE, ncu_launch, ncu_table, ncu_value
from gpuperf.pages.profiling.opening import CAPTURES, in_one_paragraph
from gpuperf.pages.profiling.proton import proton_kernels, proton_table
from gpuperf.pages.profiling.sentences import (
    GAP_KEYS,
    ROW_MEAN_NAMES,
    SAME_KERNEL,
    compiler_stats,
    crossovers,
    extension_summary,
    host_time_per_call,
    ncu_command,
    ncu_findings,
    paced_like,
    proton_report,
    proton_viewer,
    row_mean_ranking,
    step_facts,
    step_summary,
    timing_gaps,
    trace_size,
)
from gpuperf.pages.profiling.timings import (
    GPU_BOUND_RATIO,
    below_crossover,
    crossover,
    host_paced,
    launch_bound_rows,
    launch_bound_table,
    loop_over_host,
    method,
    timing_methods_table,
)
from gpuperf.pages.profiling.traces import (
    RANGE_COLORS,
    TIMELINE_LANES,
    key_averages_table,
    last_step_summary,
    profiler_table,
    range_of,
    read_trace,
    trace_path,
)
from gpuperf.pages.report import check_result

# Not sorted: autodoc lists the functions in this order (that of the module before the split).
__all__ = [  # noqa: RUF022
    "NCU_ROWS",
    "method",
    "timing_methods_table",
    "launch_bound_rows",
    "GPU_BOUND_RATIO",
    "loop_over_host",
    "host_paced",
    "crossover",
    "below_crossover",
    "launch_bound_table",
    "launch_bound_figure",
    "key_averages_table",
    "read_trace",
    "TIMELINE_LANES",
    "RANGE_COLORS",
    "range_of",
    "timeline_figure",
    "ncu_value",
    "ncu_launch",
    "ncu_table",
    "proton_kernels",
    "proton_table",
    "last_step_summary",
    "CAPTURES",
    "ROW_MEAN_NAMES",
    "capture_payload",
    "timing_gaps",
    "GAP_KEYS",
    "plot_launch_bound",
    "crossovers",
    "SAME_KERNEL",
    "paced_like",
    "host_time_per_call",
    "check_result",
    "profiler_table",
    "step_facts",
    "trace_size",
    "trace_path",
    "step_summary",
    "timeline",
    "extension_summary",
    "row_mean_ranking",
    "TENSOR_PIPE",
    "ncu_findings",
    "compiler_stats",
    "ncu_command",
    "proton_report",
    "proton_viewer",
    "in_one_paragraph",
]
