"""The command line with damaged inputs: a message and exit status 2, never a traceback."""

from __future__ import annotations

import gzip
import zipfile

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import skmcal.cli
from skmcal import datasets
from skmcal.cli import main

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
