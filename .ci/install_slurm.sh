#!/usr/bin/env bash
# Installs SLURM and munge (Debian packages) for tests/test_slurm.py, which starts its own
# throw-away one-node cluster (tests/slurm_cluster.py: private munge key/socket, state in a temp
# directory; no service of the system is started or configured).
# Always exits 0: where the install is impossible (no root, no apt, no network) the test skips and
# says why.
set -u
need=(sbatch squeue sinfo scontrol scancel slurmctld slurmd munged)
have_all() {
  local p
  for p in "${need[@]}"; do
    command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || return 1
  done
}
if have_all; then
  echo "install_slurm: SLURM and munge already present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_slurm: not root or no apt-get: SLURM tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d (where present, e.g. containers) keeps the packages from starting system services.
if { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } >/tmp/install_slurm.log 2>&1; then
  echo "install_slurm: installed slurm-wlm and munge"
else
  echo "install_slurm: apt-get failed (see /tmp/install_slurm.log): SLURM tests will be skipped" >&2
  tail -n 5 /tmp/install_slurm.log >&2 || true
fi
exit 0
