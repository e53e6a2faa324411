"""GPU memory of every job that runs a model (Sec. 6 at the configuration's sizes), estimated from
the settings the job itself reads, before any job runs: what `python -m grpo_repro.plan` prints per
job beside the GPU's memory (config key gpu.memory_gb), and what decides the batch layout of a job
derived from the training's settings (`derived_layout`: the zero-success control, the fixed-point
studies' runs).

A training process (grpo_repro.train.grpo: float32 master weights, bf16 autocast with train.bf16,
AdamW, TRL 1.16's fused log-prob head) holds, per parameter: its weight and gradient (4 + 4 bytes),
AdamW's two moments (8), the reference model's weight with beta > 0 (4: TRL loads pi_ref in the
policy's dtype), autocast's bf16 copy (2); then the activations kept for the backward pass of one
micro-batch (`per_device_batch` completions, each at most `seq_tokens` tokens); one tile of the
fused head's logits (TRL's chunked log-prob kernel: 4096 tokens x 32768 vocabulary columns, forward
and backward); TRL's own generation (no vLLM) of the process's generation batch (its KV cache and
one step's logits over the vocabulary); a colocated vLLM engine's reserved share of the GPU
(train.vllm_mode colocate: TRL's vllm_gpu_memory_utilization, grpo_repro.train.args
VLLM_COLOCATE_MEMORY); and the CUDA context (OVERHEAD). A vLLM server or evaluation engine caps
itself at its own share (GPU_MEMORY_UTILIZATION of grpo_repro.train.vllm_server and
grpo_repro.sampler.vllm).

Activations per token and layer (`ACT_BYTES`), counted from a Qwen2/Llama decoder layer as
transformers runs it with SDPA attention (no L x L score matrix): under bf16 autocast the residual
stream and both RMSNorms stay float32 (4 bytes: 2 x 2 norm inputs and outputs, 2 residual sums),
the projections' inputs and outputs are bf16 (2 bytes: q, k, v, rotary, attention output, o_proj
input and output, the MLP's two inputs) and the SwiGLU MLP keeps four ffn-wide bf16 tensors (gate,
up, SiLU(gate), their product): 4 x 8 + 2 x 2 = 36 bytes x hidden + 2 x 4 = 8 bytes x ffn; in
float32 every bf16 tensor doubles. These are estimates, not measurements: the device check
(workflow/benchmarks/gpu_paper_scale.py) writes each job's measured peak beside this model's.

An evaluation job holds vLLM's reserved share (eval.backend vllm: the engine caps itself at it) or,
with the HF sampler, the weights, the KV cache of `batch_prompts` x samples sequences and one
decoding step's logits. The fixed-point KL job: the KL's own model (grpo_repro.fixed_point.kl.
peak_bytes) and its sampler's. The shape of the model (`Shape`) comes from the model's config.json
(local path, or the hub cache through huggingface_hub's public `try_to_load_from_cache`), else the
published shapes of `KNOWN` (the paper's pi_ref).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GB = 1e9  # the plan's unit (GPU memory as vendors state it: H100 80 GB)
OVERHEAD = 2.0 * GB  # CUDA context, cuBLAS workspace and the caching allocator's slack
#: activation bytes per token and decoder layer: (x hidden, x ffn), bf16 autocast | float32
ACT_BYTES = {"bf16": (36, 8), "fp32": (64, 16)}
HEAD_TILE = (4096, 32768)  # TRL 1.16's fused log-prob head: tokens x vocabulary columns per tile
FLOAT32, BF16 = 4, 2


@dataclass(frozen=True)
class Shape:
    """A decoder-only transformer's size (a Qwen2/Llama config.json's fields)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool = True

    @property
    def params(self) -> int:
        """Parameters: embeddings (and an untied head), per layer the attention (q, o: hidden^2;
        k, v: hidden x kv width; Qwen2's q/k/v biases), the SwiGLU MLP (3 x hidden x ffn) and two
        RMSNorms, and the final norm."""
        kv = self.hidden * self.kv_heads // self.heads
        attn = 2 * self.hidden**2 + 2 * self.hidden * kv + self.hidden + 2 * kv
        layer = attn + 3 * self.hidden * self.ffn + 2 * self.hidden
        emb = self.vocab * self.hidden * (1 if self.tied else 2)
        return emb + self.layers * layer + self.hidden

    def kv_bytes(self, dtype_bytes: int) -> int:
        """KV-cache bytes per token: keys and values of every layer."""
        return 2 * self.layers * self.hidden * self.kv_heads // self.heads * dtype_bytes

    @classmethod
    def from_config(cls, c: dict) -> Shape:
        """From a config.json's fields (Qwen2, Llama)."""
        return cls(
            hidden=int(c["hidden_size"]),
            layers=int(c["num_hidden_layers"]),
            heads=int(c["num_attention_heads"]),
            kv_heads=int(c.get("num_key_value_heads") or c["num_attention_heads"]),
            ffn=int(c["intermediate_size"]),
            vocab=int(c["vocab_size"]),
            tied=bool(c.get("tie_word_embeddings", False)),
        )


