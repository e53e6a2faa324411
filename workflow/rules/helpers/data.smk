"""Stage data's helpers: data_prepare's outputs under a results root and its local inputs."""

from grpo_repro.data.sources import source as data_source

DATA_SOURCE = data_source(config)  # grpo_repro.data.sources.SOURCES[data.source]


def data_outputs(root=RESULTS):
    """The files of data_prepare under `root`: every split of grpo_repro.data.sets that this run
    has."""
    tree = Tree(root)
    out = {
        "train": tree.data("train"),
        "test": tree.data("test"),
        "pool": tree.data("train_pool"),
        "stats": f"{root}/data/splits.json",
        "tokenizer": directory(f"{root}/data/tokenizer"),
    }
    if config["data"]["n_val"]:
        out["val"] = tree.data("val")
    if ORGANISM:
        out["sft"] = tree.data("sft")
    return out


def data_inputs():
    """The local files of the data source that data_prepare reads (Source.paths, keyed by their
    config keys): an edited file reruns it."""
    paths = DATA_SOURCE.paths(config["data"])
    return {DATA_SOURCE.path_keys[s]: p for s, p in paths.items() if p is not None}
