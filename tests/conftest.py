"""Test mode: real kernels on a GPU when one is present, Triton's interpreter otherwise.

``TRITON_INTERPRET`` must be set before any ``@triton.jit`` kernel is defined,
so this runs before the test modules import :mod:`gpuperf.kernels`.
"""

import contextlib
import os

from gpuperf.caches import use_compile_caches

# Before torch: Triton's and Inductor's caches in the folder `nox -s docs` uses too (where
# you have not set them), so the kernels the tests compile for sm_90 (the Gluon schedules,
# the debugging guide's demos) are found there by the docs build that follows, and by the
# next test run, instead of compiled again.
use_compile_caches()

import pytest  # noqa: E402
import torch  # noqa: E402

from gpuperf._runtime import enable_interpreter_without_gpu, is_interpreter  # noqa: E402

enable_interpreter_without_gpu()


def _share_the_cores() -> None:
    """Under pytest-xdist, each worker's torch (and the processes tests start) uses its
    share of the cores, not all of them: with ``-n 2`` on 2 cores, two workers of 2 OpenMP
    threads each wait on each other's threads, and the tests' tiny CPU ops (references,
    the recipes script's smoke run) took a fifth to a third more CPU time. A value you set
    in ``OMP_NUM_THREADS`` wins."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers <= 1 or os.environ.get("OMP_NUM_THREADS"):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = max(1, cores // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)  # for the processes the tests start
    torch.set_num_threads(threads)


_share_the_cores()

#: Device the kernel tests run on: the GPU if there is one, else the CPU (interpreter).
DEVICE = "cuda" if torch.cuda.is_available() and not is_interpreter() else "cpu"


def pytest_collection_modifyitems(config, items):
    if DEVICE == "cuda":
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (kernels run in Triton's interpreter here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> str:
    return DEVICE


@pytest.fixture
def ampere_gpu(monkeypatch):
    """The GPU reads as compute capability 8.0 (no FP8 tensor cores, no TMA) during the test.

    The kernels ask a device's capability once and keep it, so the kept answers are
    dropped before and after."""
    from gpuperf.kernels import device

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    device.forget()
    yield
    monkeypatch.undo()
    device.forget()


@pytest.fixture
def compiling_in_traced_frames_only(monkeypatch):
    """``torch.compiler.is_compiling()`` as torch 2.11 has it: True only in the frames Dynamo
    traces, False where a compile runs an op on fake tensors itself (newer torch holds it True
    for the whole compile); an op must tell a trace by its tensors there."""
    monkeypatch.setattr(torch.compiler, "_compile_session_context", contextlib.nullcontext, raising=False)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def eager_launches_of_a_trace(monkeypatch):
    """A list that collects every eager launch (through the cache of compiled kernels, not a
    graph's ``wrap_triton``) given a trace's tensor (a fake tensor, or a functional one
    wrapping it), which has no address: an op that tells a trace
    (:func:`gpuperf.kernels.tma.tracing`) makes none."""
    from torch._subclasses.fake_tensor import is_fake

    from gpuperf.kernels.launch import Launcher

    found = []
    launch = Launcher.__call__

    def spy(self, grid, runtime, constexprs, **options):
        if any(isinstance(v, torch.Tensor) and is_fake(v) for v in runtime):
            found.append(self.kernel)
        return launch(self, grid, runtime, constexprs, **options)

    monkeypatch.setattr(Launcher, "__call__", spy)
    return found
