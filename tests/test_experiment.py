"""skmcal.experiment: the runner, its result files, resume, and its plots (tiny runs only)."""

import json
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs

from skmcal.cli import main
from skmcal.experiment import (
    CHOICE_COLUMNS,
    RESULT_COLUMNS,
    STRATEGIES,
    parse_strategy,
    run_experiment,
    summarize,
)

from _oracle import assert_png, data_lines

STRATS = ["mc:gr", "rand:gr"]
TINY = {"strategies": STRATS, "batch_size": 5, "iterations": 3, "trials": 2, "progress": False}
N_RESULT_ROWS = 2 * 2 * 4  # trials x strategies x (iterations + 1)
N_CHOICE_ROWS = 2 * 2 * (2 + 3 * 5)  # trials x strategies x (initial + iterations x batch)
OUTCOME = ["trial", "iteration", "n_labeled", "strategy", "accuracy"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A complete tiny run and a copy of its files."""
    out = tmp_path_factory.mktemp("reference")
    result = run_experiment("binary-clusters", out=out, **TINY)
    files = {name: (out / name).read_text() for name in ("results.csv", "choices.csv")}
    return result, files


def test_tiny_run_writes_files(reference):
    result, files = reference
    out = result.out
    df = result.results
    assert tuple(df.columns) == RESULT_COLUMNS
    assert len(df) == N_RESULT_ROWS
    assert df["strategy"].unique().tolist() == STRATS
    assert sorted(df["trial"].unique()) == [0, 1]
    assert df["accuracy"].between(0, 1).all()
    for _, run in df.groupby(["trial", "strategy"]):
        assert run["iteration"].tolist() == [0, 1, 2, 3]
        assert run["n_labeled"].tolist() == [2, 7, 12, 17]
        assert np.isnan(run["time"].iloc[0])
        assert (run["time"].iloc[1:] > 0).all()

    on_disk = pd.read_csv(out / "results.csv")
    assert tuple(on_disk.columns) == RESULT_COLUMNS
    assert len(on_disk) == N_RESULT_ROWS
    pd.testing.assert_frame_equal(on_disk[OUTCOME], df[OUTCOME])  # floats round-trip exactly

    choices = pd.read_csv(out / "choices.csv")
    assert tuple(choices.columns) == CHOICE_COLUMNS
    assert len(choices) == N_CHOICE_ROWS == len(result.choices)
    for _, run in choices.groupby(["trial", "strategy"]):
        assert run["node"].is_unique
    # The same initial labels for every strategy within a trial.
    initial = choices[choices["iteration"] == 0].groupby(["trial", "strategy"])["node"]
    firsts = {key: sorted(nodes) for key, nodes in initial}
    assert firsts[(0, "mc:gr")] == firsts[(0, "rand:gr")]
    assert firsts[(1, "mc:gr")] == firsts[(1, "rand:gr")]

    config = json.loads((out / "config.json").read_text())
    assert config["strategies"] == STRATS
    assert config["kernel"] == "gaussian" and config["n_neighbors"] == 10
    assert config["n_initial"] == 1 and config["candidates"] == 0.1
    assert result.runs_done == [(t, s) for t in range(2) for s in STRATS]
    assert result.runs_skipped == []


def test_plots_are_png(reference, tmp_path):
    pytest.importorskip("matplotlib")
    from skmcal.plotting import plot_accuracy, plot_choices

    result, _ = reference
    assert_png(plot_accuracy(result.results, tmp_path / "acc.png"))
    assert_png(plot_choices(result.X, result.y, result.choices, tmp_path / "ch.png", trial=1))
    mapping = {"first": [0, 1, 2], "last": [757, 758]}
    assert_png(plot_choices(result.X, result.y, mapping, tmp_path / "map.png"))
    with pytest.raises(ValueError, match="2-D"):
        bad = np.zeros((3, 3))
        plot_choices(bad, [0, 1, 0], {"a": [0]}, tmp_path / "bad.png", embedding=bad)


def _truncate(path, keep_lines, extra_chars):
    """Keep the header and ``keep_lines`` data lines, plus part of the next line."""
    lines = path.read_text().splitlines(keepends=True)
    text = "".join(lines[: keep_lines + 1]) + lines[keep_lines + 1][:extra_chars]
    path.write_text(text)


@pytest.mark.parametrize(
    ("kept_results", "kept_choices", "redone"),
    [
        # trial 0 and (1, mc:gr) complete; (1, rand:gr) cut after 2 rows, mid-line.
        (12, 51 + 5, [(1, "rand:gr")]),
        # trial 0 complete, trial 1 missing.
        (8, 34, [(1, "mc:gr"), (1, "rand:gr")]),
        # (1, mc:gr) has all its results but not all its choices: redone.
        (12, 34 + 9, [(1, "mc:gr"), (1, "rand:gr")]),
    ],
)
def test_resume_redoes_only_missing_runs(reference, tmp_path, kept_results, kept_choices, redone):
    result, files = reference
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "config.json").write_text((result.out / "config.json").read_text())
    _truncate(tmp_path / "results.csv", kept_results, 9)
    _truncate(tmp_path / "choices.csv", kept_choices, 3)

    resumed = run_experiment("binary-clusters", out=tmp_path, **TINY)
    assert resumed.runs_done == redone
    assert len(resumed.runs_skipped) == 4 - len(redone)
    pd.testing.assert_frame_equal(resumed.results[OUTCOME], result.results[OUTCOME])
    pd.testing.assert_frame_equal(resumed.choices, result.choices)
    # Rows of finished runs are kept as they were, times included.
    finished = ~resumed.results.set_index(["trial", "strategy"]).index.isin(redone)
    pd.testing.assert_series_equal(
        resumed.results.loc[finished, "time"], result.results.loc[finished, "time"]
    )
    # The files hold every row once, and a further run has nothing to do.
    assert len(data_lines(tmp_path / "results.csv")) == N_RESULT_ROWS
    assert len(data_lines(tmp_path / "choices.csv")) == N_CHOICE_ROWS
    again = run_experiment("binary-clusters", out=tmp_path, **TINY)
    assert again.runs_done == []
    pd.testing.assert_frame_equal(again.results, resumed.results)


def test_resume_refuses_other_settings(reference, tmp_path):
    result, files = reference
    run_experiment("binary-clusters", out=tmp_path, **TINY)
    before = (tmp_path / "results.csv").read_text()
    with pytest.raises(ValueError, match=r"other settings \(batch_size: 5 there, 4 now\)"):
        run_experiment("binary-clusters", out=tmp_path, **{**TINY, "batch_size": 4})
    with pytest.raises(ValueError, match="strategies"):
        run_experiment("binary-clusters", out=tmp_path, **{**TINY, "strategies": ["mc:gr"]})
    assert (tmp_path / "results.csv").read_text() == before
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    (orphan / "results.csv").write_text(files["results.csv"])
    with pytest.raises(ValueError, match="no config.json"):
        run_experiment("binary-clusters", out=orphan, **TINY)


def test_same_seed_is_deterministic(reference):
    result, _ = reference
    again = run_experiment("binary-clusters", **TINY)
    assert again.out is None and again.results_path is None
    pd.testing.assert_frame_equal(again.results[OUTCOME], result.results[OUTCOME])
    pd.testing.assert_frame_equal(again.choices, result.choices)
    other = run_experiment("binary-clusters", **{**TINY, "seed": 1})
    assert not other.choices["node"].equals(result.choices["node"])


def test_summary(reference):
    result, _ = reference
    table = summarize(result.results)
    assert table["strategy"].tolist() == STRATS
    assert table["n_labeled"].tolist() == [17, 17]
    assert table["trials"].tolist() == [2, 2]
    final = result.results[result.results["iteration"] == 3]
    mc = final[final["strategy"] == "mc:gr"]["accuracy"]
    assert table.loc[0, "accuracy_mean"] == pytest.approx(mc.mean())
    assert table.loc[0, "accuracy_std"] == pytest.approx(mc.std(ddof=0))
    assert (table["time_mean"] > 0).all()


def test_custom_data_multiclass_and_strategy_names():
    X, y = make_blobs(150, centers=3, cluster_std=1.0, random_state=0)
    labels = np.array(["a", "b", "c"])[y]
    result = run_experiment(
        (X, labels),
        strategies=["mc", "unc-entropy:ce", "vopt-greedy"],
        batch_size=2,
        iterations=2,
        trials=1,
        progress=False,
    )
    assert result.config["dataset"] == "custom" and result.config["loss"] == "mgr"
    assert result.results["strategy"].unique().tolist() == [
        "mc:mgr",
        "unc-entropy:ce",
        "vopt-greedy:mgr",
    ]
    assert result.results["n_labeled"].max() == 3 * 2 + 2 * 2
    assert result.results["accuracy"].between(0, 1).all()
    with pytest.raises(ValueError, match="binary loss 'gr'"):
        run_experiment((X, labels), strategies=["mc:gr"], iterations=1, trials=1, progress=False)


def test_invalid_settings():
    assert set(STRATEGIES) >= {"mc", "unc", "vopt", "sopt", "rand", "mc-greedy"}
    assert parse_strategy("VOPT:Probit", "gr").label == "vopt:probit"
    with pytest.raises(ValueError, match="Unknown strategy 'mcc'"):
        parse_strategy("mcc:gr", "gr")
    with pytest.raises(ValueError, match="Unknown loss 'log'"):
        parse_strategy("mc:log", "gr")
    with pytest.raises(ValueError, match="more than once"):
        run_experiment(strategies=["mc", "mc:gr"], iterations=1, trials=1, progress=False)
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        run_experiment(strategies=["mc"], batch_size=0, progress=False)
    with pytest.raises(ValueError, match="candidates as a float"):
        run_experiment(strategies=["mc"], candidates=1.5, progress=False)
    with pytest.raises(ValueError, match="only 760 distinct points"):
        run_experiment(strategies=["mc"], iterations=200, batch_size=5, progress=False)
    with pytest.raises(ValueError, match="Unknown data set"):
        run_experiment("mnist-train", progress=False)


@pytest.mark.parametrize("missing", [np.nan, None])
def test_missing_labels_in_y_are_refused(missing):
    """The experiment reveals every row's true class: a NaN or None is not a class."""
    X, y = make_blobs(60, centers=3, random_state=0)
    y = y.astype(float if missing is not None else object)
    y[[7, 30]] = missing
    with pytest.raises(ValueError, match=r"y holds 2 missing value\(s\) \(NaN or None; first: "
                                         r"row 7\).*Drop those rows"):
        run_experiment((X, y), strategies=["rand"], iterations=1, trials=1, progress=False)


def test_equal_rows_count_once_in_the_class_sizes():
    X = np.repeat([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]], [100, 1, 99], axis=0)
    y = np.repeat([0, 1], 100)  # class 0: one distinct point; class 1: two
    with pytest.raises(ValueError, match=r"smallest class has 1 distinct points \(equal rows "
                                         r"count once: the data hold 3 distinct points in "
                                         r"200 rows\)"):
        run_experiment((X, y), strategies=["rand"], iterations=1, trials=1, progress=False)


