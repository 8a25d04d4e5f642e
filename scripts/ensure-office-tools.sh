#!/usr/bin/env bash
# Makes sure the readers of the exports' tests are there (services/api/exports/exports.readers.int.test.ts):
# LibreOffice Calc (`soffice`, headless) opens the CSV and XLSX exports, poppler's `pdftotext` reads
# the PDF. Installed with apt-get when missing (root needed; otherwise it says what to do).
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "ensure-office-tools: $*" >&2; }
die() { echo "ensure-office-tools: ERROR: $*" >&2; exit 1; }

missing=()
[ -x "${SOFFICE_PATH:-/usr/bin/soffice}" ] || missing+=(libreoffice-calc)
command -v pdftotext >/dev/null || missing+=(poppler-utils)
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
[ -z "${SOFFICE_PATH:-}" ] || [ -x "$SOFFICE_PATH" ] || die "no LibreOffice at $SOFFICE_PATH (SOFFICE_PATH)"
# shellcheck source=lib/apt.sh
source "$SCRIPT_DIR/lib/apt.sh"
apt_install "${missing[@]}"
