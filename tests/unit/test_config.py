"""Configuration validation (schema + cross-field rules): every bad input names its key, file, line."""

import os

import pytest
import yaml

from grpo_repro import config as cfg
from grpo_repro.config_checks import RENAMED_KEYS
from grpo_repro.train.run_settings import grpo_run
from tests.helpers import ROOT, snakemake

DEFAULT = ROOT / "config" / "config.yaml"
PAPER = ROOT / "config" / "paper.yaml"
REHEARSAL = ROOT / "config" / "rehearsal.yaml"
REHEARSAL_HF = ROOT / "config" / "rehearsal_hf.yaml"
STUDIES = ROOT / "config" / "paper_studies.yaml"
OVERLAYS = [PAPER, STUDIES, REHEARSAL, REHEARSAL_HF]  # every shipped overlay


def base():
    return cfg.load_yaml(DEFAULT)


RUNS = {  # --configfile of each run
    "default": [DEFAULT],
    "paper": [PAPER],
    "paper_studies": [PAPER, STUDIES],
    "rehearsal": [PAPER, REHEARSAL],
    "rehearsal_hf": [PAPER, REHEARSAL, REHEARSAL_HF],
}


@pytest.mark.parametrize("run", RUNS)
def test_shipped_configs_are_valid(run):
    cfg.load(*RUNS[run])


def flat(config, path=()):
    """{key path: value} of the leaves of a configuration (a mapping is not a leaf)."""
    out = {}
    for k, v in config.items():
        out.update(flat(v, (*path, k)) if isinstance(v, dict) and v else {(*path, k): v})
    return out


@pytest.mark.parametrize(
    "overlay,base",
    [
        (PAPER, [DEFAULT]),
        (STUDIES, [PAPER]),
        (REHEARSAL, [PAPER]),
        (REHEARSAL_HF, [PAPER, REHEARSAL]),
    ],
)
def test_overlays_hold_only_what_they_change(overlay, base):
    """paper.yaml sets only keys whose value differs from config/config.yaml's, each overlay of it
    only keys that differ from its base's resolved configuration: one place per setting."""
    resolved = flat(cfg.load(*base))
    same = [k for k, v in flat(cfg.load_yaml(overlay)).items() if resolved.get(k, object()) == v]
    assert same == [], f"{overlay.name} repeats its base's values: {same}"
    assert len(overlay.read_text().splitlines()) <= 90


def test_overlays_merge_as_snakemake_merges_them():
    """load(A, B) is Snakemake's configuration for `--configfile A B` (snakemake.utils.update_config:
    config/config.yaml updated with A, then B; mappings key by key, lists replaced)."""
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config

    for files in RUNS.values():
        over = {}
        for f in files:
            update_config(over, load_configfile(str(f)))
        expected = load_configfile(str(DEFAULT))
        update_config(expected, over)
        assert cfg.load(*files) == expected
    rehearsal = cfg.load(PAPER, REHEARSAL)
    assert rehearsal["eval"]["temperatures"] == [1.0, 0]  # the rehearsal's list replaces paper's
    assert rehearsal["train"]["kl_estimator"] == "k3" and rehearsal["train"]["beta"] == 0.1  # kept
    assert cfg.compose([DEFAULT, PAPER]) == [cfg.DEFAULT_FILE, PAPER]  # the default once


@pytest.mark.parametrize("old,new", [(k, v) for k, v in RENAMED_KEYS.items()])
def test_renamed_data_keys_are_refused_naming_the_new_one(tmp_path, old, new):
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"seed: 0\n{old[0]}:\n  {old[1]}: workflow/resources/gsm8k/train.jsonl\n")
    with pytest.raises(cfg.ConfigError) as err:
        cfg.load(PAPER, mine)
    assert f"config key '{'.'.join(old)}' ({mine}:3): was renamed: use {new}" in str(err.value)


def test_an_overlays_bad_value_names_its_file_and_line(tmp_path):
    """A bad value in any of the composed files names that file and line."""
    bad = tmp_path / "paper.yaml"
    bad.write_text(PAPER.read_text().replace("  num_iterations: 10 ", "  num_iterations: 0  "))
    line = next(i for i, s in enumerate(bad.read_text().splitlines(), 1) if "iterations: 0" in s)
    with pytest.raises(cfg.ConfigError, match=rf"'train.num_iterations' \({bad}:{line}\)"):
        cfg.load(bad, REHEARSAL)


def test_every_key_has_a_comment():
    """Each key line of the shipped configs carries a comment (its meaning and the paper's symbol)."""
    for path in (DEFAULT, *OVERLAYS):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and ":" in stripped.split("#")[0]:
                assert "#" in line, f"{path.name}:{no} has no comment: {line!r}"


