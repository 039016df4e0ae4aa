"""A component's declared summary keys (``@component(..., summary=[...])``) are what it writes: every
key a run writes is declared, so `bottlenecks check` never refuses a claim the run would have measured.
Recorded training summaries (the golden runs) and a tiny run of the translation probes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components import Context, get
from components.summary_keys import Keys
from components.train.checkpoint import load_info
from flows.plan._summaries import _Declared
from flows.plan.build import build
from tests.support.toy_translation import train_toy

GOLDEN = Path(__file__).resolve().parents[1] / "train" / "golden_training.json"
TIMING = {"seconds", "cpu_seconds", "eval_seconds", "tokens_per_s"}  # left out of the golden record
SOMETIMES = {"valid_acc_all", "test_acc_all"}  # tasks with several outputs a step, generate tasks


def test_every_recorded_training_summary_key_is_declared_and_every_declared_one_recorded():
    declared = Keys(get("train.model").summary_keys)
    recorded = {k for run in json.loads(GOLDEN.read_text()).values() for k in run["summary"]}
    assert [k for k in sorted(recorded | TIMING) if not declared.has(k)] == []
    assert set(declared) - recorded - TIMING == SOMETIMES and declared.patterns == ()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two encoder-decoders trained a few steps, and a plan probing them with eval.bleu and capacity."""
    root = tmp_path_factory.mktemp("declared")
    _, ckpts = train_toy(root, ("seq2seq-tiny", "luong-tiny"), steps=4, n_test=40)
    both = json.dumps(ckpts)
    path = root / "probes.yaml"
    path.write_text(
        "name: declared\nsteps:\n"
        f"  bleu: {{uses: eval.bleu, with: {{checkpoints: {both}, tokenize: none, buckets: [1, 5, 9], "
        "n_bootstrap: 20, max_len_b: 4}}\n"
        f"  capacity: {{uses: probe.capacity, with: {{checkpoints: {both}, buckets: [2, 6]}}}}\n"
    )
    return root, ckpts, build(path)


def _written_and_declared(tiny, step: str) -> tuple[set[str], Keys]:
    root, _, plan = tiny
    inst = plan.instances[step]
    summary = inst.component(Context(root / step), **inst.params)["summary"]
    return set(summary), _Declared(plan.instances).keys(inst)


@pytest.mark.slow  # trains two tiny models
def test_eval_bleu_writes_only_declared_keys(tiny):
    written, declared = _written_and_declared(tiny, "bleu")
    assert [k for k in sorted(written) if not declared.has(k)] == []
    assert {"bleu/luong-tiny/len_5-8", "bleu/seq2seq-tiny/longest", "count/len_9-inf"} <= written
    # declared and not written: BLEU on Moses tokens (tokenized: false), and each pair only once, A before B
    pair = re.compile(r"bleu_diff_(ci|p)/([^/]+)/([^/]+)")
    unwritten = {k for k in declared if k not in written}
    assert all(k.startswith("bleu_tok/") or pair.match(k) for k in unwritten), unwritten


@pytest.mark.slow  # trains two tiny models
def test_probe_capacity_writes_exactly_its_declared_keys(tiny):
    written, declared = _written_and_declared(tiny, "capacity")
    assert written == set(declared) and declared.patterns == ()


@pytest.mark.slow  # trains two tiny models
def test_a_tiny_training_writes_only_declared_keys(tiny):
    _, ckpts, _ = tiny
    declared = Keys(get("train.model").summary_keys)
    for ckpt in ckpts.values():
        summary = load_info(ckpt)["summary"]
        assert [k for k in sorted(summary) if not declared.has(k)] == []
