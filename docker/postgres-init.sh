#!/bin/sh
# Create the MLflow and Prefect databases on the first start of the Postgres volume.
set -eu
for db in "${MLFLOW_DB:-mlflow}" "${PREFECT_DB:-prefect}"; do
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
       -c "CREATE DATABASE \"$db\" OWNER \"$POSTGRES_USER\""
done
