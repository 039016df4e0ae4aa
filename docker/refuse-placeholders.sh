#!/bin/sh
# Refuse to start a server while a secret is still the placeholder of an old .env.example, then run
# the command. docker-compose.yml starts Postgres, MLflow and Prefect through it; a secret that
# holds "change-me" (whole, or inside a database URL) stops the container with a message naming the
# .env variable and how to make a value.
set -eu
source_of() {  # the .env variable a container's variable comes from
  case "$1" in
    MLFLOW_AUTH_ADMIN_PASSWORD | MLFLOW_TRACKING_PASSWORD) echo MLFLOW_ADMIN_PASSWORD ;;
    PREFECT_SERVER_API_AUTH_STRING | PREFECT_API_AUTH_STRING) echo PREFECT_AUTH_STRING ;;
    *_URI | *_URL) echo POSTGRES_PASSWORD ;;  # the database URLs carry Postgres' password
    *) echo "$1" ;;
  esac
}
refused=""
for name in $(awk 'BEGIN { for (k in ENVIRON) if (k ~ /^[A-Za-z_][A-Za-z0-9_]*$/) print k }'); do
  eval "value=\${$name-}"
  case "$value" in
    *change-me* | *CHANGE-ME* | *changeme* | *CHANGEME*) ;;
    *) continue ;;
  esac
  secret="$(source_of "$name")"
  case " $refused " in *" $secret "*) continue ;; esac
  refused="$refused $secret"
  how="a secret of your own: openssl rand -hex 32 makes one"
  [ "$secret" = PREFECT_AUTH_STRING ] && how="admin:SECRET, SECRET from openssl rand -hex 32"
  where=""
  [ "$secret" != "$name" ] && where=" (in $name)"
  echo "refusing to start: $secret$where is still the placeholder of .env.example; set it in .env to $how (docs/deployment.md, Logins)" >&2
done
[ -z "$refused" ] || exit 78  # EX_CONFIG
exec "$@"
