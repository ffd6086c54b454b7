"""scripts/moe_gpu_check.py, the GPU probe of the MoE kernels: its steps run end to end at tiny
sizes (on the CPU through Triton's interpreter, where its timings record do_bench's error), its
correctness checks pass, and it writes its JSON."""

import importlib.util
import json
from pathlib import Path

import pytest

from gpuperf.kernels.configs import FP8_BLOCKWISE_CANDIDATES, GROUPED_MATMUL_CANDIDATES, moe_candidates
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
    monkeypatch.setattr(module, "FP8_SHAPES", ((40, 200),))
    monkeypatch.setattr(module, "FP8_TOKENS", (8, 16))
    monkeypatch.setattr(module, "SWEEP_FP8", ((16, 40, 200),))
    monkeypatch.setattr(module, "DEVICE", DEVICE)
    return module


def test_each_step_runs_and_the_kernels_pass_their_checks(probe_module):
    probe = probe_module.Probe(budget_s=600)
    for step in (probe_module.check_grouped, probe_module.time_grouped, probe_module.check_and_time_fp8,
                 probe_module.sweep):  # fmt: skip
        step(probe)
    result = probe.result
    assert [row["vs_float32"] for row in result["correctness"]] == ["ok", "ok"]  # up and down
    assert [row["vs_float64"] for row in result["fp8"] if "vs_float64" in row] == ["ok"]
    assert len(result["grouped"]) == 2 * 3 and len(result["fp8"]) == 2
    for row in result["grouped"]:
        assert {"gpuperf", "cublas_loop"} <= set(row)
        assert all(("ms" in row[key]) == (DEVICE == "cuda") for key in ("gpuperf", "cublas_loop"))
    configs = len(moe_candidates(GROUPED_MATMUL_CANDIDATES, 2)) + len(
        moe_candidates(FP8_BLOCKWISE_CANDIDATES, 1)
    )
    assert len(result["sweep"]) == configs
    assert all(("ms" in row["timing"]) == (DEVICE == "cuda") for row in result["sweep"])
    assert result["skipped"] == []


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
