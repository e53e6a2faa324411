"""Stage figures' helpers: each figure family's CSVs and figure files (grpo_repro.figures.registry)."""

from pathlib import Path

from grpo_repro.figures.registry import FAMILIES, caption_text, module_of
from grpo_repro.report.registry import CATEGORIES

FIG = f"{RESULTS}/figures"
FIG_CFG = config["figures"]


def figure_csvs(fam):
    return {name: f"{FIG}/{stem}.csv" for name, stem in fam.csvs.items()}


def caption(fam):
    """A family's report caption: its file under workflow/report/, or (none) its `doc` line
    (grpo_repro.figures.registry.caption_text), written under .snakemake/captions/ when it
    changes, since Snakemake's report() reads a caption from a file."""
    if fam.caption:
        return f"../report/{fam.caption}"
    path = Path(f".snakemake/captions/figures_{fam.name}.rst").absolute()
    text = caption_text(fam)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(path)


def figure_files(fam):
    """Outputs of a family's plot rule: PNGs (marked for the report), then PDFs."""
    pngs, pdfs, cap = [], [], caption(fam)
    for stem, labels in fam.stems(FIG_CFG):
        png = report(
            f"{FIG}/{stem}.png",
            caption=cap,
            category=CATEGORIES["figures"],
            subcategory=fam.subcategory,
            labels={"figure": stem, **labels},
        )
        pngs.append(png)
        pdfs.append(f"{FIG}/{stem}.pdf")
    return pngs + pdfs


def figures_targets():
    """Every output of the figures stage: the CSVs and every figure (PNG + PDF)."""
    out = []
    for fam in FAMILIES:
        out += list(figure_csvs(fam).values())
        out += [f"{FIG}/{stem}.{ext}" for stem, _ in fam.stems(FIG_CFG) for ext in ("png", "pdf")]
    return out
