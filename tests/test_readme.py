"""Every Python example in README.md runs as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index):
    # Blocks build on each other, as a reader running them in order would.
    namespace: dict = {}
    for block in BLOCKS[: index + 1]:
        exec(compile(block, f"README.md[python block {index}]", "exec"), namespace)
