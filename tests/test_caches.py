"""The one folder for Triton's and Inductor's caches (gpuperf.caches): where it is, that a
variable you set wins, and that torch and Triton read the variables it sets."""

import json
import os
import subprocess
import sys
from pathlib import Path

from gpuperf import caches

SRC = Path(__file__).resolve().parents[1] / "src"


def test_the_folder_is_gpuperf_cache_dir_else_xdg_else_home(monkeypatch, tmp_path):
    assert caches.cache_root({"GPUPERF_CACHE_DIR": "/data/c", "XDG_CACHE_HOME": "/x"}) == Path("/data/c")
    assert caches.cache_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/gpuperf")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert caches.cache_root({}) == tmp_path / ".cache" / "gpuperf"
    assert (
        caches.cache_root({"GPUPERF_CACHE_DIR": "", "XDG_CACHE_HOME": ""}) == tmp_path / ".cache" / "gpuperf"
    )


def test_it_sets_every_cache_under_the_folder_where_nothing_is_set():
    env = {"GPUPERF_CACHE_DIR": "/c"}
    got = caches.use_compile_caches(env)
    assert got == {
        "TRITON_CACHE_DIR": "/c/triton",
        "TORCHINDUCTOR_CACHE_DIR": "/c/inductor",
        "TORCH_EXTENSIONS_DIR": "/c/torch_extensions",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
    }
    assert env == {"GPUPERF_CACHE_DIR": "/c", **got}


def test_a_variable_you_set_wins_and_an_empty_one_counts_as_unset():
    env = {"GPUPERF_CACHE_DIR": "/c", "TRITON_CACHE_DIR": "/mine", "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}
    env["TORCHINDUCTOR_CACHE_DIR"] = ""
    got = caches.use_compile_caches(env)
    assert got["TRITON_CACHE_DIR"] == "/mine" and got["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "0"
    assert got["TORCHINDUCTOR_CACHE_DIR"] == "/c/inductor"
    assert caches.use_compile_caches(env) == got  # a second call changes nothing


def test_torch_and_triton_read_what_it_sets(tmp_path):
    """In a fresh process, as docs/conf.py does: the function before torch; then Triton's cache
    folder, Inductor's, the CUDA extensions' build folder, and the FX graph cache on even where
    a site-wide default is off.
    Importing gpuperf.caches imports no torch (conf.py calls it before torch comes in)."""
    program = """
import json, sys
from gpuperf.caches import use_compile_caches
before = "torch" in sys.modules
use_compile_caches()
import inspect
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
from torch._inductor.runtime.cache_dir_utils import cache_dir
from torch.utils.cpp_extension import _get_build_directory
from triton import knobs
print(json.dumps({
    "torch_before": before,
    "triton": knobs.cache.dir,
    "inductor": cache_dir(),
    "extension": _get_build_directory("row_mean", verbose=False),
    "fx_graph_cache": inductor_config.fx_graph_cache,
    "autograd_var_known": "TORCHINDUCTOR_AUTOGRAD_CACHE" in inspect.getsource(functorch_config),
    "autograd_cache": functorch_config.enable_autograd_cache,
}))
"""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TRITON_CACHE", "TORCHINDUCTOR_", "TORCH_EXTENSIONS"))
    }
    env |= {"GPUPERF_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(SRC)}
    env["TORCHINDUCTOR_FX_GRAPH_CACHE_DEFAULT"] = "0"  # a site-wide default that turns it off
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {
        "torch_before": False,
        "triton": str(tmp_path / "triton"),
        "inductor": str(tmp_path / "inductor"),
        "extension": str(tmp_path / "torch_extensions" / "row_mean"),
        "fx_graph_cache": True,
        "autograd_var_known": True,
        "autograd_cache": True,
    }
