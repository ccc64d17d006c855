#!/bin/sh
# server: brings both PostgreSQL schemas to this server version, writes the configuration from the environment,
#         starts the server, then registers the namespace and the search attributes the service filters by.
# ui:     the Temporal UI server in front of TEMPORAL_ADDRESS, decoding payloads through TEMPORAL_CODEC_ENDPOINT
#         (<PUBLIC_ORIGIN>/codec unless set).
set -eu
# The password from a secret file (docker-compose.yml's `secrets:`), as the postgres image reads POSTGRES_PASSWORD_FILE.
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then POSTGRES_PASSWORD="$(cat "$POSTGRES_PASSWORD_FILE")"; fi
: "${POSTGRES_HOST:=postgres}" "${POSTGRES_PORT:=5432}" "${POSTGRES_USER:=postgres}" "${POSTGRES_PASSWORD:=}"
: "${TEMPORAL_DB:=temporal}" "${TEMPORAL_VISIBILITY_DB:=temporal_visibility}" "${NUM_HISTORY_SHARDS:=4}"
: "${TEMPORAL_NAMESPACE:=default}" "${BROADCAST_ADDRESS:=$(hostname -i | cut -d' ' -f1)}"
export SQL_PASSWORD="$POSTGRES_PASSWORD" PGPASSWORD="$POSTGRES_PASSWORD"
# Where the schemas are and the configuration is written: the image's, or another for a run outside it (the test).
ROOT="${TEMPORAL_ROOT:-/etc/temporal}"

case "${1:-server}" in
ui)
  mkdir -p "$ROOT/ui/config"
  cat > "$ROOT/ui/config/production.yaml" <<YAML
temporalGrpcAddress: ${TEMPORAL_ADDRESS:-temporal-server:7233}
port: ${TEMPORAL_UI_PORT:-8080}
enableUi: true
defaultNamespace: ${TEMPORAL_NAMESPACE}
# The browser calls the codec endpoint itself, with the operator's credentials (the codec operator token as the HTTP
# Basic password GET /codec/login asks for), so the API's CODEC_CORS_ORIGINS must list this UI's origin.
codec:
  endpoint: "${TEMPORAL_CODEC_ENDPOINT:-${PUBLIC_ORIGIN:+${PUBLIC_ORIGIN%/}/codec}}"
  includeCredentials: ${TEMPORAL_CODEC_INCLUDE_CREDENTIALS:-true}
cors:
  cookieInsecure: ${TEMPORAL_UI_COOKIE_INSECURE:-false}
YAML
  exec temporal-ui --root "$ROOT/ui" --config config --env production start
  ;;
server)
  sql_tool() { sql --plugin postgres12 --ep "$POSTGRES_HOST" -p "$POSTGRES_PORT" -u "$POSTGRES_USER" "$@"; }
  for db in "$TEMPORAL_DB" "$TEMPORAL_VISIBILITY_DB"; do
    psql -h "$POSTGRES_HOST" -p "$POSTGRES_PORT" -U "$POSTGRES_USER" -d postgres -tAc \
      "select 1 from pg_database where datname = '$db'" | grep -q 1 || sql_tool --db "$db" create-database
  done
  sql_tool --db "$TEMPORAL_DB" setup-schema -v 0.0
  sql_tool --db "$TEMPORAL_DB" update-schema -d "$ROOT/schema/temporal/versioned"
  sql_tool --db "$TEMPORAL_VISIBILITY_DB" setup-schema -v 0.0
  sql_tool --db "$TEMPORAL_VISIBILITY_DB" update-schema -d "$ROOT/schema/visibility/versioned"

  store() {
    cat <<YAML
      sql:
        pluginName: postgres12
        databaseName: "$1"
        connectAddr: "${POSTGRES_HOST}:${POSTGRES_PORT}"
        connectProtocol: tcp
        user: "${POSTGRES_USER}"
        password: "${POSTGRES_PASSWORD}"
        maxConns: $2
        maxIdleConns: $2
        maxConnLifetime: 1h
YAML
  }
  mkdir -p "$ROOT/config/dynamicconfig"
  # The fair matcher: checkouts' fairness keys (api/services/task-fairness.ts) need it. A mounted file is kept as is.
  [ -f "$ROOT/config/dynamicconfig/production.yaml" ] ||
    printf 'matching.enableFairness:\n  - value: true\n' > "$ROOT/config/dynamicconfig/production.yaml"
  {
    cat <<YAML
log:
  stdout: true
  level: ${LOG_LEVEL:-warn}
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${NUM_HISTORY_SHARDS}
  datastores:
    default:
YAML
    store "$TEMPORAL_DB" "${SQL_MAX_CONNS:-20}"
    echo "    visibility:"
    store "$TEMPORAL_VISIBILITY_DB" "${SQL_VIS_MAX_CONNS:-10}"
    cat <<YAML
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "${BROADCAST_ADDRESS}"
services:
  frontend:
    rpc: { grpcPort: 7233, membershipPort: 6933, bindOnIP: 0.0.0.0 }
  history:
    rpc: { grpcPort: 7234, membershipPort: 6934, bindOnIP: 0.0.0.0 }
  matching:
    rpc: { grpcPort: 7235, membershipPort: 6935, bindOnIP: 0.0.0.0 }
  worker:
    rpc: { grpcPort: 7239, membershipPort: 6939, bindOnIP: 0.0.0.0 }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "${BROADCAST_ADDRESS}:7233"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: $ROOT/config/dynamicconfig/production.yaml
  pollInterval: 60s
YAML
  } > "$ROOT/config/production.yaml"

  server --root "$ROOT" --config config --env production --allow-no-auth start &
  pid=$!
  # sh as PID 1 ignores a signal it has no handler for: `docker stop` would wait its grace period out and kill the
  # server. Forward it, so the server shuts down cleanly.
  trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
  until temporal operator cluster health --address 127.0.0.1:7233 >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || exit 1 # the server died while starting: let the restart policy start it again
    sleep 1
  done
  temporal operator namespace create --namespace "$TEMPORAL_NAMESPACE" --address 127.0.0.1:7233 2>/dev/null || true
  until temporal operator search-attribute create --namespace "$TEMPORAL_NAMESPACE" --address 127.0.0.1:7233 \
    --name SaleReference --type Keyword --name WorkspaceId --type Keyword --name EventDateId --type Keyword \
    --name SaleStatus --type Keyword --name Gateway --type Keyword >/dev/null 2>&1; do sleep 1; done
  status=0
  wait "$pid" || status=$?
  # A trapped signal ends `wait` early while the server still runs: wait for the server's own exit and status.
  while kill -0 "$pid" 2>/dev/null; do
    status=0
    wait "$pid" || status=$?
  done
  exit "$status"
  ;;
*) exec "$@" ;;
esac
