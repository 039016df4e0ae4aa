"""Operations: nightly runs and what they show over time.

schedule.py  schedules as Prefect deployments with a cron; ``serve`` runs them here
history/     one pipeline's runs judged night by night (direction and seed noise), notify.py tells someone
"""
