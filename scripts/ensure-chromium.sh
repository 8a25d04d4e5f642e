#!/usr/bin/env bash
# Makes sure a headless Chromium is there for the beacon's browser test
# (services/ingest/tracker.browser.int.test.ts): CHROMIUM_PATH, or Debian's `chromium` package,
# installed with apt-get when missing (root needed; otherwise it says what to do).
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "ensure-chromium: $*" >&2; }
die() { echo "ensure-chromium: ERROR: $*" >&2; exit 1; }

path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$path" ]; then exit 0; fi
[ -z "${CHROMIUM_PATH:-}" ] || die "no Chromium at $path (CHROMIUM_PATH)"
# shellcheck source=lib/apt.sh
source "$SCRIPT_DIR/lib/apt.sh"
apt_install chromium
