"""Operations: nightly runs and what they show over time.

schedule.py  schedules as Prefect deployments with a cron; ``serve`` runs them here
history.py   one pipeline's parent runs as a table, regressions against the recent median
"""
