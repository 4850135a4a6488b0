"""skmcal.plotting: the figures' content, checked on the matplotlib objects."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits, make_moons

from skmcal import SpectralGraphClassifier
from skmcal.cli import main
from skmcal.plotting import plot_accuracy, plot_choices, plot_uncertainty, spectral_coordinates

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def moons():
    X, y_true = make_moons(150, noise=0.06, random_state=0)
    y = np.full(150, -1)
    y[[0, 1, 2, 3, 7]] = y_true[[0, 1, 2, 3, 7]]
    return X, y_true, y


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300], y[:300]


def results_frame(n_trials):
    rows = [
        {"trial": t, "n_labeled": n, "strategy": s, "accuracy": 0.5 + n / 100 + t / 50}
        for t in range(n_trials)
        for s in ("mc:gr", "rand:gr")
        for n in (2, 7, 12)
    ]
    return pd.DataFrame(rows)


def choices_frame(strategies=("mc:mgr", "rand:mgr")):
    rows = []
    for s in strategies:
        rows += [{"trial": 0, "strategy": s, "iteration": 0, "node": n} for n in (0, 1)]
        rows += [
            {"trial": 0, "strategy": s, "iteration": it, "node": 10 * it + k}
            for it in (1, 2, 3)
            for k in range(2)
        ]
    return pd.DataFrame(rows)


def png_header(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("n_trials", "words"), [(1, "1 trial"), (3, "3 trials")])
def test_accuracy_title_says_mean_std_over_the_trials(n_trials, words):
    fig = plot_accuracy(results_frame(n_trials), title="moons.npz: accuracy")
    assert fig.axes[0].get_title() == f"moons.npz: accuracy\nmean \u00b1 std over {words}"
    assert plot_accuracy(results_frame(1)).axes[0].get_title().startswith("Accuracy\n")


def test_figures_are_written_when_a_path_is_given(tmp_path, moons):
    X, y_true, y = moons
    assert png_header(plot_accuracy(results_frame(2), tmp_path / "a.png"))
    assert png_header(plot_choices(X, y_true, {"mc": [5, 6]}, tmp_path / "c" / "c.png"))
    clf = SpectralGraphClassifier(loss="probit").fit(X, y)
    assert png_header(plot_uncertainty(clf, path=tmp_path / "u.png"))


def test_choices_in_two_dimensions_show_order_and_legend(moons):
    X, y_true, _ = moons
    fig = plot_choices(X, y_true, choices_frame(), title="moons")
    panels = [ax for ax in fig.axes if ax.get_title().endswith("labels)")]
    assert [ax.get_title() for ax in panels] == ["mc:mgr (8 labels)", "rand:mgr (8 labels)"]
    background, stars, initial = panels[0].collections
    assert_allclose(background.get_offsets(), X)
    assert_allclose(stars.get_offsets(), X[[10, 11, 20, 21, 30, 31]])
    assert_array_equal(stars.get_array(), [1, 1, 2, 2, 3, 3])  # colour = iteration
    assert_allclose(initial.get_offsets(), X[[0, 1]])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["class 0", "class 1", "initial label", "queried (colour: order)"]
    assert any(ax.get_ylabel() == "iteration of the query" for ax in fig.axes)
    assert fig.get_suptitle() == "moons: points chosen, trial 0"
    as_list = plot_choices(X.tolist(), y_true, choices_frame(), title="moons")  # array-like X
    assert_allclose(as_list.axes[0].collections[0].get_offsets(), X)
    for bad in (np.arange(X.shape[0]) < 3, [1.5, 2.7]):  # a mask, fractions: no node indices
        with pytest.raises(ValueError, match=r"choices\['mc'\] must hold node indices"):
            plot_choices(X, y_true, {"mc": bad})


def test_choices_of_high_dimensional_data_use_spectral_coordinates(digits):
    X, y = digits
    fig = plot_choices(X, y, choices_frame(), title="digits.npz")
    coords = spectral_coordinates(X)
    background = fig.axes[0].collections[0]
    assert_allclose(background.get_offsets(), coords)
    assert fig.get_suptitle() == "digits.npz: points chosen, trial 0 (spectral coordinates)"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:10] == [f"class {c}" for c in range(10)]


def test_choices_mapping_order_and_given_embedding(moons):
    X, y_true, _ = moons
    embedding = X[:, ::-1] * 2
    fig = plot_choices(X, y_true, {"picks": [9, 4, 6]}, embedding=embedding)
    stars = fig.axes[0].collections[1]
    assert_allclose(stars.get_offsets(), embedding[[9, 4, 6]])
    assert_array_equal(stars.get_array(), [1, 2, 3])
    assert fig.get_suptitle() == "points chosen"
    with pytest.raises(ValueError, match=r"embedding has shape \(150, 3\)"):
        plot_choices(X, y_true, {"picks": [9]}, embedding=np.zeros((150, 3)))


def test_spectral_coordinates_are_the_graphs_second_and_third_eigenvectors(moons):
    X, _, y = moons
    clf = SpectralGraphClassifier(n_eigs=10).fit(X, y)
    expected = clf.eigenvectors_[:, 1:3]
    assert_array_equal(spectral_coordinates(clf), expected)
    assert_array_equal(spectral_coordinates(clf.graph_), expected)
    # Built from the data: the same graph parameters, 3 eigenpairs.
    assert_allclose(np.abs(spectral_coordinates(X)), np.abs(expected), atol=1e-8)
    with pytest.raises(ValueError, match="at least 4 nodes"):
        spectral_coordinates(X[:3])
    small = SpectralGraphClassifier(n_eigs=2).fit(X, y)
    with pytest.raises(ValueError, match="needs 3 eigenpairs; the graph has 2"):
        spectral_coordinates(small)


@pytest.mark.parametrize(
    "loss, model",
    [("probit", "spectral"), ("mgr", "spectral"), ("ce", "spectral"),
     ("mgr", "full"), ("gr", "sum"), ("mgr", "sum")],
)  # fmt: skip
def test_uncertainty_variance_is_the_posterior_variance_of_each_node(moons, loss, model):
    X, _, y = moons
    clf = SpectralGraphClassifier(loss=loss, model=model, n_eigs=20).fit(X, y)
    # the full and summed models keep the prior's remainder as white noise
    assert (getattr(clf.posterior_, "nugget", 0.0) > 0) == (model != "spectral")
    fig = plot_uncertainty(clf)
    points = fig.axes[0].collections[0]
    order = np.argsort(points.get_array())
    # Brute force: the covariance of the latent values at every node.
    cov = clf.posterior_cov(X)
    if loss == "ce":
        n, k = X.shape[0], clf.classes_.size
        blocks = cov.reshape(k, n, k, n)
        centre = np.eye(k) - 1.0 / k
        expected = np.array([np.trace(centre @ blocks[:, i, :, i] @ centre) for i in range(n)])
    else:
        expected = np.diag(cov)
    assert_allclose(np.sort(points.get_array()), np.sort(expected), rtol=1e-8)
    assert_allclose(points.get_offsets()[order], X[np.argsort(expected)], atol=0)
    labeled = fig.axes[0].collections[1]
    assert_allclose(labeled.get_offsets(), X[clf.labeled_nodes_])
    assert fig.axes[0].get_title() == f"posterior variance of the latent value ({loss})"


@pytest.mark.parametrize("loss", ["probit", "ce"])
def test_uncertainty_margin(moons, loss):
    X, _, y = moons
    clf = SpectralGraphClassifier(loss=loss, n_eigs=20).fit(X, y)
    fig = plot_uncertainty(clf, measure="margin", title="margins")
    U = clf.eigenvectors_ @ clf.coef_
    expected = np.abs(U) if U.ndim == 1 else np.abs(U[:, 1] - U[:, 0])
    assert_allclose(np.sort(fig.axes[0].collections[0].get_array()), np.sort(expected))
    assert fig.axes[0].get_title() == "margins"


def test_uncertainty_of_high_dimensional_nodes_and_errors(digits):
    X, y = digits
    labels = np.full(300, -1)
    first = [np.flatnonzero(y == c)[0] for c in range(10)]
    labels[first] = y[first]
    clf = SpectralGraphClassifier(n_eigs=20).fit(X, labels)
    fig = plot_uncertainty(clf)
    assert_allclose(
        np.sort(fig.axes[0].collections[0].get_offsets()[:, 0]),
        np.sort(clf.eigenvectors_[:, 1]),
    )
    with pytest.raises(ValueError, match="measure must be one of"):
        plot_uncertainty(clf, measure="entropy")
    with pytest.raises(ValueError, match=r"embedding of the 300 points"):
        plot_uncertainty(clf, X=X)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        plot_uncertainty(SpectralGraphClassifier())


def test_command_line_titles_name_the_data_file(tmp_path, monkeypatch, digits):
    from skmcal import plotting

    X, y = digits
    data = tmp_path / "my-digits.npz"
    np.savez(data, X=X[:120], y=y[:120])
    titles = {}

    def save(fig, path, dpi):
        titles[path.name] = fig.get_suptitle() or fig.axes[0].get_title()
        return path

    monkeypatch.setattr(plotting, "_save", save)
    status = main(
        ["run", "--dataset", str(data), "--strategies", "mc:mgr", "rand:mgr", "--batch", "2",
         "--iterations", "2", "--trials", "2", "--no-progress", "--out", str(tmp_path / "out")]
    )  # fmt: skip
    assert status == 0
    assert titles["accuracy.png"] == "my-digits.npz: accuracy\nmean \u00b1 std over 2 trials"
    assert titles["choices.png"] == ("my-digits.npz: points chosen, trial 0 (spectral coordinates)")


def test_accuracy_with_no_number_to_draw_is_refused():
    results = results_frame(2)
    with pytest.raises(ValueError, match=r"all 12 accuracies are NaN"):
        plot_accuracy(results.assign(accuracy=np.nan))
    with pytest.raises(TypeError, match=r"accuracy column must hold numbers; got dtype"):
        plot_accuracy(results.assign(accuracy="x"))
    missing = results.assign(strategy=results["strategy"].where(results.index != 4))
    with pytest.raises(ValueError, match=r"the strategy column is missing .* in 1 of the 12 rows"):
        plot_accuracy(missing)
    # Some NaN (no unlabeled point left to score) are left out of the curve.
    partly = results.copy()
    partly.loc[partly["n_labeled"] == 12, "accuracy"] = np.nan
    line = plot_accuracy(partly).axes[0].lines[0]
    assert_allclose(line.get_xdata(), [2, 7, 12])
    assert_allclose(line.get_ydata()[:2], [0.53, 0.58])
    assert np.isnan(line.get_ydata()[2])


@pytest.mark.parametrize(
    ("embedding", "error", "match"),
    [
        (
            "spectral",
            TypeError,
            r"embedding must be None, an array-like .* got the string 'spectral'",
        ),
        ({"x": 1}, TypeError, r"got dict, which does not convert to an array of numbers"),
        (np.full((150, 2), np.nan), ValueError, r"150 of the 150 points have NaN or infinite"),
        (np.r_[np.ones((3, 2)), np.full((147, 2), np.inf)], ValueError, r"147 of .* point 3\)"),
    ],
)
def test_choices_embedding_that_cannot_be_drawn_is_refused(moons, embedding, error, match):
    X, y_true, _ = moons
    with pytest.raises(error, match=match):
        plot_choices(X, y_true, {"picks": [9]}, embedding=embedding)


def test_choices_embedding_of_an_unfitted_classifier_says_so(moons):
    from sklearn.exceptions import NotFittedError

    X, y_true, _ = moons
    with pytest.raises(NotFittedError, match="SpectralGraphClassifier instance is not fitted"):
        plot_choices(X, y_true, {"picks": [9]}, embedding=SpectralGraphClassifier())
    with pytest.raises(TypeError, match=r"got the string 'spectral'"):
        spectral_coordinates("spectral")


def test_choices_with_unusable_labels_or_iterations_are_refused(moons):
    X, y_true, _ = moons
    y = y_true.astype(object)
    y[[4, 8]] = None
    with pytest.raises(
        ValueError, match=r"y holds None for 2 of the 150 points \(the first is point 4\)"
    ):
        plot_choices(X, y, {"picks": [9]})
    y[[4, 8]] = "a"
    with pytest.raises(TypeError, match=r"labels of one kind .* a mix of \['int', 'str'\]"):
        plot_choices(X, y, {"picks": [9]})
    choices = choices_frame()
    for bad in (
        choices["iteration"].astype(str),
        choices["iteration"] - 1,
        choices["iteration"] + 0.5,
    ):
        with pytest.raises(ValueError, match=r"choices.iteration must hold iteration numbers"):
            plot_choices(X, y_true, choices.assign(iteration=bad))
    # Whole floats (as read from a CSV file with a gap) are iteration numbers.
    fig = plot_choices(X, y_true, choices.assign(iteration=choices["iteration"].astype(float)))
    assert_array_equal(fig.axes[0].collections[1].get_array(), [1, 1, 2, 2, 3, 3])


def test_a_folder_as_path_and_a_bad_n_cols_are_refused(moons, tmp_path):
    """A folder given as ``path`` (matplotlib raised IsADirectoryError) and ``n_cols``
    of 0 or less (one column was drawn silently) or not an integer."""
    with pytest.raises(ValueError, match=r"is a folder; give the PNG file to write"):
        plot_accuracy(results_frame(2), tmp_path)
    assert list(tmp_path.iterdir()) == []
    X, y, _ = moons
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"n_cols must be a positive integer; got"):
            plot_choices(X, y, {"picks": [9]}, n_cols=bad)
    fig = plot_choices(X, y, {"a": [9], "b": [3]}, n_cols=np.int64(5))
    assert len(fig.axes) >= 2
