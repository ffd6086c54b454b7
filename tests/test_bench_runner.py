"""The runner's output check: one output, or a tuple of them (a backward pass's gradients), and a
provider's ``check_as``."""

import pytest
import torch

from gpuperf.bench.runner import check


def test_check_compares_each_output_of_a_tuple():
    a, b = torch.ones(3, dtype=torch.float16), torch.zeros(2, dtype=torch.float16)
    check("grads", (a.double(), b.double()), (a, b))
    with pytest.raises(AssertionError, match=r"grads\[1\]"):
        check("grads", (a.double(), b.double()), (a, b + 1))
    with pytest.raises(AssertionError, match="expected 2 outputs"):
        check("grads", (a.double(), b.double()), a)


def test_check_compares_a_single_output():
    a = torch.ones(3, dtype=torch.float16)
    check("out", a.double(), a)
    with pytest.raises(AssertionError, match="out"):
        check("out", a.double(), a * 2)


def test_check_norm_wise_allows_spread_error_and_fails_past_the_tolerance():
    """With ``norm_rtol`` an output passes on ``||out - ref|| / ||ref||``: an error of 2% in
    every element passes 5% (and would fail bf16's elementwise tolerance at large values),
    10% fails, NaN fails, and a wrong shape is named."""
    ref = torch.linspace(1, 100, 64, dtype=torch.float64)
    check("g", ref, (ref * 1.02).to(torch.bfloat16), norm_rtol=0.05)
    with pytest.raises(AssertionError, match=r"g: \|\|out - ref\|\| / \|\|ref\|\| = 0.1"):
        check("g", ref, (ref * 1.1).to(torch.bfloat16), norm_rtol=0.05)
    nan = ref.clone()
    nan[3] = float("nan")
    with pytest.raises(AssertionError, match="= nan"):
        check("g", ref, nan, norm_rtol=0.05)
    with pytest.raises(AssertionError, match=r"shape \(32,\)"):
        check("g", ref, ref[:32], norm_rtol=0.05)
    with pytest.raises(AssertionError, match=r"grads\[1\]"):
        check("grads", (ref, ref), (ref, ref * 2), norm_rtol=0.05)


def test_a_provider_is_checked_as_its_check_as_says_and_timed_as_it_is(monkeypatch):
    """``Provider.check_as`` maps the checked output (a matmul without its epilogue, say)
    onto the reference; the timed calls run the provider itself."""
    from gpuperf.bench import runner
    from gpuperf.bench.catalog import Benchmark, Provider, call
    from gpuperf.bench.timing import Timing

    timed = []

    def fake_timer(fn):
        timed.append(fn())
        return Timing(ms=1.0, ms_p20=0.9, ms_p80=1.1)

    monkeypatch.setattr(runner, "require_cuda", lambda: None)
    monkeypatch.setitem(runner.TIMERS, "device", fake_timer)
    monkeypatch.setattr(runner.records, "collect_provenance", lambda timer: {"gpu": "test"})
    bench = Benchmark(
        name="check_as_test",
        title="t",
        x_name="n",
        x_label="n",
        x_values=(4,),
        make_inputs=lambda n, device: (torch.arange(n, dtype=torch.float32),),
        reference=lambda x: (2 * x).double(),
        providers=(
            Provider("fused", "fused", call(lambda x: 2 * x)),
            Provider("part", "first half only", call(lambda x: x + 0), check_as=lambda out: 2 * out),
            Provider("wrong", "wrong", call(lambda x: x + 0)),
        ),
        baseline="fused",
        metric="GB/s",
        bytes=lambda n: 8 * n,
        flops=lambda n: n,
        ceiling=None,
        sources=(),
    )
    rows = runner.run(bench, log=lambda line: None)["rows"]
    assert [r["status"] for r in rows] == ["ok", "ok", "mismatch"]
    # Each row keeps how long its first call and its timing took; a mismatch is never timed.
    assert all(r["first_call_s"] >= 0 and r["timing_s"] >= 0 for r in rows[:2])
    assert rows[2]["first_call_s"] >= 0 and rows[2]["timing_s"] is None
    assert torch.equal(timed[1], torch.arange(4, dtype=torch.float32))  # timed as it is
    # A quick run measures the providers it names, in declared order.
    some = runner.run(bench, providers=("part", "fused"), log=lambda line: None)["rows"]
    assert [r["provider"] for r in some] == ["fused", "part"]


