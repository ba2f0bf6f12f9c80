"""Generative models: the decoder convention, perfsite's decode loop on real onnxruntime sessions, and
`perfsite generate` (docs/generative.md)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from support.cli import perfsite

from generator.decode.convention import decoder_layout
from generator.decode.loop import DecodeLoop, bare_generate, prompt_ids
from generator.errors import ModelError
from generator.generate.summary import figure, percentiles
from generator.models.builder import model_bytes, write_if_changed
from generator.models.decoder import DecoderShape, build_decoder

TINY = DecoderShape(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=97, max_positions=40)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("decoder") / "tiny-decoder.onnx"
    write_if_changed(path, model_bytes(build_decoder(TINY)))
    return path


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def test_the_layout_is_read_from_the_graph_whatever_the_sizes(decoder, tmp_path):
    layout = decoder_layout(decoder)
    assert (layout.layers, layout.kv_heads, layout.head_dim, layout.vocab) == (2, 2, 16, 97)
    assert layout.kv_dtype == "float32" and layout.has_position_ids and layout.max_positions == 40
    assert layout.kv_bytes(batch=3, context=10) == 2 * 2 * 3 * 2 * 10 * 16 * 4
    # Another decoder, never seen: three layers, as many key/value heads as query heads (no grouping).
    other = tmp_path / "mha.onnx"
    write_if_changed(other, model_bytes(build_decoder(DecoderShape(layers=3, hidden=48, heads=3, kv_heads=3, ffn=96,
                                                                   vocab=50, max_positions=16))))
    layout = decoder_layout(other)
    assert (layout.layers, layout.kv_heads, layout.head_dim, layout.vocab, layout.max_positions) == (3, 3, 16, 50, 16)


def test_the_loop_generates_what_recomputing_the_whole_sequence_gives(decoder):
    """Greedy tokens through the KV cache equal the argmax of a cache-free pass over prompt + tokens, position by
    position: the loop feeds the cache, the mask and the positions right. And they equal a plain
    `InferenceSession.run` loop's."""
    layout, session = decoder_layout(decoder), _session(decoder)
    prompt = prompt_ids(layout, batch=2, prompt_tokens=7)
    assert np.array_equal(prompt, prompt_ids(layout, batch=2, prompt_tokens=7))  # deterministic
    generation = DecodeLoop(session, layout, prompt, new_tokens=6).generate()
    assert generation.tokens.shape == (2, 6) and len(generation.steps_ms) == 5 and generation.prompt_tokens == 7
    assert generation.ttft_ms > 0 and (generation.steps_ms > 0).all()
    assert generation.e2e_ms == pytest.approx(generation.ttft_ms + generation.steps_ms.sum())
    sequence = np.concatenate([prompt, generation.tokens[:, :-1]], axis=1)
    length = sequence.shape[1]
    feeds = {"input_ids": sequence, "attention_mask": np.ones_like(sequence),
             "position_ids": np.broadcast_to(np.arange(length), sequence.shape).copy()}
    empty = np.zeros((2, layout.kv_heads, 0, layout.head_dim), np.float32)
    feeds |= {f"past_key_values.{n}.{kv}": empty for n in range(layout.layers) for kv in ("key", "value")}
    logits = session.run(["logits"], feeds)[0]
    assert np.array_equal(logits[:, 6:, :].argmax(-1), generation.tokens)
    _, bare_tokens = bare_generate(session, layout, prompt, new_tokens=6)
    assert np.array_equal(bare_tokens, generation.tokens)


def test_percentiles_need_samples_above_them():
    assert percentiles(np.arange(9.0)) == {"p50": 4.0, "p90": None, "p99": None}
    shown = percentiles(np.arange(100.0))
    assert shown["p90"] == pytest.approx(89.1) and shown["p99"] == pytest.approx(98.01)


