"""Helpers of the SLURM tests (tests/workflow/test_slurm.py): the profile's resources, snakemake
runs, workflow copies, the fast stages' targets and output comparison."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers import ROOT, snakemake

PROFILE = ROOT / "workflow" / "profiles" / "slurm"
GPU_RULES = ("train_reference", "train_grpo", "evaluate_reference", "evaluate_run")
# test-only flags: no slurmdbd here (squeue for status), and fast polling
CLUSTER_FLAGS = [
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "1",
    "--slurm-keep-successful-logs",
]
SUBMITTED = re.compile(
    r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.?$", re.M
)
RULE_BLOCK = re.compile(r"^(local)?rule (\w+):\n(?:[ \t]+.*\n)*?[ \t]+jobid: (\d+)$", re.M)
# a job's end, printed whatever the executor (the SLURM plugin 2.6.1 prints no job blocks)
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$", re.M)
ERRORED = re.compile(r"^Error in rule (\w+):\n(?:[ \t]+.*\n)*?[ \t]+jobid: (\d+)$", re.M)
TIMING_KEYS = {
    "seconds",
    "elapsed",
    "elapsed_s",
    "duration",
    "wall_seconds",
    "time",
    "timestamp",
    "started",
    "finished",
    "created",
    "host",
    "hostname",
}


def profile_resources() -> dict[str, dict[str, str]]:
    """{rule: {resource: raw value}} of the profile as Snakemake reads it ('*' = default-resources)."""
    from snakemake.profiles import ProfileConfigFileParser

    with open(PROFILE / "config.yaml") as fh:
        parsed = ProfileConfigFileParser().parse(fh)
    out: dict[str, dict[str, str]] = {"*": {}}
    for item in parsed.get("default-resources", []):
        key, value = item.split("=", 1)
        out["*"][key] = value
    for item in parsed.get("set-resources", []):
        rule_key, value = item.split("=", 1)
        rule, key = rule_key.split(":", 1)
        out.setdefault(rule, {})[key] = value
    return out


def resource(res: dict[str, str], key: str, attempt: int = 1):
    """A profile resource value as Snakemake evaluates it (Python expression over `attempt`)."""
    raw = res[key]
    try:
        return eval(raw, {"attempt": attempt})
    except (NameError, SyntaxError):
        return raw


def rule_resources(rule: str) -> dict[str, str]:
    prof = profile_resources()
    return {**prof["*"], **prof.get(rule, {})}


def fast_stage_targets(workdir: Path) -> list[str]:
    """The theory stage's outputs + the plan's figures_targets(), read from the Snakefile itself."""
    found = workdir / ".targets.json"
    wrapper = workdir / ".targets.smk"
    wrapper.write_text(
        f"include: {str(workdir / 'Snakefile')!r}\n"
        "import json as _json\n"
        "_found = {'theory_targets': [str(t) for t in rules.theory_derivations.output]}\n"
        "_found['figures_targets'] = [str(t) for t in P.figures_targets()]\n"
        f"with open({str(found)!r}, 'w') as _fh:\n"
        "    _json.dump(_found, _fh)\n"
    )
    res = snakemake(["-s", str(wrapper), "--list-rules"], cwd=workdir)
    assert res.returncode == 0, res.log
    groups = json.loads(found.read_text())
    assert groups.get("theory_targets"), f"no theory targets found: {groups}"
    return [t for name in ("theory_targets", "figures_targets") for t in groups.get(name, [])]


def jobs_by_rule(log: str) -> dict[str, str]:
    """{snakemake jobid: rule} of the jobs a run scheduled ('local' prefixed for localrules, where
    the executor prints its job blocks), or, for an executor that prints none, of the jobs that
    finished or failed."""
    jobs = {jobid: rule for jobid, rule in FINISHED.findall(log)}
    jobs.update({jobid: rule for rule, jobid in ERRORED.findall(log)})
    jobs.update(
        {
            jobid: ("local:" if local else "") + rule
            for local, rule, jobid in RULE_BLOCK.findall(log)
        }
    )
    return jobs


def _drop_timings(obj):
    if isinstance(obj, dict):
        return {k: _drop_timings(v) for k, v in obj.items() if k.lower() not in TIMING_KEYS}
    if isinstance(obj, list):
        return [_drop_timings(v) for v in obj]
    return obj


def _normalise_md(text: str) -> str:
    text = re.sub(r"\d+(\.\d+)? s of checking", "<t> s of checking", text)
    text = re.sub(r"\| *\d+\.\d+ *\|$", "| <t> |", text, flags=re.M)  # a trailing seconds column
    return text


def assert_same_output(local: Path, remote: Path) -> None:
    assert remote.is_file() and remote.stat().st_size > 0, f"missing on the SLURM run: {remote}"
    assert local.is_file(), f"missing on the local run: {local}"
    suffix = local.suffix.lower()
    if suffix == ".json":
        a, b = json.loads(local.read_text()), json.loads(remote.read_text())
        if isinstance(a, list) and all(
            isinstance(c, dict) and "id" in c for c in a
        ):  # list of checks
            assert {(c["id"], c.get("passed")) for c in a} == {
                (c["id"], c.get("passed")) for c in b
            }, local.name
        assert _drop_timings(a) == _drop_timings(b), f"{local.name} differs (timings ignored)"
    elif suffix in (".csv", ".tsv", ".txt"):
        assert local.read_bytes() == remote.read_bytes(), f"{local.name} differs"
    elif suffix == ".md":
        assert _normalise_md(local.read_text()) == _normalise_md(remote.read_text()), (
            f"{local.name} differs"
        )
    # figures (png/pdf/svg) embed dates and renderer details: existence and size above is the check


def slurm_time_minutes(limit: str) -> int:
    days, _, hms = limit.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return (int(days) if days else 0) * 1440 + h * 60 + m + (1 if s else 0)
