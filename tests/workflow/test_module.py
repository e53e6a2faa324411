"""The workflow used as a Snakemake module from another directory (the catalog's standardized usage,
what `snakedeploy deploy-workflow` writes): a Snakefile there loads this workflow's default
configuration and an overlay of its own, `module ... config: config` and `use rule * from ...`; the
dry run schedules the overlay's graph, and a bad value of the overlay is named with its file and
line."""

from tests.helpers import ROOT, job_counts, snakemake

DEPLOYED = """
configfile: "{root}/config/config.yaml"
configfile: "config/{overlay}"


module grpo_repro:
    snakefile:
        "{root}/Snakefile"
    config:
        config


use rule * from grpo_repro
"""


def deploy(folder, overlay: str, name: str = "mine.yaml"):
    (folder / "config").mkdir(parents=True, exist_ok=True)
    (folder / "config" / name).write_text(overlay)
    (folder / "Snakefile").write_text(DEPLOYED.format(root=ROOT, overlay=name))
    return snakemake(["-n"], folder, timeout=300)


def test_the_workflow_runs_as_a_module_with_an_overlay(tmp_path):
    res = deploy(tmp_path, "variants: [grpo]\ntrain:\n  seeds: [0]\n")
    assert res.returncode == 0, res.log[-3000:]
    counts = job_counts(res.stdout)
    assert counts["train_grpo"] == 1 and counts["evaluate_run"] == 1  # the overlay's one run
    assert counts["theory_derivations"] == 1 and counts["report_summary"] == 1


def test_a_bad_overlay_value_is_named_in_the_deploying_folder(tmp_path):
    res = deploy(tmp_path, "train:\n  seeds: [0]\n  beta: -1\n", "bad.yaml")
    assert res.returncode != 0
    assert "config key 'train.beta' (config/bad.yaml:3)" in res.log, res.log[-2000:]


def test_the_catalog_file_names_the_usage():
    """.snakemake-workflow-catalog.yml: the catalog's keys (usage: mandatory flags, software stack,
    report), and config/README.md, which the catalog shows, exists."""
    import yaml

    usage = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert usage["mandatory-flags"]["flags"] and usage["report"] is True
    assert usage["software-stack-deployment"]["conda"] is True
    assert "## Using the workflow as a module" in (ROOT / "config" / "README.md").read_text()
