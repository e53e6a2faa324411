"""Stage train (Sec. 6): `sft` (the organism's pi_ref), `grpo` (a GRPO run: build_trainer, train),
`trainer` (PaperGRPOTrainer: TRL's GRPOTrainer with the paper's advantage, eq. 4; imports TRL at
its top, so it is imported lazily; and the two-KL loss), `fast` (FastGRPOTrainer, train.fast_step:
its log-probs with `shared_logps`, its rollouts `fast_rollouts`), `args` (every
GRPOConfig field explicit), `trl_variant` (the records of grpo_repro.variants as TRL settings;
eq. 4), `checkpoints` (step_N policies, resume), `run_settings` (a run's settings, checkpoint steps), `launch`
(one process or `accelerate launch`)."""
