#!/usr/bin/env bash
# Sets up nbcuda in this checkout. Idempotent and quick when everything is already in place.
#
#   1. cargo build --release                      → target/release/nbcuda
#   2. .venv with install/requirements.txt         (NVRTC + CUDA headers wheels, JupyterLab, test tools)
#   3. nbcuda install --sys-prefix into .venv      (the .venv's Jupyter finds the "nbcuda" kernel)
#   4. nbcuda warm-up                              (builds nb, serde, ndarray into evcxr's build cache)
#   5. nbcuda doctor                               (one OK/FIX line per thing)
#
# Then: .venv/bin/jupyter lab
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
REQ="$ROOT/install/requirements.txt"
STAMP="$VENV/.nbcuda-requirements.sha256"

say() { printf '==> %s\n' "$*"; }
die() { printf 'setup.sh: %s\n' "$*" >&2; exit 1; }

# 1. The binary --------------------------------------------------------------------------------
command -v cargo >/dev/null || die "cargo not found: install Rust with rustup (https://rustup.rs)"
# rust-src lets evcxr's rust-analyzer complete and document std items in Rust cells (optional).
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/src/rust" ] && command -v rustup >/dev/null; then
    say "rustup component add rust-src"
    rustup component add rust-src || echo "setup.sh: could not add rust-src (completion of std items will be limited)" >&2
fi
say "cargo build --release"
cargo build --release
BIN="$ROOT/target/release/nbcuda"
[ -x "$BIN" ] || die "cargo build did not produce $BIN"

# 2. The Python environment --------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    command -v python3 >/dev/null || die "python3 not found: install Python 3.9+ (with its venv module)"
    say "python3 -m venv .venv"
    rm -rf "$VENV"
    python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)"
fi
want="$( (cat "$REQ"; "$VENV/bin/python" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" = "$want" ]; then
    say ".venv is up to date with install/requirements.txt"
else
    say "pip install -r install/requirements.txt into .venv"
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ"
    echo "$want" > "$STAMP"
fi

# 3. The kernelspec, where the .venv's Jupyter looks first ---------------------------------------
say "nbcuda install --sys-prefix (VIRTUAL_ENV=.venv)"
VIRTUAL_ENV="$VENV" "$BIN" install --sys-prefix

# 4. What Rust cells depend on, built once into evcxr's cache (~/.cache/evcxr) -------------------
# Otherwise the first Jupyter kernel's first cell that uses nb waits for that build (30 s here).
WARM_STAMP="${XDG_CACHE_HOME:-$HOME/.cache}/nbcuda/warm-up.sha256"
warm="$( (cat crates/nb/Cargo.toml crates/nb/src/*.rs Cargo.lock; rustc -V) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$WARM_STAMP" 2>/dev/null || true)" = "$warm" ] && [ -d "${XDG_CACHE_HOME:-$HOME/.cache}/evcxr" ]; then
    say "evcxr's build cache already holds nb (nbcuda warm-up done)"
else
    say "nbcuda warm-up"
    if "$BIN" warm-up; then
        mkdir -p "$(dirname "$WARM_STAMP")" && echo "$warm" > "$WARM_STAMP"
    else
        echo "setup.sh: nbcuda warm-up failed (Rust cells build nb on first use instead)" >&2
    fi
fi

# 5. Check -------------------------------------------------------------------------------------
say "nbcuda doctor"
VIRTUAL_ENV="$VENV" "$BIN" doctor

say "done: start JupyterLab with  .venv/bin/jupyter lab  (pick the \"Rust + CUDA (nbcuda)\" kernel)"
