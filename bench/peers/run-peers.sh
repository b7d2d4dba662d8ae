#!/usr/bin/env bash
# Forge against its peers on the same 1,000-attempt workload (issue 15); see bench/peers/README.md.
# Installs promptfoo (npm) and Inspect AI (PyPI), pinned, into a scratch directory outside the repo,
# builds Forge, then runs Forge's engine in one process, `forge run` (stack up, warm), promptfoo and
# Inspect AI — the last three in interleaved rounds — and prints one table of each one's middle round.
#
#   bench/peers/run-peers.sh                      # scratch: ${TMPDIR:-/tmp}/forge-peers
#   FORGE_PEERS_DIR=/scratch/peers bench/peers/run-peers.sh --attempts 200 --concurrency 100
#   bench/peers/run-peers.sh --rounds 1           # forge run, promptfoo and Inspect AI once each (default 3 rounds)
#
# FORGE_PEERS_SKIP_BUILD=1 skips `npm run build` (dist/ is current). Installs are kept and reused.
set -euo pipefail

PROMPTFOO_VERSION=0.121.20
INSPECT_VERSION=0.3.285

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
scratch=${FORGE_PEERS_DIR:-${TMPDIR:-/tmp}/forge-peers}
case "$scratch" in
  "$repo"|"$repo"/*) echo "run-peers.sh: FORGE_PEERS_DIR=$scratch is inside the repository; give a scratch directory outside it" >&2; exit 2 ;;
esac
mkdir -p "$scratch"

# promptfoo: its own package.json in the scratch directory, never the repo's node_modules
installed=$(node -p "try { require('$scratch/promptfoo/node_modules/promptfoo/package.json').version } catch { '' }")
if [ "$installed" != "$PROMPTFOO_VERSION" ]; then
  echo "installing promptfoo@$PROMPTFOO_VERSION into $scratch/promptfoo …"
  mkdir -p "$scratch/promptfoo"
  [ -f "$scratch/promptfoo/package.json" ] || echo '{ "private": true }' > "$scratch/promptfoo/package.json"
  (cd "$scratch/promptfoo" && npm install --no-audit --no-fund --loglevel=error "promptfoo@$PROMPTFOO_VERSION")
fi

# Inspect AI: a virtualenv in the scratch directory
python=${FORGE_PEERS_PYTHON:-python3}
if [ ! -x "$scratch/inspect-venv/bin/python" ]; then
  echo "creating a virtualenv in $scratch/inspect-venv …"
  "$python" -m venv "$scratch/inspect-venv"
fi
installed=$("$scratch/inspect-venv/bin/python" -c 'import inspect_ai; print(inspect_ai.__version__)' 2>/dev/null || true)
if [ "$installed" != "$INSPECT_VERSION" ]; then
  echo "installing inspect-ai==$INSPECT_VERSION into $scratch/inspect-venv …"
  "$scratch/inspect-venv/bin/pip" install --quiet --disable-pip-version-check "inspect-ai==$INSPECT_VERSION"
fi

cd "$repo"
if [ "${FORGE_PEERS_SKIP_BUILD:-}" != "1" ]; then npm run build >/dev/null; fi
exec nice -n "${FORGE_PEERS_NICE:-10}" node dist/bench/peers/compare.js --scratch "$scratch" "$@"
