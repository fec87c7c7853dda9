#!/usr/bin/env bash
# Installs what the browser test (tests/python/test_browser.py) needs, and nothing else:
#
#   1. Debian's Chromium at /usr/bin/chromium   (apt-get install chromium, when missing)
#   2. playwright-core, pinned by tests/browser/package-lock.json   (npm ci, when missing)
#
# Idempotent and quick when both are there. Exits 0 when the browser test can run, and otherwise
# exits 3 with one line on stderr saying what is missing (the test then skips with that line).
# It never downloads a browser build of its own: playwright-core drives the system Chromium.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHROMIUM=/usr/bin/chromium
BROWSER_DIR="$ROOT/tests/browser"

say() { printf '==> %s\n' "$*"; }
cannot() { printf 'browser.sh: %s\n' "$*" >&2; exit 3; }

# 1. Chromium ------------------------------------------------------------------------------------
if [ ! -x "$CHROMIUM" ]; then
    command -v apt-get >/dev/null || cannot "$CHROMIUM is missing and there is no apt-get to install it"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            SUDO="sudo -n"
        else
            cannot "$CHROMIUM is missing; install it with: sudo apt-get install -y chromium"
        fi
    fi
    say "apt-get install -y chromium"
    # The package lists may be missing or stale on a fresh machine: update once, then install.
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; then
        $SUDO apt-get update -q >/dev/null 2>&1 || true
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 ||
            cannot "apt-get install chromium failed (no package source reachable?)"
    fi
    [ -x "$CHROMIUM" ] || cannot "apt-get installed chromium but $CHROMIUM is still missing"
fi

# 2. playwright-core -----------------------------------------------------------------------------
command -v node >/dev/null || cannot "node is missing (apt-get install nodejs npm)"
command -v npm >/dev/null || cannot "npm is missing (apt-get install npm)"
want="$(sed -n 's/.*"playwright-core": *"\([^"]*\)".*/\1/p' "$BROWSER_DIR/package.json" | head -1)"
have="$(node -e 'try { console.log(require(process.argv[1]).version) } catch { }' \
    "$BROWSER_DIR/node_modules/playwright-core/package.json" 2>/dev/null || true)"
if [ -z "$want" ] || [ "$have" != "$want" ]; then
    say "npm ci in tests/browser (playwright-core $want)"
    (cd "$BROWSER_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
        cannot "npm ci in tests/browser failed (npm registry not reachable?)"
fi

say "browser test ready: $("$CHROMIUM" --version 2>/dev/null | head -1), playwright-core $want"
