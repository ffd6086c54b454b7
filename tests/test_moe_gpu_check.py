"""scripts/moe_gpu_check.py, the GPU probe of the MoE kernels: its steps run end to end at tiny
sizes (on the CPU through Triton's interpreter, where its timings record that nothing was timed), its
correctness checks pass, and it writes its JSON."""

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import DEVICE

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def probe_module(monkeypatch):
    spec = importlib.util.spec_from_file_location("moe_gpu_check", ROOT / "scripts/moe_gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "MODELS", (("tiny", 3, 2, 32, 48),))
    monkeypatch.setattr(module, "CHECK_TOKENS", 8)
    monkeypatch.setattr(module, "DECODE_TOKENS", 2)
    monkeypatch.setattr(module, "PREFILL_TOKENS", 8)
    monkeypatch.setattr(module, "FP8_SHAPES", ((40, 208),))
    monkeypatch.setattr(module, "FP8_TOKENS", (8, 16))
    monkeypatch.setattr(module, "SWEEP_FP8", ((16, 40, 208),))
    monkeypatch.setattr(module, "DEVICE", DEVICE)
    return module


# One test per step (each on a fresh probe), so that pytest-xdist spreads them over its workers.


def test_the_correctness_step_passes_every_kernel(probe_module):
    probe = probe_module.Probe(budget_s=600)
    probe_module.check_grouped(probe)
    result = probe.result
    assert [row["vs_float32"] for row in result["correctness"]] == ["ok", "ok"]  # up and down
    for row in result["correctness"]:  # every kernel, and TMA on nn.Linear-layout weights
        for variant in ("pointer", "tma", "tma_linear_weights"):
            assert row[variant]["vs_float32"] == "ok", row[variant]
    assert result["skipped"] == []


def test_the_grouped_step_times_every_provider(probe_module):
    probe = probe_module.Probe(budget_s=600)
    probe_module.time_grouped(probe)
    result = probe.result
    assert len(result["grouped"]) == 2 * 3
    for row in result["grouped"]:
        assert {"gpuperf", "gpuperf_pointer", "cublas_loop"} <= set(row)
        assert all(("ms" in row[key]) == (DEVICE == "cuda") for key in ("gpuperf", "cublas_loop"))
    assert result["skipped"] == []


def test_the_fp8_step_checks_every_blockwise_kernel_against_float64(probe_module):
    probe = probe_module.Probe(budget_s=600)
    probe_module.check_and_time_fp8(probe)
    result = probe.result
    (checked,) = [row["vs_float64"] for row in result["fp8"] if "vs_float64" in row]
    assert checked == {
        key: "ok" for key in ("gpuperf_blockwise", "gpuperf_blockwise_tma", "gpuperf_blockwise_pointer")
    }
    assert len(result["fp8"]) == 2
    assert result["skipped"] == []


def test_the_sweep_step_runs_every_config(probe_module):
    probe = probe_module.Probe(budget_s=600)
    probe_module.sweep(probe)
    result = probe.result
    configs = 2 * len(probe_module.sweep_configs(probe, "grouped")) + len(probe_module.SWEEP_FP8) * len(
        probe_module.sweep_configs(probe, "fp8")
    )
    assert len(result["sweep"]) == configs
    # The grouped sweep runs at the prefill's tokens as the probe reads them when made.
    assert {row["tokens"] for row in result["sweep"] if "tokens" in row} == {probe_module.PREFILL_TOKENS}
    assert all(("ms" in row["timing"]) == (DEVICE == "cuda") for row in result["sweep"])
    assert result["skipped"] == []


def test_config_labels_read_back_as_the_configs(probe_module):
    from gpuperf.kernels import MatmulConfig, PersistentConfig
    from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config

    configs = [
        MatmulConfig(128, 256, 64, 8, 8, 3),
        PersistentConfig(128, 256, 64, 8, 8, 4, tma=True),
        PersistentConfig(128, 128, 64, 4, 4, 4, tma=True, warp_specialize=True),
        GluonFP8Config(128, 128, 128, num_stages=5, num_warps=8),
        GluonFP8Config(64, 64, 128, num_stages=8, num_warps=4, schedule="drain"),
    ]
    for config in configs:
        assert probe_module.parse_config(probe_module.config_label(config)) == config
    assert probe_module.config_label(configs[1]) == "tma 128x256x64 g8 w8 s4"
    # Group rows 8, warps 8 and stages 3 unless given.
    assert probe_module.parse_config("tma 128x256x64") == PersistentConfig(128, 256, 64, 8, 8, 3)
    for bad in ("cutlass 128x128x64", "tma 128x128", "tma", "gluon 128xx128 w8"):
        with pytest.raises(ValueError, match="config label"):
            probe_module.parse_config(bad)


def test_only_and_configs_choose_the_steps_and_sweep(probe_module, tmp_path, monkeypatch):
    ran = []
    for name, function in probe_module.STEP_FUNCTIONS.items():
        monkeypatch.setattr(probe_module, function, lambda probe, name=name: ran.append(name))
    if DEVICE == "cpu":
        monkeypatch.setattr("torch.cuda.is_available", lambda: True)
        monkeypatch.setattr("torch.cuda.get_device_name", lambda *a: "stand-in")
        monkeypatch.setattr("torch.cuda.get_device_capability", lambda *a: (9, 0))
    argv = ["--out", str(tmp_path), "--only", "sweep-fp8,check", "--fp8-configs", "gluon 64x64x128 w4 s8"]
    assert probe_module.main(argv) == 0
    assert ran == ["check", "sweep-fp8"]
    assert json.loads((tmp_path / "moe_gpu_check.json").read_text())["provenance"]["argv"] == argv
    with pytest.raises(SystemExit):
        probe_module.main(["--only", "sweep"])


def test_the_budget_stops_new_steps_and_says_which(probe_module):
    probe = probe_module.Probe(budget_s=-1)
    probe_module.time_grouped(probe)
    assert probe.result["grouped"] == [] and probe.result["skipped"] == ["grouped tiny up"]


def test_main_needs_a_gpu_or_writes_its_json(probe_module, tmp_path):
    status = probe_module.main(["--out", str(tmp_path), "--budget", "0", "--no-sweep"])
    if DEVICE == "cpu":
        assert status == 2 and not (tmp_path / "moe_gpu_check.json").exists()
    else:
        assert status == 0
        assert "provenance" in json.loads((tmp_path / "moe_gpu_check.json").read_text())


def test_a_gluon_smoke_failure_leaves_gluon_out(probe_module, monkeypatch):
    # The Gluon kernels first run in a process of their own; if that fails (or hangs), the
    # op's default becomes the Triton TMA kernel for the run and the reason is recorded.
    import importlib
    import subprocess
    import types

    from gpuperf.kernels import configs
    from gpuperf.kernels.gluon import GluonFP8Config

    matmul_fp8_blockwise = importlib.import_module("gpuperf.kernels.matmul_fp8_blockwise")

    failed = types.SimpleNamespace(
        returncode=1, stdout="gluon smoke ...: relative error 1.0e+00\n", stderr=""
    )
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: failed)
    gluon = GluonFP8Config(128, 128, 128, num_stages=5)
    monkeypatch.setattr(matmul_fp8_blockwise, "fp8_blockwise_config", lambda a, b=None: gluon)
    probe = probe_module.Probe(budget_s=600)
    assert probe_module.gluon_runs(probe) is False
    assert "relative error" in probe.result["gluon_smoke"]
    assert matmul_fp8_blockwise.fp8_blockwise_config(None, None) == configs.FP8_BLOCKWISE_TMA_DEFAULT

    def hangs(*args, **kwargs):
        raise subprocess.TimeoutExpired("moe_gpu_check.py --gluon-smoke", 120)

    monkeypatch.setattr(subprocess, "run", hangs)
    probe = probe_module.Probe(budget_s=600)
    assert probe_module.gluon_runs(probe) is False and probe.result["gluon_smoke"] == "timed out after 120 s"