def test_summarize_names_what_it_misses():
    frame = pd.DataFrame({"strategy": ["a"], "trial": [0], "iteration": [0], "n_labeled": [5],
                          "accuracy": [0.5]})  # fmt: skip
    with pytest.raises(ValueError, match=r"summarize needs the columns .* missing \['time'\]"):
        summarize(frame)
    with pytest.raises(TypeError, match="summarize takes a pandas DataFrame .* got list"):
        summarize([frame])
    with pytest.raises(TypeError, match="summarize takes a pandas DataFrame .* got str"):
        summarize("results.csv")


@pytest.mark.parametrize("column", ["strategy", "trial", "iteration", "n_labeled"])
def test_summarize_names_missing_keys(column):
    frame = pd.DataFrame({"strategy": ["a", "a", "b"], "trial": [0, 0, 0], "iteration": [0, 1, 0],
                          "n_labeled": [5, 6, 5], "accuracy": [0.5, 0.6, 0.7],
                          "time": [np.nan, 0.1, np.nan]})  # fmt: skip
    assert summarize(frame)["accuracy_mean"].tolist() == [0.6, 0.7]
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = np.nan
    with pytest.raises(ValueError, match=rf"summarize: the {column} column is missing \(NaN or "
                                         r"None\) in 1 of the 3 rows \(the first is row 1\)"):
        summarize(frame)


