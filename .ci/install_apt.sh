#!/usr/bin/env bash
# Installs Debian packages that optional tests need, where the programs are missing:
#   bash .ci/install_apt.sh NAME "PROGRAMS..." PACKAGES...
#   slurm:    tests/workflow/test_slurm.py starts its own throw-away one-node cluster (private
#             munge key/socket, state in a temp directory; no system service is started or
#             configured; policy-rc.d, where present, keeps the packages from starting services);
#   chromium: tests/workflow/test_report_browser.py opens the HTML report in headless Chromium.
# Always exits 0: where the install is impossible (no root, no apt, no network) those tests skip
# and say why.
set -u
name=$1
read -r -a need <<<"$2"
shift 2
have_all() {
  local p
  for p in "${need[@]}"; do
    command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || return 1
  done
}
if have_all; then
  echo "install_apt $name: ${need[*]} already present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_apt $name: not root or no apt-get: the $name tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
log=/tmp/install_apt_$name.log
if { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1; then
  echo "install_apt $name: installed $*"
else
  echo "install_apt $name: apt-get failed (see $log): the $name tests will be skipped" >&2
  tail -n 5 "$log" >&2 || true
fi
exit 0