BAD = [  # (key path, bad value, words expected in the message)
    (["train", "beta"], 0, "train.beta"),
    (["train", "beta"], -1.0, "train.beta"),
    (["train", "smoothing_eps"], 0.0, "train.smoothing_eps"),
    (["train", "smoothing_eps"], 1.5, "train.smoothing_eps"),
    (["train", "clip_eps"], 0, "train.clip_eps"),
    (["train", "clip_eps"], -0.2, "train.clip_eps"),
    (["variants"], ["grpo", "ppo"], "variants[1]"),
    (["eval", "samples"], 2.5, "eval.samples"),
    (["eval", "samples"], 0, "eval.samples"),
    (["eval", "samples"], -50, "eval.samples"),
    (["train", "num_generations"], "16", "train.num_generations"),
    (["train", "learning_rate"], "fast", "train.learning_rate"),
    (["data", "source"], "mnist", "data.source"),
    (["figures", "eps"], [0.0], "figures.eps[0]"),
    (["train", "bf16"], "yes", "train.bf16"),
    (["fixed_point", "long_steps"], 0, "fixed_point.long_steps"),
    (["fixed_point", "long_steps"], 400, "fixed_point.long_steps"),  # not above max_steps
    (["fixed_point", "long_steps"], 1000, "fixed_point.long_steps"),  # not a multiple of save_steps
    (["fixed_point", "factors", "long"], {"num_iterations": 1}, "fixed_point.factors"),
]


def set_key(config, keys, value):
    node = config
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value


@pytest.mark.parametrize("keys,value,expect", BAD, ids=[f"{'.'.join(k)}={v!r}" for k, v, _ in BAD])
def test_bad_value_names_key(keys, value, expect):
    config = base()
    set_key(config, keys, value)
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config)
    assert expect in str(err.value)


def test_unknown_key_named():
    config = base()
    config["train"]["betta"] = 0.1
    with pytest.raises(cfg.ConfigError, match=r"train.betta.*unknown key 'betta'"):
        cfg.check(config)


def test_unknown_top_level_key_named():
    config = base()
    config["modle"] = {}
    with pytest.raises(cfg.ConfigError, match="unknown key 'modle'"):
        cfg.check(config)


def test_missing_key_named():
    config = base()
    del config["train"]["beta"]
    with pytest.raises(cfg.ConfigError, match="'beta' is a required property"):
        cfg.check(config)


def test_pool_larger_than_training_set():
    config = base()
    config["data"].update(n_train=10, train_pool=64)
    with pytest.raises(cfg.ConfigError, match="data.train_pool"):
        cfg.check(config)


def test_error_names_file_and_line(tmp_path):
    text = DEFAULT.read_text().replace("  beta: 0.1 ", "  beta: -0.1", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.startswith("  beta: -0.1"))
    with pytest.raises(cfg.ConfigError) as err:
        cfg.load(bad)
    assert f"{bad}:{line}" in str(err.value)


def test_snakemake_stops_before_scheduling(tmp_path):
    """A bad config file stops `snakemake -n` at load time with the key in the message."""
    config = base()
    config["train"]["clip_eps"] = 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    res = snakemake(["-n", "--configfile", str(bad)], ROOT, timeout=120)
    assert res.returncode != 0
    out = res.log
    assert "train.clip_eps" in out and str(bad) in out
    assert "Job stats" not in out  # nothing was scheduled


def test_stage_provenance(tmp_path):
    """Each stage directory gets PROVENANCE.json: the versions and, per file, its hash and the job
    that made it (none here: no Snakemake record). A later call rewrites only the stages with a
    file written after their record (by this run, or by a run killed before its own call); the
    others keep their record byte for byte, and the untouched files keep their entries."""
    import json

    from grpo_repro.provenance import file_hash, write_stage_provenance

    step = tmp_path / "evaluate" / "grpo" / "step_4.csv"
    step.parent.mkdir(parents=True)
    step.write_text("prompt_id,successes\na,1\n")
    (tmp_path / "train" / "grpo" / "work").mkdir(parents=True)
    (tmp_path / "train" / "grpo" / "work" / "optimizer.pt").write_text("x")
    theory = tmp_path / "theory" / "derivations.json"
    theory.parent.mkdir()
    theory.write_text("{}")
    written = write_stage_provenance(tmp_path, logs=tmp_path / "none")
    assert sorted(p.parent.name for p in written) == ["evaluate", "theory"]  # train: only work/
    prov = json.loads((tmp_path / "evaluate" / "PROVENANCE.json").read_text())
    entry = prov["files"]["grpo/step_4.csv"]
    assert entry["content"] == file_hash(step)
    assert prov["versions"][entry["versions"]]["torch"]

    theory_record = (tmp_path / "theory" / "PROVENANCE.json").read_bytes()
    assert write_stage_provenance(tmp_path, logs=tmp_path / "none") == []  # nothing new
    later = (tmp_path / "evaluate" / "PROVENANCE.json").stat().st_mtime + 1
    step8 = step.with_name("step_8.csv")
    step8.write_text("prompt_id,successes\na,2\n")
    os.utime(step8, (later, later))  # written after the record, e.g. by a killed run
    written = write_stage_provenance(tmp_path, logs=tmp_path / "none")
    assert [p.parent.name for p in written] == ["evaluate"]
    assert (tmp_path / "theory" / "PROVENANCE.json").read_bytes() == theory_record
    files = json.loads((tmp_path / "evaluate" / "PROVENANCE.json").read_text())["files"]
    assert files["grpo/step_4.csv"] == entry and files["grpo/step_8.csv"]["content"] == file_hash(
        step8
    )


