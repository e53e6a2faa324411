"""Stage fixed_point: the paper's fixed-point prediction (Thm 2-3, Fig 2/5; Thm 5 for mirror; Thm 9
for two_kl) tested in real GRPO training, at the population (p*) and at the finite group size G
(p*_G of h_G). GRPO trains on the first fixed_point.n_prompts prompts of the training pool for many epochs;
each checkpoint is evaluated with fixed_point.samples samples per prompt, pi_ref with ref_samples;
the last checkpoint's sequence-level KL(pi || pi_ref) is measured; grpo_repro.fixed_point compares
each prompt's plateau with p*, p*_G and the baselines "stays at p_ref" and "goes to 1". Three
studies (grpo_repro.fixed_point.runs: one table of runs, the {run} wildcard's names), each a named
target: fixed_point_main (fixed_point.runs at every beta and seed, fixed_point.runs_sweep at
sweep_beta), fixed_point_groups (the group-size sweep), fixed_point_factors (plain k3,
mirror, one training setting changed at a time, the convergence check's long runs); `fixed_point`
runs all three. A fourth, compact, is part of the default graph (fixed_point.compact: one run
kind at one beta, a few checkpoints); its own rules are in fixed_point_compact.smk.
"""

from grpo_repro import config as cfg
from grpo_repro.fixed_point import runs as fp_runs
from grpo_repro.gpus import FP_TRAIN_PRIORITY, job_gpus
from grpo_repro.report.registry import CATEGORIES
from grpo_repro.runs import REF, constraint


rule fixed_point_pool:
    """The first fixed_point.n_prompts prompts of the training pool."""
    input:
        pool=rules.data_prepare.output.pool,
        code=code("fixed_point_pool.py"),
    output:
        pool=f"{P.fp_dir}/pool.jsonl",
    log:
        f"{P.logs}/fixed_point/fixed_point_pool.log",
    benchmark:
        f"{P.bench}/fixed_point/fixed_point_pool.tsv"
    conda:
        P.env
    params:
        n=P.fp["n_prompts"],
    script:
        "../scripts/fixed_point_pool.py"


use rule train_grpo as fixed_point_train with:
    input:
        ref=P.ref_input,
        prompts=rules.fixed_point_pool.output.pool,
        code=lambda w: code("train_grpo.py", variants=[P.fp_table[w.run].variant]),
    output:
        run=P.fp_tree.run_json("{run}"),
        log_csv=P.fp_tree.train_log("{run}"),
    log:
        f"{P.logs}/fixed_point/train/{{run}}.log",
    benchmark:
        f"{P.bench}/fixed_point/train/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(P.fp_table),
    priority: FP_TRAIN_PRIORITY  # the longest chain of the default graph (the compact run): first
    params:
        # the study's train keys on a layout that fits one GPU (grpo_repro.workflow_plan.Plan.fp_run)
        run=lambda w: P.fp_run(w.run).params(),
        n_epoch_prompts=P.fp["n_prompts"],


use rule evaluate_reference as fixed_point_evaluate_ref with:
    input:
        data=[rules.fixed_point_pool.output.pool],
        model=P.ref_input,
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(P.fp_dir, REF, P.fp_steps)],
        meta=[t.json for t in fp_runs.eval_tasks(P.fp_dir, REF, P.fp_steps)],
    log:
        f"{P.logs}/fixed_point/evaluate/ref.log",
    benchmark:
        f"{P.bench}/fixed_point/evaluate/ref.tsv"
    params:
        models={0: P.ref_model},
        tasks=[t.as_dict() for t in fp_runs.eval_tasks(P.fp_dir, REF, P.fp_steps)],
        splits=[fp_runs.POOL],
        settings=fp_runs.eval_settings(cfg.eval_settings(config), P.fp, REF),


