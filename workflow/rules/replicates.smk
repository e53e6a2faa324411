"""Named target `replicates` (Thm 1 vs sharpening, held out): the comparison of each variant at its
best sampling temperature with pi_ref at ITS best, repeated on other replicates of pi_ref. A
replicate is a data and SFT seed of replicates.seeds: new problems, new SFT data, a new pi_ref; on
it, replicates.variants are trained with every GRPO seed of train.seeds and evaluated (final
checkpoint and pi_ref, every temperature of eval.temperatures) exactly as the default graph does,
by the same rules (`use rule`) under results/replicates/seed_{rep}/. results/replicates/summary.md
puts every replicate (the default graph's pi_ref, `seed`, included) side by side
(grpo_repro.report.temperature.replicate_table). The built organism only.
"""

from grpo_repro import config as cfg
from grpo_repro.runs import REF, constraint
from grpo_repro.train.run_settings import grpo_run


wildcard_constraints:
    rep=r"\d+",


use rule data_prepare as replicate_data with:
    output:
        **{k: directory(v) if k == "tokenizer" else v for k, v in P.data_files(P.rep_root).items()},
    log:
        f"{P.logs}/replicates/seed_{{rep}}/data_prepare.log",
    benchmark:
        f"{P.bench}/replicates/seed_{{rep}}/data_prepare.tsv"
    params:
        settings=lambda w: {**settings("data", "prompt", "organism", "model"), "seed": int(w.rep)},


use rule train_reference as replicate_reference with:
    input:
        train=P.rep_tree.data("sft"),
        tokenizer=f"{P.rep_root}/data/tokenizer",
        code=code("train_reference.py", variants=()),
    output:
        model=directory(P.rep_tree.ref_model()),
        log_csv=f"{P.rep_tree.train_dir(REF)}/sft_log.csv",
        run=P.rep_tree.run_json(REF),
    log:
        f"{P.logs}/replicates/seed_{{rep}}/train_reference.log",
    benchmark:
        f"{P.bench}/replicates/seed_{{rep}}/train_reference.tsv"
    params:
        settings=lambda w: {**settings("organism"), "seed": int(w.rep)},


use rule train_grpo as replicate_train with:
    input:
        ref=P.rep_tree.run_json(REF),
        prompts=P.grpo_prompts(P.rep_tree),
        code=lambda w: code("train_grpo.py", variants=[P.rep_run_table[w.run].variant]),
    output:
        run=P.rep_tree.run_json("{run}"),
        log_csv=P.rep_tree.train_log("{run}"),
    log:
        f"{P.logs}/replicates/seed_{{rep}}/train/{{run}}.log",
    benchmark:
        f"{P.bench}/replicates/seed_{{rep}}/train/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(P.rep_run_table),
    params:
        run=lambda w: grpo_run(
            config,
            P.rep_run_table[w.run].variant,
            P.rep_run_table[w.run].seed,
            data_seed=int(w.rep),
        ).params(),
        ref=lambda w: P.rep_tree_of(w.rep).ref_model(),


use rule evaluate_reference as replicate_evaluate_ref with:
    input:
        data=P.eval_data(P.rep_tree),
        model=P.rep_tree.run_json(REF),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in P.rep_tasks(P.rep_root, REF)],
        meta=[t.json for t in P.rep_tasks(P.rep_root, REF)],
    log:
        f"{P.logs}/replicates/seed_{{rep}}/evaluate_ref.log",
    benchmark:
        f"{P.bench}/replicates/seed_{{rep}}/evaluate_ref.tsv"
    params:
        models=lambda w: {0: P.rep_tree_of(w.rep).ref_model()},
        tasks=lambda w: [t.as_dict() for t in P.rep_tasks(P.rep_tree_of(w.rep).root, REF)],
        settings=lambda w: {**cfg.eval_settings(config), "seed": int(w.rep)},


use rule evaluate_run as replicate_evaluate with:
    input:
        data=P.eval_data(P.rep_tree),
        model=P.rep_tree.run_json("{run}"),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in P.rep_tasks(P.rep_root, "{run}")],
        meta=[t.json for t in P.rep_tasks(P.rep_root, "{run}")],
    log:
        f"{P.logs}/replicates/seed_{{rep}}/evaluate/{{run}}.log",
    benchmark:
        f"{P.bench}/replicates/seed_{{rep}}/evaluate/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(P.rep_run_table),
    params:
        models=lambda w: P.rep_tree_of(w.rep).checkpoints(w.run, P.steps[-1:]),
        tasks=lambda w: [t.as_dict() for t in P.rep_tasks(P.rep_tree_of(w.rep).root, w.run)],
        settings=lambda w: {**cfg.eval_settings(config), "seed": int(w.rep)},


use rule report_temperature as replicate_temperature with:
    input:
        tables=lambda w: [e["path"] for e in P.rep_entries(P.rep_tree_of(w.rep).root)],
        data=[P.rep_tree.split_file(s) for s in P.temp_splits],
        code=code("report_temperature.py"),
    output:
        curve=f"{P.rep_root}/report/data/temperature_curve.csv",
        best=f"{P.rep_root}/report/data/best_vs_best.csv",
        pass_k=f"{P.rep_root}/report/data/pass_at_k.csv",
    log:
        f"{P.logs}/replicates/seed_{{rep}}/report_temperature.log",
    benchmark:
        f"{P.bench}/replicates/seed_{{rep}}/report_temperature.tsv"
    params:
        entries=lambda w: P.rep_entries(P.rep_tree_of(w.rep).root),


rule replicates_summary:
    """Every replicate of pi_ref side by side: each variant at its best temperature against pi_ref
    at its best, pooled over GRPO seeds and per seed (results/replicates/summary.{csv,md})."""
    input:
        best=[P.rep_best(s) for s in P.rep_seeds],
        code=code("replicates_summary.py"),
    output:
        csv=f"{P.rep_dir}/summary.csv",
        md=f"{P.rep_dir}/summary.md",
    log:
        f"{P.logs}/replicates/replicates_summary.log",
    benchmark:
        f"{P.bench}/replicates/replicates_summary.tsv"
    conda:
        P.env
    params:
        seeds=P.rep_seeds,
        variants=P.rep_variants,
    script:
        "../scripts/replicates_summary.py"


rule replicates:
    """Named target: every replicate of pi_ref trained, evaluated and compared."""
    input:
        rules.replicates_summary.output,
