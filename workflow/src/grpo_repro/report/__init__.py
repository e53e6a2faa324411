"""Stage report: evaluation tables -> trajectories (Fig 3), success amplification (Thm 3), theory
overlay (Thm 2, 5, Sec. 5), summary and report.

Compute modules (`tables`, `amplification`, `overlay`, `summary`, `markdown`) turn the evaluation
tables into CSV/JSON/Markdown; `plots` and `summary_page` only read those files and draw
(restyling never reruns compute); `registry` lists the plot rules.
"""

#: columns of every evaluation table results/evaluate/{variant|ref}/{split}/step_{N}.csv
EVAL_COLUMNS = (
    "prompt_id",
    "successes",
    "samples",
    "p_hat",
    "ci_low",
    "ci_high",
    "successes_lenient",
    "p_hat_lenient",
)
