"""skmcal.datasets: the synthetic set, the IDX parser and the real-data loaders.

Loaders of real data run on the files in ../shared/data (beside the
repository; tests/conftest.py makes it the data home; Fashion-MNIST there or
in /usr/share/datasets/fashion-mnist) when they exist, and skip otherwise;
everything else runs on tiny files written to tmp_path.
"""

import gzip
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy.io import loadmat, savemat

from skmcal import datasets
from skmcal.datasets import (
    get_data_home,
    load_fashion_mnist,
    load_hsi,
    load_idx,
    load_mnist_test,
    make_binary_clusters,
    read_idx,
    read_idx_header,
)

SHARED = get_data_home()  # ../shared/data, set by tests/conftest.py
#: Where load_fashion_mnist() looks with data_home=None: the data home, then Debian's folder.
DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")
FASHION = next(
    (path for path in (SHARED / "fashion-mnist", DEBIAN_FASHION) if path.exists()), DEBIAN_FASHION
)

MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
SAMSON_COUNTS = [3015, 3666, 2344]

_IDX_CODES = {"u1": 0x08, "i1": 0x09, "i2": 0x0B, "i4": 0x0C, "f4": 0x0D, "f8": 0x0E}


def _needs(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not available")


# --------------------------------------------------------------------------
# make_binary_clusters
# --------------------------------------------------------------------------


def _binary_clusters_by_hand():
    """The paper's recipe with numpy only (no sklearn), on a private RandomState(4).

    ``np.random.seed(4)`` followed by draws from the global generator gives the
    same stream as ``RandomState(4)``; make_moons and make_blobs draw their
    noise with ``normal(loc, scale, size)``, block after block.
    """
    rs = np.random.RandomState(4)
    t = np.linspace(0, np.pi, 100)
    moons = np.r_[np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 1 - np.sin(t) - 0.5]]
    moons = moons + rs.normal(scale=0.12, size=(200, 2))
    centers = [(1.6, -1.3), (1.3, 1.7), (0.5, 2.4), (0.2, -1.0), (-1.7, 2.2)]
    sizes, stds = [50, 60, 40, 30, 40], [0.26, 0.23, 0.23, 0.26, 0.23]
    blobs = [
        rs.normal(loc=c, scale=s, size=(n, 2)) for c, s, n in zip(centers, stds, sizes, strict=True)
    ]
    low = rs.standard_normal((100, 2)) * [0.4, 0.3] + [-1.5, -0.8]
    high = rs.standard_normal((70, 2)) * [0.4, 0.3] + [2.5, 2.8]
    line1 = np.linspace([-2.0, 0.8], [-0.2, 2.0], 80) + 0.18 * rs.standard_normal((80, 2))
    line2 = np.linspace([2.5, -1.5], [2.5, 2.0], 90) + 0.2 * rs.standard_normal((90, 2))
    X = np.concatenate([moons, *blobs, low, high, line1, line2])
    y = np.concatenate(
        [np.repeat([0, 1], 100), np.repeat(np.arange(5) % 2, sizes)]
        + [np.full(n, label) for n, label in ((100, 0), (70, 1), (80, 1), (90, 0))]
    )
    return X, y


def test_binary_clusters_shape_and_counts():
    X, y = make_binary_clusters()
    assert X.shape == (760, 2) and X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (760,) and y.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(y), [420, 340])
    assert np.isfinite(X).all()


def test_binary_clusters_is_deterministic():
    X1, y1 = make_binary_clusters()
    np.random.seed(0)  # noqa: NPY002 - the global state must not matter
    X2, y2 = make_binary_clusters()
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)


