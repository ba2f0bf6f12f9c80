"""The configuration axes every trial has, in the order labels, sorts and the `trials` table use them: one
tuple for the spec (its `sweep:` keys), the plan (labels and keys) and the analysis (columns of `trials`). Any
other sweep axis is a placeholder of an input shape and lives in the `dims` JSON column.
"""

AXES: tuple[str, ...] = (
    "batch", "threads", "concurrency", "optimization_level", "provider", "spinning", "inter_op_threads",
)
