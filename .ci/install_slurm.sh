#!/usr/bin/env bash
# SLURM and munge for tests/workflow/test_slurm.py (see .ci/install_apt.sh; always exits 0).
exec bash "$(dirname "$0")/install_apt.sh" slurm "sbatch squeue sinfo scontrol scancel slurmctld slurmd munged" slurm-wlm munge