def test_binary_clusters_leaves_the_global_rng_alone():
    np.random.seed(123)  # noqa: NPY002
    np.random.standard_normal()  # noqa: NPY002 - leaves a cached Gaussian in the state
    before = np.random.get_state()  # noqa: NPY002
    expected = np.random.standard_normal(5)  # noqa: NPY002
    np.random.set_state(before)  # noqa: NPY002
    make_binary_clusters()
    after = np.random.get_state()  # noqa: NPY002
    assert after[0] == before[0]
    np.testing.assert_array_equal(after[1], before[1])
    assert after[2:] == before[2:]
    np.testing.assert_array_equal(np.random.standard_normal(5), expected)  # noqa: NPY002


def test_binary_clusters_first_block_is_make_moons_under_seed_4():
    from sklearn.datasets import make_moons

    np.random.seed(4)  # noqa: NPY002 - the paper's recipe, verbatim
    X_moons, y_moons = make_moons(200, shuffle=False, noise=0.12)
    X, y = make_binary_clusters()
    np.testing.assert_array_equal(X[:200], X_moons)
    np.testing.assert_array_equal(y[:200], y_moons)


def test_binary_clusters_match_an_independent_implementation():
    X, y = make_binary_clusters()
    X_ref, y_ref = _binary_clusters_by_hand()
    np.testing.assert_array_equal(X[:200], X_ref[:200])  # the same float operations
    np.testing.assert_allclose(X, X_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(y, y_ref)


# --------------------------------------------------------------------------
# IDX files
# --------------------------------------------------------------------------


def _idx_bytes(array: np.ndarray) -> bytes:
    array = np.asarray(array)
    code = _IDX_CODES[array.dtype.str[1:]]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def _write_idx(path: Path, array: np.ndarray, compressed: bool = False) -> Path:
    data = _idx_bytes(array)
    path.write_bytes(gzip.compress(data) if compressed else data)
    return path


def _image_pair(folder: Path, n: int, compressed: bool, prefix: str = "", seed: int = 0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 3, 4), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    suffix = ".gz" if compressed else ""
    x_path = _write_idx(folder / f"{prefix}images-idx3-ubyte{suffix}", images, compressed)
    y_path = _write_idx(folder / f"{prefix}labels-idx1-ubyte{suffix}", labels, compressed)
    return images, labels, x_path, y_path


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_load_idx_round_trip(tmp_path, compressed):
    images, labels, x_path, y_path = _image_pair(tmp_path, 7, compressed)
    X, y = load_idx(x_path, y_path)
    assert X.shape == (7, 12) and X.dtype == np.float64
    np.testing.assert_array_equal(X, images.reshape(7, 12) / 255.0)
    assert X.min() >= 0.0 and X.max() <= 1.0
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, labels)
    assert read_idx_header(x_path) == (np.dtype("u1"), (7, 3, 4))


def test_load_idx_normalize_false_gives_raw_uint8(tmp_path):
    images, labels, x_path, y_path = _image_pair(tmp_path, 5, compressed=True)
    X, y = load_idx(x_path, y_path, normalize=False)
    assert X.dtype == np.uint8 and X.flags.writeable
    np.testing.assert_array_equal(X, images.reshape(5, 12))
    np.testing.assert_array_equal(y, labels)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_load_idx_n_samples_takes_the_first_rows(tmp_path, compressed):
    images, labels, x_path, y_path = _image_pair(tmp_path, 9, compressed)
    X, y = load_idx(x_path, y_path, normalize=False, n_samples=4)
    np.testing.assert_array_equal(X, images[:4].reshape(4, 12))
    np.testing.assert_array_equal(y, labels[:4])


@pytest.mark.parametrize("bad", [0, -1, 10, 2.0, True, "3"])
def test_load_idx_rejects_bad_n_samples(tmp_path, bad):
    *_, x_path, y_path = _image_pair(tmp_path, 9, compressed=False)
    with pytest.raises(ValueError, match="n_samples"):
        load_idx(x_path, y_path, n_samples=bad)


