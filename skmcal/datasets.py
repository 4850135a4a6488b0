"""Data sets of the paper: one registry, the synthetic set and offline loaders.

Nothing here downloads. :data:`DATASETS` is the registry of the data sets
known by name (``binary-clusters``, ``mnist-test``, ``fashion-mnist``,
``samson``): for each, its loader, a description, the files it reads and
where to get them, and the paper's settings for it. :func:`load_dataset`
loads one by name, :func:`load_npz` any ``.npz`` file with arrays ``X`` and
``y``; the command line and :func:`skmcal.experiment.run_experiment` take
both. The loaders themselves:

- :func:`make_binary_clusters` builds the paper's synthetic set;
- :func:`load_idx` reads any pair of MNIST-format (IDX) image and label files,
  gzip-compressed or plain; :func:`read_idx` and :func:`read_idx_header` read
  one IDX file or only its header;
- :func:`load_mnist_test` reads the 10,000-image MNIST test set and
  :func:`load_fashion_mnist` the 70,000 images of Fashion-MNIST (Debian package
  ``dataset-fashion-mnist``);
- :func:`load_hsi` reads hyperspectral images stored as MATLAB ``.mat`` files
  (Samson by name; Salinas A, Urban or any other cube given by path) or as an
  ``X_labels.npz`` file like the paper's code writes.

**The data home.** Files of the named data sets are looked for in the folder
:func:`get_data_home` returns, the way scikit-learn's own ``get_data_home``
works: the ``data_home`` argument every loader takes, else the environment
variable ``SKMCAL_DATA``, else ``~/skmcal_data``. Each data set has its own
subfolder there (``mnist-test/``, ``fashion-mnist/``, ``hsi/``); the files may
also lie in the data home itself.
"""

from __future__ import annotations

import gzip
import os
import zipfile
import zlib
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import prod
from numbers import Integral
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from scipy.io import loadmat
from scipy.io.matlab import MatReadError
from sklearn.datasets import make_blobs, make_moons

from ._warnings import warn_user

__all__ = [
    "DATASETS",
    "Dataset",
    "get_data_home",
    "load_fashion_mnist",
    "load_hsi",
    "load_idx",
    "load_dataset",
    "load_mnist_test",
    "load_npz",
    "make_binary_clusters",
    "read_idx",
    "read_idx_header",
    "read_npz",
]

PathLike = str | os.PathLike[str]

#: Environment variable naming the data folder (see :func:`get_data_home`).
DATA_ENV = "SKMCAL_DATA"

#: The data home when neither ``data_home=`` nor ``SKMCAL_DATA`` says otherwise.
DEFAULT_DATA_HOME = "~/skmcal_data"

#: Where the Debian package ``dataset-fashion-mnist`` installs Fashion-MNIST.
FASHION_MNIST_HOME = "/usr/share/datasets/fashion-mnist"

_DATA_HOME_HELP = (
    "pass data_home= (--data-home on the command line) or set the environment variable "
    f"{DATA_ENV} to the folder that holds it (default: {DEFAULT_DATA_HOME}). The data sets "
    "page of the documentation (and the README of a project checkout's shared/data) says "
    "where each file comes from."
)

#: IDX element types: the third byte of the magic number -> big-endian dtype.
_IDX_DTYPES = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

_GZIP_MAGIC = b"\x1f\x8b"

#: Hyperspectral images known by name: files under ``<data_home>/hsi`` and keys.
_HSI_DATASETS = {
    "samson": {
        "data": "Samson.mat",
        "data_key": "Y",
        "labels": "Samson_end.mat",
        "labels_key": "A",
    },
}


# --------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------


