"""The ``skmcal`` command: --version, the console script and the packaging metadata."""

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import skmcal
from skmcal.cli import main


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
