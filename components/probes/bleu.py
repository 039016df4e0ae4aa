"""eval.bleu (B3): BLEU and chrF overall and per source-length bucket, with bootstrap CIs."""

from __future__ import annotations

import contextlib
import json
import math
import os
from typing import Any, Literal

import numpy as np

from components import Context, component
from components.bounds import Count, Edges, NonNegative, Size
from components.colours import colours
from components.data.io import detokenize, load_translation
from components.models.decoding import translate
from components.probes import common as P
from components.probes.decode import bucket_names, bucket_of
from components.train.checkpoint import load_info, load_model

BOOTSTRAP_SEED = 12345  # sacrebleu's own default seed, set explicitly so every run resamples alike
REPLICATES_KEPT = 100  # bootstrap replicates written per model and bucket (``bleu_rep_<b>/...``) for the scorecard
Z95 = 1.959963984540054  # a 95% half-width in standard errors


def score(hyps: list[str], refs: list[str], tokenize: str, n_bootstrap: int) -> dict[str, float]:
    """Return sacrebleu BLEU and chrF, with 95% bootstrap half-widths when n_bootstrap > 1."""
    scores, _ = paired_scores({"": hyps}, refs, tokenize, n_bootstrap)
    return scores[""]


@contextlib.contextmanager
def _sacrebleu_seed(seed: int):
    """sacrebleu's significance tests read their RNG seed from SACREBLEU_SEED when built."""
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_scores(
    systems: dict[str, list[str]],
    refs: list[str],
    tokenize: str,
    n_bootstrap: int,
    seed: int = BOOTSTRAP_SEED,
    keep: int = 0,
) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], dict[str, float]]]:
    """Score every system on the same sentences, with sacrebleu's paired bootstrap (Koehn 2004,
    ``sacrebleu.significance.PairedTest``, ``n_bootstrap`` resamples, seeded).

    Returns per label ``bleu``, ``chrf`` and their 95% half-widths ``bleu_ci``/``chrf_ci``, and per
    pair ``(A, B)`` (A before B in ``systems``) ``p``, the paired bootstrap's p-value for A != B, and
    ``diff_ci``, the 95% half-width (1.96 standard deviations) of BLEU(A) - BLEU(B) over the same
    resampled sentence sets: both systems' corpus BLEU recomputed from their per-sentence n-gram
    statistics (``BLEU.sentence_score``'s counts, ``BLEU.compute_bleu``) on each resample.

    ``keep``: also return per label ``bleu_rep``, its BLEU on the first ``keep`` of those resamples
    (:func:`bleu_replicates`: the resampled sentence indices depend only on ``seed`` and the number of
    sentences, so every run of a matrix over training seeds resamples the same sentence sets and the
    scorecard can measure the test-set error the seeds share)."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    labels = list(systems)
    if not refs:
        return {label: {"bleu": math.nan, "chrf": math.nan} for label in labels}, {}
    if n_bootstrap <= 1:
        return {
            label: {
                "bleu": BLEU(tokenize=tokenize).corpus_score(hyps, [refs]).score,
                "chrf": CHRF().corpus_score(hyps, [refs]).score,
            }
            for label, hyps in systems.items()
        }, {}
    scores: dict[str, dict[str, float]] = {}
    pairs: dict[tuple[str, str], dict[str, float]] = {}
    with _sacrebleu_seed(seed):
        for i, base in enumerate(labels):
            rest = labels[i + 1 :]
            if i and not rest:
                break
            metrics = {"bleu": BLEU(tokenize=tokenize)} | ({} if i else {"chrf": CHRF()})
            named = [(base, systems[base])] + [(label, systems[label]) for label in rest]
            _, table = PairedTest(named, metrics, [refs], test_type="bs", n_samples=n_bootstrap)()
            results = {("bleu" if k.startswith("BLEU") else "chrf"): v for k, v in table.items() if k != "System"}
            if not i:
                for j, label in enumerate(labels):
                    scores[label] = {
                        "bleu": results["bleu"][j].score,
                        "chrf": results["chrf"][j].score,
                        "bleu_ci": float(results["bleu"][j].ci),
                        "chrf_ci": float(results["chrf"][j].ci),
                    }
            for j, label in enumerate(rest, start=1):
                pairs[(base, label)] = {"p": float(results["bleu"][j].p_value)}
    if len(labels) > 1 or keep:
        replicates = bleu_replicates(systems, refs, tokenize, n_bootstrap, seed)
        for (a, b), entry in pairs.items():
            entry["diff_ci"] = Z95 * float(np.std(replicates[a] - replicates[b], ddof=1))
        if keep:
            for label in labels:
                scores[label]["bleu_rep"] = [float(f"{r:.6g}") for r in replicates[label][:keep]]
    return scores, pairs


def bleu_replicates(
    systems: dict[str, list[str]], refs: list[str], tokenize: str, n: int, seed: int = BOOTSTRAP_SEED
) -> dict[str, np.ndarray]:
    """Corpus BLEU of every system on the same ``n`` resamples of the sentences (with replacement,
    seeded): paired bootstrap replicates, from each sentence's n-gram counts."""
    from sacrebleu.metrics import BLEU

    metric = BLEU(tokenize=tokenize, effective_order=True)  # counts are the same; it only quiets a warning
    idx = np.random.default_rng(seed).choice(len(refs), size=(n, len(refs)), replace=True)
    out = {}
    for label, hyps in systems.items():
        sent = [metric.sentence_score(h, [r]) for h, r in zip(hyps, refs)]
        stats = np.array([[*x.counts, *x.totals, x.sys_len, x.ref_len] for x in sent], dtype=np.int64)
        sums = stats[idx].sum(axis=1)  # (n, 10): 4 matches, 4 totals, hypothesis and reference length
        out[label] = np.array(
            [
                BLEU.compute_bleu(list(row[:4]), list(row[4:8]), int(row[8]), int(row[9]), smooth_method="exp").score
                for row in sums
            ]
        )
    return out


