#!/usr/bin/env bash
# The MCP client's test tools (only with --tests):
#   ~/.cache/sayri/mcp/conformance/node_modules/@modelcontextprotocol/conformance
#       the official MCP conformance suite (npm; the Node.js that runs it is named in
#       ~/.cache/sayri/mcp/node-path), whose client scenarios drive Sayri's client
#       (crates/sayri-mcp/tests/conformance.rs);
#   ~/.cache/sayri/mcp/venv/bin/mcp-server-time
#       a real stdio MCP server from PyPI for `sayri mcp test` and the sandbox tests;
#   ~/.cache/sayri/mcp/venv/bin/mcp-server-git
#       the reference git server from PyPI, for the end-to-end turns;
#   ~/.cache/sayri/mcp/servers/node_modules/@modelcontextprotocol/server-filesystem
#       the reference filesystem server from npm, for the end-to-end turns and the sandbox's
#       read boundary;
#   ~/.cache/sayri/mcp/sdk-client/node_modules/@modelcontextprotocol/sdk
#       the official TypeScript SDK, whose client drives `sayri mcp serve` in the tests.
# Idempotent: each part is skipped when it is already installed.
set -euo pipefail
[[ " $* " == *" --tests "* ]] || exit 0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=node.bash
source "$here/node.bash"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sayri"
mcp="$cache/mcp"
conformance_version="0.1.16"
time_version="2026.10.19"
git_version="2026.10.19"
filesystem_version="2026.8.31"
sdk_version="1.32.2"
mkdir -p "$mcp"

suite="$mcp/conformance"
# The suite needs Node.js 22 (fs.globSync): Debian 12's is 18, so usually the PyPI build.
node="$(sayri_node "$cache/test-models" 22)"
printf '%s\n' "$node" >"$mcp/node-path"

# npm_once DIR NAME PACKAGE VERSION: installs PACKAGE@VERSION (exact) into DIR/node_modules with
# the Node.js above, unless it is there already; DIR gets a private package.json named NAME.
npm_once() {
    local dir="$1" name="$2" package="$3" version="$4"
    [[ -f "$dir/node_modules/$package/package.json" ]] && return 0
    echo "[57-mcp-test-servers] installing $package@$version from npm…"
    mkdir -p "$dir"
    [[ -f "$dir/package.json" ]] || printf '{ "name": "%s", "private": true }\n' "$name" >"$dir/package.json"
    if ! (cd "$dir" && sayri_npm "$node" install --no-audit --no-fund --loglevel=error \
        -E "$package@$version") >"$dir/npm.log" 2>&1; then
        cat "$dir/npm.log" >&2
        echo "setup: npm could not install $package into $dir (log above)" >&2
        exit 1
    fi
    rm -f "$dir/npm.log"
}
npm_once "$suite" sayri-mcp-conformance @modelcontextprotocol/conformance "$conformance_version"

venv="$mcp/venv"
if [[ ! -x "$venv/bin/mcp-server-time" ]]; then
    echo "[57-mcp-test-servers] installing mcp-server-time==$time_version from PyPI into $venv…"
    python3 -m venv "$venv" || { echo "setup: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
    if ! "$venv/bin/pip" install --disable-pip-version-check -q "mcp-server-time==$time_version" >"$mcp/pip.log" 2>&1; then
        cat "$mcp/pip.log" >&2
        echo "setup: pip could not install mcp-server-time into $venv (log above)" >&2
        exit 1
    fi
    rm -f "$mcp/pip.log"
fi

if [[ ! -x "$venv/bin/mcp-server-git" ]]; then
    echo "[57-mcp-test-servers] installing mcp-server-git==$git_version from PyPI into $venv…"
    if ! "$venv/bin/pip" install --disable-pip-version-check -q "mcp-server-git==$git_version" >"$mcp/pip.log" 2>&1; then
        cat "$mcp/pip.log" >&2
        echo "setup: pip could not install mcp-server-git into $venv (log above)" >&2
        exit 1
    fi
    rm -f "$mcp/pip.log"
fi

servers="$mcp/servers"
npm_once "$servers" sayri-mcp-servers @modelcontextprotocol/server-filesystem "$filesystem_version"

sdk_client="$mcp/sdk-client"
npm_once "$sdk_client" sayri-mcp-sdk-client @modelcontextprotocol/sdk "$sdk_version"
