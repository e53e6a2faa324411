"""The project's GRPO trainer: TRL 1.16's GRPOTrainer with the paper's smoothed whitened advantage,
eq. (4) (grpo_repro.train.trl_variant.paper_advantage), an epoch-seeded prompt order, the mirror
variants' anchor restored on resume and the two-KL variants' loss (Lemma 2, Thm 9;
grpo_repro.train.two_kl) (Sec. 2 objective, Sec. 6 experiment).

This module imports TRL at its top: it (and grpo_repro.train.fast, which subclasses it) is imported
lazily, in grpo_repro.train.grpo.build_trainer, so that the rest of the package loads without TRL.
"""

from __future__ import annotations

from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from grpo_repro.train.trl_variant import paper_advantage
from grpo_repro.train.two_kl import two_kl_loss


class EpochSeededRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler draws each epoch's order from one generator seeded once, so a run
    resumed at an epoch boundary replays epoch 0's order. Here epoch e's order depends only on
    (seed, e), set by the Trainer's set_epoch(e): a resumed run sees the same order."""

    epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        if self.shuffle:
            self.generator.manual_seed((self.seed or 0) * 1_000_003 + self.epoch)
        return super().__iter__()


class PaperGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with the paper's eq. (4) advantage when `paper_eps` is set (else TRL's), and the
    two-KL loss when `kl_weights` = (w_ref, w_prev) is set (else TRL's loss, unchanged)."""

    paper_eps: float | None = None
    kl_weights: tuple[float, float] | None = None  # two-KL variants only (grpo_repro.train.two_kl)
    #: set by two_kl_loss while it runs: [the policy forward's result], shared by its two evaluations
    _logps_memo: list | None = None

    def _get_train_sampler(self, dataset=None):
        base = super()._get_train_sampler(dataset)
        return EpochSeededRepeatSampler(
            base.data_source,
            base.mini_repeat_count,
            base.batch_size,
            base.repeat_count,
            base.shuffle,
            base.seed,
        )

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """Mirror variants: the anchor is the policy of the last step, which TRL does not
        checkpoint; after a resume it would be pi_ref. Restore it from the resumed policy."""
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        if self.args.sync_ref_model and self.ref_model is not None:
            policy = self.accelerator.unwrap_model(self.model)
            self.ref_model.load_state_dict(policy.state_dict())

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if self.paper_eps is not None and self.model.training:
            out["advantages"] = paper_advantage(
                out["advantages"], self.num_generations, self.paper_eps
            )
        return out

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        """TRL's log-probs hook (GRPOTrainer._compute_loss calls it for the policy's forward,
        GRPOTrainer._generate_and_score_completions for the old policy's and the reference's):
        `_compute_logps_and_entropies`, whose first result is reused while `_logps_memo` is set
        (grpo_repro.train.two_kl.two_kl_loss: one policy forward for both of its evaluations)."""
        memo = self._logps_memo
        if memo is None:
            return self._compute_logps_and_entropies(*args, **kwargs)
        if not memo:
            memo.append(self._compute_logps_and_entropies(*args, **kwargs))
        return memo[0]

    def _compute_logps_and_entropies(self, *args, **kwargs):
        """TRL's (GRPOTrainer._get_per_token_logps_and_entropies). FastGRPOTrainer overrides this
        method, not TRL's hook, so that the two-KL memo of the hook covers its path as well."""
        return super()._get_per_token_logps_and_entropies(*args, **kwargs)

    def _compute_loss(self, model, inputs):
        """TRL's loss; two-KL variants: beta [w_ref KL(pi || pi_ref) + w_prev KL(pi || pi_{n-1})]
        in place of TRL's KL term (Lemma 2, Thm 9; grpo_repro.train.two_kl.two_kl_loss)."""
        if self.kl_weights is None or self.beta == 0.0:
            return super()._compute_loss(model, inputs)
        return two_kl_loss(self, super()._compute_loss, model, inputs)
