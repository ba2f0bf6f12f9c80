"""The results schema: every table, every column, its type, unit and meaning. The only place they are defined.

Bump ``SCHEMA_VERSION`` when a column changes meaning or disappears; adding a nullable column at the end is a
minor change that older readers tolerate, but it still bumps the version so that files say what wrote them.
Readers refuse files written by a newer version (see ``store.check_version``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 9


@dataclass(frozen=True)
class SchemaVersion:
    """One version of the schema: what it changed, and how today's readers read files written with it
    (generator.results.migrate applies the rule)."""

    changed: str
    read_as: str


SCHEMA_HISTORY = {
    1: SchemaVersion("first release",
                     "columns added since are null, profile_iterations by the rule below; every request counts as "
                     "clean (no run-delay was read)"),
    2: SchemaVersion("run_delay_ms per request; clean-request figures; target, budget, pair_id",
                     "columns added since are null, profile_iterations by the rule below"),
    3: SchemaVersion("layers: attributes, element types and weight details (the layer panel)",
                     "target_name and node_id null, profile_iterations by the rule below"),
    4: SchemaVersion("trials: profile_iterations, the profiled inferences the `nodes` statistics are over (until "
                     "then each reader rebuilt it from the spec); target_name and node_id (runs fanned out on Ray)",
                     "one profiled process: dur_process_p50_us is [dur_p50_us], the trial's per-process profile "
                     "figures are its one figure each, profile_processes 1 (0 unprofiled), profiler cost unknown"),
    5: SchemaVersion("the profiled inferences run in several processes (the measurement processes of the first "
                     "rounds): nodes.dur_p50_us is the median over them of each one's median, dur_process_p50_us "
                     "lists them; trials' profiled figures are medians over processes, with their per-process "
                     "lists and the profiler's measured cost per kernel call; environments.limits_settled (limits "
                     "two undisturbed probes agreed on); runs: the machine's own noise measured once per run; "
                     "trials.ci_sequential (measuring stopped on confidence sequences)",
                     "profile_rounds null: two trials' profiling processes pair when the run and their count agree"),
    6: SchemaVersion("trials.profile_rounds: the round each profiling process ran in (two versions' processes pair "
                     "by round)", "the generative columns null and no decode_steps: no generative trial was stored "
                     "before version 7"),
    7: SchemaVersion("generative experiments: trials' prompt and output lengths with their TTFT, TPOT, ITL, "
                     "tokens/s and KV-cache figures, processes' TTFT and TPOT medians, each request's ttft_ms and "
                     "tpot_ms in latencies, and the decode_steps table", "no phase_ops: no generative trial was "
                     "profiled before version 8"),
    8: SchemaVersion("the phase_ops table: a generative trial's time by op type in its prefill and in one decode "
                     "step, profiled; runs.started_at to the microsecond", "no phase_nodes: no generative trial's "
                     "nodes were stored before version 9; a generative trial's engine is onnxruntime (the only one "
                     "then)"),
    9: SchemaVersion("the phase_nodes table: each top-level node of a generative trial's profiled prefill and "
                     "decode step, with the model file's nodes and weights it runs; trials.engine (onnxruntime-genai "
                     "as a second engine)",
                     "files of this version are read as written"),
}
# How a trial written before version 4 gets its profile_iterations (generator.results.migrate): the rule the
# runner of those versions followed.
PROFILE_ITERATIONS_RULE = ("a profiled trial is read with its stored spec's "
                           "`measure.profile_iterations`, at most 3 in quick mode (the runner's quick cap then); "
                           "a trial without a profiled pass has none (null)")

METADATA_KEY = b"perfsite.schema_version"
TABLE_METADATA_KEY = b"perfsite.table"


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    unit: str
    meaning: str
    nullable: bool = True


def _c(name: str, type_: pa.DataType, unit: str, meaning: str, nullable: bool = True) -> Column:
    return Column(name, type_, unit, meaning, nullable)


STR, F64, I64, BOOL = pa.string(), pa.float64(), pa.int64(), pa.bool_()
STR_LIST = pa.list_(pa.string())
F64_LIST = pa.list_(pa.float64())

# Configuration axes, shared by `trials` (and joined into other tables by trial_key).
CONFIG_COLUMNS = (
    _c("batch", I64, "items", "batch size bound to the `batch` placeholder", False),
    _c("threads", I64, "threads", "intra-op threads of the session", False),
    _c("concurrency", I64, "requests", "requests in flight at once on one shared session", False),
    _c("optimization_level", STR, "", "graph optimization level: disable, basic, extended, all", False),
    _c("provider", STR, "", "execution provider asked for: cpu, cuda, ...", False),
    _c("spinning", BOOL, "", "intra-op thread spinning allowed", False),
    _c("inter_op_threads", I64, "threads", "inter-op threads (parallel execution mode when > 1)", False),
    _c("dims", STR, "", "JSON object of the other sweep placeholders, e.g. {\"seq_len\": 128}", False),
    _c("config_label", STR, "", "short human label of the configuration, e.g. `b1 t2 c1`", False),
)

TRIALS = (
    _c("experiment", STR, "", "spec name", False),
    _c("trial_key", STR, "", "hash of model sha256, configuration, inputs, measure settings, environment", False),
    _c("run_id", STR, "", "the `perfsite run` that measured it (see runs)", False),
    _c("env_id", STR, "", "environment it was measured on (see environments)", False),
    _c("spec_sha256", STR, "", "validated spec it was measured with (specs/<sha>.json)", False),
    _c("version", STR, "", "model version name from the spec", False),
    _c("model_sha256", STR, "", "sha256 of the model file that ran", False),
    _c("model_bytes", I64, "bytes", "size of the model file that ran"),
    _c("version_source", STR, "", "how the version was made: its file, or `fp32 → quantize(static_qdq)`"),
    _c("version_notes", STR, "", "notes from building the version (e.g. pre-processing fallbacks)"),
    *CONFIG_COLUMNS,
    _c("status", STR, "", "ok or failed", False),
    _c("error", STR, "", "why the trial failed (crash, timeout, error message)"),
    _c("quick", BOOL, "", "measured in quick mode (shrunk measurement, for tests and previews)", False),
    _c("percentile", STR, "", "the spec's headline percentile: p50, p90, p95 or p99"),
    _c("latency_mean_ms", F64, "ms", "mean request latency over all processes"),
    _c("latency_p50_ms", F64, "ms", "median request latency"),
    _c("latency_p90_ms", F64, "ms", "90th percentile request latency"),
    _c("latency_p95_ms", F64, "ms", "95th percentile request latency"),
    _c("latency_p99_ms", F64, "ms", "99th percentile; null below 460 samples, too few to estimate it"),
    _c("latency_std_ms", F64, "ms", "standard deviation of request latency"),
    _c("latency_min_ms", F64, "ms", "fastest request"),
    _c("latency_max_ms", F64, "ms", "slowest request"),
    _c("latency_headline_ms", F64, "ms", "latency at the spec's percentile (the figure charts use)"),
    _c("throughput_ips", F64, "items/s", "median over the usable processes of their clean throughput (processes."
       "clean_throughput_ips; over every process's items / wall time when none is usable)"),
    _c("iterations", I64, "requests", "timed requests over all processes"),
    _c("duration_s", F64, "s", "timed wall time over all processes"),
    _c("cv", F64, "ratio", "coefficient of variation of request latency (std / mean)"),
    _c("processes", I64, "processes", "measurement processes (the unit of repetition)"),
    _c("process_median_spread", F64, "ratio", "2 × standard deviation / median of the per-process (clean) medians; "
       "schema 1: (max - min) / median"),
    _c("cores_used", F64, "cores", "median over processes of CPU time / wall time of the timed phase (null: no "
       "process ran 0.25 s or more)"),
    _c("cores_expected", F64, "cores", "min(threads × concurrency, logical cores)"),
    _c("noisy", BOOL, "", "a noise rule fired (see noise_reasons)"),
    _c("noise_reasons", STR, "", "semicolon-separated reasons: cv, spread, cores"),
    _c("load_ms", F64, "ms", "cold start: model load + session creation, median over processes (a paired "
       "run's process that measured both versions together gives it for the version it loaded first only)"),
    _c("first_run_ms", F64, "ms", "cold start: first request after session creation, median over processes (as "
       "load_ms)"),
    _c("peak_rss_mb", F64, "MiB", "peak resident memory of a measurement process, max over processes (a generative "
       "trial, measured with its configuration's other versions in one process: of the process that generated "
       "with this version alone, for the output agreement)"),
    _c("arena_mb", F64, "MiB", "onnxruntime CPU arena in use after the timed loop, when reported"),
    _c("profiled", BOOL, "", "a profiled pass was recorded in `nodes`"),
    _c("profile_error", STR, "", "why the profiled pass failed, when it did (latency figures still hold)"),
    _c("model_run_us", F64, "µs", "profiled inferences: median over the profiling processes of each one's median "
       "onnxruntime model_run duration (v5; before: the one profiled process's mean)"),
    _c("kernel_sum_us", F64, "µs", "profiled inferences: sum of the top-level nodes' dur_p50_us (v5; before: the "
       "mean sum of top-level kernel times per inference)"),
    _c("profiled_latency_us", F64, "µs", "profiled inferences: median over the profiling processes of each one's "
       "median end-to-end session.run time (v5; before: a mean)"),
    _c("profile_iterations", I64, "inferences", "profiled inferences per profiling process, after its warm-up; "
       "null without a profiled pass (v4)"),
    _c("started_at", STR, "", "ISO 8601 UTC time the trial started"),
    _c("finished_at", STR, "", "ISO 8601 UTC time the trial was written"),
    _c("preemption_known", BOOL, "", "run-delay was read per request and the clean rule applies (v2)"),
    _c("preempted_share", F64, "ratio", "share of requests preempted by another process (generator.results.clean)"),
    _c("usable_processes", I64, "processes", "processes with enough clean requests to be judged by them"),
    _c("target", F64, "ratio", "measure.target: wanted relative half-width of the headline's 95 % interval"),
    _c("ci_halfwidth", F64, "ratio", "relative half-width of the headline's 95 % interval when measuring stopped "
       "(a confidence sequence where ci_sequential; null: none, or unbounded)"),
    _c("budget_s", F64, "s", "measure.budget_s: measuring time allowed for the trial"),
    _c("measuring_s", F64, "s", "measuring time spent: wall time of its measurement processes, start-up included"),
    _c("budget_exhausted", BOOL, "", "measuring stopped at the budget before the interval reached the target"),
    _c("pair_id", STR, "", "paired run: the same id on the baseline and candidate trials measured interleaved"),
    _c("pair_side", STR, "", "paired run: baseline or candidate"),
    _c("target_name", STR, "", "`perfsite run --ray`: the kind of machine it was measured on (--target or the "
       "spec's `targets:`), part of the trial key; null for a local run or any node (v4)"),
    _c("node_id", STR, "", "`perfsite run --ray`: the Ray node that measured it (hex id); null for a local run (v4)"),
    _c("profile_processes", I64, "processes", "processes that profiled inferences (the measurement processes of "
       "the first three rounds, or a separate profiled pass when none could); 0 without (v5)"),
    _c("profiled_latency_process_us", F64_LIST, "µs", "each profiling process's median session.run time under the "
       "profiler, in process order (the order of nodes.dur_process_p50_us) (v5)"),
    _c("model_run_process_us", F64_LIST, "µs", "each profiling process's median model_run duration (v5)"),
    _c("profiler_cost_process_us", F64_LIST, "µs", "each profiling process's measured cost of the profiler per "
       "kernel call, inside the recorded kernel times (generator.machine.profiler_cost.profiler_cost_us; NaN where "
       "it could not be measured) (v5)"),
    _c("ci_sequential", BOOL, "", "measuring stopped on confidence sequences (generator.results.sequential): "
       "ci_halfwidth is one, and readers judge the trial (and a paired run's ratios) by them; null in older "
       "results, judged by fixed-sample t intervals"),
    _c("profile_rounds", pa.list_(pa.int64()), "", "the round each profiling process ran in, in process order "
       "(-1: a separate profiled pass outside the rounds): two versions' processes of one round compare as a "
       "pair; null in older results, whose processes are paired only when the run and their count agree (v6)"),
    # Generative trials (a spec with `generate:`): a request is one greedy generation; latency_* are its end-to-end
    # time, throughput_ips its output tokens per second. Null for other trials (v7).
    _c("prompt_tokens", I64, "tokens", "generative: prompt length (the prefill pass's positions) (v7)"),
    _c("new_tokens", I64, "tokens", "generative: tokens generated per request, the first by the prefill (v7)"),
    _c("ttft_p50_ms", F64, "ms", "generative: median time to first token (prefill and the greedy choice) (v7)"),
    _c("ttft_p90_ms", F64, "ms", "generative: 90th percentile time to first token (v7)"),
    _c("ttft_p99_ms", F64, "ms", "generative: 99th percentile; null below 460 requests (v7)"),
    _c("ttft_headline_ms", F64, "ms", "generative: time to first token at the spec's percentile (v7)"),
    _c("tpot_p50_ms", F64, "ms", "generative: median over requests of each one's time per output token (its "
       "decode steps' mean) (v7)"),
    _c("tpot_p90_ms", F64, "ms", "generative: 90th percentile of the requests' time per output token (v7)"),
    _c("tpot_headline_ms", F64, "ms", "generative: time per output token at the spec's percentile (v7)"),
    _c("itl_p50_ms", F64, "ms", "generative: median inter-token latency, over every decode step of every clean "
       "request (v7)"),
    _c("itl_p90_ms", F64, "ms", "generative: 90th percentile inter-token latency (v7)"),
    _c("itl_p99_ms", F64, "ms", "generative: 99th percentile inter-token latency (v7)"),
    _c("prefill_tokens_per_s", F64, "tokens/s", "generative: prompt tokens × batch / median TTFT (v7)"),
    _c("kv_cache_mb", F64, "MiB", "generative: the KV cache's size at the longest context (the prompt and every new "
       "token but the last), keys and values of every layer (v7)"),
    _c("ttft_ci_halfwidth", F64, "ratio", "generative: relative half-width of the 95 % interval of the median "
       "TTFT over the processes' medians (v7)"),
    _c("tpot_ci_halfwidth", F64, "ratio", "generative: the same for TPOT (v7)"),
    _c("engine", STR, "", "generative: what generated the tokens, `onnxruntime` (perfsite's decode loop) or "
       "`onnxruntime-genai` with its release (v9)"),
)

PROCESSES = (
    _c("trial_key", STR, "", "the trial", False),
    _c("process", I64, "", "index of the measurement process within the trial", False),
    _c("round", I64, "", "interleaving round it ran in (versions alternate A B A B ...)"),
    _c("iterations", I64, "requests", "timed requests in this process"),
    _c("items", I64, "items", "items completed (requests × batch)"),
    _c("wall_s", F64, "s", "timed wall time, common start until every stream drained"),
    _c("cpu_s", F64, "s", "CPU time the process used during the timed phase"),
    _c("cores_used", F64, "cores", "cpu_s / wall_s; NaN under 0.25 s of wall time or above the usable CPUs"),
    _c("latency_median_ms", F64, "ms", "median request latency in this process"),
    _c("latency_mean_ms", F64, "ms", "mean request latency in this process"),
    _c("throughput_ips", F64, "items/s", "items / wall_s"),
    _c("load_ms", F64, "ms", "model load + session creation; NaN for the version a paired process loaded second"),
    _c("first_run_ms", F64, "ms", "first request after session creation; NaN as load_ms"),
    _c("peak_rss_mb", F64, "MiB", "peak resident memory of the process"),
    _c("arena_mb", F64, "MiB", "onnxruntime arena in use, when reported"),
    _c("clean_requests", I64, "requests", "requests not preempted (all of them when the delay is unknown)"),
    _c("clean_throughput_ips", F64, "items/s", "items / (wall_s - time lost to preemption): what the process would "
       "have sustained had it kept its CPU"),
    _c("delay_threads", I64, "threads", "threads whose run-delay was read per request (0: unknown)"),
    _c("ttft_median_ms", F64, "ms", "generative: median time to first token of the process's clean requests (v7)"),
    _c("tpot_median_ms", F64, "ms", "generative: median time per output token of its clean requests (v7)"),
)

LATENCIES = (
    _c("trial_key", STR, "", "the trial", False),
    _c("process", I64, "", "measurement process", False),
    _c("stream", I64, "", "request stream within the process (0 .. concurrency-1)", False),
    _c("iteration", I64, "", "request index within the stream", False),
    _c("latency_ms", F64, "ms", "request latency (session.run wall time)", False),
    _c("run_delay_ms", F64, "ms", "scheduler run-delay of the request's threads during it; null when unknown"),
    _c("ttft_ms", F64, "ms", "generative: the request's time to first token (latency_ms is its whole "
       "generation) (v7)"),
    _c("tpot_ms", F64, "ms", "generative: the request's time per output token, the mean of its decode steps (v7)"),
)

DECODE_STEPS = (
    _c("trial_key", STR, "", "the generative trial", False),
    _c("process", I64, "", "measurement process", False),
    _c("step", I64, "", "decode step (1: the pass that makes the second token)", False),
    _c("context_tokens", I64, "tokens", "positions in the KV cache once the step's token is in it", False),
    _c("median_ms", F64, "ms", "median time of this step over the process's clean requests"),
    _c("p90_ms", F64, "ms", "90th percentile of it"),
    _c("requests", I64, "requests", "clean requests the figures are over"),
)

PHASE_OPS = (
    _c("trial_key", STR, "", "the generative trial", False),
    _c("phase", STR, "", "prefill (the prompt's pass) or decode (one step)", False),
    _c("context_tokens", I64, "tokens", "positions the pass attends to: the prompt's, or the cache's with the "
       "step's token", False),
    _c("passes", I64, "passes", "profiled passes of the phase the figures are medians over", False),
    _c("op_type", STR, "", "executed operator type (untrusted text)", False),
    _c("nodes", I64, "", "executed top-level nodes of that type", False),
    _c("us_p50", F64, "µs", "the sum over those nodes of each one's median time per pass (onnxruntime's profiler, "
       "its own cost included)"),
    _c("phase_us_p50", F64, "µs", "median over the passes of the phase's summed kernel time (the pages show the "
       "sum of the nodes' medians instead: this one reads high when most passes were disturbed)"),
)

PHASE_NODES = (
    _c("trial_key", STR, "", "the generative trial", False),
    _c("phase", STR, "", "prefill (the prompt's pass) or decode (one step)", False),
    _c("context_tokens", I64, "tokens", "positions the pass attends to: the prompt's, or the cache's with the "
       "step's token", False),
    _c("passes", I64, "passes", "profiled passes of the phase the figures are over", False),
    _c("exec_order", I64, "", "position of the node in the phase's execution order", False),
    _c("node_name", STR, "", "executed node name as onnxruntime reports it (untrusted text)", False),
    _c("op_type", STR, "", "executed operator type (untrusted text)", False),
    _c("runtime_precision", STR, "", "FP32, FP16, INT8, mixed or other, from the kernel's element types"),
    _c("calls", I64, "", "kernel calls per pass"),
    _c("us_p50", F64, "µs", "median over the passes of the node's time per pass (onnxruntime's profiler, its own "
       "cost included)"),
    _c("us_min", F64, "µs", "fastest pass"),
    _c("us_max", F64, "µs", "slowest pass"),
    _c("input_shapes", STR, "", "JSON list of input shapes as profiled"),
    _c("output_shapes", STR, "", "JSON list of output shapes as profiled"),
    _c("parameter_bytes", I64, "bytes", "parameter (weight) size reported by onnxruntime: read once per pass"),
    _c("activation_bytes", I64, "bytes", "input activation size reported by onnxruntime"),
    _c("original_nodes", STR_LIST, "", "nodes of the version's model file this executed node covers"),
    _c("weights", STR_LIST, "", "initializer (weight) names consumed by those nodes"),
    _c("mapping_method", STR, "", "how the node was tied to the model file: exact, stripped, tensor, ..."),
)

NODES = (
    _c("trial_key", STR, "", "the trial", False),
    _c("exec_order", I64, "", "position in execution order of the profiled inference", False),
    _c("node_name", STR, "", "executed node name as onnxruntime reports it (untrusted text)", False),
    _c("op_type", STR, "", "executed operator type (untrusted text)", False),
    _c("provider", STR, "", "execution provider that ran the node"),
    _c("parent", STR, "", "enclosing If/Loop/Scan node for sub-graph nodes; null at top level"),
    _c("calls", I64, "", "kernel calls per inference (sub-graph nodes may run several times)"),
    _c("dur_mean_us", F64, "µs", "mean time per inference over every profiled inference of every process"),
    _c("dur_p50_us", F64, "µs", "median over the profiling processes of each one's median time per inference "
       "(v5; before: the one profiled process's median): the figure pages rank, share and sum"),
    _c("dur_min_us", F64, "µs", "fastest"),
    _c("dur_max_us", F64, "µs", "slowest"),
    _c("dur_std_us", F64, "µs", "standard deviation"),
    _c("input_shapes", STR, "", "JSON list of input shapes as profiled"),
    _c("output_shapes", STR, "", "JSON list of output shapes as profiled"),
    _c("input_types", STR, "", "JSON list of input element types"),
    _c("output_types", STR, "", "JSON list of output element types"),
    _c("runtime_precision", STR, "", "FP32, FP16, INT8, mixed or other, from the kernel's element types"),
    _c("original_nodes", STR_LIST, "", "nodes of the version's model file this executed node covers"),
    _c("weights", STR_LIST, "", "initializer (weight) names consumed by those nodes"),
    _c("mapping_method", STR, "", "how the node was tied to the model file: exact, stripped, tensor, ..."),
    _c("activation_bytes", I64, "bytes", "input activation size reported by onnxruntime"),
    _c("parameter_bytes", I64, "bytes", "parameter size reported by onnxruntime"),
    _c("output_bytes", I64, "bytes", "output size reported by onnxruntime"),
    _c("pool_share", F64, "ratio", "share of the node's work run on the intra-op pool's other threads"),
    _c("thread_id", I64, "", "thread that ran the node in the profiled pass"),
    _c("start_offset_us", F64, "µs", "median start of the node relative to its inference's model_run start"),
    _c("dur_process_p50_us", F64_LIST, "µs", "each profiling process's median time per inference of this node, "
       "in the order of trials.profiled_latency_process_us; NaN where a process did not run it (v5)"),
)

LAYERS = (
    _c("trial_key", STR, "", "the trial (static analysis at its concrete input shapes)", False),
    _c("node", STR, "", "node key in the version's model file (as in nodes.original_nodes)", False),
    _c("op_type", STR, "", "operator type (untrusted text)", False),
    _c("domain", STR, "", "operator domain ('' for the default ONNX domain)"),
    _c("position", I64, "", "position of the node in the model file's graph"),
    _c("flops", F64, "FLOP", "floating-point operations per inference (a multiply-add counts 2)"),
    _c("macs", F64, "MAC", "multiply-accumulates per inference (float and integer)"),
    _c("int_ops", F64, "OP", "integer operations per inference (a multiply-add counts 2)"),
    _c("params", I64, "", "parameters (initializer elements) the node consumes"),
    _c("weight_bytes", I64, "bytes", "bytes of those initializers"),
    _c("input_bytes", I64, "bytes", "activation bytes read (non-initializer inputs)"),
    _c("output_bytes", I64, "bytes", "activation bytes written"),
    _c("input_shapes", STR, "", "JSON list of input shapes after shape inference"),
    _c("output_shapes", STR, "", "JSON list of output shapes after shape inference"),
    _c("counted", BOOL, "", "a FLOP counter exists for this op type (false: listed, not guessed)"),
    _c("attributes", STR, "", "JSON object of the node's attributes as display strings (v3; untrusted text)"),
    _c("input_types", STR, "", "JSON list of input element types after shape inference (v3)"),
    _c("output_types", STR, "", "JSON list of output element types after shape inference (v3)"),
    _c("weight_details", STR, "", "JSON list of the weights read: name, shape, dtype, quantization scale and "
       "zero point (v3)"),
)

TIMELINE = (
    _c("trial_key", STR, "", "the trial", False),
    _c("exec_order", I64, "", "position of this kernel call in the inference, by start time (0 first)", False),
    _c("node_name", STR, "", "executed node name as onnxruntime reports it (untrusted text)", False),
    _c("op_type", STR, "", "executed operator type (untrusted text)", False),
    _c("provider", STR, "", "execution provider that ran the call"),
    _c("parent", STR, "", "enclosing If/Loop/Scan node for sub-graph calls; null at top level"),
    _c("thread_id", I64, "", "thread that ran the call (the session's calling thread or an inter-op thread)"),
    _c("start_us", F64, "µs", "start of the call relative to its inference's model_run start", False),
    _c("dur_us", F64, "µs", "duration of the call (a control-flow call includes its sub-graph's calls)", False),
    _c("pool_share", F64, "ratio", "share of the call's parallel work run on the intra-op pool's other threads"),
    _c("input_shapes", STR, "", "JSON list of input shapes as profiled"),
    _c("output_shapes", STR, "", "JSON list of output shapes as profiled"),
    _c("activation_bytes", I64, "bytes", "input activation size reported by onnxruntime"),
    _c("parameter_bytes", I64, "bytes", "parameter size reported by onnxruntime"),
    _c("output_bytes", I64, "bytes", "output size reported by onnxruntime"),
    _c("run_index", I64, "", "which profiled inference this is (0 = first after warmup): the median one"),
    _c("model_run_us", F64, "µs", "that inference's onnxruntime model_run duration (same on every row)"),
    _c("kernel_sum_us", F64, "µs", "that inference's sum of top-level call durations (same on every row)"),
)

AGREEMENT = (
    _c("trial_key", STR, "", "the trial of the version whose outputs are checked", False),
    _c("version", STR, "", "that version", False),
    _c("reference_version", STR, "", "the version it is compared with (its root source, or a compare pair's A)", False),
    _c("output", STR, "", "output name", False),
    _c("max_abs", F64, "", "largest absolute difference over the same inputs"),
    _c("max_rel", F64, "ratio", "largest relative difference, |b - a| / max(|a|, eps)"),
    _c("mean_abs", F64, "", "mean absolute difference"),
    _c("cosine", F64, "", "cosine similarity of the flattened outputs"),
    _c("top1_agreement", F64, "ratio", "share of rows whose arg-max agrees (classifier-like outputs); null otherwise"),
    _c("samples", I64, "", "input batches compared"),
)

ENVIRONMENTS = (
    _c("env_id", STR, "", "first 12 hex digits of the fingerprint", False),
    _c("fingerprint", STR, "", "sha256 of the hardware and software description", False),
    _c("hostname", STR, "", "machine name (not part of the fingerprint)"),
    _c("cpu_model", STR, "", "CPU model name"),
    _c("physical_cores", I64, "cores", "physical cores"),
    _c("logical_cores", I64, "cores", "logical CPUs"),
    _c("isa", STR_LIST, "", "instruction-set extensions that matter for inference (AVX2, AVX-512, VNNI, AMX, ...)"),
    _c("memory_gb", F64, "GiB", "total memory"),
    _c("os", STR, "", "operating system and kernel"),
    _c("python", STR, "", "Python version"),
    _c("onnxruntime", STR, "", "onnxruntime version"),
    _c("onnx", STR, "", "onnx version"),
    _c("numpy", STR, "", "numpy version"),
    _c("providers", STR_LIST, "", "execution providers available"),
    _c("peak_gflops_fp32", F64, "GFLOP/s",
       "measured FP32 peak through onnxruntime (MatMul or convolution, the higher), when probed"),
    _c("peak_gops_int8", F64, "GOP/s", "measured INT8 GEMM peak, when probed"),
    _c("bandwidth_gbs", F64, "GB/s", "measured memory bandwidth (large copy), when probed"),
    _c("captured_at", STR, "", "ISO 8601 UTC time of capture"),
    _c("limits_probed_at", STR, "", "ISO 8601 UTC time the limits above were probed (v2)"),
    _c("limits_quality", STR, "", "the limits probe's quality in words: settled or unsettled, probes, why (v2)"),
    _c("limits_settled", BOOL, "", "two undisturbed probes agreed on the limits above, so pages use them; null in "
       "results written before the rule: not settled"),
)

RUNS = (
    _c("run_id", STR, "", "unique id of one `perfsite run`", False),
    _c("experiment", STR, "", "spec name", False),
    _c("spec_sha256", STR, "", "validated spec", False),
    _c("env_id", STR, "", "environment", False),
    _c("started_at", STR, "", "ISO 8601 UTC (to the microsecond since version 8; to the second before)"),
    _c("git_commit", STR, "", "commit of the experiments' repository, when in git"),
    _c("git_dirty", BOOL, "", "the repository had uncommitted changes"),
    _c("perfsite_version", STR, "", "perfsite version that measured"),
    _c("quick", BOOL, "", "quick mode"),
    _c("command", STR, "", "the command line"),
    _c("spec_path", STR, "", "the spec file measured, absolute: one spec per name in a results folder (v2)"),
    _c("host_noise_s", F64, "s", "the machine's own noise, measured once before the run measured: seconds of fixed "
       "pure-Python work on one thread (generator.machine.host_noise); null: not measured"),
    _c("host_noise_window_s", F64, "s", "length of the windows that work was cut into, each giving the median "
       "time of its loops"),
    _c("host_noise_windows", I64, "windows", "windows with enough loops to have a median"),
    _c("host_noise_fastest_ms", F64, "ms", "the fastest window's median time of one loop of the fixed work"),
    _c("host_noise_slowest_ms", F64, "ms", "the slowest window's median time of one loop of the fixed work"),
    _c("host_noise_spread", F64, "ratio", "2 × standard deviation / median of the window medians (the spread "
       "rule's formula)"),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "trials": TRIALS,
    "processes": PROCESSES,
    "latencies": LATENCIES,
    "nodes": NODES,
    "layers": LAYERS,
    "agreement": AGREEMENT,
    "timeline": TIMELINE,
    "decode_steps": DECODE_STEPS,
    "phase_ops": PHASE_OPS,
    "phase_nodes": PHASE_NODES,
    "environments": ENVIRONMENTS,
    "runs": RUNS,
}


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table, with the schema version and table name in its metadata."""
    fields = [pa.field(c.name, c.type, nullable=c.nullable) for c in TABLES[table]]
    meta = {METADATA_KEY: str(SCHEMA_VERSION).encode(), TABLE_METADATA_KEY: table.encode()}
    return pa.schema(fields, metadata=meta)


def column_names(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]
