"""skmcal.experiment on workers: loky, threads and a dask cluster give the files of a serial run.

The parent writes every row, in the serial order, so the files are the same
bytes as those of a serial run; only the ``time`` column (the last of
``results.csv``) measures the run and differs. Tiny runs only: a 3-class
blob set of 120 points, 2 strategies x 2 trials x 3 iterations.
"""

import shutil
import socket
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.datasets import make_blobs
from sklearn.neighbors import NearestNeighbors

import skmcal.experiment
from skmcal import SpectralGraphClassifier
from skmcal.experiment import BACKENDS, _Runner, run_experiment
from skmcal.graph import GRAPH_CACHE, clear_graph_cache

BLOBS = make_blobs(120, centers=3, cluster_std=1.5, random_state=0)
TINY = {"strategies": ["mc", "rand"], "batch_size": 2, "iterations": 3, "trials": 2,
        "progress": False}  # fmt: skip
#: A run that a stopping rule ends (at 10 labels: 6 initial + 2 iterations of 2).
STOPPED = {**TINY, "stop": "budget:10"}
#: A run that starts from no label: the cold start takes the graph from the cache.
COLD = {**TINY, "n_initial": 0, "cold_start": 2}
FILES = ("results.csv", "choices.csv", "stops.csv", "config.json")


def _files(out):
    """The output files, the ``time`` field of ``results.csv`` cut off (it measures the run)."""
    files = {}
    for name in FILES:
        path = out / name
        if path.exists():
            text = path.read_text()
            if name == "results.csv":
                text = "\n".join(line.rsplit(",", 1)[0] for line in text.splitlines())
            files[name] = text
    return files


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """Files of the serial runs of each setting, and the serial result of TINY."""
    runs = {}
    for name, settings in (("tiny", TINY), ("stopped", STOPPED), ("cold", COLD)):
        out = tmp_path_factory.mktemp(f"serial-{name}")
        result = run_experiment(BLOBS, out=out, **settings)
        runs[name] = (_files(out), out, result)
    assert "stops.csv" in runs["stopped"][0] and runs["stopped"][2].stops.shape[0] == 4
    return runs


def _assert_same_run(out, serial_run, result):
    files, _, expected = serial_run
    assert _files(out) == files
    assert result.runs_done == expected.runs_done
    outcome = ["trial", "iteration", "n_labeled", "strategy", "accuracy"]
    assert result.results[outcome].equals(expected.results[outcome])
    assert result.choices.equals(expected.choices)
    assert result.stops.equals(expected.stops)


@pytest.mark.parametrize("name", ["tiny", "stopped", "cold"])
def test_loky_gives_the_serial_files(serial, tmp_path, name):
    settings = {"tiny": TINY, "stopped": STOPPED, "cold": COLD}[name]
    result = run_experiment(BLOBS, out=tmp_path, n_jobs=2, **settings)  # loky by default
    _assert_same_run(tmp_path, serial[name], result)


def test_threading_gives_the_serial_files(serial, tmp_path):
    result = run_experiment(BLOBS, out=tmp_path, n_jobs=2, backend="threading", **STOPPED)
    _assert_same_run(tmp_path, serial["stopped"], result)


def test_interrupted_run_resumed_on_two_workers_is_exact(serial, tmp_path, monkeypatch):
    """A serial run stopped mid-way through its third (trial, strategy) run, resumed with
    n_jobs=2: the files of one serial run."""
    query, calls = _Runner.query, []

    def interrupted(self, *args):
        calls.append(1)
        if len(calls) == 2 * TINY["iterations"] + 2:  # the third run's second query
            raise KeyboardInterrupt
        return query(self, *args)

    monkeypatch.setattr(_Runner, "query", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(BLOBS, out=tmp_path, **TINY)
    monkeypatch.setattr(_Runner, "query", query)
    cut = _files(tmp_path)["results.csv"].splitlines()
    assert len(cut) == 1 + 2 * 4 + 2  # header, two runs of 4 rows, 2 rows of the third

    resumed = run_experiment(BLOBS, out=tmp_path, n_jobs=2, **TINY)
    assert resumed.runs_done == [(1, "mc:mgr"), (1, "rand:mgr")]
    assert resumed.runs_skipped == [(0, "mc:mgr"), (0, "rand:mgr")]
    assert _files(tmp_path) == serial["tiny"][0]


def test_resume_on_workers_redoes_only_the_cut_run(serial, tmp_path):
    """Files cut inside their last run: the other runs are kept, the last is redone on
    workers, and the files are again those of the serial run."""
    _, reference, _ = serial["stopped"]
    for name in FILES:
        shutil.copy(reference / name, tmp_path / name)
    results = tmp_path / "results.csv"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:-2]) + lines[-2][:5])  # the last run cut, mid-line
    resumed = run_experiment(BLOBS, out=tmp_path, n_jobs=2, **STOPPED)
    assert resumed.runs_done == [(1, "rand:mgr")]
    assert _files(tmp_path) == serial["stopped"][0]


def test_memory_folder_holds_the_graph_workers_load(serial, tmp_path):
    memory = tmp_path / "graphs"
    result = run_experiment(BLOBS, out=tmp_path / "run", n_jobs=2, memory=memory, **TINY)
    _assert_same_run(tmp_path / "run", serial["tiny"], result)
    assert len(list(memory.glob("skmcal/graphs/*.pkl"))) == 1  # built once, by the parent
    # A later run loads it instead of building it.
    clear_graph_cache()
    builds, loads = GRAPH_CACHE.builds, GRAPH_CACHE.loads
    again = run_experiment(BLOBS, memory=memory, **TINY)
    assert (GRAPH_CACHE.builds, GRAPH_CACHE.loads) == (builds, loads + 1)
    assert again.choices.equals(result.choices)


