"""Helpers shared by more than one test module: plain functions and constants, grouped by what they help with.
Fixtures stay in the conftest.py files (pytest finds them there); a helper used by one test module stays in it;
no test module imports another.

- `cli`: the repository ROOT, the real `perfsite` in a child process, spec files, snapshot checks, JSON keys;
- `models`: the tiny ONNX models built by code (the golden profiles' models, conv stacks, MatMul, payloads);
- `results`: the synthesized site results (a small CNN, FP32 vs INT8), optionally with hostile text;
- `profile`: those results with what a profile page needs (executed nodes, layers, probed limits);
- `timeline`: `timeline` tables beside the profile results, and a real run of the example CNN;
- `compare`: the real recorded compare results (data/compare_recording.json.gz) and a hand-made Comparison;
- `machines`: the recorded results copied onto two more machines;
- `diff`: synthetic `perfsite diff` sides, and git in a test repository;
- `site`: built sites file by file (a rebuild equals a full build);
- `browser`: driving built pages in headless Chromium (open, charts drawn, marks, columns, tooltips, payloads).

tests/ is on `sys.path` when pytest runs (rootdir-relative imports), so test modules import `support.cli` etc.
"""
