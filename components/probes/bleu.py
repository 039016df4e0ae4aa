"""eval.bleu (B3): BLEU and chrF overall and per source-length bucket, with bootstrap CIs."""

from __future__ import annotations

import json
from typing import Any, Literal

import numpy as np

from components import Context, component
from components.data.io import detokenize, load_translation
from components.probes import common as P
from components.probes.decode import bucket_names, bucket_of, translate
from components.train.checkpoint import load_info, load_model


def score(hyps: list[str], refs: list[str], tokenize: str, n_bootstrap: int) -> dict[str, float]:
    """Return sacrebleu BLEU and chrF, with 95% bootstrap half-widths when n_bootstrap > 1."""
    from sacrebleu.metrics import BLEU, CHRF

    if not hyps:
        return {"bleu": float("nan"), "chrf": float("nan")}
    bleu = BLEU(tokenize=tokenize).corpus_score(hyps, [refs], n_bootstrap=n_bootstrap)
    chrf = CHRF().corpus_score(hyps, [refs], n_bootstrap=n_bootstrap)
    out = {"bleu": bleu.score, "chrf": chrf.score}
    if n_bootstrap > 1:
        out |= {"bleu_ci": bleu._ci, "chrf_ci": chrf._ci}  # sacrebleu's 95% half-width (its CLI's ± value)
    return out


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


@component("eval.bleu", outputs=["summary", "plot", "samples", "examples"], bottleneck="B3")
def eval_bleu(
    ctx: Context,
    *,
    checkpoints: dict[str, str] | list[dict[str, str]],
    data: str | None = None,  # default: each checkpoint's own training data folder
    split: Literal["valid", "test"] = "test",
    beam: int = 1,  # 1: greedy
    length_penalty: float = 0.6,
    max_len_a: float = 1.5,  # output budget a * source length + b
    max_len_b: int = 10,
    batch_size: int = 64,
    buckets: list[int] = [1, 10, 20, 30, 40, 50],  # noqa: B006 - source words
    tokenize: str = "13a",  # sacrebleu tokenizer; 'none' for pre-split synthetic tokens
    n_bootstrap: int = 1000,  # 0 or 1: no confidence intervals
    max_examples: int = 0,  # 0: the whole split
    n_samples: int = 20,
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
    example: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    curves: dict[str, list[float]] = {}
    samples: dict[str, list[str]] = {}
    with ctx.progress(total=None, description="translate") as bar:  # sentences of every model
        for label, ckpt in checkpoints.items():
            folder = data or load_info(ckpt)["data"]
            ds, meta = load_translation(folder)
            part = ds[split]
            n = len(part) if max_examples <= 0 else min(max_examples, len(part))
            src_text, refs = list(part["src"][:n]), list(part["tgt"][:n])
            model = load_model(ckpt, ctx.device)
            bar.update(total=(bar.total or 0) + n, description=f"translate {label}")
            ids = translate(
                model,
                list(part["src_ids"][:n]),
                meta,
                beam=beam,
                length_penalty=length_penalty,
                max_len_a=max_len_a,
                max_len_b=max_len_b,
                batch_size=batch_size,
                device=ctx.device,
                on_batch=bar.advance,
            )
            hyps = detokenize(folder, ids)
            for name, lines in (("hyps", hyps), ("refs", refs)):
                path = ctx.path(f"{name}.{P.key(label)}.txt")
                path.write_text("".join(line.replace("\n", " ") + "\n" for line in lines))
                ctx.log_artifact(path)
            overall = score(hyps, refs, tokenize, n_bootstrap)
            for k, v in overall.items():
                summary[P.key(k, label)] = v
            if tokenized:
                summary[P.key("bleu_tok", label)] = tokenized_bleu(hyps, refs, meta.get("tgt_lang", "en"))
            which = [bucket_of(len(s.split()), buckets) for s in src_text]
            curves[label] = []
            for b in names:
                idx = [i for i, w in enumerate(which) if w == b]
                summary[P.key("count", f"len_{b}")] = len(idx)
                s = score([hyps[i] for i in idx], [refs[i] for i in idx], tokenize, n_bootstrap if idx else 0)
                for k, v in s.items():
                    summary[P.key(k, label, f"len_{b}")] = v
                curves[label].append(s["bleu"])
            # the first and last non-empty buckets under stable names, so claims hold for any bucketing
            filled = [b for b in names if summary[P.key("count", f"len_{b}")] > 0]
            for alias, b in (("shortest", filled[0]), ("longest", filled[-1])) if filled else ():
                for k in ("bleu", "chrf", "bleu_ci", "chrf_ci"):  # the interval too: verdicts weigh it
                    if P.key(k, label, f"len_{b}") in summary:
                        summary[P.key(k, label, alias)] = summary[P.key(k, label, f"len_{b}")]
            samples.setdefault("source", src_text[:n_samples])
            samples.setdefault("reference", refs[:n_samples])
            samples[f"hyp_{label}"] = hyps[:n_samples]
            if not example and n:
                i = longest(src_text)
                example = {
                    "split": split,
                    "index": i,
                    "words": len(src_text[i].split()),
                    "source": src_text[i],
                    "reference": refs[i],
                    "hyps": {},
                }
            if example and example["index"] < n and src_text[example["index"]] == example["source"]:
                example["hyps"][label] = hyps[example["index"]]
            elif example:  # another data folder: its sentence at that index is not the same source
                ctx.log.warning("eval.bleu: %s was scored on other data; left out of the side-by-side example", label)
            summary["n"] = n
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    import pandas as pd

    table = ctx.path("samples.csv")
    pd.DataFrame(samples).to_csv(table, index=False)
    ctx.log_artifact(table)
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(names))
    for label, ys in curves.items():
        (line,) = ax.plot(x, ys, "o-", label=label)
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
    examples = ctx.path("examples.json")
    examples.write_text(json.dumps(example, indent=2, ensure_ascii=False) + "\n")
    ctx.log_artifact(examples)
    return {
        "summary": summary,
        "plot": P.save_figure(ctx, fig, "bleu_by_length.png"),
        "samples": str(table),
        "examples": str(examples),
    }
