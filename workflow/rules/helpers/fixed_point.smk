"""Stage fixed_point's tables: the runs of every study (grpo_repro.fixed_point.runs) and their
checkpoint steps."""

from grpo_repro.fixed_point import runs as fp_runs

FP = config["fixed_point"]
FP_DIR = f"{RESULTS}/fixed_point"
FP_TREE = Tree(FP_DIR)
FP_G = config["train"]["num_generations"]  # G of the base runs
FP_STUDIES = fp_runs.studies(FP)  # compact only when fixed_point.compact is set
# {variant}_{kl}[_{setting}]/beta_{beta}/seed_{seed} -> run: every run of every study, each once
FP_TABLE = fp_runs.table(FP, FP_G, config["train"]["two_kl_alpha"])
FP_LONG = [n for n, r in FP_TABLE.items() if r.long]  # the convergence check's runs
FP_COMPACT = [n for n, r in FP_TABLE.items() if r.compact]  # the default graph's runs
FP_STEPS = fp_runs.checkpoint_steps(FP)
FP_LONG_STEPS = fp_runs.checkpoint_steps(FP, fp_runs.LONG)
FP_COMPACT_STEPS = fp_runs.checkpoint_steps(FP, fp_runs.COMPACT)
FP_COMPACT_RESAMPLE = (FP[fp_runs.COMPACT] or {}).get("resample", {})  # counts resampled at
FP_COMPACT_DIR = f"{FP_DIR}/{fp_runs.COMPACT}"  # the compact study's page, figure and data
FP_COMPACT_FILES = ["summary.md", "fixed_point.png", "data/resolution.csv"]


def fp_study(study):
    """The runs a study compares (grpo_repro.fixed_point.runs.study_runs)."""
    return fp_runs.study_runs(FP, study, FP_G, config["train"]["two_kl_alpha"])


def fixed_point_targets():
    """The default graph's share of the stage: the compact study's page, figure and resolution
    table (none when fixed_point.compact is null); the other studies are named targets."""
    if fp_runs.COMPACT not in FP_STUDIES:
        return []
    return [f"{FP_COMPACT_DIR}/{f}" for f in FP_COMPACT_FILES]