def score_by_length(
    runs: dict[str, tuple[list[str], list[str], list[str]]],
    buckets: list[int],
    tokenize: str,
    n_bootstrap: int,
    seed: int = BOOTSTRAP_SEED,
    keep: int = REPLICATES_KEPT,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Score every model overall and per source-length bucket; models translated from the same
    sentences are scored together, so each pair gets sacrebleu's paired test.

    Returns the summary entries (``bleu/<label>[/len_<b>|/shortest|/longest]``, ``chrf``, ``bleu_ci``,
    ``chrf_ci``, ``count/len_<b>``) and the pair entries (``bleu_diff_ci/<A>/<B>/...``: the 95%
    half-width of A - B; ``bleu_diff_p/<A>/<B>/...``: the paired bootstrap's p-value;
    ``bleu_rep_<b>/<label>/...``: BLEU on bootstrap resample ``b``, the first ``keep`` of them)."""
    names = bucket_names(buckets)
    groups: dict[tuple, list[str]] = {}
    for label, (src, refs, _) in runs.items():
        groups.setdefault((tuple(src), tuple(refs)), []).append(label)
    summary: dict[str, Any] = {}
    pairs: dict[str, float] = {}

    def put(part: str, scores, pair_stats, aliases=()):
        for label, values in scores.items():
            for k, v in values.items():
                for where in (part, *aliases):
                    if k == "bleu_rep":  # replicates: outputs for the scorecard, not metrics
                        pairs.update({P.key(f"bleu_rep_{b}", label, where): r for b, r in enumerate(v)})
                    else:
                        summary[P.key(k, label, where)] = v
        for (a, b), values in pair_stats.items():
            for where in (part, *aliases):
                pairs[P.key("bleu_diff_ci", a, b, where)] = values["diff_ci"]
                pairs[P.key("bleu_diff_p", a, b, where)] = values["p"]

    for (src, refs), labels in groups.items():
        hyps = {label: runs[label][2] for label in labels}
        put("", *paired_scores(hyps, list(refs), tokenize, n_bootstrap, seed, keep))
        which = [bucket_of(len(s.split()), buckets) for s in src]
        filled = [b for b in names if b in which]
        for b in names:
            idx = [i for i, w in enumerate(which) if w == b]
            summary[P.key("count", f"len_{b}")] = len(idx)
            picked = {label: [h[i] for i in idx] for label, h in hyps.items()}
            aliases = [alias for alias, at in (("shortest", 0), ("longest", -1)) if filled and filled[at] == b]
            part = paired_scores(picked, [refs[i] for i in idx], tokenize, n_bootstrap if idx else 0, seed, keep)
            put(f"len_{b}", *part, aliases=aliases)
    return summary, pairs


def paper_tokens(lines: list[str], lang: str) -> list[str]:
    """Moses-tokenised, compound-split text, as the Transformer paper scored en-de (its
    get_ende_bleu.sh: tokenizer.perl, then ``a-b`` -> ``a ##AT##-##AT## b``, then multi-bleu.perl)."""
    import re

    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang=lang or "en")
    split = re.compile(r"(\S)-(\S)")
    out = []
    for line in lines:
        text = tok.tokenize(line, escape=False, return_str=True)
        out.append(split.sub(r"\1 ##AT##-##AT## \2", text))  # one pass, as perl's s{}{}g
    return out


def tokenized_bleu(hyps: list[str], refs: list[str], lang: str) -> float:
    """BLEU on Moses-tokenised, compound-split text (multi-bleu.perl's convention: no further
    tokenisation); not comparable with sacreBLEU's detokenised 13a figure."""
    from sacrebleu.metrics import BLEU

    if not hyps:
        return float("nan")
    return BLEU(tokenize="none").corpus_score(paper_tokens(hyps, lang), [paper_tokens(refs, lang)]).score


def merge_checkpoints(checkpoints: dict[str, str] | list[dict[str, str]]) -> dict[str, str]:
    """Merge a list of label -> checkpoint maps (one per training step) into one, in order."""
    if isinstance(checkpoints, dict):
        return dict(checkpoints)
    merged: dict[str, str] = {}
    for group in checkpoints:
        for label, path in group.items():
            if label in merged:
                raise P.ProbeError(
                    f"eval.bleu: label {label!r} appears in two checkpoint groups; give each model its own label"
                )
            merged[label] = path
    return merged


def longest(src_text: list[str]) -> int:
    """Index of the longest source sentence in words (the first of equals)."""
    return max(range(len(src_text)), key=lambda i: (len(src_text[i].split()), -i))


def _translate(ctx: Context, bar, label: str, ckpt: str, data, split: str, max_examples: int, decoding: dict):
    """Translate the first ``max_examples`` sentences of a split with one checkpoint; return the
    sources, references, detokenised hypotheses and the data's meta."""
    folder = data or load_info(ckpt)["data"]
    ds, meta = load_translation(folder)
    part = ds[split]
    n = len(part) if max_examples <= 0 else min(max_examples, len(part))
    src_text, refs = list(part["src"][:n]), list(part["tgt"][:n])
    model = load_model(ckpt, ctx.device)
    bar.update(total=(bar.total or 0) + n, description=f"translate {label}")
    ids = translate(model, list(part["src_ids"][:n]), meta, **decoding, device=ctx.device, on_batch=bar.advance)
    return src_text, refs, detokenize(folder, ids), meta


def _write_texts(ctx: Context, label: str, hyps: list[str], refs: list[str]) -> None:
    """Write ``hyps.<label>.txt`` and ``refs.<label>.txt``, one sentence a line."""
    for name, lines in (("hyps", hyps), ("refs", refs)):
        path = ctx.path(f"{name}.{P.key(label)}.txt")
        path.write_text("".join(line.replace("\n", " ") + "\n" for line in lines))
        ctx.log_artifact(path)


def _side_by_side(ctx: Context, example: dict, label: str, split: str, run: tuple) -> dict:
    """Start the example at the first model's longest source sentence; add each model's output."""
    src_text, refs, hyps = run
    if not example and src_text:
        i = longest(src_text)
        example = {
            "split": split,
            "index": i,
            "words": len(src_text[i].split()),
            "source": src_text[i],
            "reference": refs[i],
            "hyps": {},
        }
    if example and example["index"] < len(src_text) and src_text[example["index"]] == example["source"]:
        example["hyps"][label] = hyps[example["index"]]
    elif example:  # another data folder: its sentence at that index is not the same source
        ctx.log.warning("eval.bleu: %s was scored on other data; left out of the side-by-side example", label)
    return example


def _write_samples(ctx: Context, samples: dict[str, list[str]]) -> str:
    """Write the sample translations, one column per model, as ``samples.csv``."""
    import pandas as pd

    table = ctx.path("samples.csv")
    pd.DataFrame(samples).to_csv(table, index=False)
    ctx.log_artifact(table)
    return str(table)


def _plot(summary: dict, curves: dict[str, list], names: list[str], tokenize: str, split: str, n_bootstrap: int):
    """Draw BLEU against source length for every model, with its bootstrap band."""
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(names))
    colour = colours(curves)  # each architecture's colour in every figure
    for label, ys in curves.items():
        (line,) = ax.plot(x, ys, "o-", color=colour[label], label=label)
        ci = [summary.get(P.key("bleu_ci", label, f"len_{b}")) for b in names]
        if all(isinstance(c, (int, float)) for c in ci):  # sacrebleu's 95% bootstrap over the bucket's sentences
            lo, hi = np.array(ys, float) - ci, np.array(ys, float) + ci
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    counts = [summary[P.key("count", f"len_{b}")] for b in names]
    ax.set_xticks(x, [f"{b}\n(n={c})" for b, c in zip(names, counts)], fontsize=8)
    ax.set(
        xlabel="source length (words)",
        ylabel=f"BLEU ({tokenize})",
        title=f"BLEU by source length ({split})"
        + (f", 95% bootstrap bands ({n_bootstrap} resamples)" if n_bootstrap > 1 else ""),
    )
    ax.legend()
    return fig