def test_progress_bar_shows_accuracy(capsys):
    pytest.importorskip("tqdm")
    run_experiment(strategies=["rand:gr"], iterations=2, trials=1, progress=True)
    assert "acc=" in capsys.readouterr().err


BLOBS = make_blobs(150, centers=3, cluster_std=1.0, random_state=0)
BLOBS_RUN = {"strategies": ["mc"], "batch_size": 2, "iterations": 2, "trials": 1, "progress": False}


def test_neighbors_pynndescent_reaches_the_classifier(fake_pynndescent, tmp_path):
    exact = run_experiment(BLOBS, n_neighbors=7, seed=3, **BLOBS_RUN)
    assert exact.config["neighbors"] is None and fake_pynndescent == []

    approx = run_experiment(
        BLOBS, n_neighbors=7, seed=3, neighbors="pynndescent", out=tmp_path, **BLOBS_RUN
    )
    # One graph, shared by every fit; k = n_neighbors besides each point itself.
    assert fake_pynndescent == [{"n_neighbors": 7, "metric": "euclidean", "random_state": 3}]
    assert approx.config["neighbors"] == "pynndescent"
    assert json.loads((tmp_path / "config.json").read_text())["neighbors"] == "pynndescent"
    # The fake's neighbours are exact, so the run is the exact one: self removed, k right.
    pd.testing.assert_frame_equal(approx.results[OUTCOME], exact.results[OUTCOME])
    pd.testing.assert_frame_equal(approx.choices, exact.choices)

    with pytest.raises(ValueError, match=r"neighbors: 'pynndescent' there, None now"):
        run_experiment(BLOBS, n_neighbors=7, seed=3, out=tmp_path, **BLOBS_RUN)

    # The Gaussian kernel's local scale needs the 5th neighbour; cosine uses its metric.
    run_experiment(BLOBS, n_neighbors=3, neighbors="pynndescent", **BLOBS_RUN)
    run_experiment(BLOBS, n_neighbors=3, kernel="cosine", neighbors="pynndescent", **BLOBS_RUN)
    assert fake_pynndescent[1:] == [
        {"n_neighbors": 5, "metric": "euclidean", "random_state": 0},
        {"n_neighbors": 3, "metric": "cosine", "random_state": 0},
    ]
    with pytest.raises(ValueError, match="kernel='precomputed' gives the affinities"):
        run_experiment(
            (np.eye(20), np.arange(20) % 2),
            kernel="precomputed",
            neighbors="pynndescent",
            **BLOBS_RUN,
        )