@pytest.mark.parametrize("dtype", ["u1", "i1", ">i2", "<i4", ">f4", "<f8"])
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_read_idx_every_element_type(tmp_path, dtype, compressed):
    start = 0 if dtype == "u1" else -5
    array = np.arange(start, start + 24).reshape(2, 3, 4).astype(dtype)
    path = _write_idx(tmp_path / "a.idx", array, compressed)
    out = read_idx(path)
    assert out.dtype.isnative and out.dtype.kind == np.dtype(dtype).kind
    np.testing.assert_array_equal(out, array)
    np.testing.assert_array_equal(read_idx(path, n_samples=1), array[:1])


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(
    "magic", [b"\x12\x34\x08\x03", b"\x00\x00\x07\x03", b"\x00\x00\x08\x00", b"\x1f\x00\x08\x01"]
)
def test_read_idx_rejects_a_wrong_magic_number(tmp_path, magic, compressed):
    data = magic + struct.pack(">3I", 1, 2, 2) + bytes(4)
    path = tmp_path / "bad.idx"
    path.write_bytes(gzip.compress(data) if compressed else data)
    with pytest.raises(ValueError, match="not an IDX file: magic number"):
        read_idx(path)
    with pytest.raises(ValueError, match="not an IDX file"):
        load_idx(path, path)


def test_read_idx_rejects_truncated_and_overlong_files(tmp_path):
    data = _idx_bytes(np.zeros((4, 2, 2), dtype=np.uint8))
    path = tmp_path / "x.idx"
    path.write_bytes(data[:-1])
    with pytest.raises(ValueError, match="truncated IDX data"):
        read_idx(path)
    read_idx(path, n_samples=3)  # the rows asked for are all there
    path.write_bytes(data + b"\x00")
    with pytest.raises(ValueError, match="more data than its header"):
        read_idx(path)
    path.write_bytes(data[:10])  # magic announces 3 dimensions, 6 of 12 bytes follow
    with pytest.raises(ValueError, match="truncated IDX header"):
        read_idx(path)
    path.write_bytes(b"\x00\x00")
    with pytest.raises(ValueError, match="no header"):
        read_idx_header(path)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_read_idx_refuses_a_header_larger_than_the_file(tmp_path, compressed):
    # A damaged header declaring 2**60 bytes (1 EiB): a clear error, not a MemoryError.
    data = bytes([0, 0, 0x08, 3]) + struct.pack(">3I", 2**20, 2**20, 2**20) + bytes(10)
    path = tmp_path / "x.idx"
    path.write_bytes(gzip.compress(data) if compressed else data)
    message = (
        rf"x.idx: truncated IDX data .* declares the shape \(1048576, 1048576, 1048576\), "
        rf"{2**60} bytes for the rows read, but only 10 bytes of data follow the header"
    )
    with pytest.raises(ValueError, match=message):
        read_idx(path)
    with pytest.raises(
        ValueError, match=rf"truncated IDX data.* {2**41} bytes for the rows.* 10\b"
    ):
        read_idx(path, n_samples=2)


def test_load_idx_checks_the_pair(tmp_path):
    images, labels, x_path, y_path = _image_pair(tmp_path, 6, compressed=False)
    short = _write_idx(tmp_path / "short", labels[:5])
    with pytest.raises(ValueError, match="6 images but .* 5 labels"):
        load_idx(x_path, short)
    with pytest.raises(ValueError, match="labels must be 1-D"):
        load_idx(x_path, x_path)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        load_idx(y_path, y_path)
    wide = _write_idx(tmp_path / "wide", images.astype(">i2"))
    with pytest.raises(ValueError, match="must be uint8"):
        load_idx(wide, y_path)
    float_labels = _write_idx(tmp_path / "flt", labels.astype(">f4"))
    with pytest.raises(ValueError, match="labels must be integers"):
        load_idx(x_path, float_labels)


