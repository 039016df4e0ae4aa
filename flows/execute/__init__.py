"""Execution: a plan run as one Prefect flow run, each step on a worker.

    runner.py      ``run(plan) -> RunResult``: the facade over the private modules it maps
                   (the Prefect flow, the step runner, the parent run, signals, the executor choice)
    executors.py   where steps run: ``threads``, ``processes`` (the default) or ``dask``
    pool.py        the local worker processes, one slot each
    processes.py   how a worker process starts: forked from the forkserver, or afresh
    worker.py      ``run_step(payload)``: one step on a worker, plain data in and out
    order.py       the submission order that keeps workers busy
    cache.py       the content-addressed step cache and its leases
    why.py         why each step of a plan would be computed rather than served from the cache
    sweep.py       what a killed run left open, closed in both stores before a command reads them
    view.py        the live terminal view
    threadsafe.py  locks around matplotlib and tqdm for ``executor: threads``

Importing any of these loads neither Prefect nor MLflow: ``runner.run`` configures the process
(``flows/home.py``) before it imports them, and the CLI calls ``runner.load`` once a run is certain.
"""
