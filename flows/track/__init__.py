"""Tracking in MLflow.

    runs.py     the ``Tracker``: one parent run per pipeline run, one nested run per step run,
                and the step context components log through
    note.py     the parent run's description (the scorecard, or what the run did)
    links.py    where to follow a run: its MLflow and Prefect pages
    zombies.py  runs a dead process left RUNNING, marked KILLED
    environment.py  the machine, devices, library versions and commit a run's numbers came from

``runs.py`` imports MLflow; import the module you need so the others stay light.
"""
