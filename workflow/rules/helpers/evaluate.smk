"""Stage evaluate's helpers: the prompt sets and tables of an evaluation job, the stage's targets."""


def eval_data(tree=TREE):
    """The prompt set of each split an evaluation job reads (EVAL_SPLITS)."""
    return [tree.split_file(s) for s in EVAL_SPLITS]


def eval_tasks(run):
    """The tables of one run's evaluation job (grpo_repro.evaluate.tasks; `run` may be the
    wildcard {run})."""
    return ev_tasks.tasks(RESULTS, run, STEPS, config)


def evaluate_targets():
    """Every evaluation table and its JSON sidecar."""
    return [p for r in [REF, *RUNS] for t in eval_tasks(r) for p in (t.csv, t.json)]