#: published shapes of hub models, used when their config.json is not in the local cache
KNOWN = {
    # Qwen2.5-0.5B(-Instruct)'s config.json: 494,032,768 parameters with tied embeddings
    "Qwen/Qwen2.5-0.5B-Instruct": Shape(896, 24, 14, 2, 4864, 151936, True),
}


def model_shape(model: dict) -> Shape | None:
    """The shape of pi_ref (config section `model`): its config.json (a local directory, or the hub
    cache at the pinned revision), else KNOWN; None for the organism (built by the run) or an
    unknown model not in the cache."""
    name = model.get("name_or_path")
    if name is None:
        return None
    from grpo_repro.hub import is_local

    path = Path(name).expanduser() / "config.json" if is_local(name) else None
    if path is None:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json", revision=model.get("revision"))
        path = Path(found) if isinstance(found, str) else None
    if path is not None and path.is_file():
        return Shape.from_config(json.loads(path.read_text()))
    return KNOWN.get(name)


@dataclass(frozen=True)
class Estimate:
    """One GPU's memory in a job: the parts (bytes) and the GPU's memory."""

    what: str  # which GPU of the job: "training process", "vLLM server", "evaluation", ...
    parts: dict
    device: float  # bytes of one GPU (gpu.memory_gb)

    @property
    def total(self) -> float:
        return float(sum(self.parts.values()))

    @property
    def fits(self) -> bool:
        return self.total <= self.device

    def line(self) -> str:
        parts = ", ".join(f"{k} {v / GB:.1f}" for k, v in self.parts.items() if v)
        verdict = "fits" if self.fits else "DOES NOT FIT"
        return (
            f"{self.what}: {self.total / GB:.1f} GB of {self.device / GB:.0f} GB, {verdict} "
            f"({parts})"
        )


def device_bytes(config: dict) -> float:
    """One GPU's memory (config key gpu.memory_gb)."""
    return float(config["gpu"]["memory_gb"]) * GB


def seq_tokens(config: dict, completion: int) -> int:
    """The longest sequence of a batch: the data source's longest rendered prompt
    (Source.max_prompt_tokens) and `completion` tokens."""
    from grpo_repro.data.sources import source

    return int(source(config).max_prompt_tokens) + int(completion)


def train_process(train: dict, shape: Shape, tokens: int, device: float) -> Estimate:
    """One training process of a run whose train section is `train` (what the job reads:
    grpo_repro.train.run_settings.GRPORun.sections["train"]), sequences of at most `tokens`."""
    from grpo_repro.train.args import VLLM_COLOCATE_MEMORY, per_device_batch, uses_server

    p, bf16 = shape.params, bool(train["bf16"])
    batch = per_device_batch(train, int(train["devices"]))
    a_h, a_f = ACT_BYTES["bf16" if bf16 else "fp32"]
    colocate = train["use_vllm"] and not uses_server(train)
    gen_rows = 0 if train["use_vllm"] else batch * int(train["grad_accum"])  # TRL generates
    head_rows = min(batch * tokens, HEAD_TILE[0])
    parts = {
        "weights+grads": 2 * p * FLOAT32,
        "AdamW": 2 * p * FLOAT32,
        "pi_ref": p * FLOAT32 if train["beta"] > 0 else 0,
        "autocast copy": p * BF16 if bf16 else 0,
        "activations": shape.layers * batch * tokens * (a_h * shape.hidden + a_f * shape.ffn),
        "logit tiles": 2 * head_rows * min(HEAD_TILE[1], shape.vocab) * FLOAT32,
        "generation": gen_rows * (tokens * shape.kv_bytes(FLOAT32) + shape.vocab * FLOAT32),
        "vLLM (colocated)": VLLM_COLOCATE_MEMORY * device if colocate else 0,
        "CUDA context": OVERHEAD,
    }
    return Estimate(f"training process, micro-batch {batch}", parts, device)