def _write_example(ctx: Context, example: dict) -> str:
    """Write the side-by-side example as ``examples.json``."""
    examples = ctx.path("examples.json")
    examples.write_text(json.dumps(example, indent=2, ensure_ascii=False) + "\n")
    ctx.log_artifact(examples)
    return str(examples)


def _translate_all(
    ctx: Context,
    checkpoints: dict[str, str],
    data,
    split: str,
    max_examples: int,
    decoding: dict,
    *,
    tokenized: bool,
    n_samples: int,
):
    """Translate with every checkpoint; return the runs (label -> sources, references, hypotheses),
    the summary's ``n`` and ``bleu_tok`` entries, the sample table and the side-by-side example."""
    example: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    samples: dict[str, list[str]] = {}
    runs: dict[str, tuple[list[str], list[str], list[str]]] = {}  # label -> (sources, references, hypotheses)
    with ctx.progress(total=None, description="translate") as bar:  # sentences of every model
        for label, ckpt in checkpoints.items():
            src_text, refs, hyps, meta = _translate(ctx, bar, label, ckpt, data, split, max_examples, decoding)
            _write_texts(ctx, label, hyps, refs)
            runs[label] = (src_text, refs, hyps)
            if tokenized:
                summary[P.key("bleu_tok", label)] = tokenized_bleu(hyps, refs, meta.get("tgt_lang", "en"))
            samples.setdefault("source", src_text[:n_samples])
            samples.setdefault("reference", refs[:n_samples])
            samples[f"hyp_{label}"] = hyps[:n_samples]
            example = _side_by_side(ctx, example, label, split, runs[label])
            summary["n"] = len(src_text)
    return runs, summary, samples, example


