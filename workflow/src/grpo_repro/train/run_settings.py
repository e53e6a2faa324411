"""What one GRPO run reads (Sec. 2 objective, Sec. 6 experiment): one typed, frozen object per
(variant, GRPO seed), built once from the validated configuration (`grpo_run`) and handed from the
rule (its params, `GRPORun.params`) through the job's script, grpo_repro.train.launch and
grpo_repro.train.grpo down to TRL's GRPOConfig (grpo_repro.train.args.grpo_args). A setting has one
representation all the way: its key in the configuration's `train:` section (the schema states its
type, config/config.yaml its meaning), read by key where it acts (`run.train["beta"]`).

Result-relevant fields (params, equality): the variant, the GRPO seed, the data seed, the reward's
answer mode, the train section (every key of config `train:` but the list of GRPO seeds and the
tracker, in the configuration's order) and, with train.use_vllm, the vllm section. The resume fingerprint
(grpo_repro.train.grpo.fingerprint) reads variant, GRPO seed, answer mode and train section; the
data seed reaches it through the prompts and pi_ref's weights.
Runtime fields never change results: the experiment tracker (train.report_to, a speed-only key,
grpo_repro.config.SPEED_ONLY) and, in train.vllm_mode server, the job's vLLM server address; they
are excluded from equality and params, so changing them reruns nothing and resumes.

Checkpoint schedule (`checkpoint_steps`: which optimizer steps are saved and evaluated): one
epoch over n prompts at `prompts_per_step` prompts per generation batch, each batch reused for
mu = num_iterations gradient steps (TRL's num_iterations), is floor(n / prompts_per_step) * mu
optimizer steps: TRL's RepeatSampler drops the incomplete last batch (the paper: 7473 / 28 -> 266
full batches x 10 = 2660; the paper's "about 267 batches x mu"). Step 0 is pi_ref.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from grpo_repro import variants as reg

#: train keys that are not a run's train section: the GRPO seeds (a run has one: GRPORun.seed)
#: and the tracker (speed only: GRPORun.report_to)
NOT_TRAIN_SETTINGS = ("seeds", "report_to")


@dataclass(frozen=True)
class GRPORun:
    """One GRPO run: what its results depend on, and (compare=False) how this launch runs it."""

    variant: str  # the variant trained (grpo_repro.variants; Sec. 3-5)
    seed: int  # the GRPO seed (train.seeds): sampling and the order of prompts
    data_seed: int  # the data / pi_ref seed (config `seed`, or a replicate's)
    answer_mode: str  # the reward's answer extraction (data.answer_mode)
    # the train section of this run: config `train:` without NOT_TRAIN_SETTINGS, two_kl_alpha only
    # for a two-KL variant (the other variants' section, and so their resume fingerprint, never
    # holds it)
    train: dict
    vllm: dict | None = None  # the vllm section (where the engine runs), only with train.use_vllm
    # runtime: never changes results (not in equality, params or the fingerprint)
    report_to: str = field(default="none", compare=False)  # experiment tracker (train.report_to)
    server_url: str | None = field(default=None, compare=False)  # the job's vLLM server URL
    group_port: int | None = field(default=None, compare=False)  # TRL's weight-sync port

    @property
    def sections(self) -> dict:
        """The run as the configuration sections the shared helpers read (gpus.job_gpus,
        gpus.vllm_platform, preflight.check_device, the train helpers): train, and vllm when it
        generates with vLLM."""
        vllm = {"vllm": self.vllm} if self.vllm is not None else {}
        return {"train": dict(self.train), **vllm}

    def params(self) -> dict:
        """Every result-relevant field as plain builtins. Snakemake tracks a rule's params (its
        rerun trigger) only when they are builtin types (str/int/float/list/dict): a dataclass
        param would silently never rerun, so the rules pass this dict, never the object."""
        out = {
            "variant": self.variant,
            "seed": self.seed,
            "data_seed": self.data_seed,
            "answer_mode": self.answer_mode,
            "train": dict(self.train),
        }
        if self.vllm is not None:  # runs generating without vLLM never read it
            out["vllm"] = dict(self.vllm)
        return out

    def config_record(self) -> dict:
        """The result-relevant settings as the configuration sections they come from (seed,
        train, data.answer_mode, vllm): run.json's `config`, which the report compares with the
        configuration (grpo_repro.report.summary, grpo_repro.report.overlay.train_params)."""
        out = {
            "seed": self.data_seed,
            "train": dict(self.train),
            "data": {"answer_mode": self.answer_mode},
        }
        if self.vllm is not None:
            out["vllm"] = dict(self.vllm)
        return out

    @classmethod
    def from_params(cls, d: dict, **runtime) -> GRPORun:
        """The run of `params` (a rule's params, or params()'s JSON), with runtime fields."""
        return cls(
            variant=d["variant"],
            seed=d["seed"],
            data_seed=d["data_seed"],
            answer_mode=d["answer_mode"],
            train=dict(d["train"]),
            vllm=dict(d["vllm"]) if d.get("vllm") is not None else None,
            **runtime,
        )

    def to_json(self) -> str:
        """params() and the runtime fields, for the multi-process launch (`--run-json`)."""
        return json.dumps(
            {**self.params(), "runtime": {k: getattr(self, k) for k in runtime_fields()}}
        )

    @classmethod
    def from_json(cls, text: str) -> GRPORun:
        d = json.loads(text)
        return cls.from_params(d, **d.get("runtime", {}))


def runtime_fields() -> tuple[str, ...]:
    """GRPORun's runtime fields: those left out of equality (compare=False)."""
    return tuple(f.name for f in dataclasses.fields(GRPORun) if not f.compare)


