"""Stand-alone HTML pages for the Snakemake report, each the rendering of a Markdown file the
pipeline writes: results/summary.md (the run in numbers, grpo_repro.report.markdown) and
results/theory/derivations.md (the claim checks of Sec. 2-5, grpo_repro.theory.cli). One writer
per table: the page shows the Markdown file's tables, never a second build of them."""

from __future__ import annotations

import html
from pathlib import Path

from markdown_it import MarkdownIt

from grpo_repro import io

STYLE = (
    "body{font:14px sans-serif;margin:1em;max-width:90em}table{border-collapse:collapse;"
    "font:12px sans-serif}td,th{padding:2px 6px;border-bottom:1px solid #ddd;vertical-align:top}"
)


def markdown_page(text: str, title: str) -> str:
    """A stand-alone HTML page of Markdown `text` (CommonMark with pipe tables)."""
    body = MarkdownIt("commonmark").enable("table").render(text)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n"
    )


def draw_page(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    """Entry point of the plot rules report_plot_summary_table and report_plot_theory_table."""
    md = Path(inputs["md"])
    io.write_text(outputs[0], markdown_page(md.read_text(), md.stem))