def test_generate_prints_ttft_tpot_and_itl_and_writes_the_same_figures(decoder, tmp_path):
    out = perfsite("generate", str(decoder), "--prompt-tokens", "12", "--new-tokens", "5", "--batch", "2",
                   "--requests", "10", "--json", str(tmp_path / "g.json"))
    assert out.returncode == 0, out.stderr
    assert "Generating 5 tokens after a 12-token prompt, batch 2: 1 warm-up and 10 timed requests" in out.stderr
    text = out.stdout
    assert text.startswith("tiny-decoder.onnx: 10 requests of a 12-token prompt and 5 new tokens, batch 2")
    record = json.loads((tmp_path / "g.json").read_text())
    assert record["format"] == "perfsite-generate/1" and record["requests"] == 10 and record["batch"] == 2
    # p90 from 10 requests; p99 only from 100 samples: the 40 decode steps are too few, shown as a dash.
    assert record["ttft_ms"]["p99"] is None and record["itl_ms"]["p90"] is not None and record["itl_ms"]["p99"] is None
    ttft_line = next(line for line in text.splitlines() if "time to first token (TTFT)" in line)
    assert ttft_line.split()[5:8] == [f"{record['ttft_ms']['p50']:.3g}", f"{record['ttft_ms']['p90']:.3g}", "—"]
    assert record["kv_cache_mb"] == pytest.approx(2 * 2 * 2 * 2 * 16 * 16 * 4 / 2**20)  # context 12 + 5 - 1
    assert record["output_tokens_per_s"] == pytest.approx(2 * 5 / (record["e2e_ms_p50"] / 1e3))
    assert 20 < record["peak_rss_mb"] < 2000
    assert "too few samples for that percentile (p90 needs 10, p99 100)" in text


def _one_paragraph(out) -> str:
    assert out.returncode != 0 and out.stdout == "" and "Traceback" not in out.stderr, out.stderr
    return " ".join(out.stderr.split())


def test_a_model_without_kv_inputs_is_one_paragraph_naming_what_it_lacks(example_models):
    said = _one_paragraph(perfsite("generate", str(example_models["transformer"])))
    assert said.startswith("error: ") and "transformer.onnx is not a decoder in the convention" in said
    assert "it lacks past_key_values.N.key/value inputs, logits" in said or "lacks logits, past_key_values" in said
    assert "Allowed: inputs `input_ids`, `attention_mask`, optional `position_ids`" in said


def test_a_prompt_past_the_models_context_and_zero_new_tokens_are_refused(decoder, tmp_path):
    said = _one_paragraph(perfsite("generate", str(decoder), "--prompt-tokens", "38", "--new-tokens", "4"))
    assert ("a prompt of 38 tokens and 4 new tokens reach position 40, past the 40 rows of the position table "
            "`position_ids` indexes. Allowed: --prompt-tokens + --new-tokens at most 41.") in said
    said = _one_paragraph(perfsite("generate", str(decoder), "--new-tokens", "0"))
    assert said.startswith("error: Invalid value for '--new-tokens': Input should be greater than or equal to 1.")
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    said = _one_paragraph(perfsite("generate", str(fifo)))
    assert f"The model file {fifo} is not a regular file (a device, a pipe or a socket)" in said


def test_a_past_with_symbolic_heads_is_refused_with_the_shape_it_has(decoder, tmp_path):
    import onnx

    model = onnx.load(str(decoder))
    for value in model.graph.input:
        if value.name.startswith("past_key_values."):
            value.type.tensor_type.shape.dim[1].dim_param = "kv_heads"
    onnx.save(model, str(tmp_path / "symbolic.onnx"))
    with pytest.raises(ModelError) as e:
        decoder_layout(tmp_path / "symbolic.onnx")
    assert "`past_key_values.0.key` is shaped ['?', '?', '?', 16] of element type FLOAT" in str(e.value)


