"""Tracking in MLflow.

    runs.py     the ``Tracker``: one parent run per pipeline run, one nested run per step run,
                and the step context components log through
    note.py     the parent run's description (what reports declare, or what the run did)
    reports.py  what each report step shows (``shows=`` on ``@component``), for every view
    links.py    where to follow a run: its MLflow and Prefect pages
    training_note.py  a finished training's description: converged or not, and its curves
    compare.py  one MLflow link per validation metric: this run's trainings side by side by architecture
    zombies.py  runs a dead process left RUNNING, closed, and their Prefect runs brought to agree
    open_runs.py  the folder's runs whose process may still be at work (what a kill leaves)
    environment.py  the machine, devices, library versions and commit a run's numbers came from

``runs.py`` imports MLflow; import the module you need so the others stay light.
"""
