"""Named target `replicates`: its tables (replicate seeds, runs, results roots) and helpers."""

from grpo_repro.runs import REPLICATE_ROOT, replicate_variants

REP = config["replicates"]
REP_DIR = f"{RESULTS}/replicates"
REP_ROOT = REPLICATE_ROOT.format(
    results=RESULTS, rep="{rep}"
)  # one replicate's results/ (a pattern)
REP_TREE = Tree(REP_ROOT)
REP_VARIANTS = replicate_variants(config)  # replicates.variants, or the first of `variants`
REP_RUN_TABLE = grpo_runs(REP_VARIANTS, SEEDS)  # a replicate's runs: the {run} wildcard
REP_SEEDS = list(
    dict.fromkeys([int(config["seed"]), *REP["seeds"]])
)  # the default graph's pi_ref first


def rep_tree(w):
    """The results tree of replicate {rep}."""
    return Tree(REPLICATE_ROOT.format(results=RESULTS, rep=w.rep))


def rep_tasks(root, run):
    """A replicate's evaluation tables: pi_ref, and each run's final checkpoint only."""
    last = 0 if run == REF else int(STEPS[-1])
    return [t for t in ev_tasks.tasks(root, run, STEPS, config) if t.step == last]


def rep_entries(root):
    return temperature_entries(root, REP_VARIANTS, SEEDS, STEPS, config)


def rep_best(seed):
    """The best-vs-best table of replicate `seed` (the default graph's for `seed` itself)."""
    if int(seed) == int(config["seed"]):
        return rules.report_temperature.output.best
    return f"{REPLICATE_ROOT.format(results=RESULTS, rep=seed)}/report/data/best_vs_best.csv"