# The comparisons' decoder: steps of a few tenths of a millisecond, where TINY's are mostly the call's overhead.
MEDIUM = DecoderShape(layers=2, hidden=128, heads=4, kv_heads=2, ffn=512, vocab=256, max_positions=64)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    """MEDIUM, and MEDIUM with a feed-forward eight times as wide: more work in every pass, prefill and decode."""
    folder = tmp_path_factory.mktemp("pair")
    for name, shape in (("medium", MEDIUM), ("heavier", dataclasses.replace(MEDIUM, ffn=4096))):
        write_if_changed(folder / f"{name}.onnx", model_bytes(build_decoder(shape)))
    return folder / "medium.onnx", folder / "heavier.onnx"


def _compare(a: Path, b: Path, json_path: Path):
    # Six processes: with four, one disturbed by the suite's other workers left a 4.4 times slower decode
    # unsettled (t with 3 degrees of freedom); 16 requests each: with 8, the A/A pair was once called faster
    # beside the suite's other workers (2026-12-07).
    return perfsite("generate", str(a), str(b), "--prompt-tokens", "32", "--new-tokens", "8", "--requests", "16",
                    "--warmup", "2", "--processes", "6", "--json", str(json_path))


def test_two_decoders_are_judged_prefill_and_decode_apart(pair, tmp_path):
    out = _compare(*pair, tmp_path / "c.json")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("requests of each model, alternating") == 6
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["format"] == "perfsite-generate-compare/1" and record["processes"] == 6
    assert not record["same_tokens"]  # other weights, other greedy tokens
    text = " ".join(out.stdout.split())
    for phase, label in (("ttft", "prefill (time to first token)"), ("tpot", "decode (time per output token)")):
        verdict = next(p for p in record["phases"] if p["phase"] == phase)
        assert verdict["verdict"] == "slower" and verdict["low"] > 1, verdict
        assert f"{label} A {verdict['a_ms']:.3g} ms, B {verdict['b_ms']:.3g} ms: B/A {verdict['ratio']:.3g}" in text


@pytest.mark.quiet  # an A/A verdict: beside the suite's other workers the copy once read 5 % faster in both phases
def test_a_decoder_against_its_copy_is_never_called_faster_or_slower(pair, tmp_path):
    copy = tmp_path / "copy.onnx"
    copy.write_bytes(pair[0].read_bytes())
    out = _compare(pair[0], copy, tmp_path / "aa.json")
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "aa.json").read_text())
    assert record["same_tokens"] and "generated different tokens" not in out.stdout
    assert all(p["verdict"] in ("no change", "unsettled") for p in record["phases"]), record["phases"]
    said = _one_paragraph(perfsite("generate", str(pair[0]), str(copy), "--processes", "1"))
    assert said.startswith("error: Invalid value for '--processes': Input should be greater than or equal to 2.")


