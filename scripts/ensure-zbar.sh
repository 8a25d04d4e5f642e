#!/usr/bin/env bash
# Makes sure `zbarimg` (Debian's zbar-tools) is there for the QR codes' scan test
# (services/api/links/qr.int.test.ts), installed with apt-get when missing (root needed; otherwise
# it says what to do).
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "ensure-zbar: $*" >&2; }
die() { echo "ensure-zbar: ERROR: $*" >&2; exit 1; }

if command -v zbarimg >/dev/null; then exit 0; fi
# shellcheck source=lib/apt.sh
source "$SCRIPT_DIR/lib/apt.sh"
apt_install zbar-tools
