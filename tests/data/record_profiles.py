"""Re-record the golden onnxruntime profiles used by tests/test_profiling.py.

Run from the repository root: ``python tests/data/record_profiles.py``. The tests assert exact values read
from these files, so re-recording means updating the literals in the tests too (they say which).

The models are built by ``tests/support/models.py`` (``tiny_cnn()``, ``if_model()``), which tests that profile
the same models live import too.

- ``profile_tiny.json``: Conv-Relu-Conv-GlobalAveragePool-Flatten-Gemm, 2 intra-op threads, 3 runs.
- ``profile_if.json``: an If whose then-branch has two nodes (Relu, Mul) and else-branch one (Sigmoid);
  runs 1 and 3 take the then-branch, run 2 the else-branch; 2 intra-op threads, 3 runs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: the models live in support/models.py, shared with the tests

from support.models import if_model, tiny_cnn  # noqa: E402


def record(model: onnx.ModelProto, feeds_per_run: list[dict], out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tmp) / "profile")
        so.intra_op_num_threads = 2
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        for feeds in feeds_per_run:
            session.run(None, feeds)
        shutil.copy(session.end_profiling(), out)


def main() -> int:
    rng = np.random.default_rng(2)
    x = rng.random((1, 16, 32, 32), dtype=np.float32)
    record(tiny_cnn(), [{"x": x}] * 3, HERE / "profile_tiny.json")
    pos = rng.random((1, 3, 16, 16), dtype=np.float32)
    record(if_model(), [{"x": pos}, {"x": -pos}, {"x": pos}], HERE / "profile_if.json")
    print(f"recorded onnxruntime {ort.__version__} profiles into {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
