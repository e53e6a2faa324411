"""Probability-of-success dynamics of the paper (library of the figures and report stages): `maps`
(w+, w-, Omega of eq. 4, the map h of Thm 2, B of Thm 6, every variant's recurrence), `fixed_points`
(all fixed points and 2-cycles, Prop. 1, Thm 3, 6), `oracle` (exact Gibbs iterates on finite
softmax policies, Thm 8-9) and `oracle_sgd` (sample-based GRPO on them, App. F, Thm 10)."""