def vllm_server(device: float) -> Estimate:
    """The GPU of train.vllm_mode server's vLLM server: the share it reserves."""
    from grpo_repro.train.vllm_server import GPU_MEMORY_UTILIZATION

    return Estimate("vLLM server", {"vLLM (reserved)": GPU_MEMORY_UTILIZATION * device}, device)


def sampler_parts(shape, backend, dtype_bytes, rows, tokens, device) -> dict:
    """A sampler of `rows` sequences at once: vLLM's reserved share, or the HF sampler's weights, KV
    cache and one decoding step's logits and probabilities."""
    if backend == "vllm":
        from grpo_repro.sampler.vllm import GPU_MEMORY_UTILIZATION

        return {"vLLM (reserved)": GPU_MEMORY_UTILIZATION * device, "CUDA context": OVERHEAD}
    return {
        "weights": shape.params * dtype_bytes,
        "KV cache": rows * tokens * shape.kv_bytes(dtype_bytes),
        "logits": 2 * rows * shape.vocab * FLOAT32,
        "CUDA context": OVERHEAD,
    }


def evaluation(ecfg: dict, train: dict, samples: int, shape, tokens, device) -> Estimate:
    """An evaluation job (eval section `ecfg` as the job reads it: backend, batch_prompts,
    dtype) drawing `samples` per prompt."""
    from grpo_repro.evaluate.job import eval_dtype

    dtype = FLOAT32 if eval_dtype(ecfg["dtype"], train) == "float32" else BF16
    rows = int(ecfg["batch_prompts"]) * int(samples)
    parts = sampler_parts(shape, ecfg["backend"], dtype, rows, tokens, device)
    return Estimate(f"evaluation, {ecfg['backend']}", parts, device)


def kl_job(samples: int, shape: Shape, tokens: int, device: float) -> Estimate:
    """fixed_point_kl: both models in float32 and one chunk of scored logits
    (grpo_repro.fixed_point.kl.peak_bytes), and its HF sampler (32 prompts x `samples`)."""
    from grpo_repro.fixed_point.kl import SAMPLER_PROMPTS, peak_bytes

    parts = sampler_parts(shape, "hf", FLOAT32, SAMPLER_PROMPTS * samples, tokens, device)
    del parts["weights"]  # the policy's weights: counted by peak_bytes with pi_ref's
    parts["scoring"] = peak_bytes(shape.params, tokens, shape.vocab)
    return Estimate("KL, HF sampler", parts, device)


def derived_layout(config: dict, overrides: dict) -> dict:
    """The train keys of a job derived from the training's settings (the zero-success control, a
    fixed-point study's run: `overrides`, grpo_repro.train.run_settings.grpo_run's train_overrides),
    fitted to one GPU: `overrides` as they are when the job runs on the CPU, when its micro-batch is
    at most the training's, or when the memory model fits it (a model of known shape); else with
    the training's per-device micro-batch (grpo_repro.train.args.per_device_batch), gradient
    accumulation making up the step (train.grad_accum)."""
    from grpo_repro.gpus import uses_gpu
    from grpo_repro.train.args import per_device_batch

    train = {**config["train"], **overrides}
    base = per_device_batch(config["train"], int(config["train"]["devices"]))
    devices = int(train["devices"])
    if not uses_gpu(config) or per_device_batch(train, devices) <= base:
        return overrides
    shape = model_shape(config["model"])
    tokens = seq_tokens(config, train["max_completion_length"])
    if shape is not None and train_process(train, shape, tokens, device_bytes(config)).fits:
        return overrides
    total = int(train["prompts_per_step"]) * int(train["num_generations"])
    if total % (devices * base):
        raise ValueError(
            f"a job derived from the training ({devices} process(es), {total} completions per "
            f"step) cannot keep the training's micro-batch of {base} completions per device "
            "(train.prompts_per_step x num_generations / (devices x grad_accum)) and does not fit "
            "one GPU as it is: choose train.grad_accum so that it divides, or set gpu.memory_gb "
            "if the GPU holds more"
        )
    return {**overrides, "grad_accum": total // (devices * base)}