def grpo_run(
    config: dict,
    variant: str,
    seed: int,
    data_seed: int | None = None,
    train_overrides: dict | None = None,
) -> GRPORun:
    """THE run of (`variant`, GRPO seed `seed`) of the validated configuration: its train section
    without the list of GRPO seeds (adding a seed retrains only that seed) and without the
    tracker (train.report_to: the runtime field report_to, so changing it reruns nothing), with
    train.two_kl_alpha only for a two-KL variant (Lemma 2, Thm 9: changing it retrains no other
    variant); with train.use_vllm, the vllm section. data_seed: a replicate's (default config
    `seed`); train_overrides: train keys this run changes (the fixed-point studies:
    grpo_repro.fixed_point.runs.train_overrides)."""
    train = {k: v for k, v in config["train"].items() if k not in NOT_TRAIN_SETTINGS}
    unknown = sorted(set(train_overrides or {}) - set(train))
    if unknown:
        raise ValueError(f"train_overrides: {unknown} are not a run's train settings")
    train.update(train_overrides or {})
    if not reg.get(variant).two_kl or train["two_kl_alpha"] is None:
        del train["two_kl_alpha"]
    return GRPORun(
        variant=variant,
        seed=int(seed),
        data_seed=int(config["seed"] if data_seed is None else data_seed),
        answer_mode=config["data"]["answer_mode"],
        train=train,
        vllm=dict(config["vllm"]) if train["use_vllm"] else None,
        report_to=config["train"].get("report_to", "none"),
    )


def total_steps(train: dict, n_prompts: int) -> int:
    """Optimizer steps of the run: train.max_steps, or one epoch when it is null."""
    if train["max_steps"] is not None:
        return int(train["max_steps"])
    if n_prompts < train["prompts_per_step"]:
        raise ValueError(
            f"one epoch needs at least train.prompts_per_step = {train['prompts_per_step']} "
            f"prompts, the training set has {n_prompts}"
        )
    return n_prompts // train["prompts_per_step"] * train["num_iterations"]


def checkpoint_steps(train: dict, n_prompts: int) -> list[int]:
    """[0, save_steps, 2 save_steps, ..., total]: step 0 is pi_ref, the last step is always saved."""
    total = total_steps(train, n_prompts)
    steps = list(range(0, total + 1, train["save_steps"]))
    if steps[-1] != total:
        steps.append(total)
    return steps