def test_neighbors_pynndescent_missing_or_invalid(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "pynndescent", None)  # import pynndescent fails
    with pytest.raises(ImportError, match=r"pip install skmcal\[fast\]"):
        run_experiment(BLOBS, neighbors="pynndescent", **BLOBS_RUN)
    argv = ["run", "--neighbors", "pynndescent", "--iterations", "1", "--trials", "1",
            "--out", str(tmp_path / "run"), "--no-progress", "--no-plots"]  # fmt: skip
    assert main(argv) == 2
    assert "pip install skmcal[fast]" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match=r"one of 'exact', 'pynndescent'.*got 'annoy'"):
        run_experiment(BLOBS, neighbors="annoy", **BLOBS_RUN)


# ------------------------------------------------------------ the model option
def test_model_reaches_the_classifier():
    """model="auto" with loss="auto": the classifier's defaults. The recorded accuracy is
    that of the classifier's defaults refitted on the labels the run chose (the summed
    prior once 50 labels are in), which the spectral model does not reach."""
    from skmcal import NodeSet, SpectralGraphClassifier
    from skmcal.datasets import load_dataset

    result = run_experiment(
        "binary-clusters", strategies=["mc"], model="auto", iterations=10, trials=1,
        progress=False,
    )  # fmt: skip
    assert result.config["model"] == "auto" and result.config["loss"] == "auto"
    assert result.results["strategy"].unique().tolist() == ["mc:auto"]
    last = result.results.iloc[-1]
    assert last["n_labeled"] == 52
    X, y = load_dataset("binary-clusters")
    codes = np.unique(y, return_inverse=True)[1].ravel()
    nodes = result.choices["node"].to_numpy()
    pool = NodeSet(X)
    unlabeled = np.ones(codes.size, dtype=bool)
    unlabeled[nodes] = False

    def refit(**model):
        clf = SpectralGraphClassifier(nodes=pool, kernel="gaussian", n_neighbors=10, **model)
        clf.fit(X[nodes], codes[nodes])
        return clf, float(np.mean(clf.transduction_[unlabeled] == codes[unlabeled]))

    default, accuracy = refit()
    assert default.model_ == "sum" and default.loss_ == "mgr"
    assert last["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    paper, paper_accuracy = refit(model="spectral", loss="gr")
    assert paper.model_ == "spectral" and paper_accuracy != accuracy


def test_model_in_the_settings(tmp_path):
    run_experiment("binary-clusters", out=tmp_path, **TINY)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model"] == "spectral"
    with pytest.raises(ValueError, match="model: 'spectral' there, 'full' now"):
        run_experiment("binary-clusters", out=tmp_path, model="full", **TINY)
    # A folder written before the setting existed holds runs of the spectral model.
    del config["model"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert run_experiment("binary-clusters", out=tmp_path, **TINY).runs_done == []
    with pytest.raises(ValueError, match="model: 'spectral' there, 'sum' now"):
        run_experiment("binary-clusters", out=tmp_path, model="sum", **TINY)


def test_model_and_loss_checked():
    assert parse_strategy("MC:Auto", "gr").label == "mc:auto"
    with pytest.raises(ValueError, match="Unknown model 'paper'; accepted: 'spectral'"):
        run_experiment(strategies=["mc"], model="paper", progress=False)
    with pytest.raises(ValueError, match="'mc:ce' uses the loss 'ce', but model='sum' takes"):
        run_experiment(strategies=["mc:ce"], model="sum", progress=False)
    result = run_experiment(strategies=["rand"], model="full", iterations=1, trials=1,
                            progress=False)  # fmt: skip
    assert result.results["strategy"].tolist() == ["rand:auto", "rand:auto"]
    spectral = run_experiment(strategies=["rand"], iterations=1, trials=1, progress=False)
    assert spectral.results["strategy"].tolist() == ["rand:gr", "rand:gr"]
