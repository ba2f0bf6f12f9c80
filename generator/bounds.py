"""The largest counts perfsite accepts, in specs and on the command line alike: far above any sensible use,
so that a typo (a few zeros too many, 1e23) is refused in one paragraph instead of hanging a dry run or filling
the memory. A module of constants only: the command line imports it without loading pydantic.
"""

MAX_SIZE = 2**31 - 1  # a batch, an input dimension, a placeholder's value: what onnxruntime's int32 shapes hold
MAX_THREADS = 4096
MAX_WARMUP = 100_000
MAX_ITERATIONS = 10_000_000
MAX_REPEATS = 1_000
MAX_SAMPLES = 100_000
MAX_SEED = 2**32 - 1  # numpy's legacy seeding takes 32 bits
