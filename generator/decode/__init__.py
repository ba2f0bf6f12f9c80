"""Decoders in the common generative convention: their KV-cache layout (convention) and perfsite's greedy decode
loop (loop), used by the runner's generative trials and the one-shot `perfsite generate`."""
