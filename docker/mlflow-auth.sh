#!/bin/sh
# Start MLflow's basic-auth app: write its configuration from the environment (the auth database's
# URL holds the Postgres password, so it is not a file in the repository), then run the command.
#   MLFLOW_AUTH_DATABASE_URI        where the users and their permissions live
#   MLFLOW_AUTH_DEFAULT_PERMISSION  what a logged-in user may do without a grant (READ: read only)
#   MLFLOW_AUTH_ADMIN_USERNAME/_PASSWORD  the admin, created on the first start (MLflow reads these)
#   MLFLOW_AUTH_CACHE_SECONDS       how long a worker trusts a checked login (0: check the password
#                                   hash on every request, which costs the server about 0.3 s of CPU each)
set -eu
: "${MLFLOW_AUTH_DATABASE_URI:?MLFLOW_AUTH_DATABASE_URI is not set}"
config="${MLFLOW_AUTH_CONFIG_PATH:-/tmp/basic_auth.ini}"
umask 077
cat > "$config" <<INI
[mlflow]
default_permission = ${MLFLOW_AUTH_DEFAULT_PERMISSION:-READ}
database_uri = ${MLFLOW_AUTH_DATABASE_URI}
admin_username = ${MLFLOW_AUTH_ADMIN_USERNAME:-admin}
auth_cache_ttl_seconds = ${MLFLOW_AUTH_CACHE_SECONDS:-60}
INI
export MLFLOW_AUTH_CONFIG_PATH="$config"
# CSRF protection of the sign-up page needs one key for all the server's workers; a new one each
# start only voids a sign-up form left open across a restart
if [ -z "${MLFLOW_FLASK_SERVER_SECRET_KEY:-}" ]; then
  MLFLOW_FLASK_SERVER_SECRET_KEY="$(python -c 'import secrets; print(secrets.token_hex(32))')"
  export MLFLOW_FLASK_SERVER_SECRET_KEY
fi
exec "$@"
