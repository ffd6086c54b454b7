"""Sessions: ``nox -s tests``, ``nox -s docs``, ``nox -s site``, ``nox -s lint``, ``nox -s bench``,
``nox -s crosscheck``.

Every session installs gpuperf (editable) with its dependency group from
pyproject.toml, pinned by constraints.txt. Without an NVIDIA GPU, ``tests`` and
``docs`` run the kernels through Triton's interpreter; ``bench`` refuses to start.
"""

import shutil
import subprocess
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests", "docs"]
nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def _install(session: nox.Session, *groups: str) -> None:
    deps = [dep for group in groups for dep in nox.project.dependency_groups(PYPROJECT, group)]
    session.install("-c", "constraints.txt", "-e", ".", *deps)


def _env() -> dict:
    # Also set by tests/conftest.py and docs/conf.py; set here so any subprocess agrees.
    return {} if _gpu_present() else {"TRITON_INTERPRET": "1"}


def _xdist_args(posargs: list[str]) -> list[str]:
    """``-n auto`` (pytest-xdist: one worker per core) unless the arguments choose the workers
    (``-n 4``, ``--numprocesses``) or turn xdist off (``-p no:xdist``), or on a GPU, where the
    tests share one device."""
    chosen = any(a == "-n" or a.startswith(("-n", "--numprocesses", "--dist")) for a in posargs)
    if chosen or "no:xdist" in posargs or _gpu_present():
        return []
    return ["-n", "auto"]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (GPU tests are skipped without a GPU), spread over the cores."""
    _install(session, "tests")
    session.run("pytest", *_xdist_args(session.posargs), *session.posargs, env=_env())


@nox.session
def crosscheck(session: nox.Session) -> None:
    """Check the MoE block against Hugging Face transformers' (Mixtral, Qwen3-MoE,
    DeepSeek-V3) on the same weights: tests/test_moe_transformers.py with transformers
    installed (the tests session skips it)."""
    _install(session, "tests", "crosscheck")
    session.run("pytest", "tests/test_moe_transformers.py", *session.posargs, env=_env())


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site into docs/_build/html; a warning, a tutorial error or a page that fails
    scripts/check_pages.py (plumbing in its visible code, no opening answer) fails the build."""
    _install(session, "docs")
    session.run(
        "sphinx-build",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "docs",
        "docs/_build/html",
        *session.posargs,
        env=_env(),
    )
    # Every tutorial and guide as a reader meets it: no plumbing in the visible code, its
    # answer first and its take-away last, glossary links (scripts/check_pages.py).
    session.run("python", "scripts/check_pages.py", "docs/_build/html")
    session.log("open docs/_build/html/index.html")


@nox.session
def site(session: nox.Session) -> None:
    """Open every page of the built site in headless Chromium (run ``nox -s docs`` first):
    fail on a failed request, a request to another host, a console error, an image
    that did not load, raw LaTeX, or a search that finds nothing (scripts/check_site.py)."""
    if not Path("docs/_build/html/index.html").exists():
        session.error("no built site in docs/_build/html: run `nox -s docs` first")
    for binary in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not Path(binary).exists():
            session.error(f"{binary} not found: on Debian, `apt-get install chromium chromium-driver`")
    session.install("-c", "constraints.txt", *nox.project.dependency_groups(PYPROJECT, "site"))
    # Selenium is given the driver's path: its manager must not look for (or fetch) another.
    session.run("python", "scripts/check_site.py", *session.posargs, env={"SE_OFFLINE": "true"})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("-c", "constraints.txt", *nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """Re-measure every benchmark and the ceilings on this GPU; write src/gpuperf/measurements/<gpu>/."""
    if not _gpu_present():
        session.error(
            "nox -s bench measures on an NVIDIA GPU and none was found (nvidia-smi -L failed). "
            "Without a GPU, `nox -s docs` renders the committed measurements."
        )
    _install(session)
    session.run("python", "-m", "gpuperf.bench", *session.posargs)
    if shutil.which("ncu"):
        session.run("python", "scripts/ncu_matmul_order.py")
    else:
        session.log("ncu (Nsight Compute) not found: tutorial 03 keeps its committed L2 counters")
    # The profiling guide's captures; its ncu part needs ncu, its load_inline part nvcc and ninja.
    parts = ["cuda", "benchmark", "timing", "launch", "profiler", "proton"] + (
        ["ncu"] if shutil.which("ncu") else []
    )
    session.run("python", "scripts/profile_capture.py", "--only", *parts)
    session.run("python", "scripts/explore_configs.py")