use rule evaluate_run as fixed_point_evaluate with:
    input:
        data=[rules.fixed_point_pool.output.pool],
        model=P.fp_tree.run_json("{run}"),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(P.fp_dir, "{run}", P.fp_steps)],
        meta=[t.json for t in fp_runs.eval_tasks(P.fp_dir, "{run}", P.fp_steps)],
    log:
        f"{P.logs}/fixed_point/evaluate/{{run}}.log",
    benchmark:
        f"{P.bench}/fixed_point/evaluate/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(set(P.fp_table) - set(P.fp_long) - set(P.fp_compact)),  # a max_steps run
    params:
        models=lambda w: P.fp_tree.checkpoints(w.run, fp_runs.steps(P.fp, P.fp_table[w.run])),
        tasks=lambda w: [
            t.as_dict()
            for t in fp_runs.eval_tasks(P.fp_dir, w.run, fp_runs.steps(P.fp, P.fp_table[w.run]))
        ],
        splits=[fp_runs.POOL],
        settings=lambda w: fp_runs.eval_settings(cfg.eval_settings(config), P.fp, P.fp_table[w.run]),


use rule fixed_point_evaluate as fixed_point_evaluate_long with:
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(P.fp_dir, "{run}", P.fp_long_steps)],
        meta=[t.json for t in fp_runs.eval_tasks(P.fp_dir, "{run}", P.fp_long_steps)],
    wildcard_constraints:
        run=constraint(P.fp_long),


rule fixed_point_kl:
    """Sequence-level KL(pi || pi_ref) per prompt of a run's last checkpoint, from its samples."""
    input:
        run=P.fp_tree.run_json("{run}"),
        pool=rules.fixed_point_pool.output.pool,
        ref=P.ref_input,
        code=code("fixed_point_kl.py"),
    output:
        csv=fp_runs.kl_table(P.fp_dir, "{run}"),
    log:
        f"{P.logs}/fixed_point/kl/{{run}}.log",
    benchmark:
        f"{P.bench}/fixed_point/kl/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(P.fp_table),
    conda:
        P.env
    resources:
        gpu=job_gpus(config, "kl"),  # samples from and scores with both models (grpo_repro.gpus.job_gpus)
    params:
        model=lambda w: P.fp_tree.checkpoint(w.run, fp_runs.steps(P.fp, P.fp_table[w.run])[-1]),
        ref=P.ref_model,
        samples=P.fp["kl_samples"],
        seed=lambda w: P.fp_table[w.run].seed,
        temperature=config["train"]["temperature"],
        max_new_tokens=config["train"]["max_completion_length"],
    script:
        "../scripts/fixed_point_kl.py"


rule fixed_point_tabular:
    """The tabular control: the same sampled update on a free per-prompt policy from p_ref."""
    input:
        ref=P.fp_tree.table(REF, fp_runs.POOL, 0),
        code=code("fixed_point_tabular.py"),
    output:
        csv=f"{P.fp_dir}/factors/data/tabular.csv",
    log:
        f"{P.logs}/fixed_point/fixed_point_tabular.log",
    benchmark:
        f"{P.bench}/fixed_point/fixed_point_tabular.tsv"
    conda:
        P.env
    params:
        variants=fp_runs.tabular_variants(P.fp),
        beta=P.fp["sweep_beta"],
        eps=config["train"]["smoothing_eps"],
        G=P.fp_g,
        mu=config["train"]["num_iterations"],
        clip_eps=config["train"]["clip_eps"],
        lr=P.fp["tabular"]["lr"],
        n_iter=P.fp["tabular"]["n_iter"],
        seed=P.fp["seeds"][0],
    script:
        "../scripts/fixed_point_tabular.py"