def test_missing_idx_file_names_the_path(tmp_path):
    *_, x_path, y_path = _image_pair(tmp_path, 3, compressed=False)
    missing = tmp_path / "nope" / "labels.gz"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        load_idx(x_path, missing)
    with pytest.raises(FileNotFoundError, match=str(missing)):
        read_idx_header(missing)


# --------------------------------------------------------------------------
# Data folders
# --------------------------------------------------------------------------


def test_get_data_home_order(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_data_home() == tmp_path / "home" / "skmcal_data"
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path / "env"))
    assert get_data_home() == tmp_path / "env"
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"
    assert get_data_home(str(tmp_path)) == tmp_path
    monkeypatch.setenv(datasets.DATA_ENV, "")
    assert get_data_home() == tmp_path / "home" / "skmcal_data"
    assert get_data_home("~/elsewhere") == tmp_path / "home" / "elsewhere"


# --------------------------------------------------------------------------
# MNIST test set
# --------------------------------------------------------------------------


def test_mnist_test_set():
    _needs(SHARED / "mnist-test")
    X, y = load_mnist_test(SHARED)
    assert X.shape == (10000, 784) and X.dtype == np.float64
    assert X.min() == 0.0 and X.max() == 1.0
    np.testing.assert_array_equal(np.bincount(y), MNIST_TEST_COUNTS)
    # against the fixed-offset reading of shared/data/README.md
    folder = SHARED / "mnist-test"
    raw = np.frombuffer(gzip.open(folder / "t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16)
    labels = np.frombuffer(
        gzip.open(folder / "t10k-labels-idx1-ubyte.gz").read(), np.uint8, offset=8
    )
    X_raw, y_raw = load_mnist_test(SHARED, normalize=False)
    assert X_raw.dtype == np.uint8
    np.testing.assert_array_equal(X_raw, raw.reshape(-1, 784))
    np.testing.assert_array_equal(y_raw, labels)
    np.testing.assert_array_equal(X, X_raw / 255.0)


def test_mnist_test_set_n_samples_and_locations(monkeypatch):
    _needs(SHARED / "mnist-test")
    X, y = load_mnist_test(SHARED, n_samples=50)
    assert X.shape == (50, 784)
    X_dir, y_dir = load_mnist_test(SHARED / "mnist-test", n_samples=50)  # the folder itself
    np.testing.assert_array_equal(X_dir, X)
    monkeypatch.setenv(datasets.DATA_ENV, str(SHARED))
    np.testing.assert_array_equal(load_mnist_test(n_samples=50)[1], y)


def test_missing_mnist_names_where_it_looked(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError) as info:
        load_mnist_test(tmp_path)
    message = str(info.value)
    assert "t10k-images-idx3-ubyte" in message and "README" in message
    assert str(tmp_path / "mnist-test") in message
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "elsewhere")):
        load_mnist_test()


def test_mnist_plain_files_are_found_too(tmp_path):
    images, labels, *_ = _image_pair(tmp_path, 3, compressed=False)
    folder = tmp_path / "mnist-test"
    folder.mkdir()
    _write_idx(folder / "t10k-images-idx3-ubyte", images)
    _write_idx(folder / "t10k-labels-idx1-ubyte", labels)
    X, y = load_mnist_test(tmp_path, normalize=False)
    np.testing.assert_array_equal(X, images.reshape(3, 12))
    np.testing.assert_array_equal(y, labels)


# --------------------------------------------------------------------------
# Fashion-MNIST
# --------------------------------------------------------------------------


def test_fashion_mnist_real_files():
    _needs(FASHION)
    names = ["train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"]
    shapes = [read_idx_header(FASHION / name)[1] for name in names]
    assert sum(shape[0] for shape in shapes) == 70000
    assert all(shape[1:] == (28, 28) for shape in shapes)
    labels = [read_idx_header(FASHION / n.replace("images-idx3", "labels-idx1")) for n in names]
    assert [shape for _, shape in labels] == [(60000,), (10000,)]
    X, y = load_fashion_mnist(n_samples=1000)
    assert X.shape == (1000, 784) and X.dtype == np.float64
    assert 0.0 <= X.min() and X.max() <= 1.0
    assert y.dtype == np.int64 and set(np.unique(y)) <= set(range(10))