@component(
    "eval.bleu",
    outputs=["summary", "plot", "samples", "examples"],
    bottleneck="B3",
    summary=[
        "n",
        "count/len_{buckets|bucket_names}",
        "bleu/{checkpoints}",
        "bleu/{checkpoints}/len_{buckets|bucket_names}",
        "bleu/{checkpoints}/shortest",
        "bleu/{checkpoints}/longest",
        "chrf/{checkpoints}",
        "chrf/{checkpoints}/len_{buckets|bucket_names}",
        "chrf/{checkpoints}/shortest",
        "chrf/{checkpoints}/longest",
        "bleu_ci/{checkpoints}",
        "bleu_ci/{checkpoints}/len_{buckets|bucket_names}",
        "bleu_ci/{checkpoints}/shortest",
        "bleu_ci/{checkpoints}/longest",
        "chrf_ci/{checkpoints}",
        "chrf_ci/{checkpoints}/len_{buckets|bucket_names}",
        "chrf_ci/{checkpoints}/shortest",
        "chrf_ci/{checkpoints}/longest",
        "bleu_tok/{checkpoints}",  # with tokenized
        # the paired bootstrap: each model's BLEU on resample <b>, each pair's difference and p-value
        "bleu_rep_*/{checkpoints}",
        "bleu_rep_*/{checkpoints}/len_{buckets|bucket_names}",
        "bleu_rep_*/{checkpoints}/shortest",
        "bleu_rep_*/{checkpoints}/longest",
        "bleu_diff_ci/{checkpoints}/{checkpoints}",
        "bleu_diff_ci/{checkpoints}/{checkpoints}/len_{buckets|bucket_names}",
        "bleu_diff_ci/{checkpoints}/{checkpoints}/shortest",
        "bleu_diff_ci/{checkpoints}/{checkpoints}/longest",
        "bleu_diff_p/{checkpoints}/{checkpoints}",
        "bleu_diff_p/{checkpoints}/{checkpoints}/len_{buckets|bucket_names}",
        "bleu_diff_p/{checkpoints}/{checkpoints}/shortest",
        "bleu_diff_p/{checkpoints}/{checkpoints}/longest",
        "converged/{checkpoints}",  # the trainings behind the checkpoints (probes/common.py trainings)
        "late_gain/{checkpoints}",
    ],
)
def eval_bleu(
    ctx: Context,
    *,
    checkpoints: dict[str, str] | list[dict[str, str]],
    data: str | None = None,  # default: each checkpoint's own training data folder
    split: Literal["valid", "test"] = "test",
    beam: Size = 1,  # 1: greedy
    length_penalty: NonNegative = 0.6,
    max_len_a: NonNegative = 1.5,  # each output at most a * its own source length + b tokens
    max_len_b: Count = 10,
    batch_size: Size = 64,
    buckets: Edges = [1, 10, 20, 30, 40, 50],  # noqa: B006 - source words
    tokenize: Literal[  # sacrebleu's tokenizers; 'none' for pre-split synthetic tokens
        "13a", "none", "intl", "char", "zh", "ja-mecab", "ko-mecab", "spm", "flores101", "flores200", "spBLEU-1K"
    ] = "13a",
    n_bootstrap: Count = 1000,  # paired bootstrap resamples (1000+ as Koehn 2004; fewer give coarse p-values); 0: none
    bootstrap_seed: Count = BOOTSTRAP_SEED,
    max_examples: Count = 0,  # 0: the whole split
    n_samples: Count = 20,
    tokenized: bool = False,  # also BLEU on Moses-tokenised, compound-split text (the papers' convention)
) -> dict:
    """Translate a split with each model, detokenise, and score with sacrebleu by source length.

    Args:
        checkpoints: label -> checkpoint of an encoder-decoder (``{"seq2seq": ..., "luong": ...}``),
            or a list of such maps merged in order (a matrixed step's checkpoints plus another
            step's: ``["${mt.checkpoint}", {transformer: "${mt_transformer.checkpoint}"}]``).

    Returns:
        ``summary``: ``bleu/<label>``, ``chrf/<label>``, ``bleu_ci/<label>`` and per bucket
        ``bleu/<label>/len_<a-b>``, ``chrf/...``, ``count/len_<a-b>`` (source words), and
        ``bleu/<label>/shortest`` / ``longest`` for the first and last non-empty bucket; ``plot``:
        BLEU against source length for every model; ``samples``: CSV of sample translations;
        with ``tokenized``, also ``bleu_tok/<label>``: BLEU of the whole split on Moses-tokenised,
        compound-split text, the convention of the Transformer paper's 27.3 (a different number
        from sacreBLEU's detokenised ``bleu``, usually higher on en-de);
        ``examples``: JSON with the longest source sentence, its reference and every model's output.
        Hypotheses and references are written as ``hyps.<label>.txt`` and ``refs.<label>.txt``.
    """
    names = bucket_names(buckets)
    checkpoints = merge_checkpoints(checkpoints)
    if not checkpoints:
        raise P.ProbeError("eval.bleu: no checkpoints to evaluate")
    decoding = dict(
        beam=beam, length_penalty=length_penalty, max_len_a=max_len_a, max_len_b=max_len_b, batch_size=batch_size
    )
    runs, summary, samples, example = _translate_all(
        ctx, checkpoints, data, split, max_examples, decoding, tokenized=tokenized, n_samples=n_samples
    )
    with ctx.progress(total=None, description="score (paired bootstrap)"):
        scored, pairs = score_by_length(runs, buckets, tokenize, n_bootstrap, bootstrap_seed)
    summary |= scored
    curves = {label: [summary[P.key("bleu", label, f"len_{b}")] for b in names] for label in runs}
    summary = P.flat(summary)
    P.log_summary(ctx, summary)  # the pairs' p-values and intervals are outputs for the scorecard, not metrics
    summary |= P.flat(pairs)
    summary |= P.trainings(checkpoints)  # which trainings were still improving (the scorecard names them)
    table = _write_samples(ctx, samples)
    fig = _plot(summary, curves, names, tokenize, split, n_bootstrap)
    examples = _write_example(ctx, example)
    return {
        "summary": summary,
        "plot": P.save_figure(ctx, fig, "bleu_by_length.png"),
        "samples": table,
        "examples": examples,
    }