def test_invalid_parallel_settings():
    with pytest.raises(ValueError, match=r"Unknown backend 'ray'; accepted: None, 'loky', "):
        run_experiment(BLOBS, backend="ray", **TINY)
    assert BACKENDS == ("loky", "threading", "dask")
    with pytest.raises(ValueError, match=r"n_jobs must be None or a nonzero int .*; got 0\."):
        run_experiment(BLOBS, n_jobs=0, **TINY)
    with pytest.raises(ValueError, match="n_jobs must be .* got 1.5"):
        run_experiment(BLOBS, n_jobs=1.5, **TINY)
    with pytest.raises(ValueError, match=r"needs backend='dask' \(or None\), got backend='loky'"):
        run_experiment(BLOBS, backend="loky", scheduler="tcp://127.0.0.1:8786", **TINY)
    with pytest.raises(ValueError, match="memory must be None or a folder"):
        run_experiment(BLOBS, memory=3, **TINY)


def test_dask_backend_without_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    with pytest.raises(ImportError, match=r"pip install skmcal\[dask\]"):
        run_experiment(BLOBS, backend="dask", **TINY)
    with pytest.raises(ImportError, match=r"pip install skmcal\[dask\]"):
        run_experiment(BLOBS, scheduler="tcp://127.0.0.1:8786", **TINY)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_a_clear_error(monkeypatch, tmp_path):
    pytest.importorskip("distributed")
    monkeypatch.setattr(skmcal.experiment, "SCHEDULER_TIMEOUT", 1.0)
    address = f"tcp://127.0.0.1:{_free_port()}"
    with pytest.raises(ConnectionError, match=f"dask scheduler at '{address}' within 1 s"):
        run_experiment(BLOBS, scheduler=address, out=tmp_path, **TINY)
    assert (tmp_path / "results.csv").read_text().count("\n") == 1  # the header only
    with pytest.raises(ValueError, match="'nonsense::' is not a dask scheduler address"):
        run_experiment(BLOBS, scheduler="nonsense::", **TINY)


@pytest.fixture(scope="module")
def cluster():
    """A real dask.distributed cluster of two worker processes, one thread each."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.mark.parametrize("name", ["tiny", "cold"])
def test_dask_cluster_gives_the_serial_files(serial, cluster, tmp_path, name):
    settings = {"tiny": TINY, "cold": COLD}[name]
    result = run_experiment(BLOBS, out=tmp_path, scheduler=cluster.scheduler_address, **settings)
    _assert_same_run(tmp_path, serial[name], result)


def test_dask_uses_the_current_client(serial, cluster, tmp_path):
    from distributed import Client

    def worker_graphs():  # defined here, so that it is sent by value
        from skmcal.graph import GRAPH_CACHE as cache

        return cache.builds, len(cache.info())

    with Client(cluster) as client:
        result = run_experiment(BLOBS, out=tmp_path, backend="dask", **STOPPED)
        # The runs went to the workers: they hold the graph, loaded from the disk cache.
        held = client.run(worker_graphs)
    _assert_same_run(tmp_path, serial["stopped"], result)
    assert any(graphs for _, graphs in held.values())
    assert all(builds == 0 for builds, _ in held.values())


# --------------------------------------------- a graph from an external kNN index
def _external_knn_affinity(X, k=10, scale_neighbor=5, scale_factor=3.0):
    """The self-tuning Gaussian kNN affinity, assembled from (distances, ids) of a kNN search
    done elsewhere (here scikit-learn stands in for an external index such as faiss)."""
    dist, ids = NearestNeighbors(n_neighbors=k).fit(X).kneighbors()  # self excluded
    sigma = dist[:, scale_neighbor - 1]
    weights = np.exp(-(dist**2) / (scale_factor * sigma[:, None] * sigma[ids]))
    indptr = np.arange(0, X.shape[0] * k + 1, k)
    return sp.csr_matrix((weights.ravel(), ids.ravel(), indptr), shape=(X.shape[0],) * 2)


def test_precomputed_sparse_graph_from_an_external_index(serial, tmp_path):
    """kernel="precomputed" with a sparse kNN affinity built outside skmcal: the graph and the
    experiment of kernel="gaussian" on the features, on workers too."""
    X, y = BLOBS
    W = _external_knn_affinity(X)
    own = SpectralGraphClassifier(n_eigs=20).fit(X, y).graph_
    given = SpectralGraphClassifier(kernel="precomputed", n_eigs=20).fit(W, y).graph_
    assert_allclose(given.weights.toarray(), own.weights.toarray(), rtol=0, atol=1e-14)
    assert_allclose(given.eigenvalues, own.eigenvalues, rtol=0, atol=1e-12)

    result = run_experiment((W, y), kernel="precomputed", out=tmp_path, n_jobs=2, **TINY)
    expected = serial["tiny"][2]
    assert result.config["kernel"] == "precomputed"
    assert result.choices.equals(expected.choices)
    assert_allclose(result.results["accuracy"], expected.results["accuracy"], rtol=0, atol=1e-12)
