"""Files a test writes: a pipeline from an indented literal."""

import textwrap
from pathlib import Path


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    """Write ``text`` (dedented, so it may be indented like the test) to ``tmp_path / name``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path