def _fake_fashion(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    train = _image_pair(folder, 3, True, prefix="train-", seed=1)
    test = _image_pair(folder, 2, True, prefix="t10k-", seed=2)
    return train[:2], test[:2]


def test_fashion_mnist_is_train_then_test(tmp_path):
    (train_x, train_y), (test_x, test_y) = _fake_fashion(tmp_path / "fashion-mnist")
    X, y = load_fashion_mnist(tmp_path, normalize=False)  # finds <data_home>/fashion-mnist
    np.testing.assert_array_equal(X, np.concatenate([train_x, test_x]).reshape(5, 12))
    np.testing.assert_array_equal(y, np.concatenate([train_y, test_y]))
    X4, y4 = load_fashion_mnist(tmp_path / "fashion-mnist", n_samples=4)
    np.testing.assert_array_equal(X4, X[:4] / 255.0)
    np.testing.assert_array_equal(y4, y[:4])
    np.testing.assert_array_equal(load_fashion_mnist(tmp_path, n_samples=2)[1], y[:2])
    with pytest.raises(ValueError, match="n_samples=6 is more than the 5 rows"):
        load_fashion_mnist(tmp_path, n_samples=6)


def test_missing_fashion_mnist_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_fashion_mnist(tmp_path / "fm")
    message = str(info.value)
    assert "apt-get install dataset-fashion-mnist" in message
    assert str(tmp_path / "fm") in message and "train-images-idx3-ubyte" in message


# --------------------------------------------------------------------------
# Hyperspectral images
# --------------------------------------------------------------------------


def test_samson():
    _needs(SHARED / "hsi")
    X, y = load_hsi("samson", data_home=SHARED)
    assert X.shape == (9025, 156) and X.dtype == np.float64 and X.flags.c_contiguous
    assert y.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(y), SAMSON_COUNTS)
    # against the reading of shared/data/README.md
    np.testing.assert_array_equal(X, loadmat(SHARED / "hsi" / "Samson.mat")["Y"].T)
    np.testing.assert_array_equal(y, loadmat(SHARED / "hsi" / "Samson_end.mat")["A"].argmax(0))


def test_samson_by_path_needs_the_ambiguous_key():
    _needs(SHARED / "hsi")
    data, labels = SHARED / "hsi" / "Samson.mat", SHARED / "hsi" / "Samson_end.mat"
    X, y = load_hsi(str(data), labels, labels_key="A")  # Samson.mat holds one array: Y
    np.testing.assert_array_equal(np.bincount(y), SAMSON_COUNTS)
    np.testing.assert_array_equal(X, load_hsi("Samson", data_home=SHARED / "hsi")[0])
    with pytest.raises(ValueError, match="Cannot tell which variable .*'A' .*'M' .*labels_key="):
        load_hsi(data, labels)
    with pytest.raises(KeyError, match="no variable 'B'"):
        load_hsi(data, labels, data_key="B")


def test_missing_samson_names_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_hsi("samson", data_home=tmp_path)
    message = str(info.value)
    assert "Samson.mat" in message and str(tmp_path / "hsi") in message and "README" in message


def test_missing_hsi_file_names_the_path(tmp_path):
    np.save(tmp_path / "X.npy", np.ones((3, 2)))
    for data, labels in [(tmp_path / "cube.mat", None), (tmp_path / "X.npy", tmp_path / "gt.mat")]:
        missing = data if labels is None else labels
        with pytest.raises(FileNotFoundError, match=f"No such file: {missing}"):
            load_hsi(data, labels)


