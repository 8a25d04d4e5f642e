#!/usr/bin/env bash
# Makes sure a headless Chromium is there for the beacon's browser test
# (services/ingest/tracker.browser.int.test.ts): CHROMIUM_PATH, or Debian's `chromium` package,
# installed with apt-get when missing (root needed; otherwise it says what to do).
set -euo pipefail
path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$path" ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "ensure-chromium: no Chromium at $path; install Debian's chromium package (or set CHROMIUM_PATH)" >&2
  exit 1
fi
echo "ensure-chromium: installing Debian's chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium >&2
