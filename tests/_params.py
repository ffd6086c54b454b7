"""Shared test tables: dtypes the current mode can check, and readable ids."""

import itertools

import pytest
import torch

from gpuperf.testing import assert_close
from tests.conftest import DEVICE

# bfloat16 too under the interpreter, which gpuperf._interpreter makes compute it as a GPU does.
FLOAT_DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]


def shape_id(shape) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


#: The type ``pytest.param`` returns.
_PARAM = type(pytest.param(None))


def all_pairs(sizes) -> list[tuple[int, ...]]:
    """Indices ``(i0, i1, ...)`` into axes of ``sizes`` values such that every pair of values
    of any two axes meets in at least one of them (all-pairs testing), chosen greedily and
    deterministically, in the order of the full product. With fewer than three axes, the
    full product."""
    full = list(itertools.product(*map(range, sizes)))
    if len(sizes) < 3:
        return full
    axes = list(itertools.combinations(range(len(sizes)), 2))

    def pairs(case):
        return {(i, case[i], j, case[j]) for i, j in axes}

    uncovered = set().union(*map(pairs, full))
    chosen = []
    while uncovered:
        best = max(full, key=lambda case: len(pairs(case) & uncovered))  # (the first of the best)
        chosen.append(best)
        uncovered -= pairs(best)
    return sorted(chosen)


def cases(*axes, ids=()):
    """The cases of a test over several axes of values, as one ``parametrize`` table: on a
    GPU every combination; under the interpreter, where each case costs seconds, a subset in
    which every pair of values of two axes meets at least once (:func:`all_pairs`): each
    shape still meets each dtype and each path, each dtype each path, but not every shape
    every (dtype, path). An axis is a list of values or ``pytest.param`` (whose id and marks
    are kept); ``ids`` gives an id function per axis for plain values (``str`` where missing).
    A case's id joins its values' ids with ``-``, as stacked ``parametrize`` decorators do."""
    columns = []
    for n, axis in enumerate(axes):
        idfn = ids[n] if n < len(ids) and ids[n] is not None else str
        column = []
        for value in axis:
            if isinstance(value, _PARAM):
                (one,) = value.values
                column.append((one, value.id if value.id is not None else idfn(one), value.marks))
            else:
                column.append((value, idfn(value), ()))
        columns.append(column)
    sizes = [len(column) for column in columns]
    chosen = itertools.product(*map(range, sizes)) if DEVICE == "cuda" else all_pairs(sizes)
    table = []
    for case in chosen:
        picked = [columns[n][i] for n, i in enumerate(case)]
        table.append(
            pytest.param(
                *(value for value, _, _ in picked),
                id="-".join(str(case_id) for _, case_id, _ in picked),
                marks=[mark for _, _, marks in picked for mark in marks],
            )
        )
    return table


def randn(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(device=DEVICE, dtype=dtype)


def assert_close_fp8(name, ref, out, k):
    """``assert_close``, except for float32 outputs on a GPU: Hopper's tensor cores add FP8
    products in an accumulator of about 14 significant bits (promoted to float32 every
    128 products), so a float32 result is that precise, not float32-precise."""
    if out.dtype == torch.float32 and out.is_cuda:
        # Sums of k products of order one: partial sums of order sqrt(k), rounded at 2**-13.
        torch.testing.assert_close(out.double(), ref, rtol=2**-10, atol=2**-10 * k**0.5, msg=name)
    else:
        assert_close(name, ref, out, k=k)


def recording_backend():
    """``(graphs, backend)``: a ``torch.compile`` backend that runs each captured graph as it is
    and appends it to ``graphs``, after a ``torch._dynamo.reset()`` (a fresh cache of graphs)."""
    torch._dynamo.reset()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return graphs, backend


def called_ops(graph) -> set[str]:
    """The ops a captured FX graph calls, by name (``"gpuperf.rope"``, ``"aten.mul.Tensor"``)."""
    return {str(n.target).removesuffix(".default") for n in graph.graph.nodes if n.op == "call_function"}


def ptxas_report(ptx: str) -> str:
    """:func:`gpuperf.kernels.gluon.offline.ptxas_report`, or a skip where Triton's wheel
    carries no ptxas."""
    from gpuperf.kernels.gluon.offline import ptxas_report as report

    try:
        return report(ptx)
    except FileNotFoundError as err:  # (a ptxas that fails is a failure, not a skip)
        pytest.skip(str(err))


def changed_call(args: dict, change: dict) -> tuple[list, dict]:
    """The positional ``args`` (by name) and keyword arguments of a call with ``change``
    applied: a name among ``args`` maps to a function of that argument, any other name to
    a keyword argument's value."""
    args, kwargs = dict(args), {}
    for name, value in change.items():
        if name in args:
            args[name] = value(args[name])
        else:
            kwargs[name] = value
    return list(args.values()), kwargs


def with_changed_source(measurement: dict, rel: str | None = None) -> dict:
    """A copy of a record or capture as if the code of its source ``rel`` (default: the first
    it hashed) had changed since it was measured: that file's stored hash is replaced, and
    the combined hash recomputed, so the copy is well formed and stale."""
    from gpuperf.bench import sources

    changed = dict(measurement["sources"])
    rel = rel or next(iter(changed))
    # A file hashed by its kernels and constants (records of device time): change its first.
    rel = rel if rel in changed else next(entry for entry in changed if entry.startswith(f"{rel}::"))
    changed[rel] = "0" * 64
    return {**measurement, "sources": changed, "sources_sha256": sources.combined_sha256(changed)}


def record_calls(monkeypatch, module, name: str) -> list:
    """Replace ``module.name`` by a wrapper that appends each call's positional arguments to
    the returned list and then calls the original (to count an op's checks, say)."""
    calls, original = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a: calls.append(a) or original(*a))
    return calls


def check_planned_calls(op, registered, reference, cases, k: int = 1) -> None:
    """The calls of an op's plan test: ``op(*args, **kwargs)`` for each ``(args, kwargs)`` of
    ``cases(seed)``, for seeds 1, 2 and 1 again (the first seed's calls check and plan, the
    later ones launch from the plans). Each output must equal ``registered(*args, **kwargs)``
    (the ``torch.library`` op) bit for bit and ``reference(*args, **kwargs)`` within
    :func:`gpuperf.testing.assert_close` (``k``: the length of the reduction); seed 2's
    outputs must differ from seed 1's, and seed 1's second run must give its first outputs
    again: the planned calls read their own inputs."""
    runs = []
    for seed in (1, 2, 1):
        outputs = []
        for i, (args, kwargs) in enumerate(cases(seed)):
            out = op(*args, **kwargs)
            assert torch.equal(out, registered(*args, **kwargs)), (i, seed)
            assert_close(f"planned {op.__name__} case {i}, seed {seed}", reference(*args, **kwargs), out, k=k)
            outputs.append(out)
        runs.append(outputs)
    for i, (first, other, again) in enumerate(zip(*runs, strict=True)):
        assert torch.equal(again, first) and not torch.equal(other, first), i


def compiled_offline(script: str) -> dict:
    """The JSON a ``python -c script`` subprocess prints on its last line, run with Triton's
    interpreter off and ``src`` and the checkout on its path: an offline compile for a GPU this
    machine may not have (the MoE kernels' Hopper compile tests). Fails the test, with the
    subprocess's error, where it fails."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "TRITON_INTERPRET": "0",
        "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)]),
    }
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root)
    if done.returncode:
        pytest.fail(f"the compile failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
