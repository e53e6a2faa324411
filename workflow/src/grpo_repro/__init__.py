"""grpo_repro: reproduction of Mroueh (2025), arXiv 2503.06639.

GRPO with verifiable (binary) rewards as a weighted contrastive loss (Sec. 2), its
probability-of-success recurrences (Thm 2-9), and the GSM8K experiment (Sec. 6).
The package never imports Snakemake; workflow rules call thin scripts that call it.
"""

__version__ = "0.1.0"
