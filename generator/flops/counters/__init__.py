"""FLOP counters by operator family; importing this package registers all of them."""

from generator.flops.counters import (  # noqa: F401  (each module registers its counters)
    attention,
    conv,
    elementwise,
    matmul,
    movement,
    norm,
    pool,
    quantized,
    reduce,
)