def test_hsi_cube_with_ground_truth_map(tmp_path):
    rng = np.random.default_rng(0)
    cube = rng.random((4, 5, 3))
    gt = rng.integers(0, 3, size=(4, 5)).astype(np.uint8)
    savemat(tmp_path / "cube.mat", {"cube": cube})
    savemat(tmp_path / "cube_gt.mat", {"gt": gt})
    X, y = load_hsi(tmp_path / "cube.mat", tmp_path / "cube_gt.mat")
    np.testing.assert_array_equal(X, cube.reshape(20, 3))
    np.testing.assert_array_equal(y, gt.ravel())
    # background: drop the unlabeled pixels of the map
    X, y = load_hsi(tmp_path / "cube.mat", tmp_path / "cube_gt.mat", background=0)
    keep = gt.ravel() != 0
    np.testing.assert_array_equal(X, cube.reshape(20, 3)[keep])
    np.testing.assert_array_equal(y, gt.ravel()[keep])
    assert 0 not in y


def test_hsi_abundances_in_every_layout(tmp_path):
    rng = np.random.default_rng(1)
    cube = rng.random((4, 5, 6))
    abundances = rng.random((4, 5, 3))
    expected = abundances.argmax(axis=2).ravel()
    pixels = cube.reshape(20, 6)
    flat = abundances.reshape(20, 3)
    cases = {
        "cube_cube": (cube, abundances),
        "cube_classes_x_pixels": (cube, flat.T),
        "pixels_x_bands_pixels_x_classes": (pixels, flat),
        "bands_x_pixels_classes_x_pixels": (pixels.T, flat.T),
    }
    for name, (data, labels) in cases.items():
        savemat(tmp_path / f"{name}.mat", {"data": data, "A": labels})
        X, y = load_hsi(tmp_path / f"{name}.mat", data_key="data", labels_key="A")
        np.testing.assert_array_equal(X, pixels, err_msg=name)
        np.testing.assert_array_equal(y, expected, err_msg=name)


@pytest.mark.parametrize("cube", [True, False], ids=["cube", "classes_x_pixels"])
def test_hsi_nan_abundances_are_refused(tmp_path, cube):
    abundances = np.random.default_rng(2).random((4, 5, 3))
    abundances[0, 1, 2] = abundances[3, 4, :] = np.nan  # argmax would call both class 2 and 0
    labels = abundances if cube else abundances.reshape(20, 3).T
    savemat(tmp_path / "a.mat", {"data": np.ones((4, 5, 6)), "A": labels})
    with pytest.raises(ValueError, match=r"abundances are NaN for 2 of the 20 pixels"):
        load_hsi(tmp_path / "a.mat", data_key="data", labels_key="A")


def test_hsi_nan_data_are_returned_with_a_warning(tmp_path):
    cube = np.random.default_rng(3).random((4, 5, 3))
    cube[0, 0, :] = np.nan  # a pixel with no data, in the background
    cube[2, 1, 1] = np.nan  # a labeled pixel with a bad band
    gt = np.ones((4, 5), dtype=np.uint8)
    gt[0, 0] = 0
    savemat(tmp_path / "cube.mat", {"cube": cube, "gt": gt})
    with pytest.warns(UserWarning, match=r"cube.mat hold NaN in 2 of the 20 pixels \(3 of the 3 "
                                         r"bands\); SpectralGraphClassifier refuses NaN"):
        X, _ = load_hsi(tmp_path / "cube.mat", data_key="cube", labels_key="gt")
    np.testing.assert_array_equal(X, cube.reshape(20, 3))  # returned as they are
    with pytest.warns(UserWarning, match=r"NaN in 1 of the 19 pixels \(1 of the 3 bands\)"):
        load_hsi(tmp_path / "cube.mat", data_key="cube", labels_key="gt", background=0)
    cube[2, 1, 1] = 0.5
    savemat(tmp_path / "cube.mat", {"cube": cube, "gt": gt})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the background held the only NaN
        load_hsi(tmp_path / "cube.mat", data_key="cube", labels_key="gt", background=0)


