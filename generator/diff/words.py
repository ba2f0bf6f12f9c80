"""The diff's verdict words, shared by the whole diff (generator.diff.verdict) and its generative phases
(generator.diff.phases)."""

SLOWER, FASTER, NO_CHANGE, NOT_COMPARABLE = "slower", "faster", "no significant change", "not comparable"
FAILED = "failed"  # overall: a configuration the baseline measured failed in the candidate
