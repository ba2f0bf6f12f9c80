"""The count mode: instructions per steady-state inference under valgrind (callgrind), per model version.

Latency on a shared runner moves with its neighbours; the number of instructions an inference executes does
not. As CodSpeed does for CI benchmarks, ``perfsite count`` runs every version in one valgrind process and
counts only perfsite's marked inference calls (generator.counting.marker), after warm-up:

- ``count``: ``count_instructions`` and its records (``CountResult``, ``VersionCount``);
- ``worker``: what runs under valgrind (``python -m generator.counting.worker JOB.json``);
- ``callgrind``: valgrind's command line and the parser of its dump files;
- ``marker``: the C marker, compiled at run time with the system's cc;
- ``verdict``: candidate against baseline, by a ratio threshold.

docs/count-mode.md: what is counted, the cost, and when counts mislead (memory-bound layers, threads, ISAs).
"""

from generator.counting.count import CountResult, VersionCount, count_instructions
from generator.counting.verdict import CountVerdict, compare_counts

__all__ = ["CountResult", "CountVerdict", "VersionCount", "compare_counts", "count_instructions"]
