"""skmcal.cli: runs and the demo, the kNN option, --version, and damaged inputs.

Damaged inputs get a message and exit status 2, never a traceback.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import skmcal
import skmcal.cli
import skmcal.experiment
from skmcal.cli import main

from _oracle import assert_png, data_lines

RUN = ["--iterations", "1", "--trials", "1", "--batch", "2", "--strategies", "rand",
       "--no-progress", "--no-plots"]


@pytest.fixture
def good(tmp_path):
    X, y = make_blobs(40, centers=2, random_state=0)
    path = tmp_path / "good.npz"
    np.savez(path, X=X, y=y)
    return path, X, y


def _fails_cleanly(capsys, argv, *patterns):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    for pattern in patterns:
        assert pattern in err, err
    return err


def _damage(tmp_path, good, name, how):
    path = tmp_path / name
    content = good[0].read_bytes()
    if how == "truncated":
        path.write_bytes(content[: len(content) // 2])
    elif how == "garbage":
        path.write_bytes(b"not an npz file at all")
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "flipped":  # a changed byte inside an array: its CRC fails
        data = bytearray(content)
        data[len(data) // 3] ^= 0xFF
        path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty", "flipped"])
def test_damaged_npz(tmp_path, capsys, good, how):
    path = _damage(tmp_path, good, f"{how}.npz", how)
    err = _fails_cleanly(capsys, ["run", "--dataset", str(path), "--out", str(tmp_path / "o"),
                                  *RUN], str(path))
    assert "allow_pickle" not in err


def test_npz_of_python_objects_is_never_unpickled(tmp_path, capsys, good):
    path = tmp_path / "objects.npz"
    np.savez(path, X=np.array([1.0, "a"], dtype=object), y=good[2])
    _fails_cleanly(capsys, ["run", "--dataset", str(path), "--out", str(tmp_path / "o"), *RUN],
                   "'X' holds Python objects")


def test_npz_without_y_exits_2(tmp_path, capsys, good):
    path = tmp_path / "no_y.npz"
    np.savez(path, X=good[1])
    _fails_cleanly(capsys, ["run", "--dataset", str(path), "--out", str(tmp_path / "o"), *RUN],
                   "no array(s) ['y']", "['X']")


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"X": np.arange(40.0)}, "X must be 2-D"),
        ({"X": np.full((40, 2), "a")}, "X must hold numbers"),
        ({"X": np.where(np.eye(40, 2) > 0, np.nan, 1.0)}, "NaN or infinite"),
        ({"y": np.zeros((40, 2))}, "y must be 1-D"),
        ({"y": np.zeros(7)}, "y has 7 labels"),
    ],
)
def test_npz_with_bad_arrays(tmp_path, capsys, good, arrays, message):
    path = tmp_path / "bad.npz"
    np.savez(path, **{"X": good[1], "y": good[2], **arrays})
    _fails_cleanly(capsys, ["run", "--dataset", str(path), "--out", str(tmp_path / "o"), *RUN],
                   message)


@pytest.mark.parametrize("command", ["run", "demo"])
def test_out_that_is_a_file_or_lies_under_one(tmp_path, capsys, good, command):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    data = ["--dataset", str(good[0])] if command == "run" else []
    run = RUN if command == "run" else RUN[:4] + ["--no-progress"]
    for out in (blocker, blocker / "sub" / "dir"):
        _fails_cleanly(capsys, [command, *data, "--out", str(out), *run], f"{blocker} is a file")


def test_garbled_number_in_results_being_resumed(tmp_path, capsys, good):
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(good[0]), "--out", str(out), *RUN]
    assert main(argv) == 0
    capsys.readouterr()
    results = out / "results.csv"
    lines = results.read_text().splitlines()
    fields = lines[2].split(",")
    fields[4] = "0.6x"
    lines[2] = ",".join(fields)
    results.write_text("\n".join(lines) + "\n")
    _fails_cleanly(capsys, argv, f"{results}, line 3", "'0.6x'")
    results.write_bytes(b"\xff\xfe\x00 binary")
    _fails_cleanly(capsys, argv, f"{results} is not a text file")
    (out / "config.json").write_text("[1, 2]")
    _fails_cleanly(capsys, argv, "holds a JSON list")


def test_damaged_gzip_of_a_named_data_set(tmp_path, capsys):
    folder = tmp_path / "mnist-test"
    folder.mkdir()
    images = np.zeros((20, 28, 28), dtype=np.uint8)
    header = bytes([0, 0, 8, 3]) + np.array([20, 28, 28], dtype=">u4").tobytes()
    whole = gzip.compress(header + images.tobytes())
    (folder / "t10k-images-idx3-ubyte.gz").write_bytes(whole[: len(whole) // 2])
    labels = bytes([0, 0, 8, 1]) + np.array([20], dtype=">u4").tobytes() + bytes(range(20))
    (folder / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels))
    _fails_cleanly(capsys, ["run", "--dataset", "mnist-test", "--data-home", str(tmp_path),
                            "--out", str(tmp_path / "o"), *RUN], "damaged gzip file")


def test_ctrl_c_says_how_to_resume(tmp_path, capsys, good, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(skmcal.cli, "run_experiment", interrupted)
    assert main(["run", "--dataset", str(good[0]), "--out", str(tmp_path / "o"), *RUN]) == 130
    err = capsys.readouterr().err
    assert "interrupted; rerun the same command to resume" in err and "Traceback" not in err


# --------------------------------------------------------- runs and the demo
def test_cli_run_and_demo(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bc"
    argv = ["run", "--dataset", "binary-clusters", "--strategies", "mc:gr", "unc:logistic",
            "--batch", "5", "--iterations", "2", "--trials", "2", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "final accuracy" in printed and "\u00b1" in printed
    assert "mc:gr" in printed and "unc:logistic" in printed
    assert f"plot: {out / 'accuracy.png'}" in printed
    assert_png(out / "accuracy.png")
    assert_png(out / "choices.png")
    assert len(data_lines(out / "results.csv")) == 2 * 2 * 3

    assert main([*argv[:-3], "--batch", "3", "--out", str(out), "--no-progress"]) == 2
    assert "other settings" in capsys.readouterr().err

    demo_out = tmp_path / "demo"
    argv = ["demo", "--iterations", "1", "--trials", "1", "--out", str(demo_out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "mc:probit" in printed and "plot:" in printed
    assert_png(demo_out / "accuracy.png")


# ----------------------------------------------------- the kNN search option
BLOBS = make_blobs(150, centers=3, cluster_std=1.0, random_state=0)


def test_cli_neighbors_option(fake_pynndescent, tmp_path, capsys):
    data = tmp_path / "blobs.npz"
    np.savez(data, X=BLOBS[0], y=BLOBS[1])
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(data), "--strategies", "mc", "--batch", "2",
            "--iterations", "1", "--trials", "1", "--out", str(out), "--no-progress",
            "--no-plots"]  # fmt: skip
    assert main([*argv, "--neighbors", "pynndescent"]) == 0
    assert fake_pynndescent == [{"n_neighbors": 10, "metric": "euclidean", "random_state": 0}]
    assert json.loads((out / "config.json").read_text())["neighbors"] == "pynndescent"
    capsys.readouterr()
    assert main(argv) == 2  # --neighbors exact, the default
    assert "neighbors: 'pynndescent' there, None now" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--neighbors", "annoy"])
    assert "invalid choice: 'annoy'" in capsys.readouterr().err


# ------------------------------------------- workers: --n-jobs, --backend, ...
def test_cli_workers_write_the_serial_files(tmp_path, capsys):
    data = tmp_path / "blobs.npz"
    np.savez(data, X=BLOBS[0], y=BLOBS[1])
    argv = ["run", "--dataset", str(data), "--strategies", "mc", "rand", "--batch", "2",
            "--iterations", "2", "--trials", "2", "--no-progress", "--no-plots"]  # fmt: skip
    serial, threads = tmp_path / "serial", tmp_path / "threads"
    assert main([*argv, "--out", str(serial)]) == 0
    memory = tmp_path / "graphs"
    options = ["--n-jobs", "2", "--backend", "threading", "--memory", str(memory)]
    assert main([*argv, "--out", str(threads), *options]) == 0
    assert "final accuracy" in capsys.readouterr().out
    assert (threads / "choices.csv").read_bytes() == (serial / "choices.csv").read_bytes()
    results = [
        [line.rsplit(",", 1)[0] for line in (out / "results.csv").read_text().splitlines()]
        for out in (serial, threads)
    ]
    assert results[0] == results[1] and len(results[0]) == 1 + 2 * 2 * 3  # time apart
    assert len(list(memory.glob("skmcal/graphs/*.pkl"))) == 1


def test_cli_worker_options_fail_cleanly(tmp_path, capsys, good, monkeypatch):
    argv = ["run", "--dataset", str(good[0]), "--out", str(tmp_path / "o"), *RUN]
    with pytest.raises(SystemExit):
        main([*argv, "--backend", "ray"])
    assert "invalid choice: 'ray'" in capsys.readouterr().err
    _fails_cleanly(capsys, [*argv, "--n-jobs", "0"], "n_jobs must be None or a nonzero int")
    _fails_cleanly(capsys, [*argv, "--backend", "loky", "--scheduler", "tcp://127.0.0.1:8786"],
                   "needs backend='dask'")
    if pytest.importorskip("distributed"):
        monkeypatch.setattr(skmcal.experiment, "SCHEDULER_TIMEOUT", 1.0)
        _fails_cleanly(capsys, [*argv, "--scheduler", "tcp://127.0.0.1:1"],
                       "Cannot reach the dask scheduler at 'tcp://127.0.0.1:1' within 1 s")
    monkeypatch.setitem(sys.modules, "distributed", None)  # dask's extra not installed
    _fails_cleanly(capsys, [*argv, "--backend", "dask"], "pip install skmcal[dask]")


@pytest.mark.parametrize("batch", ["0", "-2", "two"])
def test_a_bad_batch_names_the_option(capsys, batch):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--dataset", "binary-clusters", "--batch", batch])
    assert stop.value.code == 2
    assert f"argument --batch: expected an int >= 1; got '{batch}'" in capsys.readouterr().err


# ------------------------------------------------- --version and the package
def test_version_option_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"skmcal {skmcal.__version__}"


def test_python_dash_m_and_the_console_script_agree():
    expected = f"skmcal {skmcal.__version__}"
    module = subprocess.run(
        [sys.executable, "-m", "skmcal", "--version"], capture_output=True, text=True, check=True
    )
    assert module.stdout.strip() == expected
    script = Path(sys.executable).parent / "skmcal"
    if not script.exists():
        pytest.skip("skmcal is not installed as a package here (no console script)")
    command = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert command.stdout.strip() == expected


def test_installed_metadata():
    try:
        meta = metadata.metadata("skmcal")
    except metadata.PackageNotFoundError:
        pytest.skip("skmcal is not installed as a package here")
    assert meta["Version"] == skmcal.__version__
    assert meta["License-Expression"] == "BSD-3-Clause"
    scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")}
    assert scripts["skmcal"] == "skmcal.cli:main"


def test_cli_model_option(tmp_path, capsys):
    data = tmp_path / "blobs.npz"
    np.savez(data, X=BLOBS[0], y=BLOBS[1])
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(data), "--batch", "2", "--iterations", "1",
            "--trials", "1", "--out", str(out), "--no-progress", "--no-plots",
            "--strategies", "mc", "unc"]  # fmt: skip
    assert main([*argv, "--model", "sum"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model"] == "sum" and config["strategies"] == ["mc:auto", "unc:auto"]
    assert "mc:auto" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*argv, "--model", "paper"])
    assert "invalid choice: 'paper'" in capsys.readouterr().err