def test_mistakes_found_in_review_are_one_paragraph_each(decoder, tmp_path):
    """`--json` naming the model replaced it; a file that is no model, or a model of a fixed batch of 1 run at
    --batch 2, ended in tracebacks (a review, 2026-12-07)."""
    import onnx

    said = _one_paragraph(perfsite("generate", str(decoder), "--json", str(decoder)))
    assert said.startswith(f"error: --json {decoder} is the model, which this command reads")
    (tmp_path / "notes.onnx").write_text("not a model")
    said = _one_paragraph(perfsite("generate", str(decoder), str(tmp_path / "notes.onnx"), "--prompt-tokens", "8"))
    assert said.startswith(f"error: {tmp_path / 'notes.onnx'}: not a readable ONNX model (")
    fixed = onnx.load(str(decoder))
    for value in [*fixed.graph.input, *fixed.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_value = 1
    onnx.save(fixed, str(tmp_path / "batch1.onnx"))
    said = _one_paragraph(perfsite("generate", str(tmp_path / "batch1.onnx"), "--batch", "2", "--prompt-tokens", "4",
                                   "--new-tokens", "2", "--requests", "1"))
    assert f"timed requests error: {tmp_path / 'batch1.onnx'}: onnxruntime failed while generating: " in said
    assert said.endswith("Check --batch, --prompt-tokens and --new-tokens against the sizes the model accepts.")


def test_one_new_token_is_a_prefill_alone_and_only_prefill_is_judged(pair, tmp_path):
    out = perfsite("generate", str(pair[0]), str(pair[1]), "--prompt-tokens", "8", "--new-tokens", "1",
                   "--requests", "2", "--processes", "2", "--json", str(tmp_path / "one.json"))
    assert out.returncode == 0, out.stderr
    assert [p["phase"] for p in json.loads((tmp_path / "one.json").read_text())["phases"]] == ["ttft"]
    assert "decode (time per output token)" not in out.stdout and "Warning" not in out.stderr


def test_logits_of_one_position_and_a_present_of_another_type_than_its_past_are_refused(decoder, tmp_path):
    """Both ran until the first request failed mid-measure (an IndexError, onnxruntime's type error): the layout
    check now names them before anything runs."""
    model = onnx.load(str(decoder))
    logits = next(o for o in model.graph.output if o.name == "logits")
    del logits.type.tensor_type.shape.dim[1]  # [batch, vocab]
    onnx.save(model, tmp_path / "rank2.onnx")
    with pytest.raises(ModelError, match=r"`logits` has rank 2; perfsite needs \[batch, sequence_length, vocab\]"):
        decoder_layout(tmp_path / "rank2.onnx")
    model = onnx.load(str(decoder))
    present = next(o for o in model.graph.output if o.name == "present.0.key")
    present.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    onnx.save(model, tmp_path / "mixed.onnx")
    with pytest.raises(ModelError, match=r"`present.0.key` is FLOAT16 but `past_key_values.0.key` is FLOAT: each "
                                         r"present is fed back as the next pass's past"):
        decoder_layout(tmp_path / "mixed.onnx")


def test_a_failure_while_generating_is_said_once_without_onnxruntimes_own_line(decoder, tmp_path):
    """Positions past a table the graph reaches through another node (here an Add): perfsite cannot see the
    limit, onnxruntime's Gather fails mid-generation, and its own coloured log line came before the paragraph."""
    model = onnx.load(str(decoder))
    model.graph.initializer.append(onnx.helper.make_tensor("zero", onnx.TensorProto.INT64, [], [0]))
    gather = next(n for n in model.graph.node if n.op_type == "Gather" and "position_ids" in n.input)
    gather.input[list(gather.input).index("position_ids")] = "positions_shifted"
    model.graph.node.insert(0, onnx.helper.make_node("Add", ["position_ids", "zero"], ["positions_shifted"]))
    onnx.save(model, tmp_path / "hidden.onnx")
    out = perfsite("generate", str(tmp_path / "hidden.onnx"), "--prompt-tokens", "45", "--new-tokens", "2",
                   "--requests", "1", "--warmup", "0")
    said = _one_paragraph(out)
    assert "[E:onnxruntime" not in out.stderr and "\x1b[" not in out.stderr, out.stderr
    assert said.endswith("indices element out of data bounds, idx=40 must be within the inclusive range [-40,39]. "
                         "Check --batch, --prompt-tokens and --new-tokens against the sizes the model accepts."), said


@pytest.mark.parametrize("keep_io_types", [True, False], ids=["float32-io", "float16-io"])
def test_an_fp16_version_decodes_on_the_cpu_provider_with_its_kv_cache_in_its_io_type(decoder, tmp_path,
                                                                                         keep_io_types):
    """`fp16:` on a decoder (the spec's transform, onnxruntime's converter): the CPU provider runs it, the layout
    reads the KV cache's type from the graph (float32 with the default `keep_io_types`, float16 without), the
    loop feeds it, and its prefill logits stay close to the float32 model's (random weights: tokens may differ)."""
    from generator.spec import Fp16Options
    from generator.versions.fp16 import Fp16Transform

    fp16 = tmp_path / "fp16.onnx"
    Fp16Transform().apply(decoder, fp16, Fp16Options(keep_io_types=keep_io_types), None)
    layout, reference = decoder_layout(fp16), decoder_layout(decoder)
    assert layout.kv_dtype == ("float32" if keep_io_types else "float16")
    assert layout.kv_bytes(batch=1, context=10) == reference.kv_bytes(batch=1, context=10) // (1 if keep_io_types
                                                                                                 else 2)
    prompt = prompt_ids(layout, batch=1, prompt_tokens=9)
    generation = DecodeLoop(_session(fp16), layout, prompt, new_tokens=4).generate()
    assert generation.tokens.shape == (1, 4) and len(generation.steps_ms) == 3 and generation.ttft_ms > 0
    mine = DecodeLoop(_session(fp16), layout, prompt, 1).prefill_logits().astype(np.float64).ravel()
    theirs = DecodeLoop(_session(decoder), reference, prompt, 1).prefill_logits().astype(np.float64).ravel()
    assert mine @ theirs / (np.linalg.norm(mine) * np.linalg.norm(theirs)) > 0.99


