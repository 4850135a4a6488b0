"""The defaults against the peers on real data sets outside the benchmark (UCI, via R's mlbench).

``bench_accuracy.py``'s loop, configurations and report on seven UCI data sets
as R's ``mlbench`` package ships them (Leisch and Dimitriadou): Landsat
``Satellite`` (6,435 x 36, 6 classes), ``LetterRecognition`` (20,000 x 16
integers, 26 classes, 1,332 rows equal to an earlier one), ``Shuttle``
(58,000 x 9, 7 classes, 78% in one), ``DNA`` splice junctions (3,186 x 180
binary, 3 classes) and ``Vehicle`` silhouettes (846 x 18, 4 classes); and
since 2026-11-29 two smaller ones: ``PimaIndiansDiabetes`` (768 x 8
clinical measurements in their own units, 2 classes, 65% negative) and
Deterding's ``Vowel`` (990 x 9 log-area ratios, 11 vowels of 15 speakers;
the speaker number ``V1`` left out), 65% and 51% labeled at the end.
(Wisconsin ``BreastCancer`` holds 449 distinct rows of 683: a loop to 500
labels runs out of new points.) The features are used as they are (no
scaling), as a new user would; each set's graph is the classifier's default
one (Gaussian kernel, 10 neighbours) for the peers too.

The files are the package's ``data/*.rda``: Debian's ``r-cran-mlbench``
installs them under ``/usr/lib/R/site-library/mlbench/data`` (the default
``--data-home``; ``apt-get download r-cran-mlbench`` and ``dpkg-deb -x`` give
them without R). They are read with the ``rdata`` package (the ``bench``
extra). A set whose file or reader is missing is skipped. Results under
``results/mlbench`` (or ``--out``)::

    python benchmarks/bench_mlbench.py --trials 3 \\
        --only default default:unc ls:unc gl-laplace:unc gl-laplace:mc

Every other option is ``bench_accuracy.py``'s (``--datasets`` takes the names
below).

``--small`` runs four sets of 208 to 562 rows instead, to 100 labels
(``--final``), into ``results/mlbench_small``: ``Sonar`` (208 x 60, 2
classes), ``Glass`` (214 x 9 oxide shares, 6 classes of 9 to 76 rows),
``Ionosphere`` (351 x 34, 2) and ``Soybean`` (562 x 35 ordinal codes, 15
classes of 20 to 92 rows; the 121 rows with a missing value left out)::

    python benchmarks/bench_mlbench.py --small --trials 5 \\
        --only default 'default:*' ls:unc gl-laplace:unc gl-laplace:mc laplace:unc
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_accuracy  # noqa: E402

#: Where Debian's r-cran-mlbench puts the data files.
MLBENCH_DATA = Path("/usr/lib/R/site-library/mlbench/data")


def _rda(name, target, drop=()):
    """A loader of ``<name>.rda``: features (every column but ``target`` and ``drop``, the
    identifiers) and labels; rows with a missing value are left out."""

    def load(home):
        path = Path(home or MLBENCH_DATA) / f"{name}.rda"
        if not path.is_file():
            raise FileNotFoundError(f"{path} (Debian's r-cran-mlbench)")
        try:
            import rdata
        except ImportError as exc:
            raise FileNotFoundError(f"the rdata package, to read {path}: {exc}") from exc
        with warnings.catch_warnings():  # "Unknown encoding. Assumed ASCII.": they are
            warnings.simplefilter("ignore")
            frame = rdata.read_rda(str(path))[name]
        frame = frame.drop(columns=list(drop)).dropna()
        y = np.asarray(frame[target].astype(str))
        X = frame.drop(columns=[target]).apply(lambda c: c.astype(float)).to_numpy(float)
        return X, y

    return load


#: The data sets, smallest first, with the column holding the class.
MLBENCH = {
    "pima": _rda("PimaIndiansDiabetes", "diabetes"),
    "vehicle": _rda("Vehicle", "Class"),
    "vowel": _rda("Vowel", "Class", drop=("V1",)),
    "dna": _rda("DNA", "Class"),
    "satellite": _rda("Satellite", "classes"),
    "letters": _rda("LetterRecognition", "lettr"),
    "shuttle": _rda("Shuttle", "Class"),
}


#: Sets too small for a run to 500 labels (``--small``: runs to :data:`SMALL_FINAL`).
SMALL = {
    "sonar": _rda("Sonar", "Class"),
    "glass": _rda("Glass", "Type"),
    "ionosphere": _rda("Ionosphere", "Class"),
    "soybean": _rda("Soybean", "Class"),
}
SMALL_FINAL = 100


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--small" not in argv:
        bench_accuracy.main_on(MLBENCH, "mlbench", argv)
        return
    argv.remove("--small")
    if not any(arg == "--final" or arg.startswith("--final=") for arg in argv):
        argv += ["--final", str(SMALL_FINAL)]
    bench_accuracy.main_on(SMALL, "mlbench_small", argv)


if __name__ == "__main__":
    main()