# ---------------------------------------------------------------- messages naming the culprit
def test_yaml_syntax_error_names_file_and_line(tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_text("train:\n  beta: 0.1\n  seeds: [0, 1\n")
    with pytest.raises(cfg.ConfigError, match=r"mine.yaml:\d: not valid YAML"):
        cfg.load_yaml(bad)
    bad.write_text("train:\n  beta: 0.1\n\tseeds: [0]\n")
    with pytest.raises(cfg.ConfigError, match=r"mine.yaml:3: not valid YAML.*a tab"):
        cfg.load_yaml(bad)
    assert cfg.main([str(DEFAULT), str(bad)]) == 1


def test_number_written_as_a_string_gets_a_hint():
    config = base()
    config["train"]["learning_rate"] = "1e-5"  # what YAML 1.1 reads from `learning_rate: 1e-5`
    with pytest.raises(cfg.ConfigError, match=r"train.learning_rate.*write .*e.g. 1.0e-5"):
        cfg.check(config)


def test_val_split_without_val_data_names_the_key(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("data:\n  n_val: 0\neval:\n  splits: [val]\n")
    config = cfg.merge(base(), cfg.load_yaml(mine))
    with pytest.raises(cfg.ConfigError, match=r"'eval.splits' \(.*mine.yaml:4\).*data.n_val is 0"):
        cfg.check(config, [DEFAULT, mine])


@pytest.mark.parametrize(
    "key,line,source,refused",
    [
        ("n_test", 2, "organism", True),  # generated: null would give no test problems
        ("n_train", 2, "organism", True),
        ("n_test", 2, "gsm8k", False),  # a file source: null = the whole split
    ],
)
def test_null_split_size_of_a_generated_source_names_the_key(tmp_path, key, line, source, refused):
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"data:\n  {key}: null\n")
    config = cfg.merge(base(), cfg.load_yaml(mine))
    if source != "organism":  # GSM8K (the paper's source)
        config = cfg.merge(cfg.load(PAPER, REHEARSAL), cfg.load_yaml(mine))
    if not refused:
        cfg.check(config, [DEFAULT, PAPER, REHEARSAL, mine])
        return
    with pytest.raises(
        cfg.ConfigError, match=rf"'data.{key}' \(.*mine.yaml:{line}\).*generates its problems"
    ):
        cfg.check(config, [DEFAULT, mine])


def test_tokenizer_error_names_the_users_file(tmp_path):
    """gsm8k with the word-level tokenizer: the culprit is the user's file, not the default one."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("seed: 0\ndata:\n  source: gsm8k\n")
    config = cfg.merge(base(), cfg.load_yaml(mine))
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, [DEFAULT, mine])
    assert f"'model.name_or_path' ({mine}:3, data.source)" in str(err.value)


def test_run_settings_leave_out_seeds_and_speed_only_keys():
    """Adding a GRPO seed changes no existing run's params; eval.batch_prompts no evaluation's."""
    a, b = base(), base()
    b["train"]["seeds"] = [0, 1, 2, 3]
    b["eval"]["batch_prompts"] = 5
    assert grpo_run(a, "grpo", 0).params() == grpo_run(b, "grpo", 0).params()
    assert "seeds" not in grpo_run(a, "grpo", 0).params()["train"]
    assert cfg.eval_settings(a) == cfg.eval_settings(b)
    assert cfg.speed_setting(b, "eval", "batch_prompts") == 5


def test_snakemake_names_the_users_file_for_the_tokenizer(tmp_path):
    """The Snakefile's config/config.yaml comes last in workflow.configfiles but is overridden by
    --configfile files: the error names the user's file (it named config.yaml:104)."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("data:\n  source: gsm8k\n")
    res = snakemake(["-n", "--configfile", str(mine)], ROOT, timeout=120)
    assert res.returncode != 0 and f"'model.name_or_path' ({mine}:2, data.source)" in res.log
    assert cfg.precedence(["a.yaml", "b.yaml", "config.yaml"]) == [
        "config.yaml",
        "a.yaml",
        "b.yaml",
    ]
