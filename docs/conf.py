"""Sphinx configuration for the gpuperf site.

Without a CUDA GPU, Triton's interpreter must be on before any kernel module is
imported (the tutorials import them while sphinx-gallery runs them, in this
process), and the benchmarks render the committed records.
"""

import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # build from a checkout even without an install

from gpuperf._runtime import enable_interpreter_without_gpu

INTERPRETED = enable_interpreter_without_gpu()
# The interpreter evaluates masked-off lanes too (-inf - -inf in numpy); those
# warnings say nothing about the results, which the tutorials check.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="triton.runtime.interpreter")

sys.path.insert(0, str(Path(__file__).parent))
import measurements_page

project = "gpuperf"
author = "the gpuperf authors"
copyright = "2026, the gpuperf authors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
]

html_theme = "furo"
html_title = "gpuperf"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

sphinx_gallery_conf = {
    "examples_dirs": ["../tutorials"],
    "gallery_dirs": ["tutorials"],
    # sphinx-gallery matches against the full path; run every NN_topic.py script.
    "filename_pattern": r"/\d\d_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,  # a tutorial that raises fails the build
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 10,
    "matplotlib_animations": False,
    # A cell that ends with a figure shows the figure, not "<Figure size ... with 1 Axes>".
    "ignore_repr_types": r"matplotlib\.figure\.Figure",
}

# The landing page's table of GPUs and ceilings, generated from the committed records.
measurements_page.write(Path(__file__).parent / "generated", interpreted=INTERPRETED)
