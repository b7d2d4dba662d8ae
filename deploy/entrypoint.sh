#!/bin/sh
# Forge's container entrypoint: one image, every role. The Helm chart starts its containers with
# exactly these commands; the fleet rehearsal test starts its processes through this same script.
#
#   worker [flags]        attempt worker (FORGE_WORKER_ROLE=attempts|all; judge queue too with all)
#   judge [flags]         judge worker: the judge task queue only, rate-limited by FORGE_JUDGE_RATE
#   ingester              results stream → ClickHouse (run ≥ 2: they share the durable consumer)
#   run|sweep|schedule|stats|compare|sql|… [args]   any forge command (one-off Jobs, CronJobs)
#   healthcheck           exit 0 when this container's role is healthy (the image's HEALTHCHECK)
#
# Long-running roles serve /healthz, /readyz and /metrics on FORGE_HEALTH_PORT (default 9464).
# Everything written goes under /tmp (FORGE_HOME), so the root filesystem can be read-only.
set -eu

root=${FORGE_ROOT:-$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)}
node=${FORGE_NODE:-node}
: "${FORGE_HOME:=${TMPDIR:-/tmp}/forge}"
export FORGE_HOME
role_file="$FORGE_HOME/.role"

usage() {
  echo "usage: entrypoint.sh worker|judge|ingester|healthcheck|<forge command> [args…]" >&2
  echo "  e.g. entrypoint.sh worker --concurrency 50; entrypoint.sh sweep /etc/forge/sweep.yaml --workers 0" >&2
}

# a missing setting is a clear message and exit 2, never a stack trace from deep inside
need() {
  for name in "$@"; do
    eval "value=\${$name:-}"
    if [ -z "$value" ]; then
      case "$name" in
        FORGE_TEMPORAL_ADDRESS) what='the Temporal frontend, host:port (e.g. temporal-frontend.temporal:7233)' ;;
        FORGE_NATS_URL) what='the NATS cluster, e.g. nats://nats.nats:4222' ;;
        *) what='required' ;;
      esac
      echo "entrypoint.sh $role: $name is not set: $what" >&2
      exit 2
    fi
  done
}

if [ $# -eq 0 ]; then
  usage
  exit 2
fi
role=$1
shift

case "$role" in
  healthcheck)
    exec "$node" "$root/deploy/healthcheck.mjs"
    ;;
  worker | judge | ingester)
    if [ "$role" = ingester ]; then need FORGE_NATS_URL; else need FORGE_TEMPORAL_ADDRESS FORGE_NATS_URL; fi
    : "${FORGE_HEALTH_PORT:=9464}"
    export FORGE_HEALTH_PORT
    mkdir -p "$FORGE_HOME"
    printf '%s\n' "$role" >"$role_file"
    # the V8 flags of Forge's busy processes, by role (stack/node-flags.ts NODE_FLAGS; a judge worker gets none),
    # unless NODE_OPTIONS names them: then they are the user's
    case "$role" in
      worker) v8_flags='--max-semi-space-size=64 --min-semi-space-size=16' ;;
      ingester) v8_flags=--max-semi-space-size=32 ;;
      *) v8_flags= ;;
    esac
    case " ${NODE_OPTIONS:-} " in *semi-space-size* | *semi_space_size*) v8_flags= ;; esac
    # shellcheck disable=SC2086 # flags without spaces of their own, split on purpose
    case "$role" in
      worker) exec "$node" $v8_flags "$root/bin/run.js" worker "$@" ;;
      judge) exec "$node" "$root/bin/run.js" worker --role judge "$@" ;;
      ingester) exec "$node" $v8_flags "$root/bin/run.js" ingester "$@" ;;
    esac
    ;;
  -h | --help | help)
    usage
    exec "$node" "$root/bin/run.js" --help
    ;;
  -*)
    echo "entrypoint.sh: the first argument is a role or a forge command, not a flag (got \"$role\")" >&2
    usage
    exit 2
    ;;
  *)
    # one-off commands serve no health endpoint: the healthcheck passes while they run
    mkdir -p "$FORGE_HOME"
    printf 'job\n' >"$role_file"
    exec "$node" "$root/bin/run.js" "$role" "$@"
    ;;
esac