def test_hsi_labels_from_the_same_file_are_found_by_elimination(tmp_path):
    data, labels = np.ones((6, 2)), np.arange(6.0)
    savemat(tmp_path / "both.mat", {"data": data, "gt": labels})
    X, y = load_hsi(tmp_path / "both.mat", data_key="data")
    np.testing.assert_array_equal(y, np.arange(6))
    with pytest.raises(ValueError, match="data_key="):
        load_hsi(tmp_path / "both.mat")


def test_hsi_x_labels_npz_like_the_papers_code(tmp_path):
    X_in, y_in = make_binary_clusters()
    np.savez(tmp_path / "X_labels.npz", X=X_in, labels=y_in.astype(float))  # the paper: floats
    X, y = load_hsi(tmp_path / "X_labels.npz")
    np.testing.assert_array_equal(X, X_in)
    np.testing.assert_array_equal(y, y_in)
    assert y.dtype == np.int64
    np.savez(tmp_path / "Xy.npz", X=X_in, y=y_in)
    np.testing.assert_array_equal(load_hsi(tmp_path / "Xy.npz")[1], y_in)


def test_hsi_npy_pair(tmp_path):
    np.save(tmp_path / "X.npy", np.arange(12.0).reshape(4, 3))
    np.save(tmp_path / "y.npy", np.array([0, 1, 1, 2]))
    X, y = load_hsi(tmp_path / "X.npy", tmp_path / "y.npy")
    np.testing.assert_array_equal(X, np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(y, [0, 1, 1, 2])
    with pytest.raises(ValueError, match="holds one array"):
        load_hsi(tmp_path / "X.npy")


@pytest.mark.parametrize(
    "data, labels, match",
    [
        (np.ones((4, 3)), np.arange(5), "neither axis"),
        (np.ones((4, 5, 3)), np.zeros((5, 4)), "height x width"),
        (np.ones((4, 3)), np.array([0.0, 1.5, 1.0, 0.0]), "not all integers"),
        (np.ones((6, 3)), np.ones((3, 3)), "exactly one length"),
        (np.ones((2, 2, 2, 2)), np.arange(4), "cube"),
    ],
)
def test_hsi_rejects_shapes_that_do_not_fit(tmp_path, data, labels, match):
    np.savez(tmp_path / "bad.npz", X=data, labels=labels)
    with pytest.raises(ValueError, match=match):
        load_hsi(tmp_path / "bad.npz")


def test_hsi_rejects_other_arguments(tmp_path):
    (tmp_path / "data.csv").write_text("1,2\n")
    with pytest.raises(ValueError, match="unsupported file type '.csv'"):
        load_hsi(tmp_path / "data.csv")
    with pytest.raises(ValueError, match="labels_path is only for a data file"):
        load_hsi("samson", tmp_path / "gt.mat")


# --------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------


def test_registry_entries_describe_their_files_and_settings():
    assert list(datasets.DATASETS) == ["binary-clusters", "mnist-test", "fashion-mnist", "samson"]
    for name, entry in datasets.DATASETS.items():
        assert entry.name == name and entry.description
        assert set(entry.defaults) == {"kernel", "n_neighbors", "n_initial"}
        assert bool(entry.files) == bool(entry.source)  # a file to get says how to get it
    assert datasets.DATASETS["samson"].files == ("hsi/Samson.mat", "hsi/Samson_end.mat")
    assert datasets.DATASETS["samson"].defaults["kernel"] == "cosine"
    assert datasets.DATASETS["binary-clusters"].defaults["n_initial"] == 1


def test_load_dataset_by_name_with_n_samples():
    X, y = datasets.load_dataset("Binary-Clusters", n_samples=30)
    X_all, y_all = make_binary_clusters()
    np.testing.assert_array_equal(X, X_all[:30])
    np.testing.assert_array_equal(y, y_all[:30])
    with pytest.raises(ValueError, match="Unknown data set 'mnist'; accepted: binary-clusters"):
        datasets.load_dataset("mnist")
    with pytest.raises(ValueError, match=r"Unknown data set \['x'\]; accepted"):
        datasets.load_dataset(["x"])
    for bad in (-1, 0, 1.5, True):  # as the files' loaders: no silent X[:-1] or empty set
        with pytest.raises(ValueError, match="n_samples must be None or a positive integer"):
            datasets.load_dataset("binary-clusters", n_samples=bad)
    with pytest.raises(ValueError, match="n_samples=1000 is more than the 760 rows of the data "
                                         "set 'binary-clusters'"):
        datasets.load_dataset("binary-clusters", n_samples=1000)


def test_load_dataset_reads_the_registered_files_under_data_home(tmp_path, monkeypatch):
    images, labels, *_ = _image_pair(tmp_path, 3, compressed=True)
    folder = tmp_path / "mnist-test"
    folder.mkdir()
    for path, array in zip(datasets.DATASETS["mnist-test"].files, (images, labels), strict=True):
        _write_idx(tmp_path / path[: -len(".gz")], array, compressed=True)
    X, y = datasets.load_dataset("mnist-test", data_home=tmp_path)
    np.testing.assert_array_equal(X, images.reshape(3, 12) / 255.0)
    np.testing.assert_array_equal(y, labels)
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path))
    np.testing.assert_array_equal(datasets.load_dataset("mnist-test", n_samples=2)[1], labels[:2])


