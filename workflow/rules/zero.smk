"""Stage zero: the paper's absorbing zero tested in training (Sec. 3 boundary cases: p_ref(q) = 0 is
a fixed point of every variant's recursion; Sec. 6: "GRPO cannot create successes";
grpo_repro.zero, docs/zero.md). pi_ref's zeros are screened (held-out: its test table; training:
the training split) and confirmed with zero.samples fresh samples; pi_ref and every checkpoint of
every run are measured on them; the control trains the first variant's first-seed run on the
zeros alone, checking that no step before a sampled success moves the weights.
"""

from grpo_repro import config as cfg
from grpo_repro import zero
from grpo_repro.gpus import job_gpus
from grpo_repro.report.registry import CATEGORIES
from grpo_repro.runs import REF, Tree, run_name

ZERO = config["zero"]  # the study's settings (the Snakefile includes this file when set)
ZERO_DIR = f"{P.results}/zero"
ZERO_TREE = Tree(ZERO_DIR)  # the control run's checkpoints
ZERO_CONTROL = run_name(P.variants[0], P.seeds[0])  # the run the control repeats on the zeros alone
ZERO_CONTROL_NAME = zero.CONTROL + ZERO_CONTROL  # the control in the study's tables
# generated held-out problems: the organism's data source only (another's test split is the set)
ZERO_EXTRA = ZERO["extra_held_out"] if config["data"]["source"] == "organism" else 0
# the splits it reads: screened (test, train), and every other the extra problems must avoid
ZERO_SPLITS = [s for s in ("train", "val", "test", "sft") if s in rules.data_prepare.output.keys()]


rule zero_reference:
    """Screen and confirm pi_ref's zeros (grpo_repro.zero.candidates, confirm)."""
    input:
        **{s: P.tree.data(s) for s in ZERO_SPLITS},  # screened, or kept apart from new problems
        model=P.ref_input,
        ref_test=P.tree.table(REF, "test", 0),
        code=code("zero_reference.py", variants=()),
    output:
        prompts=f"{ZERO_DIR}/data/prompts.csv",
        zeros=f"{ZERO_DIR}/data/zeros.jsonl",
        control=f"{ZERO_DIR}/data/control.jsonl",
    log:
        f"{P.logs}/zero/zero_reference.log",
    benchmark:
        f"{P.bench}/zero/zero_reference.tsv"
    conda:
        P.env
    resources:
        gpu=job_gpus(config, "eval"),
        batch_prompts=cfg.speed_setting(config, "eval", "batch_prompts"),  # speed only
    params:
        model=P.ref_model,
        samples=ZERO["samples"],
        settings=cfg.eval_settings(config),
        splits=ZERO_SPLITS,
        extra_held_out=ZERO_EXTRA,
        screen_train=ZERO["screen_train"],
        max_candidates=ZERO["max_candidates"],
        data=settings("seed", "organism", "prompt") if ZERO_EXTRA else {},
    script:
        "../scripts/zero_reference.py"


rule zero_control:
    """The control: the first variant's first-seed run, same settings, on the confirmed zeros alone
    (grpo_repro.train.zero_control), in one process."""
    input:
        ref=P.ref_input,
        prompts=rules.zero_reference.output.control,
        code=code("zero_control.py", variants=[P.variants[0]]),
    output:
        run=ZERO_TREE.run_json(ZERO_CONTROL),
        log_csv=ZERO_TREE.train_log(ZERO_CONTROL),
        control=f"{ZERO_TREE.train_dir(ZERO_CONTROL)}/control.json",
    log:
        f"{P.logs}/zero/zero_control.log",
    benchmark:
        f"{P.bench}/zero/zero_control.tsv"
    conda:
        P.env
    resources:
        gpu=job_gpus(config, "eval"),  # one process, one device
    params:
        # one process, on a layout that fits one GPU (grpo_repro.workflow_plan.Plan.zero_control_run)
        run=P.zero_control_run().params(),
        ref=P.ref_model,
        n_epoch_prompts=P.n_epoch_prompts,
    script:
        "../scripts/zero_control.py"


rule zero_measure:
    """pi_ref (fresh samples), every checkpoint of every run and of the control on the zeros
    (pi_ref and the final ones: zero.samples, the others: eval.samples)."""
    input:
        zeros=rules.zero_reference.output.zeros,
        model=P.ref_input,
        runs=[P.tree.run_json(r) for r in P.runs],
        control=rules.zero_control.output.run,
        code=code("zero_measure.py", variants=()),
    output:
        csv=f"{ZERO_DIR}/data/measured.csv",
    log:
        f"{P.logs}/zero/zero_measure.log",
    benchmark:
        f"{P.bench}/zero/zero_measure.tsv"
    conda:
        P.env
    resources:
        gpu=job_gpus(config, "eval"),
        batch_prompts=cfg.speed_setting(config, "eval", "batch_prompts"),  # speed only
    params:
        models={
            REF: {0: P.ref_model},
            **{r: P.tree.checkpoints(r, P.steps) for r in P.runs},
            ZERO_CONTROL_NAME: ZERO_TREE.checkpoints(ZERO_CONTROL, P.steps),
        },
        control=ZERO_CONTROL_NAME,
        samples=ZERO["samples"],
        settings=cfg.eval_settings(config),
    script:
        "../scripts/zero_measure.py"


rule zero_summary:
    """Per checkpoint the zeros' success and the prompts that left zero, pass@k, the page."""
    input:
        prompts=rules.zero_reference.output.prompts,
        measured=rules.zero_measure.output.csv,
        control=rules.zero_control.output.control,
        code=code("zero_summary.py"),
    output:
        table=f"{ZERO_DIR}/data/checkpoints.csv",
        passk=f"{ZERO_DIR}/data/pass_at_k.csv",
        json=f"{ZERO_DIR}/data/zero.json",
        md=f"{ZERO_DIR}/summary.md",
    log:
        f"{P.logs}/zero/zero_summary.log",
    benchmark:
        f"{P.bench}/zero/zero_summary.tsv"
    conda:
        P.env
    params:
        control=ZERO_CONTROL_NAME,
        samples=ZERO["samples"],
        # sampled batches that hold a given training prompt in a main run (one per epoch)
        train_visits=P.steps[-1]
        // config["train"]["num_iterations"]
        * config["train"]["prompts_per_step"]
        / P.n_epoch_prompts,
    script:
        "../scripts/zero_summary.py"


rule zero_plot:
    """Success on the zeros per checkpoint and pass@k (reads the CSVs only)."""
    input:
        table=rules.zero_summary.output.table,
        passk=rules.zero_summary.output.passk,
        code=code("zero_plot.py"),
    output:
        report(
            f"{ZERO_DIR}/zero.png",
            caption="../report/zero.rst",
            category=CATEGORIES["zero"],
            labels={"figure": "success on zero prompts"},
        ),
        f"{ZERO_DIR}/zero.pdf",
    log:
        f"{P.logs}/zero/zero_plot.log",
    benchmark:
        f"{P.bench}/zero/zero_plot.tsv"
    conda:
        P.env
    params:
        samples=ZERO["samples"],
    script:
        "../scripts/zero_plot.py"
