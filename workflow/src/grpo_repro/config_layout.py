"""The configuration's cross-field rules on where the data and the compute come from (called by
grpo_repro.config_checks.cross_field_errors): a local data file set for a source that reads none,
a split size left null on a source that generates its problems, the organism's problem space and
model shape (what data_prepare and train_reference would refuse), the batch layout of GRPO training
in both train.vllm_mode layouts, and vLLM's CPU backend, which generates in colocate mode only.
Each check returns (key path, message, related key paths).
"""

from __future__ import annotations


def data_source(data: dict):
    """The data source of data.source (grpo_repro.data.sources.SOURCES), None if unknown."""
    from grpo_repro.data.sources import SOURCES

    return SOURCES.get(data.get("source"))


def source_errors(data: dict) -> list[tuple]:
    """A local path set for a source that reads no such file (the organism generates its
    problems): the file would be ignored. An overlay applied without its base does this
    (an overlay of config/paper.yaml giving local GSM8K files, over config/config.yaml's organism)."""
    src = data_source(data)
    return [
        (
            ["data", key],
            f"is set, but data.source {src.name} reads no local file (its keys: "
            f"{', '.join(f'data.{k}' for k in src.path_keys.values()) or 'none'}): set "
            "data.source to a source that reads it (gsm8k), or this key to null (an overlay of "
            "config/paper.yaml applies on top of it: --configfile config/paper.yaml mine.yaml)",
            [["data", "source"]],
        )
        for key in ("train_path", "test_path")
        if data.get(key) is not None and key not in src.path_keys.values()
    ]


def size_errors(data: dict) -> list[tuple]:
    """data.n_train or data.n_test null on a source that generates its problems: null means "the
    whole split" of a file source (GSM8K), but a generated source has no whole split to take, and
    would silently produce none (an empty headline split)."""
    src = data_source(data)
    if src.generate is None:
        return []
    return [
        (
            ["data", key],
            f"is null, but data.source {src.name} generates its problems: null means the whole "
            "split of a file source only; give the number of problems to generate",
            [["data", "source"]],
        )
        for key in ("n_train", "n_test")
        if key in data and data[key] is None
    ]


def batch_errors(train: dict) -> list[tuple]:
    """The batch layout of GRPO training (grpo_repro.train.args.per_device_batch), in both
    train.vllm_mode layouts: the prompts_per_step x G completions of an optimizer step split into
    whole groups of G per training process and micro-step over train.devices processes x
    train.grad_accum micro-steps, i.e. prompts_per_step is a multiple of devices x grad_accum
    (the paper: 28 prompts = 7 devices x 4 micro-steps, 16 completions per device). The vLLM
    server of vllm_mode server runs on an extra GPU and is not a training process."""
    found = []
    g = train.get("num_generations", 2)
    prompts, accum, devices = (
        train.get(k, 1) for k in ("prompts_per_step", "grad_accum", "devices")
    )
    server = train.get("use_vllm") and train.get("vllm_mode") == "server"
    if prompts % (accum * devices):
        extra = " (the vLLM server's GPU of vllm_mode server is extra, not one of them)"
        found.append(
            (
                ["train", "prompts_per_step"],
                f"{prompts} prompts x {g} completions (num_generations) do not split into whole "
                f"groups of {g} per training process and micro-step over train.devices={devices} "
                f"processes{extra if server else ''} x train.grad_accum={accum} micro-steps: "
                f"prompts_per_step must be a multiple of devices x grad_accum = {accum * devices}",
                [["train", "devices"], ["train", "grad_accum"]],
            )
        )
    if train.get("vllm_mode") == "server" and not train.get("use_vllm"):
        found.append(
            (
                ["train", "vllm_mode"],
                "server starts a vLLM server on an extra GPU for generation, but train.use_vllm "
                "is false (the training processes generate themselves): set train.use_vllm: true, "
                "or train.vllm_mode: colocate",
                [["train", "use_vllm"]],
            )
        )
    return found


def vllm_errors(config: dict) -> list[tuple]:
    """vLLM's CPU backend (vllm.platform: cpu) generates in colocate mode only: server mode's weight
    sync (TRL's VLLMClient.init_communicator, vLLM's weight-transfer backends) needs CUDA devices."""
    train = config.get("train", {})
    on_cpu = config.get("vllm", {}).get("platform") == "cpu"
    if on_cpu and train.get("use_vllm") and train.get("vllm_mode") == "server":
        return [
            (
                ["train", "vllm_mode"],
                "server needs GPUs, and vllm.platform is cpu: the trainer sends the weights to the "
                "server over NCCL (TRL's VLLMClient.init_communicator, CUDA only); set "
                "train.vllm_mode: colocate (a vLLM engine inside the training process) on a CPU, "
                "or vllm.platform: cuda on a GPU node",
                [["vllm", "platform"], ["train", "use_vllm"]],
            )
        ]
    return []


ORGANISM_SIZES = (("data", "n_train"), ("data", "n_val"), ("data", "n_test"), ("organism", "n_sft"))


def organism_errors(config: dict) -> list[tuple]:
    """What the organism's jobs would refuse, known at load: more distinct problems asked of the
    generator (data.n_train + n_val + n_test + organism.n_sft, data_prepare) than its problem
    space holds (grpo_repro.data.organism.problem_space: min_steps, max_steps, max_operand,
    max_value, dedup), and a model shape transformers refuses (train_reference: the hidden size a
    multiple of the heads, an even head size for the rotary embedding). A run whose data_prepare
    then failed would lose the finished results/data/ tree (Snakemake removes a job's outputs
    before it runs)."""
    from grpo_repro.data.organism import SPACE_SHARE, TaskSpec, problem_space

    org, data, found = config.get("organism", {}), config.get("data", {}), []
    hidden, heads = org.get("hidden", 2), org.get("heads", 1)
    if hidden % heads or (hidden // heads) % 2:
        found.append(
            (
                ["organism", "hidden"],
                f"{hidden} over organism.heads = {heads} heads must give a whole, even head size "
                "(transformers' attention and rotary embedding refuse it)",
                [["organism", "heads"]],
            )
        )
    src = data_source(data)
    if src.generate is None or org.get("min_steps", 1) > org.get("max_steps", 1):
        return found
    knobs = ("min_steps", "max_steps", "max_operand", "max_value")
    spec = TaskSpec(*(org[k] for k in knobs))
    space = problem_space(spec, org.get("dedup", "question"))
    asked = sum(int(config.get(sec, {}).get(key) or 0) for sec, key in ORGANISM_SIZES)
    if asked > SPACE_SHARE * space:
        found.append(
            (
                ["organism", "max_steps"],
                f"the generator has {space} distinct problems at organism.min_steps "
                f"{spec.min_steps}, max_steps {spec.max_steps}, max_operand {spec.max_operand}, "
                f"max_value {spec.max_value} (dedup {org.get('dedup', 'question')}), and "
                f"data.n_train + n_val + n_test + organism.n_sft ask for {asked}, more than "
                f"{SPACE_SHARE:.0%} of them: allow more steps or larger numbers, or ask for fewer",
                [["organism", k] for k in (*knobs, "dedup", "n_sft")]
                + [list(k) for k in ORGANISM_SIZES[:3]],
            )
        )
    return found