@pytest.mark.parametrize("name", ["mnist-test", "samson"])
def test_missing_registered_files_name_the_data_home_and_how_to_get_them(tmp_path, name):
    with pytest.raises(FileNotFoundError) as info:
        datasets.load_dataset(name, data_home=tmp_path / "nowhere")
    message = str(info.value)
    assert str(tmp_path / "nowhere") in message
    assert "SKMCAL_DATA" in message and "data_home=" in message and "public repository" in message


def test_fashion_mnist_default_looks_in_the_data_home_then_the_debian_folder(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path / "home"))
    if not FASHION.exists():
        with pytest.raises(FileNotFoundError) as info:
            load_fashion_mnist()
        assert str(tmp_path / "home" / "fashion-mnist") in str(info.value)
        assert str(FASHION) in str(info.value)
    (train_x, train_y), _ = _fake_fashion(tmp_path / "home" / "fashion-mnist")
    np.testing.assert_array_equal(load_fashion_mnist(n_samples=3)[1], train_y)


def test_load_npz_reads_x_and_y(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.ones((3, 2)), y=np.arange(3), extra=np.zeros(1))
    X, y = datasets.load_npz(tmp_path / "d.npz")
    np.testing.assert_array_equal(X, np.ones((3, 2)))
    np.testing.assert_array_equal(y, np.arange(3))
    np.savez(tmp_path / "noy.npz", X=np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"has no array\(s\) \['y'\]; it holds \['X'\]"):
        datasets.load_npz(tmp_path / "noy.npz")


def test_read_npz_reads_what_numpy_writes(tmp_path):
    path = tmp_path / "a.npz"
    arrays = {"X": np.arange(12.0).reshape(3, 4), "F": np.asfortranarray(np.eye(3)),
              "y": np.array([1, 2, 3], dtype=np.int16), "s": np.array(["ab", "c"])}
    np.savez_compressed(path, **arrays)
    got = datasets.read_npz(path)
    assert sorted(got) == sorted(arrays)
    for key, value in arrays.items():
        np.testing.assert_array_equal(got[key], value)
        assert got[key].dtype == value.dtype
    with zipfile.ZipFile(path) as archive:
        assert {i.filename for i in archive.infolist()} == {f"{k}.npy" for k in arrays}
    with pytest.raises(FileNotFoundError):
        datasets.read_npz(tmp_path / "missing.npz")
