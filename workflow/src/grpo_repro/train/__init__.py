"""Stage train (Sec. 6): `sft` (the organism's pi_ref), `grpo` (a GRPO run: build_trainer, train),
`trainer` (PaperGRPOTrainer: TRL's GRPOTrainer with the paper's advantage, eq. 4; imports TRL at
its top, so it is imported lazily), `fast` (FastGRPOTrainer, train.fast_step: `fast_rollouts`,
`fast_logps` with `shared_logps`, `fast_defer`), `two_kl` (the two-KL loss), `args` (every
GRPOConfig field explicit), `trl_variant` (the records of grpo_repro.variants as TRL settings;
eq. 4), `checkpoints` (step_N policies, resume), `schedule` (checkpoint steps), `launch`
(one process or `accelerate launch`)."""
