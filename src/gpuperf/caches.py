"""Where compiled work is kept between pages and between runs: one folder for Triton's
compiled kernels, Inductor's caches (compiled FX graphs, AOT autograd graphs and the
timings behind ``torch.compile(mode="max-autotune")``'s choices) and the CUDA C++
extensions PyTorch builds at run time (the profiling guide's row mean).

A second ``nox -s docs`` on a GPU, or a tutorial run as a script after it, then finds
the kernels and the ``max-autotune`` choices of the first run instead of compiling and
autotuning again. The folder is ``$GPUPERF_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpuperf``,
else ``~/.cache/gpuperf``; delete it to start cold.

:func:`use_compile_caches` sets the variables below, each only where it is not set
already (a value of yours wins). ``docs/conf.py`` calls it before torch is imported,
``python -m gpuperf.bench`` before it measures or tunes, and
:func:`gpuperf.pages.report.run_or_load` before it measures live (for a tutorial run as a
script). Importing this module imports nothing heavy.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The variable that moves the folder; unset, :func:`cache_root` picks it.
CACHE_VAR = "GPUPERF_CACHE_DIR"

#: Each variable set, and its value: a subfolder of the root, or ``"1"`` (on).
#: ``TRITON_CACHE_DIR``: Triton's compiled kernels, ours and those Inductor writes.
#: ``TORCHINDUCTOR_CACHE_DIR``: Inductor's folder: its FX graph cache (``fxgraph/``), AOT
#: autograd cache (``aotautograd/``) and the autotuning timings of max-autotune (``cache/``).
#: ``TORCHINDUCTOR_FX_GRAPH_CACHE`` and ``TORCHINDUCTOR_AUTOGRAD_CACHE``: those two caches on
#: (their default in the pinned torch; set so that they are on whatever a build defaults to).
#: ``TORCH_EXTENSIONS_DIR``: the builds of ``torch.utils.cpp_extension.load_inline``
#: (``nvcc`` and ``ninja``, tens of seconds the first time), under the same root so that
#: deleting it starts every compile cold.
SETTINGS = {
    "TRITON_CACHE_DIR": "triton",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
    "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
}

#: The variables whose value is a folder under the root.
FOLDERS = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR")


def cache_root(environ=None) -> Path:
    """The folder the caches go to: ``GPUPERF_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpuperf``,
    else ``~/.cache/gpuperf`` (``environ``: default ``os.environ``)."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_VAR):
        return Path(env[CACHE_VAR]).expanduser()
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpuperf"


def use_compile_caches(environ=None) -> dict[str, str]:
    """Point Triton's and Inductor's caches at :func:`cache_root`, each variable of
    :data:`SETTINGS` only where ``environ`` (default ``os.environ``) does not set it yet.

    Call it before anything is compiled: torch reads ``TORCHINDUCTOR_FX_GRAPH_CACHE`` and
    ``TORCHINDUCTOR_AUTOGRAD_CACHE`` when Inductor's and functorch's configs are first
    imported (not by ``import torch``), and the folders when it first compiles.
    Nothing is created here; Triton and Inductor create their folders when they write.

    Returns:
        ``{variable: value}`` for every variable of :data:`SETTINGS`, as now in force
        (yours where you set it).
    """
    env = os.environ if environ is None else environ
    root = cache_root(env)
    for name, value in SETTINGS.items():
        if not env.get(name):
            env[name] = str(root / value) if name in FOLDERS else value
    return {name: env[name] for name in SETTINGS}