def make_binary_clusters() -> tuple[np.ndarray, np.ndarray]:
    """The paper's synthetic "binary clusters" set: 760 points in 2-D.

    Built exactly as the paper's public code builds it, from the legacy global
    NumPy generator seeded with ``np.random.seed(4)``, drawn in this order:

    1. ``make_moons(200, shuffle=False, noise=0.12)``, labels 0 and 1;
    2. ``make_blobs([50, 60, 40, 30, 40], centers=[(1.6, -1.3), (1.3, 1.7),
       (0.5, 2.4), (0.2, -1.0), (-1.7, 2.2)], cluster_std=[.26, .23, .23, .26,
       .23], shuffle=False)``, label = blob index mod 2;
    3. 100 points ``randn(100, 2) @ diag(.4, .3) + (-1.5, -0.8)``, label 0;
    4. 70 points ``randn(70, 2) @ diag(.4, .3) + (2.5, 2.8)``, label 1;
    5. 80 points evenly spaced on the segment (-2, 0.8) -> (-0.2, 2.0) plus
       ``0.18 * randn(80, 2)``, label 1;
    6. 90 points evenly spaced on the segment (2.5, -1.5) -> (2.5, 2.0) plus
       ``0.2 * randn(90, 2)``, label 0;

    concatenated in that order: 420 points of class 0 and 340 of class 1.

    The global generator's state is saved before and restored after, so a
    call neither depends on nor changes the caller's ``np.random`` stream.
    (Like any use of the global generator, it is not safe to call while
    another thread draws from ``np.random``.)

    Returns
    -------
    X : ndarray of shape (760, 2), dtype float64
        The points.
    y : ndarray of shape (760,), dtype int64
        The labels, 0 or 1.

    References
    ----------
    K. Miller and A. L. Bertozzi, "Model-change active learning in graph-based
    semi-supervised learning", 2021; code: github.com/millerk22/model-change-paper.

    Examples
    --------
    >>> import numpy as np
    >>> from skmcal.datasets import make_binary_clusters
    >>> X, y = make_binary_clusters()
    >>> X.shape
    (760, 2)
    >>> np.bincount(y)
    array([420, 340])
    """
    # The paper's code draws from the legacy global generator (NPY002 is
    # deliberate here): the same calls in the same order give the same points.
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(4)  # noqa: NPY002
        X_moons, y_moons = make_moons(200, shuffle=False, noise=0.12)
        X_blobs, y_blobs = make_blobs(
            [50, 60, 40, 30, 40],
            centers=[[1.6, -1.3], [1.3, 1.7], [0.5, 2.4], [0.2, -1.0], [-1.7, 2.2]],
            cluster_std=[0.26, 0.23, 0.23, 0.26, 0.23],
            shuffle=False,
        )
        scale = np.diag([0.4, 0.3])
        X_low = np.random.randn(100, 2) @ scale + np.array([-1.5, -0.8])  # noqa: NPY002
        X_high = np.random.randn(70, 2) @ scale + np.array([2.5, 2.8])  # noqa: NPY002
        t = np.linspace(0.0, 1.0, 80)[:, np.newaxis]
        start, end = np.array([-2.0, 0.8]), np.array([-0.2, 2.0])
        X_line1 = start + t * (end - start) + 0.18 * np.random.randn(80, 2)  # noqa: NPY002
        t = np.linspace(0.0, 1.0, 90)[:, np.newaxis]
        start, end = np.array([2.5, -1.5]), np.array([2.5, 2.0])
        X_line2 = start + t * (end - start) + 0.2 * np.random.randn(90, 2)  # noqa: NPY002
    finally:
        np.random.set_state(state)  # noqa: NPY002

    X = np.concatenate([X_moons, X_blobs, X_low, X_high, X_line1, X_line2])
    y = np.concatenate(
        [
            y_moons,
            y_blobs % 2,
            np.zeros(100, dtype=np.int64),
            np.ones(70, dtype=np.int64),
            np.ones(80, dtype=np.int64),
            np.zeros(90, dtype=np.int64),
        ]
    ).astype(np.int64)
    return np.ascontiguousarray(X, dtype=np.float64), y


# --------------------------------------------------------------------------
# Data folders
# --------------------------------------------------------------------------


