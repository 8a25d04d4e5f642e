# Sourced by scripts that install Debian packages when something is missing (services-up.sh,
# ensure-chromium.sh). Needs `log` and `die` from the sourcing script; sets traps on EXIT, INT and TERM.

POLICY_RC_CREATED=0
cleanup() {
  if [ "$POLICY_RC_CREATED" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

apt_install() {
  [ "$(id -u)" = 0 ] || die "need root to install: $* (or install them yourself)"
  command -v apt-get >/dev/null || die "apt-get not found; install $* yourself"
  log "installing with apt-get: $*"
  # keep maintainer scripts from starting system-wide instances (e.g. redis on 6379)
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    POLICY_RC_CREATED=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || die "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "$@" >&2 || die "apt-get install $* failed"
  cleanup
  POLICY_RC_CREATED=0
}
