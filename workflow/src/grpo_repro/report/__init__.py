"""Stage report: evaluation tables -> trajectories (Fig 3), success amplification (Thm 3), theory
overlay (Thm 2, 5, Sec. 5), summary and report.

Compute modules (`tables`, `amplification`, `overlay`, `summary`, `markdown`) turn the evaluation
tables into CSV/JSON/Markdown; `plots` and `summary_page` only read those files and draw
(restyling never reruns compute); `registry` lists the plot rules. The evaluation tables' columns are
grpo_repro.evaluate.scoring's (PROMPT_COLUMNS: what the report reads).
"""