def test_layers_show_where_prefill_and_one_decode_step_spend_their_time(decoder, tmp_path):
    """`--layers`: op types and the slowest nodes of each phase, every node's time its median over ten profiled
    passes (one preempted pass ranks nothing first), the decode step's context stated."""
    from generator.decode.phases import profile_phases

    out = perfsite("generate", str(decoder), "--prompt-tokens", "12", "--new-tokens", "5", "--requests", "2",
                   "--layers", "--json", str(tmp_path / "g.json"))
    assert out.returncode == 0, out.stderr
    assert "Profiling the prefill and one decode step (context 14), 10 passes each" in out.stderr
    record = json.loads((tmp_path / "g.json").read_text())
    prefill, decode = record["layers"]
    assert (prefill["phase"], prefill["context_tokens"], prefill["passes"]) == ("prefill", 12, 10)
    assert (decode["phase"], decode["context_tokens"], decode["passes"]) == ("decode", 14, 10)
    for phase, title in ((prefill, "prefill of a 12-token prompt"),
                         (decode, "one decode step at a context of 14 tokens")):
        ops = {o["op_type"]: o["us_p50"] for o in phase["op_types"]}
        assert {"MatMul", "Softmax", "LayerNormalization"} <= set(ops) and list(ops.values()) == sorted(
            ops.values(), reverse=True)
        # Medians of nodes need not add up to the median of the sums, but they come close.
        assert 0.7 * phase["kernel_us_p50"] <= sum(ops.values()) <= 1.3 * phase["kernel_us_p50"]
        # The figure printed is the nodes' medians summed, as the pages give it.
        assert phase["kernel_us_nodes"] == pytest.approx(sum(ops.values()), abs=0.01)
        shown = f"{figure(phase['kernel_us_nodes'] / 1e3)} ms of kernels)"
        slowest = [n["us_p50"] for n in phase["slowest_nodes"]]
        assert len(slowest) == 10 and slowest == sorted(slowest, reverse=True)
        assert f"Where the time goes, {title} (batch 1; each node's median over 10 profiled passes: {shown}" \
            in out.stdout
    # Which node of a tiny decoder is tenth slowest is up to the machine (lm_head's was, one run in two): the
    # printed names are the recorded ones.
    assert out.stdout.count("slowest nodes (onnxruntime's names)") == 2
    assert all(n["node"] in out.stdout for phase in (prefill, decode) for n in phase["slowest_nodes"])
    # One new token is a prefill alone: no decode step to profile.
    only, none = profile_phases(decoder, decoder_layout(decoder), batch=2, prompt_tokens=6, new_tokens=1, threads=1,
                                passes=2)
    assert only.phase == "prefill" and only.passes == 2 and none is None
