"""Stage train (Sec. 6): `sft` (the organism's pi_ref), `grpo` (TRL GRPOTrainer with the paper's
advantage, eq. 4), `args` (every GRPOConfig field explicit), `variants` (grpo, mirror, dr_grpo,
mirror_dr as TRL settings), `checkpoints` (step_N policies, resume), `schedule` (checkpoint steps),
`launch` (one process or `accelerate launch`)."""
