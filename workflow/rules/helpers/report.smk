"""Stage report's tables and helpers: the evaluation and temperature entries, the compute and plot
rules of the report (grpo_repro.report.registry), their figure files and the stage's targets."""

from grpo_repro.report.registry import CATEGORIES, PLOTS
from grpo_repro.report.registry import active as active_plots
from grpo_repro.report.registry import module_of as report_module
from grpo_repro.report.tables import eval_entries
from grpo_repro.runs import run_name
from grpo_repro.report.temperature import entries as temperature_entries

REPORT = f"{RESULTS}/report"
REPORT_DATA = f"{REPORT}/data"
EVAL_ENTRIES = eval_entries(RESULTS, VARIANTS, SEEDS, SPLITS, STEPS)
TEMP_ENTRIES = temperature_entries(
    RESULTS, VARIANTS, SEEDS, STEPS, config
)  # [] without temperatures
TEMP_SPLITS = list(dict.fromkeys(e["split"] for e in TEMP_ENTRIES))
REPORT_COMPUTE = [  # the report stage's compute rules (plot rules come from PLOTS)
    "report_training",
    "report_landing",
    "report_tables",
    "report_trajectories",
    "report_amplification",
    "report_overlay",
    "report_summary",
] + (["report_temperature"] if TEMP_ENTRIES else [])
REPORT_PLOTS = active_plots(PLOTS, {"temperatures"} if TEMP_ENTRIES else set())
# the landing page's picture: success against the sampling temperature (none without temperatures)
LANDING_PICTURE = next(
    (f"{REPORT}/{p.figures[0][0]}.png" for p in REPORT_PLOTS if p.name == "temperature"), []
)


def report_figures(plot, split=None):
    """Output files of one plot rule; PNGs (and the HTML table) are marked for the report."""
    out = []
    for stem, caption, sub, label in plot.figures:
        stem = stem.format(split=split) if split else stem
        for ext in plot.ext:
            path = f"{REPORT}/{stem}.{ext}"
            if ext in ("png", "html"):
                path = report(
                    path,
                    caption=f"../report/{caption}",
                    category=CATEGORIES[plot.stage],
                    subcategory=sub,
                    labels={"figure": label, "split": split or "all"},
                )
            out.append(path)
    return out


def report_targets():
    """Every output of the report stage: data files, summary, figures and the summary table."""
    out = [f for r in REPORT_COMPUTE for f in getattr(rules, r).output]
    for plot in REPORT_PLOTS:
        for split in SPLITS if plot.per_split else [None]:
            out += [str(p) for p in report_figures(plot, split)]
    return out


# the compact fixed-point study (stage fixed_point): the data the summary reads, the picture the
# landing page shows (none without the study)
FP_COMPACT_DATA = (
    {
        "fp_summary": f"{FP_COMPACT_DIR}/data/summary.csv",
        "fp_resolution": f"{FP_COMPACT_DIR}/data/resolution.csv",
    }
    if FP_COMPACT
    else {}
)
FP_COMPACT_PICTURE = f"{FP_COMPACT_DIR}/fixed_point.png" if FP_COMPACT else []
