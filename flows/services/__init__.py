"""Services: the processes and stores a run leans on, started and checked here.

    daemon.py          the warm process (a zygote) ``bottlenecks run`` hands its work to
    prefect_server.py  the folder's background Prefect server (runs, schedules and ``serve`` share it)
    scheduler_server.py  a temporary Prefect server for one command (``BOTTLENECKS_PREFECT_SERVER=off``)
    prefect_db.py      a new folder's Prefect database from a migrated template
    mlflow_db.py       a new folder's MLflow store from a migrated template
    templates.py       the atomic template copy both stores use
    ports.py           a free loopback port
    connect.py         fail fast when a configured server does not answer or refuses the login
    logins.py          the logins the team servers ask for, from the clients' own variables

Import the module you need (``from flows.services import connect``): none of them imports
Prefect or MLflow at module level, and nothing here imports the layers that use them.
"""
