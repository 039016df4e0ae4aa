"""Was every translation model trained? One row per training of a pipeline run, read from MLflow.

    python benchmarks/convergence_table.py [--tracking-uri URI] [--experiment four-bottlenecks] [--parent newest]

For every step run of the parent run that logged ``vitals/late_gain`` (a ``train.model`` run): its
headline metric's gain over the last 20% of its steps, the validation loss's change over the same
window, whether it counts as converged (``components/train/convergence.py``), its steps and seconds;
and, for translation models, the test BLEU of the shortest and the longest length bucket as the
``eval.bleu`` steps of the same parent run scored them (matched by model label and seed). Runs only
the MLflow client; the parent's step runs are found as ``metric_keys.py`` finds them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from mlflow.tracking import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metric_keys import runs  # noqa: E402


def label_of(name: str) -> tuple[str, str]:
    """(model label, seed) of a step run name: ``mt[arch=seq2seq-small,seed=0]`` -> (seq2seq-small, 0);
    ``mt_transformer[seed=1]`` -> (transformer, 1)."""
    pairs = dict(re.findall(r"(\w+)=([^,\]]+)", name))
    step = name.split("[", 1)[0]
    label = pairs.get("arch") or step.removeprefix("mt_")
    return label, pairs.get("seed", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_uri = os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///.bottlenecks/mlflow.db"
    parser.add_argument("--tracking-uri", default=default_uri)
    parser.add_argument("--experiment", default="four-bottlenecks")
    parser.add_argument("--parent", default="newest")
    parser.add_argument("--steps", nargs="*", default=["mt", "mt_attention", "mt_transformer", "mt_bahdanau"])
    args = parser.parse_args()
    client = MlflowClient(args.tracking_uri)
    exp = client.get_experiment_by_name(args.experiment)
    if exp is None:
        print(f"no experiment {args.experiment!r} at {args.tracking_uri}")
        return 1
    found = runs(client, exp.experiment_id, args.parent)
    if not found:
        print("no such parent run")
        return 1
    parent, children = found[0], found[1:]
    bleu: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for r in children:
        name = r.data.tags.get("mlflow.runName", "")
        if not name.startswith("bleu"):
            continue
        seed = dict(re.findall(r"(\w+)=([^,\]]+)", name)).get("seed", "")
        m = r.data.metrics
        for key in m:
            hit = re.fullmatch(r"eval/bleu/bleu/(.+)/shortest", key)
            if hit:
                label = hit.group(1)
                bleu[(label, seed)] = (m[key], m.get(f"eval/bleu/bleu/{label}/longest"))
    rows = []
    for r in children:
        name = r.data.tags.get("mlflow.runName", "")
        m = r.data.metrics
        if "vitals/late_gain" not in m or name.split("[", 1)[0] not in args.steps:
            continue
        label, seed = label_of(name)
        short, long_ = bleu.get((label, seed), (None, None))
        rows.append((name, m, short, long_))
    print(f"parent run {parent.info.run_id} ({parent.data.tags.get('mlflow.runName', '')}), {len(rows)} trainings")
    head = f"{'training':<42} {'steps':>6} {'late gain':>9} {'loss chg':>9} {'conv':>5}"
    print(f"{head} {'test short':>10} {'test long':>9} {'seconds':>8}")
    for name, m, short, long_ in sorted(rows):

        def f(v, spec):
            return format(v, spec) if isinstance(v, (int, float)) else "-"

        print(
            f"{name:<42} {f(m.get('vitals/steps'), '.0f'):>6} {f(m.get('vitals/late_gain'), '+.2f'):>9} "
            f"{f(m.get('vitals/late_loss_change'), '+.4f'):>9} {'yes' if m.get('vitals/converged') == 1 else 'NO':>5} "
            f"{f(short, '.1f'):>10} {f(long_, '.1f'):>9} {f(m.get('vitals/seconds'), '.0f'):>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
