"""`python -m grpo_repro.theory [--out DIR]`: run the stage-1 checks of Sec. 2-5 (see cli.py)."""

from .cli import main

raise SystemExit(main())
