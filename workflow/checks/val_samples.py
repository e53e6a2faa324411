"""How often fewer val samples choose the same best temperature as the recorded ones (the lever
eval.val_samples; grpo_repro.report.temperature.choice_agreement).

Reads a finished run's val tables at eval.temperatures (pi_ref and every run's final checkpoint,
n samples per prompt: run it on a run evaluated with val_samples null, i.e. eval.samples on val),
resamples k of each prompt's n samples many times and prints, per policy and k, the fraction of
resamples that choose the n-sample best temperature and the mean success lost when they do not.

The configuration is the one the run recorded (results/summary.json), so a run of an older commit
reads as it was made.

Usage: .venv/bin/python workflow/checks/val_samples.py --repo DIR [--k 5 10 20] [--resamples 1000]
Prints its figures; writes nothing.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path

from grpo_repro.report import temperature


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repo", default=".", help="a checkout whose results/ holds a finished run")
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--resamples", type=int, default=1000)
    a = ap.parse_args()
    repo = Path(a.repo)
    results = str(repo / "results")
    config = json.loads((Path(results) / "summary.json").read_text())["config"]
    final = max(
        int(Path(p).stem.split("_")[1])
        for p in glob.glob(f"{results}/train/*/seed_*/checkpoints/step_*")
    )
    entries = [
        e
        for e in temperature.entries(
            results, config["variants"], config["train"]["seeds"], [final], config
        )
        if e["split"] == "val"
    ]
    long = temperature.load(entries, {})
    out = temperature.choice_agreement(long, a.k, a.resamples, seed=0)
    print(f"val tables of {results} (final step {final}), {a.resamples} resamples per k")
    print(out.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for k, g in out.groupby("k"):
        print(
            f"k = {k}: same choice in {g['agree'].mean():.1%} of resamples (mean over policies), "
            f"mean regret {g['regret'].mean():.4f}, worst {g['regret'].max():.4f}"
        )


if __name__ == "__main__":
    main()
