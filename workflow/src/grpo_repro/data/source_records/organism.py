"""Data source `organism`: GSM8K-format problems the pipeline generates (grpo_repro.data.organism,
docs/organism.md), sized by data.n_train / n_val / n_test and organism.n_sft."""

from grpo_repro.data.sources import Source


def organism_records(config: dict) -> dict:
    """The organism's generated splits train, val, test and sft (grpo_repro.data.organism)."""
    from grpo_repro.data.organism import TaskSpec, generate

    org, data = config["organism"], config["data"]
    spec = TaskSpec(org["min_steps"], org["max_steps"], org["max_operand"], org["max_value"])
    sizes = {
        "train": data["n_train"],
        "val": data["n_val"],
        "test": data["n_test"],
        "sft": org["n_sft"],
    }
    return generate(sizes, spec, seed=config["seed"], dedup=org["dedup"])


#: a problem of organism.max_steps 3 steps is about 40 words, one token each, plus the instruction
SOURCE = Source(
    "organism", "organism", generate=organism_records, word_level=True, max_prompt_tokens=64
)
