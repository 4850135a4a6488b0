"""Every Python example in README.md runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_examples_run_in_order():
    # Blocks build on each other, as a reader running them in order would.
    assert len(BLOCKS) >= 3
    namespace: dict = {"__name__": "readme"}
    for index, block in enumerate(BLOCKS):
        exec(compile(block, f"README.md[python block {index}]", "exec"), namespace)
    assert namespace["clf"].posterior_cov().shape == (50, 50)
    assert namespace["learner"].estimator.labeled_nodes_.size == 4 + 20 * 5
