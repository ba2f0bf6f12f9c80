"""perfsite: inference-performance reports for ONNX models.

Stages (each runs alone and meets the next at files):
spec (YAML) -> plan -> runner -> results (Parquet) -> analysis -> generator (Markdown + Vega-Lite) -> mkdocs site.
"""

__version__ = "0.1.0"
