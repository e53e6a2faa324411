"""The evaluation dtype (config key eval.dtype: rollout | float32 | bfloat16): `rollout` is the
dtype training's rollouts are sampled with (grpo_repro.models.rollout_dtype), the same for both
backends and with no autocast; the old value `training` is refused when the config loads."""

import pytest

from grpo_repro import config as cfg
from grpo_repro.evaluate.job import eval_dtype
from grpo_repro.models import rollout_dtype
from tests.helpers import ROOT


@pytest.mark.parametrize(
    "train, dtype",
    [
        ({"bf16": False, "use_vllm": False}, "float32"),
        ({"bf16": True, "use_vllm": False}, "float32"),  # TRL generates with fp32 master weights
        ({"bf16": False, "use_vllm": True}, "float32"),
        ({"bf16": True, "use_vllm": True}, "bfloat16"),  # the dtype of training's vLLM engine
        ({"bf16": True}, "float32"),
    ],
)
def test_rollout_dtype(train, dtype):
    assert rollout_dtype(train) == dtype
    assert eval_dtype("rollout", train) == dtype
    assert eval_dtype("float32", train) == "float32" and eval_dtype("bfloat16", train) == "bfloat16"


def test_unknown_choice():
    with pytest.raises(ValueError, match="eval.dtype: 'training' is not rollout"):
        eval_dtype("training", {"bf16": False})


@pytest.mark.parametrize("run", [[], ["paper.yaml"], ["paper.yaml", "rehearsal.yaml"]])
def test_the_old_value_is_refused_naming_the_new_one(run, tmp_path):
    """The default, paper and rehearsal runs (overlays over config/config.yaml) with a file of the user's
    that still sets the old value: refused, naming that file and line."""
    files = [ROOT / "config" / name for name in run]
    assert cfg.load(*files)["eval"]["dtype"] == "rollout"
    old = tmp_path / "mine.yaml"
    old.write_text("eval:\n  dtype: training\n")
    with pytest.raises(cfg.ConfigError) as err:
        cfg.load(*files, old)
    msg = str(err.value)
    assert f"config key 'eval.dtype' ({old}:2): 'training' was renamed: use rollout" in msg


def test_the_paper_evaluates_in_its_rollouts_dtype():
    """config.eval_settings carries train.bf16 and train.use_vllm: the paper's run (vLLM rollouts
    in bf16) evaluates in bfloat16, the default CPU run in float32."""
    for name, dtype in (("paper.yaml", "bfloat16"), ("config.yaml", "float32")):
        config = cfg.load(ROOT / "config" / name)
        settings = cfg.eval_settings(config)
        assert eval_dtype(settings["eval"]["dtype"], settings) == rollout_dtype(config["train"])
        assert rollout_dtype(config["train"]) == dtype, name
