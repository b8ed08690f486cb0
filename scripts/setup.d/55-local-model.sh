#!/usr/bin/env bash
# Installs the small local chat model for Sayri itself (with `--model`): the GGUF file from the
# cache of 50-test-model.sh into Sayri's models directory, and the model server's runtime
# (node-llama-cpp, and Node.js 22 when the system's is older than 20) next to it, where the
# daemon finds them when `provider.local_model` names the model. Choosing the model is left to
# `scripts/ask-local` (only when there are no settings yet) or to you:
#   sayri config set provider.local_model SmolLM2-135M-Instruct.Q4_1
# Idempotent; prints one summary line unless a step fails.
#
# Layout (the state directory is $SAYRI_STATE_DIR, else ~/.local/share/sayri):
#   <state>/models/SmolLM2-135M-Instruct.Q4_1.gguf
#   <state>/llm-server/{node_modules/,bin/node (a link to the Node.js to use),node/?}
set -euo pipefail

want=0
for arg in "$@"; do
    case "$arg" in
        --model) want=1 ;;
    esac
done
[[ $want -eq 1 ]] || exit 0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=node.bash
source "$here/node.bash"
cache="${SAYRI_TEST_MODELS_DIR:-$HOME/.cache/sayri/test-models}"
state="${SAYRI_STATE_DIR:-$HOME/.local/share/sayri}"
model_name="SmolLM2-135M-Instruct.Q4_1.gguf"
mkdir -p "$state"
chmod 700 "$state"
mkdir -p "$state/models" "$state/llm-server"
did=()

if [[ ! -s "$state/models/$model_name" ]]; then
    if [[ ! -s "$cache/$model_name" ]]; then
        echo "[55-local-model] failed: $cache/$model_name is missing (50-test-model.sh fetches it)" >&2
        exit 1
    fi
    ln -f "$cache/$model_name" "$state/models/$model_name.part" 2>/dev/null ||
        cp "$cache/$model_name" "$state/models/$model_name.part"
    mv "$state/models/$model_name.part" "$state/models/$model_name"
    did+=(model)
fi

# The daemon runs <llm-server>/bin/node, so it does not depend on the PATH it was started with.
node="$(sayri_node "$state/llm-server")"
mkdir -p "$state/llm-server/bin"
if [[ "$node" == "$state/llm-server/node/bin/node" ]]; then
    ln -sfn ../node/bin/node "$state/llm-server/bin/node"
else
    ln -sfn "$node" "$state/llm-server/bin/node"
fi
if [[ ! -f "$state/llm-server/node_modules/node-llama-cpp/package.json" ]]; then
    # The runtime 50-test-model.sh put in the cache, hard-linked (no second copy on disk);
    # npm installs it when the cache is on another file system.
    rm -rf "$state/llm-server/node_modules.part"
    if [[ -f "$cache/llm-server/node_modules/node-llama-cpp/package.json" ]] &&
        cp -al "$cache/llm-server/node_modules" "$state/llm-server/node_modules.part" 2>/dev/null; then
        mv "$state/llm-server/node_modules.part" "$state/llm-server/node_modules"
    else
        rm -rf "$state/llm-server/node_modules.part"
        sayri_llm_runtime "$state/llm-server" "$node"
    fi
    did+=(node-llama-cpp)
fi

if [[ ${#did[@]} -eq 0 ]]; then
    echo "[55-local-model] local model installed in $state (cached)"
else
    echo "[55-local-model] local model installed in $state (installed: ${did[*]})"
fi
