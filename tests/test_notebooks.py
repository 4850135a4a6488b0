"""The notebooks in notebooks/ run top to bottom without an error.

Each notebook is executed by nbclient in a fresh IPython kernel started from
the interpreter running the tests: a ``python3`` kernel spec that runs
``sys.executable`` is written into a temporary folder put first on
``JUPYTER_PATH``, so it shadows any other installed ``python3`` kernel. The
working directory is the notebooks folder and ``SKMCAL_NOTEBOOK_SMALL=1`` is
set: the reproduction notebook then runs its small version (a few seconds).
"""

import re
import sys
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNEL = "python3"
SMALL_STRATEGIES = ["mc:gr", "mc:probit", "unc:logistic", "vopt:gr", "rand:gr"]
NUMBER = r"([-+0-9.eE]+|nan|inf)"
CHECK_KERNEL = "import sys\nprint('kernel python:', sys.executable)"


@pytest.fixture(scope="module")
def jupyter_dir(tmp_path_factory):
    """A Jupyter data folder whose ``kernels/python3`` runs ``sys.executable``."""
    data = tmp_path_factory.mktemp("jupyter")
    write_kernel_spec(data / "kernels" / KERNEL)
    return data


@pytest.fixture
def kernel_env(monkeypatch, tmp_path, jupyter_dir):
    """Environment of the kernel: small runs, one BLAS thread, files kept in tmp_path."""
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_dir))
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    assert spec.argv[0] == sys.executable, spec.argv
    monkeypatch.setenv("SKMCAL_NOTEBOOK_SMALL", "1")
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # keep the kernel's inline backend
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    monkeypatch.delenv("SKMCAL_NOTEBOOK_OUT", raising=False)
    monkeypatch.delenv("SKMCAL_RESULTS_DIR", raising=False)
    # The notebooks' temporary folders (OUT unset) go to tmp_path, not the system's.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    return monkeypatch


def execute(name):
    """Run notebooks/<name> in a fresh kernel; return it with its outputs.

    A last cell, added to the copy in memory, prints the kernel's interpreter.
    nbclient raises ``CellExecutionError`` on the first cell that fails, and
    shuts the kernel down at the end.
    """
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells), f"{name} is stored with outputs"
    nb.cells.append(nbformat.v4.new_code_cell(CHECK_KERNEL))
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=120,
        startup_timeout=60,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    assert text_of(nb.cells[-1]).strip() == f"kernel python: {sys.executable}"
    return nb


def text_of(cell):
    """Printed text and plain-text results of a code cell."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream" and output.name == "stdout":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def all_text(nb):
    return "\n".join(text_of(cell) for cell in nb.cells if cell.cell_type == "code")


def count_images(nb):
    return sum(
        "image/png" in output.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )


def errors(nb):
    return [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]


def accuracy(text, label):
    match = re.search(rf"final accuracy {re.escape(label)}: {NUMBER}", text)
    assert match, f"no 'final accuracy {label}: ...' in the output:\n{text}"
    value = float(match.group(1))
    assert 0.0 <= value <= 1.0, f"final accuracy {label} = {value}"
    return value


def test_quickstart(kernel_env):
    nb = execute("quickstart.ipynb")
    assert not errors(nb)
    text = all_text(nb)
    match = re.search(rf"final accuracy: {NUMBER}", text)
    assert match, text
    assert 0.5 < float(match.group(1)) <= 1.0
    assert "covariance of coef_: (50, 50)" in text
    assert "transduction_ equals predict(X): True" in text
    assert re.search(r"\n 22 labels: model change", text), text  # 10 rounds of 2 after 2 labels
    assert count_images(nb) == 2  # the posterior std, and accuracy + choices


def test_reproduction_summary(kernel_env, tmp_path):
    # An empty results folder: the last cell says that nothing was found.
    kernel_env.setenv("SKMCAL_RESULTS_DIR", str(tmp_path / "empty"))
    nb = execute("reproduction_summary.ipynb")
    assert not errors(nb)
    text = all_text(nb)
    assert "SMALL=True: 5 strategies x 2 trials x 10 iterations of B=5" in text
    for label in SMALL_STRATEGIES:
        accuracy(text, label)
    assert "No saved results" in text
    assert "Loaded saved results" not in text
    assert count_images(nb) == 2  # accuracy curves and choices
    # With OUT unset the figures went to a temporary folder (under the kernel's TMPDIR).
    figures = sorted(p.name for p in (tmp_path / "tmp").glob("skmcal-notebook-*/*.png"))
    assert figures == ["accuracy.png", "choices.png"], figures


def test_reproduction_summary_loads_saved_results(kernel_env, tmp_path):
    # The run writes its CSV files under RESULTS_DIR, where the last cell finds them.
    results_dir = tmp_path / "results"
    kernel_env.setenv("SKMCAL_NOTEBOOK_OUT", str(results_dir / "bc"))
    kernel_env.setenv("SKMCAL_RESULTS_DIR", str(results_dir))
    nb = execute("reproduction_summary.ipynb")
    assert not errors(nb)
    text = all_text(nb)
    assert (results_dir / "bc" / "results.csv").is_file()
    assert (results_dir / "bc" / "accuracy.png").is_file()
    assert f"Loaded saved results {results_dir / 'bc' / 'results.csv'}: " in text
    assert "No saved results" not in text
    assert count_images(nb) == 3  # accuracy, choices, and the saved results' accuracy
