"""The run's MLflow parent run: opened with the pipeline's tags and parameters, given the
reports' files and metrics, closed with its description and final status."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from flows.execute._result import RunResult, counts, stopped
from flows.plan.build import Plan
from flows.track import compare, reports
from flows.track.note import artifact_links, run_note
from flows.track.runs import Tracker, flatten, git_commit


def open_parent(plan: Plan, tracker: Tracker, executor: str) -> str:
    """Start the parent run with what identifies the run (tags, params, the pipeline file's text); its id."""
    tags = {
        "pipeline": plan.name,
        "spec_hash": plan.spec_hash,
        "profile": plan.profile or "",
        "pipeline_file": os.path.basename(plan.pipeline.file),
        "pipeline_path": str(Path(plan.pipeline.file).resolve()),  # `history FILE` follows this file's runs
        "git_commit": git_commit(),
        "overrides": " ".join(plan.overrides),
        "executor": executor,
    }
    parent = tracker.start(f"{plan.name}", tags)
    params = {**plan.params, "profile": plan.profile or "", "workers": plan.settings.workers}
    tracker.log(parent, params=flatten(params))
    if plan.pipeline.text:  # `bottlenecks history` shows what changed between two runs' pipelines
        tracker.client.log_text(parent, plan.pipeline.text, f"pipeline/{tags['pipeline_file'] or 'pipeline.yaml'}")
    return parent


def promote_reports(plan: Plan, result: RunResult, tracker: Tracker) -> None:
    """Copy the files and metrics of steps whose component is a report (``promote=True``) onto
    the parent run, where users look first: the figures it shows under ``figures/``, the name of its
    verdicts file as a tag (``bottlenecks history`` reads reasons there), and its headline as the tag
    ``headline``, among the run's tags on its page and a column the runs table can show."""
    parent = result.parent_run_id
    for iid, outputs in result.outputs.items():
        component = plan.instances[iid].component
        if not component.promote:
            continue
        tracker.copy_results(outputs["run_id"], parent, params=False, description=False)  # close_parent writes it
        for value in outputs.values():
            if isinstance(value, str) and os.path.isfile(value):
                tracker.client.log_artifact(parent, value)
        _log_figures(tracker, parent, reports.figures(component.shown("figures", outputs)))
        verdicts = component.shown("verdicts", outputs)
        if isinstance(verdicts, str) and os.path.isfile(verdicts):
            tracker.log(parent, tags={reports.VERDICTS_TAG: os.path.basename(verdicts)})
        headline = component.shown("headline", outputs)
        if isinstance(headline, str) and headline.strip():  # a tag: on the run page, and a runs-table column
            tracker.log(parent, tags={reports.HEADLINE_TAG: headline.strip()[: reports.TAG_MOST]})


def _log_figures(tracker: Tracker, run_id: str, named: dict[str, str]) -> None:
    """Log image files under ``figures/`` on ``run_id``, each as the name given."""
    if not named:
        return
    with tempfile.TemporaryDirectory() as folder:
        for name, path in named.items():
            shutil.copyfile(path, os.path.join(folder, name))
        tracker.client.log_artifacts(run_id, folder, "figures")


def _comparisons(tracker: Tracker, parent: str) -> dict[str, str]:
    """The shared MLflow views that compare this run's trainings (flows/track/compare.py); none when
    the tracking server refuses them: a comparison link is never worth failing a run for."""
    try:
        return compare.save_views(tracker.client, tracker.experiment_id, parent)
    except Exception:  # an older server, a permission refused: the runs table still has every run
        return {}


def close_parent(plan: Plan, result: RunResult, tracker: Tracker, interrupted: str | None) -> None:
    """Give the parent run its step counts, its description and its status: KILLED for a run a
    signal or an exception stopped, else FINISHED or FAILED. A lost tracking server is an error
    of the run, never a crash."""
    parent = result.parent_run_id
    why = interrupted or stopped(result)
    try:
        tracker.log(parent, tags={"status_counts": json.dumps(counts(result))})
        stopping = result.stopped_by is not None or interrupted
        # a stopped run is marked KILLED promptly (a container's grace period is short): no comparisons
        result.comparisons = {} if stopping else _comparisons(tracker, parent)
        note = run_note(plan, result, why, tracker.experiment_id)
        section = artifact_links(compare.note_section(result.comparisons), tracker.experiment_id, parent)
        tracker.note(parent, note.rstrip("\n") + "\n" + section if section else note)
        if stopping:
            tracker.kill(parent, why)
        else:
            tracker.client.set_terminated(parent, "FINISHED" if result.ok else "FAILED")
    except Exception as e:  # the tracking server went away mid-run: report it, don't crash
        result.errors["(tracking)"] = f"could not close parent run {parent}: {type(e).__name__}: {e}"
