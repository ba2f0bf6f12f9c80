"""``python -m generator.models OUT_DIR``: write the example models (as `perfsite example-models`)."""

from __future__ import annotations

import sys
from pathlib import Path

from generator.models import build_example_models


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m generator.models OUT_DIR", file=sys.stderr)
        return 2
    for path in build_example_models(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