rule fixed_point_compare:
    """One study: per prompt p_ref, p*, p*_G, the measured plateau, convergence, KL; per (run, beta)
    over seeds: the gaps against the baselines, the noise floor, dr_grpo's law; summary.md."""
    input:
        unpack(lambda w: fp_runs.compare_inputs(P.fp, P.fp_dir, P.fp_study(w.study))),
        tabular=lambda w: rules.fixed_point_tabular.output.csv if w.study == "factors" else [],
        code=code("fixed_point_compare.py"),
    output:
        prompts=f"{P.fp_dir}/{{study}}/data/prompts.csv",
        trajectories=f"{P.fp_dir}/{{study}}/data/trajectories.csv",
        summary=f"{P.fp_dir}/{{study}}/data/summary.csv",
        md=f"{P.fp_dir}/{{study}}/summary.md",
    log:
        f"{P.logs}/fixed_point/fixed_point_compare_{{study}}.log",
    benchmark:
        f"{P.bench}/fixed_point/fixed_point_compare_{{study}}.tsv"
    wildcard_constraints:
        study="|".join(P.fp_studies),
    conda:
        P.env
    params:
        runs=lambda w: [r.as_dict() for r in P.fp_study(w.study)],
        steps=lambda w: {r.name: fp_runs.steps(P.fp, r) for r in P.fp_study(w.study)},
        eps=config["train"]["smoothing_eps"],
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=P.fp["seeds"][0],
    script:
        "../scripts/fixed_point_compare.py"


rule fixed_point_plot:
    """Measured plateau vs p_ref, p* and p*_G, one column per beta (reads the CSVs only)."""
    input:
        prompts=f"{P.fp_dir}/{{study}}/data/prompts.csv",
        summary=f"{P.fp_dir}/{{study}}/data/summary.csv",
        code=code("fixed_point_plot.py"),
    output:
        report(
            f"{P.fp_dir}/{{study}}/fixed_point.png",
            caption="../report/fixed_point.rst",
            category=CATEGORIES["fixed_point"],
            labels={"figure": "plateau vs p* and p*_G", "study": "{study}"},
        ),
        f"{P.fp_dir}/{{study}}/fixed_point.pdf",
    log:
        f"{P.logs}/fixed_point/fixed_point_plot_{{study}}.log",
    benchmark:
        f"{P.bench}/fixed_point/fixed_point_plot_{{study}}.tsv"
    wildcard_constraints:
        study="|".join(P.fp_studies),
    conda:
        P.env
    params:
        eps=config["train"]["smoothing_eps"],
    script:
        "../scripts/fixed_point_plot.py"


rule fixed_point_summary:
    """results/fixed_point/summary.md: every study's page under one title."""
    input:
        pages=expand(f"{P.fp_dir}/{{study}}/summary.md", study=P.fp_studies),
        code=code("fixed_point_summary.py"),
    output:
        md=f"{P.fp_dir}/summary.md",
    log:
        f"{P.logs}/fixed_point/fixed_point_summary.log",
    benchmark:
        f"{P.bench}/fixed_point/fixed_point_summary.tsv"
    conda:
        P.env
    params:
        studies=P.fp_studies,
    script:
        "../scripts/fixed_point_summary.py"


rule fixed_point_main:
    """Study main (`snakemake -c2 fixed_point_main`)."""
    input:
        expand(f"{P.fp_dir}/main/{{f}}", f=["summary.md", "fixed_point.png"]),


rule fixed_point_groups:
    """Study groups (`snakemake -c2 fixed_point_groups`)."""
    input:
        expand(f"{P.fp_dir}/groups/{{f}}", f=["summary.md", "fixed_point.png"]),


rule fixed_point_factors:
    """Study factors (`snakemake -c2 fixed_point_factors`)."""
    input:
        expand(f"{P.fp_dir}/factors/{{f}}", f=["summary.md", "fixed_point.png"]),


rule fixed_point:
    """The fixed-point test, every study (`snakemake -c2 fixed_point`)."""
    input:
        rules.fixed_point_summary.output,
        P.fixed_point_targets(),
        rules.fixed_point_main.input,
        rules.fixed_point_groups.input,
        rules.fixed_point_factors.input,
