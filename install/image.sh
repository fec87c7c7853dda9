#!/usr/bin/env bash
# The workshop image (install/Dockerfile), built and tested on this machine:
#
#   bash install/image.sh build     # bases if missing, the wheel if missing, then the image
#   bash install/image.sh test      # build, then notebook 01 inside with --network none
#                                   # (every check cell and every result), and --cpus 1 → 1 worker
#
# The bases are the public images install/Dockerfile names (quay.io/jupyter/minimal-notebook),
# used when present or pullable. Where no registry answers, it builds stand-ins from Debian's
# packages: a Debian made by mmdebstrap (`docker import`), with this machine's extra CA
# certificates (/usr/local/share/ca-certificates) so that PyPI and static.rust-lang.org answer
# through an intercepting proxy, then install/base/minimal-notebook.Dockerfile on top. Docker's
# cache keeps them: a second build reuses them.
#
# Settings (environment): NBCUDA_IMAGE (default nbcuda-workshop:<version>), NBCUDA_BASE_IMAGE
# (a runtime base to use as is), NBCUDA_SUITE (Debian suite of the stand-in, default bookworm),
# NBCUDA_BIN (the binary wheel.sh packs, default target/release/nbcuda), NBCUDA_REBUILD=1
# (build the image's own layers again, not from Docker's cache; the bases stay).
# Needs: a running Docker daemon; mmdebstrap only when a stand-in base must be made. The
# stand-ins are kept by tag (nbcuda-local/*): `docker rmi` them to make them again.
# Prints the time of each step and the image's size.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PUBLIC_BASE="quay.io/jupyter/minimal-notebook:python-3.11"
SUITE="${NBCUDA_SUITE:-bookworm}"
LOCAL_DEBIAN="nbcuda-local/debian:$SUITE"
LOCAL_BASE="nbcuda-local/minimal-notebook:$SUITE"
BIN="${NBCUDA_BIN:-$ROOT/target/release/nbcuda}"
NICE=(nice -n 10)

die() { printf 'image.sh: %s\n' "$*" >&2; exit 1; }
say() { printf '==> %s\n' "$*"; }
has_image() { docker image inspect "$1" >/dev/null 2>&1; }
timed() { # timed LABEL CMD...: runs CMD, prints LABEL and its seconds
    local label="$1" t0=$SECONDS
    shift
    "$@"
    printf 'image.sh: %-44s %5d s\n' "$label" $((SECONDS - t0))
}

command -v docker >/dev/null || die "docker not found: install Docker (Debian: apt-get install docker.io)"
docker info >/dev/null 2>&1 || die "the Docker daemon does not answer (start it: \`dockerd &\` as root, or \`systemctl start docker\`)"
[ -x "$BIN" ] || die "no binary at $BIN: run \`bash install/setup.sh\` first"
VERSION="$("$BIN" --version | awk '{print $2}')"
IMAGE="${NBCUDA_IMAGE:-nbcuda-workshop:$VERSION}"

# The Debian stand-in: mmdebstrap's root file system as an image, with this machine's extra CAs.
debian_base() {
    command -v mmdebstrap >/dev/null \
        || die "no registry answers and mmdebstrap is missing: apt-get install mmdebstrap (or set NBCUDA_BASE_IMAGE)"
    local hooks=()
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
        hooks+=(--customize-hook='mkdir -p "$1/usr/local/share/ca-certificates"'
            --customize-hook='cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/"'
            --customize-hook='chroot "$1" update-ca-certificates')
    fi
    "${NICE[@]}" mmdebstrap --quiet --variant=minbase \
        --include=ca-certificates,python3,python3-venv,curl \
        "${hooks[@]}" --customize-hook='rm -rf "$1"/var/lib/apt/lists/*' \
        "$SUITE" - \
        | docker import \
            --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
            --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'CMD ["/bin/bash"]' \
            - "$LOCAL_DEBIAN" >/dev/null
}

# The runtime base install/Dockerfile builds FROM: the public one if it can be had, else the stand-in.
runtime_base() {
    if [ -n "${NBCUDA_BASE_IMAGE:-}" ]; then
        has_image "$NBCUDA_BASE_IMAGE" || docker pull "$NBCUDA_BASE_IMAGE" >/dev/null \
            || die "cannot pull NBCUDA_BASE_IMAGE=$NBCUDA_BASE_IMAGE"
        BASE="$NBCUDA_BASE_IMAGE"
        return
    fi
    if has_image "$PUBLIC_BASE" || timeout 60 docker pull -q "$PUBLIC_BASE" >/dev/null 2>&1; then
        BASE="$PUBLIC_BASE"
        return
    fi
    BASE="$LOCAL_BASE"
    has_image "$BASE" && return
    say "no registry answers: building the stand-in bases from Debian's packages ($SUITE)"
    has_image "$LOCAL_DEBIAN" || timed "base $LOCAL_DEBIAN (mmdebstrap)" debian_base
    timed "base $LOCAL_BASE" "${NICE[@]}" docker build -q -t "$LOCAL_BASE" \
        --build-arg "DEBIAN_IMAGE=$LOCAL_DEBIAN" \
        -f install/base/minimal-notebook.Dockerfile install/base
}

# The wheel of this checkout's binary, in dist/ (the build context takes every dist/*.whl, so
# wheels of other versions go).
wheel() {
    local whl old
    for old in dist/nbcuda-*.whl; do
        [ -e "$old" ] || continue
        case "$old" in dist/nbcuda-"$VERSION"-*) ;; *) echo "image.sh: removing $old (another version)"; rm -f "$old" ;; esac
    done
    whl="$(ls -t dist/nbcuda-"$VERSION"-*.whl 2>/dev/null | head -1 || true)"
    if [ -z "$whl" ] || [ "$whl" -ot "$BIN" ]; then
        rm -f dist/nbcuda-"$VERSION"-*.whl
        NBCUDA_BIN="$BIN" bash install/wheel.sh "$ROOT/dist" >/dev/null
    fi
}

build() {
    local t0=$SECONDS
    runtime_base
    wheel
    say "docker build -t $IMAGE (BASE_IMAGE=$BASE)"
    local rebuild=()
    [ "${NBCUDA_REBUILD:-0}" = 1 ] && rebuild=(--no-cache)
    timed "image $IMAGE" "${NICE[@]}" docker build "${rebuild[@]}" -t "$IMAGE" \
        --build-arg "BASE_IMAGE=$BASE" \
        -f install/Dockerfile .
    [ -n "${NBCUDA_IMAGE:-}" ] || docker tag "$IMAGE" nbcuda-workshop:latest
    printf 'image.sh: %-44s %5d s\n' "build, all steps" $((SECONDS - t0))
    printf 'image.sh: image size %s MB\n' \
        "$(( $(docker image inspect -f '{{.Size}}' "$IMAGE") / 1000000 ))"
}

test_image() {
    say "notebook 01 in $IMAGE with --network none"
    local t0=$SECONDS
    docker run --rm --network none --cpus 2 "$IMAGE" \
        python3 /opt/nbcuda/check_notebook.py /home/jovyan/nbcuda-notebooks/01-vector-add.ipynb
    printf 'image.sh: %-44s %5d s\n' "notebook 01 in the container" $((SECONDS - t0))
    say "--cpus 1 gives one ptxsim worker"
    docker run --rm --network none --cpus 1 "$IMAGE" python3 /opt/nbcuda/check_notebook.py --workers 1
    echo "image.sh: the image passed"
}

case "${1:-}" in
    build) build ;;
    test) build && test_image ;;
    *) die "usage: bash install/image.sh build|test" ;;
esac
