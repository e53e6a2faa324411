"""Stage 5 (final): evaluation tables -> trajectories (Fig 3), success amplification, theory
overlay (Thm 2, 5, Sec. 5), summary and report.

Compute modules (`tables`, `amplification`, `overlay`, `summary`) turn the evaluation tables into
CSV/JSON; `plots` only reads those data frames and draws (restyling never reruns compute).
"""

#: columns of every evaluation table results/eval/{variant|ref}/{split}/step_{N}.csv
EVAL_COLUMNS = ("prompt_id", "successes", "samples", "p_hat", "ci_low", "ci_high",
                "successes_lenient", "p_hat_lenient")
