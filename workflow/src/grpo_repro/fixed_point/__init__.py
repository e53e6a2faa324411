"""Stage fixed_point: the paper's fixed-point prediction (Thm 2-3, Fig 2/5) tested in real GRPO
training. GRPO trains on a fixed pool of prompts until per-prompt success plateaus, at several
beta, for grpo (KL to pi_ref: the plateau should be the stable fixed point p* of
p = h_{eps,p_ref}(p)) and for mirror (KL to the previous policy, Thm 4-5: no interior plateau, p -> 1).
`compare` sets each prompt's measured plateau beside p* and two baselines ("stays at p_ref",
"goes to 1"); `kl` measures the sequence-level KL(pi || pi_ref) the trained policy paid;
`plots` draws the figure."""
