"""Operations: nightly runs, the looks of `run --until-decided`, and what runs show over time.

decide.py       ``until_decided``: the looks of a sequential design, seeds added where a claim is open
looks.py        ``run_looks``: those looks over a pipeline file, each run by the caller (``run --until-decided``)
deployments.py  schedules as Prefect deployments with a cron: made, read back, listed, removed (no Prefect import)
heartbeats.py   Prefect's automation that marks a flow run Crashed when its heartbeats stop
prefect_api.py  the few Prefect REST calls that needs, over the standard library
schedule.py     the flow each schedule's slot runs (``run_pipeline``), and its ``RunnerDeployment``
serve.py        ``serve``: a Prefect runner for the schedules, stopped in one line
slots.py        missed and skipped slots recorded in MLflow; the newest missed slot caught up
history/        one pipeline's runs judged night by night (direction and seed noise), notify.py tells someone
"""
