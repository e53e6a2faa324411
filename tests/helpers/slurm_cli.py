"""Command line of the throw-away SLURM cluster (see tests/helpers/slurm_cluster.py):

python -m tests.helpers.slurm_cli start DIR [--gpus 8 --cpus 128 --mem-mb 1000000]
python -m tests.helpers.slurm_cli stop DIR
python -m tests.helpers.slurm_cli status DIR
"""

from __future__ import annotations

import argparse
import sys

from tests.helpers.slurm_cluster import SlurmCluster, missing_binaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("root", help="directory of the cluster (state, logs, slurm.conf)")
    parser.add_argument(
        "--cpus", type=int, default=None, help="CPUs of the node (default: the machine's)"
    )
    parser.add_argument(
        "--mem-mb", type=int, default=None, help="RealMemory of the node (default: the machine's)"
    )
    parser.add_argument(
        "--gpus", type=int, default=0, help="fake GPUs (gres gpu backed by /dev/null)"
    )
    args = parser.parse_args(argv)
    missing = missing_binaries()
    if missing:
        print(
            f"missing SLURM/munge programs: {', '.join(missing)} (run .ci/install_slurm.sh)",
            file=sys.stderr,
        )
        return 2
    cluster = SlurmCluster(args.root, cpus=args.cpus, mem_mb=args.mem_mb, gpus=args.gpus)
    if args.action == "start":
        cluster.start()
        print(f"export SLURM_CONF={cluster.conf}")
        print(f"export PATH={cluster.root / 'bin'}:$PATH")
    elif args.action == "stop":
        cluster.stop()
    else:
        ok = cluster.running()
        print(
            f"{'running' if ok else 'stopped'}: node {cluster.node} {cluster.node_state() if ok else ''}".rstrip()
        )
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
