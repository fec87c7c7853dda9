#!/usr/bin/env bash
# Packs the release binary that install/setup.sh built into a wheel (it compiles nothing):
#
#   bash install/wheel.sh [OUT_DIR]      → OUT_DIR/nbcuda-VERSION-py3-none-<platform>.whl
#                                          (OUT_DIR defaults to dist/)
#
# The wheel holds one file, the `nbcuda` binary (stripped of symbols), as a script: pip puts it
# in the environment's bin/. Its dependencies are the lines of install/requirements.txt marked
# `# wheel` (NVIDIA's NVRTC, runtime-header and CCCL wheels, jupyter_client). Then, in any venv:
#
#   pip install nbcuda-*.whl && nbcuda install --sys-prefix
#
# The platform tag is honest: manylinux_<glibc>_<arch>, where <glibc> is the newest GLIBC_
# symbol version the binary links against (read with objdump), so pip refuses the wheel on an
# older system instead of installing a binary that cannot start. For an older baseline, build
# on an older system (the Dockerfile's builder image sets it). The binary may link only the
# libraries every manylinux system has (libc, libm, libgcc_s, …); wheel.sh refuses others.
#
# Needs: objdump and strip (binutils), and a Python with the `wheel` package (default: the
# .venv that setup.sh made; PYTHON=... for another).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${NBCUDA_BIN:-$ROOT/target/release/nbcuda}"
OUT="${1:-$ROOT/dist}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
REQ="$ROOT/install/requirements.txt"

die() { printf 'wheel.sh: %s\n' "$*" >&2; exit 1; }

[ -x "$BIN" ] || die "no binary at $BIN: run \`bash install/setup.sh\` first (it builds it; wheel.sh only packs it)"
command -v objdump >/dev/null || die "objdump not found: install binutils"
command -v strip >/dev/null || die "strip not found: install binutils"
"$PY" -c 'import wheel' 2>/dev/null || die "$PY has no \`wheel\` package: run \`bash install/setup.sh\` or \`$PY -m pip install wheel\`"

VERSION="$("$BIN" --version | awk '{print $2}')"
[[ "$VERSION" =~ ^[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)$ ]] || die "cannot read the version from \`$BIN --version\`"

# The platform: the ELF's machine and the newest glibc symbol version it needs.
case "$(objdump -f "$BIN" | sed -n 's/^architecture: \([^,]*\),.*/\1/p')" in
    i386:x86-64) ARCH=x86_64 ;;
    aarch64) ARCH=aarch64 ;;
    *) die "unsupported architecture of $BIN: $(objdump -f "$BIN" | grep architecture)" ;;
esac
GLIBC="$(objdump -T "$BIN" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
[ -n "$GLIBC" ] || die "$BIN links no glibc symbols: is it a static or non-glibc binary?"
PLATFORM="manylinux_${GLIBC%%.*}_${GLIBC#*.}_${ARCH}"
PLATFORM="${PLATFORM//./_}"

# Libraries outside the manylinux set would be missing on the students' machines.
ALLOWED=' libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 libgcc_s.so.1 libstdc++.so.6 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 '
for lib in $(objdump -p "$BIN" | awk '/NEEDED/ {print $2}'); do
    [[ "$ALLOWED" == *" $lib "* ]] || die "$BIN needs $lib, which a manylinux system may lack"
done

REQUIRES="$(sed -n 's/^\([^#]*[^ #]\) *# *wheel\b.*/\1/p' "$REQ")"
[ -n "$REQUIRES" ] || die "no \`# wheel\` lines in $REQ"

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
TREE="$STAGE/nbcuda-$VERSION"
mkdir -p "$TREE/nbcuda-$VERSION.data/scripts" "$TREE/nbcuda-$VERSION.dist-info"
strip -o "$TREE/nbcuda-$VERSION.data/scripts/nbcuda" "$BIN"
chmod 0755 "$TREE/nbcuda-$VERSION.data/scripts/nbcuda"

{
    echo "Metadata-Version: 2.1"
    echo "Name: nbcuda"
    echo "Version: $VERSION"
    echo "Summary: A Jupyter kernel for GPU-accelerated Rust notebooks: Rust cells, %%cuda cells (NVRTC), magics; runs on an NVIDIA GPU or on ptxsim, a CPU simulator"
    echo "Requires-Python: >=3.9"
    while IFS= read -r dep; do echo "Requires-Dist: $dep"; done <<<"$REQUIRES"
    echo "Description-Content-Type: text/markdown"
    echo
    echo "After \`pip install\`, run \`nbcuda install --sys-prefix\` (writes the Jupyter kernelspec) and \`nbcuda doctor\`."
    echo "Rust cells need a Rust toolchain (https://rustup.rs); magic and %%cuda cells do not."
} >"$TREE/nbcuda-$VERSION.dist-info/METADATA"
cat >"$TREE/nbcuda-$VERSION.dist-info/WHEEL" <<EOF
Wheel-Version: 1.0
Generator: nbcuda install/wheel.sh
Root-Is-Purelib: false
Tag: py3-none-$PLATFORM
EOF

mkdir -p "$OUT"
"$PY" -m wheel pack --dest-dir "$OUT" "$TREE" >/dev/null
WHL="$OUT/nbcuda-$VERSION-py3-none-$PLATFORM.whl"
[ -f "$WHL" ] || die "wheel pack did not write $WHL"
echo "$WHL ($(du -k "$WHL" | cut -f1) KiB; needs glibc $GLIBC or newer)"