def test_host_time_times_the_providers_of_a_size_in_turn(monkeypatch):
    """With ``timer="host"``, the providers of one size are checked first, then timed together
    by ``host_times_ms`` (in turn, round by round); a provider whose timing fails gets an
    error row, and every row keeps the process's CPU time."""
    from gpuperf.bench import runner
    from gpuperf.bench.catalog import Benchmark, Provider, call
    from gpuperf.bench.timing import Timing

    batches = []

    def fake_host_times(fns, calls=None):
        batches.append([fn() for fn in fns])
        return [Timing(ms=0.01, ms_p20=0.009, ms_p80=0.011, cpu_ms=0.0095), RuntimeError("queue full")]

    monkeypatch.setattr(runner, "require_cuda", lambda: None)
    monkeypatch.setattr(runner, "host_times_ms", fake_host_times)
    monkeypatch.setattr(runner.records, "collect_provenance", lambda timer: {"gpu": "test"})
    bench = Benchmark(
        name="host_test",
        title="t",
        x_name="n",
        x_label="n",
        x_values=(4, 8),
        make_inputs=lambda n, device: (torch.arange(n, dtype=torch.float32),),
        reference=lambda x: (2 * x).double(),
        providers=(
            Provider("ours", "ours", call(lambda x: 2 * x)),
            Provider("wrong", "wrong", call(lambda x: x + 0)),
            Provider("theirs", "theirs", call(lambda x: x * 2)),
        ),
        baseline="theirs",
        metric="us/call",
        bytes=lambda n: 0,
        flops=lambda n: 0,
        ceiling=None,
        sources=(),
        timer="host",
    )
    rows = runner.run(bench, log=lambda line: None)["rows"]
    # one batch per size, of the providers that matched, in declared order
    assert len(batches) == 2 and [len(b) for b in batches] == [2, 2]
    assert [(r["x"], r["provider"], r["status"]) for r in rows] == [
        (4, "ours", "ok"),
        (4, "wrong", "mismatch"),
        (4, "theirs", "error"),
        (8, "ours", "ok"),
        (8, "wrong", "mismatch"),
        (8, "theirs", "error"),
    ]
    assert rows[0]["value"] == pytest.approx(10.0) and rows[0]["cpu_ms"] == 0.0095
    assert "queue full" in rows[2]["message"]


def test_host_times_take_each_function_in_turn_and_keep_what_failed(monkeypatch):
    from gpuperf.bench import timing

    order = []

    def fake_host_time(fn, calls, rounds):
        assert rounds == 1
        order.append(fn())
        if fn() == "b" and order.count("b") == 2:
            raise RuntimeError("b broke")
        return timing.Timing(ms=len(order), ms_p20=0, ms_p80=0, cpu_ms=len(order) / 2)

    monkeypatch.setattr(timing, "require_cuda", lambda: None)
    monkeypatch.setattr(timing, "host_time_ms", fake_host_time)
    a, b = timing.host_times_ms([lambda: "a", lambda: "b"], calls=3, rounds=3)
    assert order == ["a", "b", "a", "b", "a"]  # in turn; b is timed no further once it failed
    assert (a.ms, a.cpu_ms) == (3, 1.5)  # median of rounds at positions 1, 3, 5
    assert isinstance(b, RuntimeError)
    with pytest.raises(ValueError, match="rounds"):
        timing.host_times_ms([lambda: None], rounds=0)


def test_the_bench_command_skips_a_benchmark_whose_kernels_cannot_run_here(monkeypatch, tmp_path, capsys):
    """``python -m gpuperf.bench`` on a GPU the kernel under study does not support (Gluon's
    Hopper kernels on an A100) says so and measures nothing, rather than failing."""
    from gpuperf.bench import __main__ as command
    from gpuperf.bench import hardware, records, runner

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    monkeypatch.setattr(hardware, "measure_ceilings", lambda: {})
    monkeypatch.setattr(records, "collect_provenance", lambda **kw: {"gpu": "NVIDIA A100-SXM4-80GB"})
    measured = []
    monkeypatch.setattr(runner, "run", lambda benchmark, **kw: measured.append(benchmark.name))
    assert command.main(["--no-tune", "--out", str(tmp_path), "gluon_fp8"]) == 0
    assert measured == []
    assert "skipped gluon_fp8: its kernels do not run on compute capability 8.0" in capsys.readouterr().out
