"""Sphinx configuration for the gpuperf site.

Without a CUDA GPU, Triton's interpreter must be on before any kernel module is
imported (the tutorials import them while sphinx-gallery runs them, in this
process), and the benchmarks render the committed records.
"""

import os
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # build from a checkout even without an install

from gpuperf.caches import use_compile_caches

# Before torch is imported: Triton's and Inductor's caches in one folder, kept between
# pages and between builds (gpuperf.caches), wherever you have not set them.
CACHES = use_compile_caches()

import gpuperf.kernels  # noqa: F401  (importing the kernels turns the interpreter on without a GPU)

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# The interpreter evaluates masked-off lanes too (-inf - -inf in numpy); those
# warnings say nothing about the results, which the tutorials check.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="triton.runtime.interpreter")

# Result tables come out as HTML, which the html_tables extension puts on the page.
os.environ.setdefault("GPUPERF_TABLES", "html")

DOCS = Path(__file__).parent
sys.path.insert(0, str(DOCS))
sys.path.insert(0, str(DOCS / "_ext"))
import hardware_numbers
import headlines_page
import measurements_page

from gpuperf.pages import announce, can_measure

project = "gpuperf"
author = "the gpuperf authors"
copyright = "2026, the gpuperf authors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # A local copy of MathJax 3, so formulas render without a request to another host.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
    "html_tables",
    "attribute_docstrings",
]

html_theme = "furo"
html_title = "gpuperf"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = []

# Served from _static/mathjax (copied there by sphinx-mathjax-offline), never from a CDN.
mathjax_path = "mathjax/tex-chtml.js"
# Copy code without the prompts of shell sessions and interactive Python.
copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False


def _filename_pattern() -> str:
    only = [name for name in os.environ.get("GPUPERF_PAGES", "").split(",") if name]
    return "/(" + "|".join(re.escape(n) for n in only) + r")\.py$" if only else r"/\d\d_"


def _gallery_jobs() -> int | bool:
    """How many pages run side by side: one a core (at most 4) where there is no GPU to
    measure on, each page in a process of its own (joblib), its threads a share of the cores;
    on a GPU one page at a time, so that no page's timings share the GPU with another's."""
    if can_measure():
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    jobs = min(cores, 4)
    if jobs < 2:
        return False
    # Read by each page's process: its share of the cores, and the filter above (a process
    # starts with the filters of PYTHONWARNINGS, not this one's).
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, cores // jobs)))
    quiet = "ignore::RuntimeWarning:triton.runtime.interpreter"
    os.environ["PYTHONWARNINGS"] = ",".join(w for w in (os.environ.get("PYTHONWARNINGS"), quiet) if w)
    return jobs


sphinx_gallery_conf = {
    # The tutorials, and the guides: executable pages too, which re-draw the tutorials'
    # plots from the same records.
    "examples_dirs": ["../tutorials", "../guides"],
    "gallery_dirs": ["tutorials", "guides"],
    # sphinx-gallery matches against the full path; run every NN_topic.py script.
    # GPUPERF_PAGES=03_matmul,02_roofline runs those pages alone (a quick look at a page
    # while writing it: the others are rendered without their output).
    "filename_pattern": _filename_pattern(),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,  # a tutorial that raises fails the build
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 10,
    "matplotlib_animations": False,
    # A cell that ends with a figure shows the figure, not "<Figure size ... with 1 Axes>";
    # one that ends with show(BENCHMARK) or captures.show(name) shows what they printed
    # and drew, not the Result or the captures again.
    "ignore_repr_types": r"matplotlib\.figure\.Figure|gpuperf\.pages\.report\.Result|"
    r"gpuperf\.pages\.captures\.Shown",
    # Figures are drawn about as wide as the page shows them; a second image at twice
    # the resolution keeps them sharp on high-DPI screens.
    "image_srcset": ["2x"],
    # The execution-times pages load jQuery and DataTables from CDNs: the site must
    # make no request to another host.
    "write_computation_times": False,
    # Run every tutorial on every build, not only those whose script changed: the pages
    # must show the records as they are now (a reader's new `nox -s bench` run included).
    "run_stale_examples": True,
    # Where sphinx-gallery keeps which tutorial uses which gpuperf object; also what lets
    # the landing page's minigallery show the tutorials' cards.
    "backreferences_dir": "generated/gallery_backreferences",
    "doc_module": ("gpuperf",),
    "thumbnail_size": (400, 280),
    # Without a GPU the pages' own work is Triton's interpreter, one core each: two at once
    # on a (busy) 2-core machine took the whole build from 283 s to 220-235 s, same pages.
    "parallel": _gallery_jobs(),
}

# Before the build: whether the pages measure live or load the records, on which GPU, and
# how long each page's measuring took last time (gpuperf.pages.announce).
PAGES = [
    path
    for folder in sphinx_gallery_conf["examples_dirs"]
    for path in sorted((DOCS / folder).resolve().glob("*.py"))
    if re.search(sphinx_gallery_conf["filename_pattern"], str(path))
]
announce.announce_site(PAGES, announce.current(can_measure()), caches=CACHES)

# The H100's measured numbers (|h100-copy| and the others) for the prose that quotes them,
# the glossary above all: read from the committed records, never typed by hand.
rst_epilog = hardware_numbers.rst_epilog()

# The landing page's tables, generated from the committed records: the GPUs and
# their ceilings, and each tutorial's headline results per GPU.
measurements_page.write(DOCS / "generated", interpreted=INTERPRETED)
headlines_page.write(DOCS / "generated", ROOT / "tutorials")