def get_data_home(data_home: PathLike | None = None) -> Path:
    """The folder the loaders look in: the data home.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Returned as given (``~`` expanded) when not None. Otherwise the
        environment variable ``SKMCAL_DATA`` when it is set and not empty,
        else ``~/skmcal_data``. The folder need not exist; nothing is created.

    Returns
    -------
    path : pathlib.Path
        The data folder.

    Examples
    --------
    >>> from skmcal.datasets import get_data_home
    >>> get_data_home("/data/skmcal").as_posix()
    '/data/skmcal'
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    return Path(DEFAULT_DATA_HOME).expanduser()


def _search_dirs(data_home: Path, subfolder: str) -> list[Path]:
    # A data set lives in <data_home>/<subfolder>, or directly in data_home.
    return [data_home / subfolder, data_home]


def _find_file(dirs: list[Path], name: str, compressed: bool) -> Path | None:
    names = [name + ".gz", name] if compressed else [name]
    for folder in dirs:
        for candidate in names:
            path = folder / candidate
            if path.is_file():
                return path
    return None


def _require_files(
    what: str, dirs: list[Path], names: list[str], how: str, compressed: bool = False
) -> list[Path]:
    found = [_find_file(dirs, name, compressed) for name in names]
    missing = [name for name, path in zip(names, found, strict=True) if path is None]
    if missing:
        shown = ", ".join(name + ("[.gz]" if compressed else "") for name in missing)
        where = ", ".join(str(folder) for folder in dirs)
        raise FileNotFoundError(f"{what} not found: looked for {shown} in {where}. {how}")
    return found


# --------------------------------------------------------------------------
# IDX (MNIST format)
# --------------------------------------------------------------------------


def _open_binary(path: Path) -> BinaryIO:
    if not path.is_file():
        raise FileNotFoundError(f"No such IDX file: {path}")
    with open(path, "rb") as f:
        is_gzip = f.read(2) == _GZIP_MAGIC
    return gzip.open(path, "rb") if is_gzip else open(path, "rb")


@contextmanager
def _damaged_gzip(path: Path):
    """Report a corrupt or truncated gzip stream as a ValueError naming the file."""
    try:
        yield
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path} is a damaged gzip file ({exc}).") from None


def _read_header(f: BinaryIO, path: Path) -> tuple[np.dtype, tuple[int, ...]]:
    magic = f.read(4)
    if len(magic) < 4:
        raise ValueError(f"{path} is not an IDX file: it holds {len(magic)} byte(s), no header.")
    if magic[0] != 0 or magic[1] != 0 or magic[2] not in _IDX_DTYPES or magic[3] == 0:
        known = ", ".join(f"0x{code:02X}" for code in _IDX_DTYPES)
        raise ValueError(
            f"{path} is not an IDX file: magic number 0x{magic.hex().upper()}; expected "
            f"0x0000TTNN with type TT in {{{known}}} and NN >= 1 dimensions "
            "(MNIST images: 0x00000803, labels: 0x00000801)."
        )
    n_dims = magic[3]
    raw = f.read(4 * n_dims)
    if len(raw) < 4 * n_dims:
        raise ValueError(
            f"{path}: truncated IDX header; the magic number announces {n_dims} "
            f"dimension(s) but only {len(raw)} of their {4 * n_dims} bytes follow."
        )
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4"))
    return _IDX_DTYPES[magic[2]], shape


def read_idx_header(path: PathLike) -> tuple[np.dtype, tuple[int, ...]]:
    """Element type and shape of an IDX file, from its header only.

    Parameters
    ----------
    path : str or path-like
        An IDX file, plain or gzip-compressed (recognised by its content).

    Returns
    -------
    dtype : numpy.dtype
        The element type, big-endian as stored.
    shape : tuple of int
        The dimensions, e.g. ``(10000, 28, 28)`` for the MNIST test images.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If the magic number or the header is not valid IDX.
    """
    path = Path(path)
    with _open_binary(path) as f, _damaged_gzip(path):
        return _read_header(f, path)


def _check_n_samples_value(n_samples) -> None:
    if n_samples is None:
        return
    if not isinstance(n_samples, Integral) or isinstance(n_samples, bool) or n_samples < 1:
        raise ValueError(f"n_samples must be None or a positive integer; got {n_samples!r}.")


def _check_n_samples(n_samples, n_available: int, what: str) -> int:
    _check_n_samples_value(n_samples)
    if n_samples is None:
        return n_available
    if n_samples > n_available:
        raise ValueError(f"n_samples={n_samples} is more than the {n_available} rows of {what}.")
    return int(n_samples)


def _read_into(f: BinaryIO, out: np.ndarray, path: Path) -> None:
    buffer = memoryview(out.reshape(-1).view(np.uint8))
    filled = 0
    while filled < len(buffer):
        n_read = f.readinto(buffer[filled:])
        if not n_read:
            raise ValueError(
                f"{path}: truncated IDX data; the header announces {out.nbytes} bytes "
                f"for the rows read, the file holds {filled}."
            )
        filled += n_read


def _check_declared(path: Path, shape: tuple[int, ...], needed: int, available: int) -> None:
    """Refuse a header that declares more data (``needed`` bytes) than the file holds."""
    if needed > available:
        raise ValueError(
            f"{path}: truncated IDX data (a damaged or incomplete file); its header declares "
            f"the shape {shape}, {needed} bytes for the rows read, but only {available} bytes "
            "of data follow the header."
        )


def _count_bytes(f: BinaryIO, limit: int, chunk: int = 1 << 24) -> int:
    """Bytes left in ``f`` (read and dropped), counting no further than ``limit``."""
    count = 0
    while count < limit:
        n_read = len(f.read(min(chunk, limit - count)))
        if not n_read:
            break
        count += n_read
    return count


def read_idx(path: PathLike, n_samples: int | None = None) -> np.ndarray:
    """Read an IDX file (the MNIST format) into an array.

    The header (magic number ``0x0000TTNN``: element type ``TT``, ``NN``
    dimensions, then the dimensions as big-endian 32-bit integers) is parsed,
    never assumed, and the data size is checked against it.

    Parameters
    ----------
    path : str or path-like
        An IDX file, plain or gzip-compressed (recognised by its content).
    n_samples : int, default=None
        Read only the first ``n_samples`` entries along the first dimension
        (the rest of the file is not read). None reads them all.

    Returns
    -------
    array : ndarray
        The data, in native byte order, of shape ``(n_samples,) + shape[1:]``.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If the header is not valid IDX, or the data is shorter than the header
        announces, or (when reading every row) longer. A plain file's size is
        checked against its header before the array is allocated, so a damaged
        header that declares exabytes is reported, not a MemoryError; a gzip
        file's data is counted when the declared array cannot be allocated.
    """
    path = Path(path)
    with _open_binary(path) as f, _damaged_gzip(path):
        dtype, shape = _read_header(f, path)
        n_rows = _check_n_samples(n_samples, shape[0], str(path))
        needed = n_rows * prod(shape[1:]) * dtype.itemsize
        if not isinstance(f, gzip.GzipFile):
            # A damaged header can declare exabytes: check before allocating them.
            _check_declared(path, shape, needed, os.fstat(f.fileno()).st_size - f.tell())
        try:
            out = np.empty((n_rows,) + shape[1:], dtype=dtype)
        except (MemoryError, ValueError):
            # gzip: the data's length is known only by decompressing it.
            _check_declared(path, shape, needed, _count_bytes(f, needed))
            raise
        _read_into(f, out, path)
        if n_rows == shape[0] and f.read(1):
            raise ValueError(
                f"{path}: the file holds more data than its header's shape {shape} describes."
            )
    return out.astype(dtype.newbyteorder("="), copy=False)


def load_idx(
    images_path: PathLike,
    labels_path: PathLike,
    *,
    normalize: bool = True,
    n_samples: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load an MNIST-format pair of image and label files.

    Parameters
    ----------
    images_path : str or path-like
        IDX file of uint8 images, shape ``(n, *image_shape)``; plain or gzip.
    labels_path : str or path-like
        IDX file of labels, shape ``(n,)``; plain or gzip.
    normalize : bool, default=True
        If True, pixels are returned as float64 in [0, 1] (divided by 255);
        if False, as the raw uint8 values.
    n_samples : int, default=None
        Load only the first ``n_samples`` images and labels. None loads all.

    Returns
    -------
    X : ndarray of shape (n_samples, n_pixels)
        One flattened image per row: float64 in [0, 1], or uint8 when
        ``normalize=False``.
    y : ndarray of shape (n_samples,), dtype int64
        The labels.

    Raises
    ------
    FileNotFoundError
        If a file is missing.
    ValueError
        If a file is not valid IDX, the images are not uint8 arrays of at
        least 2 dimensions, the labels are not 1-D, or their counts differ.
    """
    images_path, labels_path = Path(images_path), Path(labels_path)
    image_dtype, image_shape = read_idx_header(images_path)
    label_dtype, label_shape = read_idx_header(labels_path)
    if len(image_shape) < 2:
        raise ValueError(
            f"{images_path}: images need at least 2 dimensions (n, pixels...); "
            f"the header gives shape {image_shape}."
        )
    if image_dtype != np.uint8:
        raise ValueError(
            f"{images_path}: images must be uint8 (IDX type 0x08); got {image_dtype.name}."
        )
    if len(label_shape) != 1:
        raise ValueError(f"{labels_path}: labels must be 1-D; the header gives {label_shape}.")
    if label_dtype.kind not in "iu":
        raise ValueError(f"{labels_path}: labels must be integers; got {label_dtype.name}.")
    if image_shape[0] != label_shape[0]:
        raise ValueError(
            f"{images_path} holds {image_shape[0]} images but {labels_path} holds "
            f"{label_shape[0]} labels."
        )
    images = read_idx(images_path, n_samples)
    labels = read_idx(labels_path, n_samples)
    X = images.reshape(images.shape[0], prod(image_shape[1:]))
    if normalize:
        X = X.astype(np.float64) / 255.0
    return X, labels.astype(np.int64)


