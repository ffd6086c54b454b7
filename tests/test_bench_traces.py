"""Kernel time per profiler range, from a Chrome trace (gpuperf.bench.traces)."""

import pytest
import torch


def test_kernel_time_by_range_follows_each_launch_to_the_range_open_on_the_host():
    """Two ranges; a kernel launched through the runtime inside the first, one launched
    through the driver (as Triton's launcher does) inside the second, one launched outside
    both, and a launch whose event is missing: the last two count as "other"."""
    from gpuperf.bench.traces import kernel_time_by_range

    events = [
        {"cat": "user_annotation", "name": "llama.norm", "ts": 0.0, "dur": 10.0},
        {"cat": "user_annotation", "name": "llama.proj", "ts": 10.0, "dur": 10.0},
        {"cat": "user_annotation", "name": "other.range", "ts": 20.0, "dur": 10.0},
        {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 2.0, "args": {"correlation": 1}},
        {"cat": "cuda_driver", "name": "cuLaunchKernelEx", "ts": 12.0, "args": {"correlation": 2}},
        {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 25.0, "args": {"correlation": 3}},
        {"cat": "kernel", "name": "a", "ts": 30.0, "dur": 4.0, "args": {"correlation": 1}},
        {"cat": "kernel", "name": "b", "ts": 40.0, "dur": 6.0, "args": {"correlation": 2}},
        {"cat": "gpu_memset", "name": "c", "ts": 50.0, "dur": 1.5, "args": {"correlation": 3}},
        {"cat": "kernel", "name": "d", "ts": 60.0, "dur": 2.0, "args": {"correlation": 9}},
    ]
    parts, total, count, categories = kernel_time_by_range(events, "llama.")
    assert parts == {"norm": 4.0, "proj": 6.0, "other": 3.5}
    assert (total, count) == (13.5, 4)
    assert categories["kernel"] == 3 and categories["user_annotation"] == 3


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_time_parts_refuses_without_a_gpu():
    from gpuperf.bench.traces import time_parts
    from gpuperf.models.moe import SECTIONS

    with pytest.raises(RuntimeError, match="CUDA GPU"):
        time_parts(lambda: None, SECTIONS, steps=1)
