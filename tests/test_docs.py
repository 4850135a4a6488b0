"""The documentation builds, warnings as errors, gallery included (as `make docs`).

The build is nitpicky (``-n``): a cross-reference without a target fails it.

The docs and the examples are copied into a temporary folder first, so that
the build (sphinx-gallery writes its pages next to the sources) leaves the
checkout untouched. Skipped where Sphinx and its extensions are not
installed (``pip install skmcal[docs]``; ``make test`` installs them).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("_build", "auto_examples", "generated", "sg_execution_times.rst", "__pycache__")


def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "skactiveml"):
        pytest.importorskip(module)
    for folder in ("docs", "examples"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns(*GENERATED))
    out = tmp_path / "html"
    command = [sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q", "-b", "html"]
    build = subprocess.run(
        [*command, str(tmp_path / "docs"), str(out)], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-5000:]
    pages = {p.relative_to(out).as_posix() for p in out.rglob("*.html")}
    assert {"index.html", "api.html", "user_guide/model.html", "auto_examples/index.html"} <= pages
    assert "api/generated/skmcal.SpectralGraphClassifier.html" in pages
    # Every gallery example ran and left at least one figure.
    examples = sorted(p.stem for p in (ROOT / "examples").glob("plot_*.py"))
    images = {p.name for p in (out / "_images").glob("sphx_glr_plot_*.png")}
    for name in examples:
        assert f"auto_examples/{name}.html" in pages
        assert any(image.startswith(f"sphx_glr_{name}_0") for image in images), name