_MNIST_HOW = (
    "Copy the MNIST test set (t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; e.g. "
    "from the public repository kelas/mnist) into <data home>/mnist-test, then " + _DATA_HOME_HELP
)


def load_mnist_test(
    data_home: PathLike | None = None,
    *,
    normalize: bool = True,
    n_samples: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load the MNIST test set: 10,000 digits of 28 x 28 pixels.

    The files ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz``
    (or the same names without ``.gz``) are looked for in
    ``<data_home>/mnist-test``, then in ``data_home`` itself.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The data folder; None resolves it by :func:`get_data_home`
        (``SKMCAL_DATA``, else ``~/skmcal_data``).
    normalize : bool, default=True
        Pixels as float64 in [0, 1] (True) or raw uint8 (False).
    n_samples : int, default=None
        Load only the first ``n_samples`` digits. None loads all 10,000.

    Returns
    -------
    X : ndarray of shape (n_samples, 784)
        The images, one flattened 28 x 28 image per row.
    y : ndarray of shape (n_samples,), dtype int64
        The digits 0-9.

    Raises
    ------
    FileNotFoundError
        If the files are not found; the message names the folders searched
        and how to get the files.
    """
    dirs = _search_dirs(get_data_home(data_home), "mnist-test")
    images, labels = _require_files(
        "MNIST test set",
        dirs,
        ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"],
        _MNIST_HOW,
        compressed=True,
    )
    return load_idx(images, labels, normalize=normalize, n_samples=n_samples)


_FASHION_HOW = (
    "Install it with `apt-get install dataset-fashion-mnist` (files in "
    f"{FASHION_MNIST_HOME}, found by default), or copy the four IDX files (e.g. from the "
    "public repository zalandoresearch/fashion-mnist) into <data home>/fashion-mnist, then "
    + _DATA_HOME_HELP
)


def load_fashion_mnist(
    data_home: PathLike | None = None,
    *,
    normalize: bool = True,
    n_samples: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load Fashion-MNIST, training then test set: 70,000 images of 28 x 28.

    The files ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
    ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz`` (or the
    same names without ``.gz``) are looked for in ``<data_home>/fashion-mnist``,
    then in ``data_home`` itself, and, when ``data_home`` is None, last in
    ``/usr/share/datasets/fashion-mnist``, where the Debian package
    ``dataset-fashion-mnist`` installs them.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder of the files (or its parent); None resolves it by
        :func:`get_data_home` and also looks in the Debian package's folder.
    normalize : bool, default=True
        Pixels as float64 in [0, 1] (True) or raw uint8 (False).
    n_samples : int, default=None
        Load only the first ``n_samples`` rows of the 60,000 training images
        followed by the 10,000 test images; with ``n_samples <= 60000`` the
        test files are not read. None loads all 70,000.

    Returns
    -------
    X : ndarray of shape (n_samples, 784)
        The images, one flattened 28 x 28 image per row.
    y : ndarray of shape (n_samples,), dtype int64
        The classes 0-9 (T-shirt/top, trouser, pullover, dress, coat, sandal,
        shirt, sneaker, bag, ankle boot).

    Raises
    ------
    FileNotFoundError
        If the files are not found; the message names the folders searched and
        the package that provides them.
    """
    dirs = _search_dirs(get_data_home(data_home), "fashion-mnist")
    if data_home is None:
        dirs.append(Path(FASHION_MNIST_HOME))
    train_x, train_y, test_x, test_y = _require_files(
        "Fashion-MNIST",
        dirs,
        [
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ],
        _FASHION_HOW,
        compressed=True,
    )
    n_train = read_idx_header(train_x)[1][0]
    n_total = n_train + read_idx_header(test_x)[1][0]
    n_samples = _check_n_samples(n_samples, n_total, "Fashion-MNIST (train + test)")
    X, y = load_idx(train_x, train_y, normalize=normalize, n_samples=min(n_samples, n_train))
    if n_samples > n_train:
        X_test, y_test = load_idx(
            test_x, test_y, normalize=normalize, n_samples=n_samples - n_train
        )
        X, y = np.concatenate([X, X_test]), np.concatenate([y, y_test])
    return X, y


# --------------------------------------------------------------------------
# Hyperspectral images
# --------------------------------------------------------------------------

_DATA_KEYS = ("X",)
_LABEL_KEYS = ("labels", "y")


def _read_npy_stream(f: BinaryIO, where: str) -> np.ndarray:
    """One ``.npy`` array from an open stream; never a pickle, clear errors."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(f)
    except ValueError as exc:
        raise ValueError(f"{where} is not an .npy array ({exc}).") from None
    if dtype.hasobject:
        raise ValueError(
            f"{where} holds Python objects (dtype {dtype}), which are never read (loading "
            "them would run pickled code); save numeric arrays instead."
        )
    size = prod(shape) * dtype.itemsize
    raw = bytearray(size)
    filled = 0
    while filled < size:
        n_read = f.readinto(memoryview(raw)[filled:])
        if not n_read:
            raise ValueError(
                f"{where} is truncated: its header announces shape {shape} of {dtype} "
                f"({size} bytes), {filled} bytes follow."
            )
        filled += n_read
    return np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran_order else "C")


def _read_npy(path: Path) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"No such file: {path}")
    with open(path, "rb") as f:
        return _read_npy_stream(f, str(path))


def read_npz(path: PathLike) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, with a clear error for a damaged one.

    Unlike ``numpy.load``, a file that is not a zip archive, a truncated
    archive or array, and an array of Python objects (never unpickled) each
    raise a ``ValueError`` that names the file.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.

    Returns
    -------
    dict of str to ndarray
        The arrays by name (without the ``.npy`` suffix of their members).

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If the file is damaged or holds something other than numeric arrays.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No such file: {path}")
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"{path} is not an .npz file: it is not a zip archive (damaged, truncated, "
            "or of another format)."
        )
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                name = member[: -len(".npy")] if member.endswith(".npy") else member
                with archive.open(member) as f:
                    arrays[name] = _read_npy_stream(f, f"{path}: array {name!r}")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ValueError(f"{path} is a damaged .npz file ({exc}).") from None
    return arrays


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    suffix = path.suffix.lower()
    if suffix == ".mat":
        try:
            content = loadmat(path)
        except NotImplementedError as exc:
            raise ValueError(
                f"{path} is a MATLAB v7.3 (HDF5) file, which scipy.io.loadmat cannot read; "
                "re-save it in MATLAB with save(..., '-v7') or convert it to an .npz file "
                "with arrays X and labels."
            ) from exc
        except (ValueError, TypeError, OSError, EOFError, zlib.error, MatReadError) as exc:
            raise ValueError(f"{path} cannot be read as a MATLAB file ({exc}).") from None
        return {k: v for k, v in content.items() if not k.startswith("__")}
    if suffix == ".npz":
        return read_npz(path)
    if suffix == ".npy":
        return {"": _read_npy(path)}
    raise ValueError(f"{path}: unsupported file type {suffix!r}; accepted: .mat, .npz, .npy.")


def _pick(
    arrays: dict[str, np.ndarray],
    key: str | None,
    preferred: tuple[str, ...],
    exclude: str | None,
    path: Path,
    role: str,
) -> tuple[str, np.ndarray]:
    listing = ", ".join(f"{k!r} {np.shape(v)}" for k, v in arrays.items()) or "none"
    if key is not None:
        if key not in arrays:
            raise KeyError(f"{path} has no variable {key!r} ({role}); it holds: {listing}.")
        return key, arrays[key]
    for name in preferred:
        if name in arrays and name != exclude:
            return name, arrays[name]
    candidates = [
        k
        for k, v in arrays.items()
        if k != exclude and isinstance(v, np.ndarray) and v.dtype.kind in "biuf" and v.size > 1
    ]
    if len(candidates) != 1:
        argument = "data_key" if role == "data" else "labels_key"
        raise ValueError(
            f"Cannot tell which variable of {path} holds the {role}; it holds: "
            f"{listing}. Name it with {argument}=."
        )
    return candidates[0], arrays[candidates[0]]


def _as_labels(values: np.ndarray, what: str) -> np.ndarray:
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            raise ValueError(f"The labels ({what}) are not all integers.")
    elif values.dtype.kind not in "biu":
        raise ValueError(f"The labels ({what}) must be numbers; got dtype {values.dtype}.")
    return values.astype(np.int64)


def _largest_abundance(abundances: np.ndarray, class_axis: int) -> np.ndarray:
    """Each pixel's class of largest abundance; a NaN abundance is refused (argmax
    would take the NaN's class)."""
    missing = np.isnan(abundances).any(axis=class_axis) if abundances.dtype.kind == "f" else None
    if missing is not None and missing.any():
        raise ValueError(
            f"The abundances are NaN for {int(missing.sum())} of the {missing.size} pixels, "
            "whose class (the largest abundance) is then unknown; every pixel needs finite "
            "abundances."
        )
    return abundances.argmax(axis=class_axis).reshape(-1)


def _pixels_and_labels(data: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows = pixels, and one class per pixel, from the shapes of both arrays."""
    data = np.asarray(data)
    labels = np.squeeze(np.asarray(labels))
    shapes = f"data {data.shape}, labels {np.shape(labels)}"
    if data.ndim == 3:
        height, width, n_bands = data.shape
        X = data.reshape(height * width, n_bands)
        n_pixels = height * width
        if labels.shape == (height, width):
            return X, _as_labels(labels, "ground-truth map")
        if labels.ndim == 3 and labels.shape[:2] == (height, width):
            return X, _largest_abundance(labels, 2)
    elif data.ndim == 2:
        if labels.ndim == 1:
            n_pixels = labels.shape[0]
            if data.shape[0] == n_pixels:
                return data, _as_labels(labels, "label vector")
            if data.shape[1] == n_pixels:
                return data.T, _as_labels(labels, "label vector")
            raise ValueError(
                f"{labels.shape[0]} labels but neither axis of the data has that length ({shapes})."
            )
        common = {n for n in data.shape if n in labels.shape} if labels.ndim == 2 else set()
        if len(common) != 1 or labels.shape[0] == labels.shape[1]:
            raise ValueError(
                "With 2-D data the labels must be a vector, or an abundance matrix "
                "(classes x pixels or pixels x classes) sharing exactly one length "
                f"with the data; got {shapes}."
            )
        n_pixels = common.pop()
        X = data if data.shape[0] == n_pixels else data.T
    else:
        raise ValueError(
            f"The data must be a cube (height, width, bands) or a matrix; got {shapes}."
        )
    if labels.ndim == 1 and labels.shape[0] == n_pixels:
        return X, _as_labels(labels, "label vector")
    if labels.ndim == 2 and labels.shape[0] != labels.shape[1] and n_pixels in labels.shape:
        # Abundances: each pixel takes the class of its largest abundance.
        class_axis = 0 if labels.shape[1] == n_pixels else 1
        return X, _largest_abundance(labels, class_axis)
    raise ValueError(
        "The labels must be a vector of one class per pixel, a height x width "
        "ground-truth map, or abundances (classes x pixels, pixels x classes or "
        f"height x width x classes); got {shapes}."
    )


_SAMSON_HOW = (
    "Copy Samson.mat and Samson_end.mat (e.g. from the public repository "
    "mhaut/HSI-datasets) into <data home>/hsi, then " + _DATA_HOME_HELP
)


def load_hsi(
    name_or_path: PathLike,
    labels_path: PathLike | None = None,
    *,
    data_key: str | None = None,
    labels_key: str | None = None,
    background: int | None = None,
    data_home: PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load a hyperspectral image as pixels x bands, with one class per pixel.

    Parameters
    ----------
    name_or_path : str or path-like
        ``"samson"``: the Samson image (95 x 95 pixels, 156 bands, classes
        rock / tree / water from the largest abundance of
        ``Samson_end.mat``), read from ``<data_home>/hsi`` or ``data_home``.
        Otherwise the path of the data file: a MATLAB ``.mat`` file (v7 or
        older), an ``.npz`` file (such as the paper's ``X_labels.npz``, with
        arrays ``X`` and ``labels`` or ``y``) or an ``.npy`` file.
    labels_path : str or path-like, default=None
        The file of the labels (``.mat``, ``.npz`` or ``.npy``); None reads
        them from the data file. Not accepted with a data set name.
    data_key, labels_key : str, default=None
        The variables holding the data and the labels. None takes ``X``
        (data) or ``labels`` / ``y`` (labels) when present, else the one
        numeric variable with more than one element (for labels read from
        the data file: other than the data's); an error lists the variables
        when that is ambiguous.
    background : int, default=None
        A label to drop with its pixels, e.g. 0 for the unlabeled pixels of a
        ground-truth map (Salinas, Indian Pines). None keeps every pixel.
    data_home : str or path-like, default=None
        Where named data sets are looked for; None resolves it by
        :func:`get_data_home`.

    Returns
    -------
    X : ndarray of shape (n_pixels, n_bands), dtype float64
        One pixel's spectrum per row.
    y : ndarray of shape (n_pixels,), dtype int64
        The class of each pixel.

    Raises
    ------
    FileNotFoundError
        If a file is missing; the message names where it was looked for.
    KeyError
        If a variable named by ``data_key`` or ``labels_key`` is not in the
        file; the message lists those it holds.
    ValueError
        If the shapes of data and labels do not fit together, a variable
        cannot be chosen, the labels are not integers, or abundances are NaN
        (the pixel's class would be unknown).

    Warns
    -----
    UserWarning
        If the data hold NaN (after the background is dropped). They are
        returned as they are, to be dropped or imputed: a graph cannot be
        built on them, and :class:`~skmcal.SpectralGraphClassifier` refuses
        them.

    Notes
    -----
    The shapes decide the layout. Data: a cube ``(height, width, bands)``,
    flattened row-major to ``(height * width, bands)``, or a matrix of pixels
    x bands or bands x pixels, whichever axis matches the labels. Labels: a
    vector of classes; a ``(height, width)`` ground-truth map (with cube
    data), flattened the same way; or abundances ``(classes, pixels)``,
    ``(pixels, classes)`` or ``(height, width, classes)``, each pixel taking
    the class of its largest abundance. For example, with the files of the
    public benchmarks, Salinas A (a cube and a ground-truth map, one variable
    each) is ``load_hsi("SalinasA_corrected.mat", "SalinasA_gt.mat")`` and
    Urban (bands x pixels and abundances, like Samson) is
    ``load_hsi("Urban_R162.mat", "end6_groundTruth.mat", data_key="Y",
    labels_key="A")``.
    """
    if isinstance(name_or_path, str) and name_or_path.lower() in _HSI_DATASETS:
        if labels_path is not None:
            raise ValueError(
                f"labels_path is only for a data file given by path; {name_or_path!r} "
                f"names a data set with its own labels. Got labels_path={labels_path!r}."
            )
        entry = _HSI_DATASETS[name_or_path.lower()]
        dirs = _search_dirs(get_data_home(data_home), "hsi")
        data_file, labels_file = _require_files(
            f"Hyperspectral image {name_or_path!r}",
            dirs,
            [entry["data"], entry["labels"]],
            _SAMSON_HOW,
        )
        data_key = data_key or entry["data_key"]
        labels_key = labels_key or entry["labels_key"]
    else:
        data_file = Path(name_or_path).expanduser()
        labels_file = data_file if labels_path is None else Path(labels_path).expanduser()
        for path in dict.fromkeys([data_file, labels_file]):
            if not path.is_file():
                known = ", ".join(repr(name) for name in _HSI_DATASETS)
                raise FileNotFoundError(
                    f"No such file: {path}. load_hsi takes a data set name ({known}, "
                    "looked for in <data_home>/hsi) or the path of a .mat, .npz or .npy file."
                )

    if labels_file == data_file and data_file.suffix.lower() == ".npy":
        raise ValueError(
            f"{data_file} is an .npy file, which holds one array; give the labels in labels_path=."
        )
    arrays = _read_arrays(data_file)
    data_name, data = _pick(arrays, data_key, _DATA_KEYS, None, data_file, "data")
    if labels_file != data_file:
        arrays, data_name = _read_arrays(labels_file), None
    _, labels = _pick(arrays, labels_key, _LABEL_KEYS, data_name, labels_file, "labels")

    X, y = _pixels_and_labels(data, labels)
    if background is not None:
        keep = y != background
        X, y = X[keep], y[keep]
    X = np.ascontiguousarray(X, dtype=np.float64)
    missing = np.isnan(X)
    if missing.any():
        warn_user(
            f"The data of {data_file.name} hold NaN in {int(missing.any(axis=1).sum())} of the "
            f"{X.shape[0]} pixels ({int(missing.any(axis=0).sum())} of the {X.shape[1]} bands); "
            "SpectralGraphClassifier refuses NaN: drop those pixels or bands, or impute them, "
            "before fitting."
        )
    return X, y.astype(np.int64)


# --------------------------------------------------------------------------
# Files of (X, y)
# --------------------------------------------------------------------------


def load_npz(path: PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Arrays ``X`` and ``y`` of an ``.npz`` file, read by :func:`read_npz`.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` file holding (at least) the arrays ``X`` and ``y``.

    Returns
    -------
    X : ndarray
        The array ``X``.
    y : ndarray
        The array ``y``.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If the file is damaged, holds Python objects, or lacks ``X`` or ``y``
        (the message lists the arrays it holds).
    """
    path = Path(path).expanduser()
    arrays = read_npz(path)
    missing = [k for k in ("X", "y") if k not in arrays]
    if missing:
        raise ValueError(f"{path} has no array(s) {missing}; it holds {sorted(arrays)}.")
    return arrays["X"], arrays["y"]


# --------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """A data set known by name: how to load it, what it is, what it needs.

    Attributes
    ----------
    name : str
        The key in :data:`DATASETS`.
    description : str
        One line: what the points and the classes are.
    files : tuple of str
        The files it reads, relative to the data home (see
        :func:`get_data_home`); empty for a synthetic set.
    source : str
        Where the files come from and where to put them ("" for a synthetic
        set).
    loader : callable
        ``loader(data_home, n_samples) -> (X, y)``; see :func:`load_dataset`.
    defaults : dict
        The paper's settings for it in :func:`skmcal.experiment.run_experiment`:
        the graph's ``kernel`` and ``n_neighbors``, and ``n_initial`` labels
        per class at the start.
    """

    name: str
    description: str
    files: tuple[str, ...]
    source: str
    loader: Callable[[PathLike | None, int | None], tuple[np.ndarray, np.ndarray]]
    defaults: Mapping[str, Any] = field(default_factory=dict)


def _binary_clusters(data_home, n_samples):
    return make_binary_clusters()


def _mnist_test(data_home, n_samples):
    return load_mnist_test(data_home, n_samples=n_samples)


def _fashion_mnist(data_home, n_samples):
    return load_fashion_mnist(data_home, n_samples=n_samples)


def _samson(data_home, n_samples):
    return load_hsi("samson", data_home=data_home)


_IMAGES = {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 2}

#: The data sets known by name, for :func:`load_dataset`, the command line
#: and :func:`skmcal.experiment.run_experiment`.
DATASETS: dict[str, Dataset] = {
    entry.name: entry
    for entry in (
        Dataset(
            "binary-clusters",
            "the paper's synthetic set: 760 points in 2-D, 2 classes (420 and 340)",
            (),
            "",
            _binary_clusters,
            {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 1},
        ),
        Dataset(
            "mnist-test",
            "the MNIST test set: 10,000 handwritten digits of 28 x 28 pixels, 10 classes",
            ("mnist-test/t10k-images-idx3-ubyte.gz", "mnist-test/t10k-labels-idx1-ubyte.gz"),
            _MNIST_HOW,
            _mnist_test,
            _IMAGES,
        ),
        Dataset(
            "fashion-mnist",
            "Fashion-MNIST, training then test set: 70,000 clothing images of 28 x 28 "
            "pixels, 10 classes",
            tuple(
                f"fashion-mnist/{part}-{kind}-ubyte.gz"
                for part in ("train", "t10k")
                for kind in ("images-idx3", "labels-idx1")
            ),
            _FASHION_HOW,
            _fashion_mnist,
            _IMAGES,
        ),
        Dataset(
            "samson",
            "the Samson hyperspectral image: 9,025 pixels (95 x 95) of 156 bands, 3 classes "
            "(rock, tree, water)",
            ("hsi/Samson.mat", "hsi/Samson_end.mat"),
            _SAMSON_HOW,
            _samson,
            {"kernel": "cosine", "n_neighbors": 15, "n_initial": 2},
        ),
    )
}


def load_dataset(
    name: str,
    *,
    n_samples: int | None = None,
    data_home: PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load a data set of :data:`DATASETS` by name.

    Parameters
    ----------
    name : {"binary-clusters", "mnist-test", "fashion-mnist", "samson"}
        The data set (case-insensitive).
    n_samples : int, default=None
        Keep only the first ``n_samples`` points. None keeps all.
    data_home : str or path-like, default=None
        The data folder; None resolves it by :func:`get_data_home`
        (``SKMCAL_DATA``, else ``~/skmcal_data``).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        If ``name`` is not a key of :data:`DATASETS`.
    FileNotFoundError
        If its files are not found; the message names the folders searched
        and how to get the files.

    Examples
    --------
    >>> from skmcal.datasets import DATASETS, load_dataset
    >>> list(DATASETS)
    ['binary-clusters', 'mnist-test', 'fashion-mnist', 'samson']
    >>> X, y = load_dataset("binary-clusters", n_samples=100)
    >>> X.shape
    (100, 2)
    """
    key = name.lower() if isinstance(name, str) else None
    if key not in DATASETS:
        raise ValueError(
            f"Unknown data set {name!r}; accepted: {', '.join(DATASETS)} (see "
            "skmcal.datasets.DATASETS)."
        )
    _check_n_samples_value(n_samples)
    X, y = DATASETS[key].loader(data_home, n_samples)
    n = _check_n_samples(n_samples, X.shape[0], f"the data set {key!r}")
    return X[:n], y[:n]
