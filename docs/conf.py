"""Sphinx configuration of the skmcal documentation (``make docs``)."""

import dataclasses
import sys
from pathlib import Path

import skmcal

project = "skmcal"
author = "the skmcal developers"
copyright = "the skmcal developers"  # noqa: A001
release = version = skmcal.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# Every page is built from this folder; nothing is fetched from the network
# (no intersphinx), so the build works offline and in CI.
templates_path = ["_templates"]
exclude_patterns = ["_build", "**/sg_execution_times.rst", "sg_execution_times.rst"]
autosummary_generate = True
# The fields of the dataclasses with a page of their own, which the class
# template (_templates/autosummary/class.rst) leaves out of the summary tables:
# the class docstring describes them ("Attributes"), they have no entry to link to.
autosummary_context = {
    "dataclass_fields": {
        f"skmcal.{name}": [field.name for field in dataclasses.fields(obj)]
        for name in skmcal.__all__
        if isinstance(obj := getattr(skmcal, name), type) and dataclasses.is_dataclass(obj)
    }
}
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
default_role = "literal"
# Without intersphinx, references to other projects have no target: they stay
# code text, and nitpicky builds (``sphinx -n``) leave them be.
nitpick_ignore_regex = [(r"py:.*", r"(sklearn|scipy|numpy|matplotlib|pyamg|pandas|dask|modAL)(\..*)?")]

html_theme = "pydata_sphinx_theme"
html_title = f"skmcal {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "install": []}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["skmcal.css"]


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # gallery_scraper
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "image_scrapers": ("gallery_scraper.skmcal_figures", "matplotlib"),
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "NumberOfCodeLinesSortKey",
    "reset_modules": (),
    "show_memory": False,
}
