"""`perfsite generate MODEL --layers`: where a decoder's time goes, prefill and decode apart, as the terminal
shows it (the profiling is generator.decode.phases')."""

from __future__ import annotations

from collections.abc import Sequence

from generator.decode.phases import PhaseLayers
from generator.generate.summary import figure


def layers_text(phases: Sequence[PhaseLayers | None], batch: int) -> str:
    """The tables `perfsite generate --layers` prints: op types, then the slowest nodes, of each phase."""
    lines = []
    for p in phases:
        if p is None:
            continue
        what = (f"prefill of a {p.context_tokens}-token prompt" if p.phase == "prefill"
                else f"one decode step at a context of {p.context_tokens} tokens")
        # The nodes' medians summed, as the pages give a phase's kernel time: the median of each pass's sum
        # followed the disturbed passes (3.59 ms against its nodes' 0.611 ms beside a busy neighbour).
        total = p.nodes_us
        lines += [f"Where the time goes, {what} (batch {batch}; each node's median over {p.passes} profiled "
                  f"passes: {figure(total / 1e3)} ms of kernels)",
                  f"  {'ms':>9} {'share':>7}  op type"]
        lines += [f"  {figure(us / 1e3):>9} {_share(us, total):>7}  {op}" for op, us in p.op_types]
        lines.append(f"  {'ms':>9} {'share':>7}  {'op type':<22} slowest nodes (onnxruntime's names)")
        lines += [f"  {figure(n.dur_p50_us / 1e3):>9} {_share(n.dur_p50_us, total):>7}  {n.op_type:<22} "
                  f"{n.node_name}" for n in p.nodes]
    if lines:
        lines.append("  Profiled passes run slower than timed ones (the profiler's own cost): read the shares; "
                     "the timed figures are above.")
    return "\n".join(lines) + ("\n" if lines else "")


def _share(us: float, total: float) -> str:
    return f"{100 * us / total:.0f} %" if total > 0 else "—"
