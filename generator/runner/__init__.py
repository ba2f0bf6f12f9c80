"""The runner: measures model versions in child processes and writes the results tables.

- ``environment``: the machine and software description and its fingerprint (``environments`` table).
- ``session``: onnxruntime session options and session creation from one configuration.
- ``measure``: the timed loop (concurrency N on one shared session) and latency statistics.
- ``profiling``: onnxruntime profile JSON parsing and per-node statistics (``nodes`` table).
- ``worker``: the child-process entry point (``python -m generator.runner.worker JOB.json OUT.json``).
- ``orchestrate``, ``children``, ``aggregate``: the sweep in the parent process.
"""
