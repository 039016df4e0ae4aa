#!/bin/sh
# Create the MLflow, MLflow login and Prefect databases on the first start of the Postgres volume
# (a volume made before the logins: `docker compose exec postgres createdb -U bottlenecks mlflow_auth`).
set -eu
for db in "${MLFLOW_DB:-mlflow}" "${MLFLOW_AUTH_DB:-mlflow_auth}" "${PREFECT_DB:-prefect}"; do
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
       -c "CREATE DATABASE \"$db\" OWNER \"$POSTGRES_USER\""
done
