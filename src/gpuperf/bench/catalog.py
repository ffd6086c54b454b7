"""Every benchmark on the site, declared once.

Tutorials import their benchmark from here; ``python -m gpuperf.bench`` runs them
all; the tests check the declarations against the committed records.
"""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.spec import Benchmark, Provider, call


def _kernels():
    # Imported on first use: importing the catalog must not import Triton kernels.
    import gpuperf.kernels

    return gpuperf.kernels


def _vector_add(x, y):
    return _kernels().vector_add(x, y)


def _softmax(x):
    return _kernels().softmax(x)


def _compiled(fn):
    """Provider factory for ``torch.compile(fn)``: a fresh compilation per size, so
    each size gets a kernel specialised to it (no dynamic-shape recompile) and the
    recompile limit is never reached."""

    def make(*inputs):
        torch._dynamo.reset()
        compiled = torch.compile(fn, dynamic=False)
        return lambda: compiled(*inputs)

    return make


def _random_pair(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.randn(n, device=device), torch.randn(n, device=device))


VECTOR_ADD = Benchmark(
    name="vector_add",
    title="Vector add, float32",
    x_name="n_elements",
    x_label="elements per tensor",
    x_values=tuple(2**p for p in range(12, 29)),
    make_inputs=_random_pair,
    reference=reference.vector_add_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.vector_add)", call(_vector_add)),
        Provider("torch", "PyTorch x + y", call(torch.add)),
    ),
    baseline="torch",
    metric="GB/s",
    work=lambda n: metrics.elementwise_bytes(n, element_size=4),
    ceiling="copy_gbps",
    sources=("kernels/vector_add.py", "kernels/_configs.py"),
)

SOFTMAX_ROWS = 4096
SOFTMAX_LONG_ROWS = 1024

_SOFTMAX_PROVIDERS = (
    Provider("triton", "Triton (gpuperf.kernels.softmax)", call(_softmax)),
    Provider("torch", "torch.softmax", call(lambda x: torch.softmax(x, dim=-1))),
    Provider("compile", "torch.compile(naive)", _compiled(reference.softmax_naive)),
    Provider("naive", "naive eager PyTorch", call(reference.softmax_naive)),
)

SOFTMAX = Benchmark(
    name="softmax",
    title=f"Softmax, float32, {SOFTMAX_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    work=lambda n: metrics.softmax_bytes(SOFTMAX_ROWS, n, element_size=4),
    ceiling="copy_gbps",
    sources=("kernels/softmax.py", "kernels/_configs.py"),
)

SOFTMAX_LONG = Benchmark(
    name="softmax_long_rows",
    title=f"Softmax on long rows, float32, {SOFTMAX_LONG_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=(65536, 131072, 262144),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_LONG_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    work=lambda n: metrics.softmax_bytes(SOFTMAX_LONG_ROWS, n, element_size=4),
    ceiling="copy_gbps",
    sources=("kernels/softmax.py", "kernels/_configs.py"),
)

ALL: tuple[Benchmark, ...] = (VECTOR_ADD, SOFTMAX, SOFTMAX_LONG)


def by_name(name: str) -> Benchmark:
    """Return the benchmark called ``name``; ``KeyError`` listing the known names otherwise."""
    for b in ALL:
        if b.name == name:
            return b
    raise KeyError(f"no benchmark {name!r}; known: {[b.name for b in ALL]}")
