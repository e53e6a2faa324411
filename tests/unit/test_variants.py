"""The variant registry (grpo_repro.variants): a variant registered in one place reaches the PoS maps,
the oracle, the fixed points, the trainer's TRL settings, the figures, the report's overlay, the
fixed-point stage, the colours and the config schema."""

import copy

import numpy as np
import pytest

from grpo_repro import config as cfg
from grpo_repro import style
from grpo_repro import variants as reg
from grpo_repro.config_checks import load_schema
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as osg
from grpo_repro.dynamics import prediction as prd
from grpo_repro.figures import compute, compute_oracle
from grpo_repro.fixed_point import compare, runs
from grpo_repro.report import overlay
from grpo_repro.report import overlay as ovr
from grpo_repro.train.args import grpo_args
from grpo_repro.train.run_settings import grpo_run
from grpo_repro.train.trl_variant import trl_settings
from grpo_repro.workflow_plan import Plan

#: a new variant: KL to pi_ref, mean-only advantage (Dr. GRPO's choices) under another name
TOY = reg.Variant("toy", "reference", True, True)
#: the registered variant with TOY's choices, whose results TOY must reproduce
TWIN = "dr_grpo"


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(reg, "VARIANTS", (*reg.VARIANTS, TOY))
    return TOY.name


def test_registry_order_and_fields():
    assert reg.names(trained=True) == ("grpo", "mirror", "dr_grpo", "mirror_dr", "two_kl")
    assert reg.names()[4:] == ("two_kl", "two_kl_dr")
    assert [(v.anchor, v.mean_only) for v in reg.VARIANTS[:4]] == [
        ("reference", False),
        ("previous", False),
        ("reference", True),
        ("previous", True),
    ]
    assert reg.get(TWIN).anchor == TOY.anchor and reg.get(TWIN).mean_only == TOY.mean_only
    assert reg.plateau_base("mirror") is None and reg.plateau_base("dr_grpo").name == "dr_grpo"
    with pytest.raises(ValueError, match=r"unknown variant 'ppo' \(variants\)"):
        reg.get("ppo")
    with pytest.raises(ValueError, match="anchor"):
        reg.Variant("bad", "nowhere", False, False)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "order: 1\nanchor: reference\nmean_only: false\n",
            r"missing keys \['trained'\]",
        ),
        (
            "order: 1\nanchor: reference\nmean_only: false\ntrained: true\nalpha: 1\n",
            r"unknown keys \['alpha'\]",
        ),
        (
            "order: 1\nanchor: reference\nmean_only: 'no'\ntrained: true\n",
            "true or false",
        ),
        (
            "order: 1\nanchor: nowhere\nmean_only: false\ntrained: true\n",
            "anchor 'nowhere'",
        ),
    ],
)
def test_a_bad_record_file_is_named(tmp_path, text, message):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        reg.load_all(tmp_path)
    assert str(tmp_path / "bad.yaml") in str(err.value)


def test_records_are_files_in_their_order(tmp_path):
    """One file per record (its name the file's); VARIANTS in the records' `order`."""
    assert {p.stem for p in reg.RECORDS.glob("*.yaml")} == set(reg.names())
    assert reg.record_file("grpo").is_file()
    (tmp_path / "b.yaml").write_text(reg.record_file("grpo").read_text())
    (tmp_path / "a.yaml").write_text(
        reg.record_file("mirror").read_text().replace("order: 2", "order: 9")
    )
    assert [v.name for v in reg.load_all(tmp_path)] == ["b", "a"]


def test_unregistered_name_is_refused_everywhere():
    with pytest.raises(ValueError, match="unknown variant 'toy'"):
        dyn.recurrence("toy", 0.3, 1.0, 1e-5, 3)
    with pytest.raises(ValueError, match="unknown variant 'toy'"):
        trl_settings("toy", "paper")
    with pytest.raises(KeyError, match="no colour"):
        style.variant_color("toy")


def test_maps_oracle_and_fixed_points_pick_it_up(toy):
    p_ref, beta, eps = np.array([0.05, 0.3, 0.8]), 2.0, 1e-5
    got = dyn.recurrence(toy, p_ref, beta, eps, 5)
    assert np.array_equal(got, dyn.recurrence(TWIN, p_ref, beta, eps, 5))
    assert not np.allclose(got, dyn.recurrence("grpo", p_ref, beta, eps, 5))
    prob = orc.make_problem(4, 5, seed=0)
    ex, tw = (
        orc.exact_iterations(prob, toy, beta, eps, 4),
        orc.exact_iterations(prob, TWIN, beta, eps, 4),
    )
    assert np.array_equal(ex["log_pi"], tw["log_pi"])
    opt = orc.optimiser_iterations(prob, toy, beta, eps, 2)
    assert np.array_equal(opt, orc.optimiser_iterations(prob, TWIN, beta, eps, 2))
    sgd = [osg.run(prob, osg.SGDSettings(variant=v, beta=beta, n_iter=3)) for v in (toy, TWIN)]
    assert np.array_equal(sgd[0]["log_pi"], sgd[1]["log_pi"])
    fp = fxp.variant_fixed_points(toy, beta, 0.3, eps)
    assert fp == fxp.variant_fixed_points(TWIN, beta, 0.3, eps)
    assert fp[0].p_star == pytest.approx(1 / (1 + np.exp(-(np.log(0.3 / 0.7) + 1 / beta))))
    lim = prd.orbit_limits(p_ref, beta, eps, variant=toy)
    assert np.array_equal(lim["a"], prd.orbit_limits(p_ref, beta, eps, variant=TWIN)["a"])


def test_trainer_settings_come_from_the_record(toy):
    for advantage in ("paper", "trl"):
        assert trl_settings(toy, advantage) == trl_settings(TWIN, advantage)
    assert trl_settings(toy, "trl")["scale_rewards"] == "none"
    assert trl_settings("mirror", "trl")["sync_ref_model"] is True
    assert trl_settings(toy, "trl")["sync_ref_model"] is False


def test_two_kl_trains_with_pi_ref_as_trl_reference_and_both_weights():
    """two_kl (Lemma 2, Thm 9): TRL's settings are grpo's (reference pi_ref, no sync) plus the
    weights of beta's two KL terms; the other variants carry no weights, whatever alpha."""
    two = trl_settings("two_kl", "paper", 0.3)
    assert two.pop("kl_weights") == pytest.approx((0.3, 0.7))
    assert two == trl_settings("grpo", "paper")
    assert trl_settings("grpo", "paper", 0.3) == trl_settings("grpo", "paper")
    with pytest.raises(ValueError, match="alpha"):
        trl_settings("two_kl", "paper")


def test_overlay_has_no_two_kl_prediction():
    """Thm 9's recurrence needs Delta_R, not measured: NaN, unconverged, with a note; the other
    variants' predictions are finite or +-inf."""
    p_ref = np.array([0.0, 0.2, 0.6])
    x, conv = ovr.limit_logit("two_kl", p_ref, 2.0, 1e-5)
    assert np.isnan(x).all() and not conv.any()
    assert np.isnan(ovr.iterates_logit("two_kl", p_ref, 2.0, 1e-5, 3)).all()
    assert "Delta_R" in overlay.note("two_kl", "paper") and overlay.note("grpo", "paper") == ""
    for v in ("grpo", "mirror", "dr_grpo", "mirror_dr"):
        assert not np.isnan(ovr.limit_logit(v, p_ref, 2.0, 1e-5)[0]).any()


def test_figures_report_and_fixed_point_stage_pick_it_up(toy, default_config):
    fig = default_config["figures"]
    dyn_df = compute.variant_dynamics({**fig, "variant_beta": [2.0], "variant_p_ref": [0.3]})["csv"]
    assert list(dyn_df.variant.unique()[:5]) == ["grpo", "mirror", "dr_grpo", "mirror_dr", toy]
    a, b = (dyn_df[dyn_df.variant == v].p.to_numpy() for v in (toy, TWIN))
    assert np.array_equal(a, b)
    assert (toy, True) in [(v, np.isnan(al)) for v, al in compute_oracle._oracle_runs(fig)]
    # drawn under its name in a colour no listed variant has (grpo_repro.style)
    listed = {c for _, c in style.VARIANT_STYLE.values()}
    assert style.variant_color(toy) not in listed and style.variant_label(toy) == toy
    p_ref = np.array([0.0, 0.2, 0.6])
    got, want = (
        ovr.limit_logit(toy, p_ref, 2.0, 1e-5),
        ovr.limit_logit(TWIN, p_ref, 2.0, 1e-5),
    )
    assert np.array_equal(got[0], want[0])
    fp = {**default_config["fixed_point"], "runs": [f"{toy}/k3_ratio"], "group_sizes": [4]}
    run = runs.table(fp, 8, alpha=0.5)[f"{toy}_k3_ratio/beta_2/seed_1"]
    assert (run.variant, run.kl, run.setting, run.group_size) == (toy, "k3_ratio", "", 8)
    pt = compare.predict(toy, p_ref, 2.0, 1e-5, p_ref, p_ref)
    assert pt.equals(compare.predict(TWIN, p_ref, 2.0, 1e-5, p_ref, p_ref))
    assert runs.tabular_variants({"runs": [f"{toy}/k3", "mirror/k3"]}) == [toy]


def test_the_schema_takes_the_registrys_names(toy, default_config):
    """The schema's variant names are the records' (config_checks.load_schema reads the registry):
    a new record, here a fixture outside the registry's files, is a `variants` value, a replicate
    variant and a fixed-point run kind with no edit of the schema."""
    defs = load_schema()["$defs"]
    trained = reg.names(trained=True)
    assert defs["variant"]["enum"] == list(trained) and toy in trained
    assert defs["one_anchor"]["enum"] == [n for n in trained if not reg.get(n).two_kl]
    assert defs["fp_kind"]["pattern"] == "^(" + "|".join(trained) + ")/(k3|k3_ratio)$"
    good = copy.deepcopy(default_config)
    good["variants"] = ["grpo", toy]
    good["replicates"]["variants"] = [toy]
    good["fixed_point"]["runs"] = [f"{toy}/k3_ratio"]
    assert cfg.schema_errors(good) == []


def test_training_takes_it_as_its_twin(toy, default_config):
    """A run of the new variant reaches TRL with its twin's settings (grpo_repro.train.args), and
    the workflow's plan lists its runs, checkpoints and evaluations like any other."""
    config = {**default_config, "variants": [toy, TWIN]}
    got, want = (grpo_args(grpo_run(config, v, 0), "work", 10) for v in (toy, TWIN))
    assert got[0] == want[0] and got[1] == {**want[1], "variant": toy}
    plan = Plan(config, None)  # the organism: sizes from its settings
    seeds = default_config["train"]["seeds"]
    assert plan.runs == [f"{v}/seed_{s}" for v in (toy, TWIN) for s in seeds]
    assert plan.grpo_run(plan.runs[0]).params()["variant"] == toy


def test_schema_names_the_key_of_an_unknown_variant(default_config):
    bad = copy.deepcopy(default_config)
    bad["variants"] = ["grpo", "ppo"]
    errors = cfg.schema_errors(bad)
    assert [k for k, _ in errors] == [["variants", 1]] and "mirror_dr" in errors[0][1]
    with pytest.raises(cfg.ConfigError, match=r"config key 'variants\[1\]'"):
        cfg.check(bad)
    bad = copy.deepcopy(default_config)
    bad["fixed_point"]["runs"] = ["ppo/k3"]
    assert [k for k, _ in cfg.schema_errors(bad)] == [["fixed_point", "runs", 0]]
    bad = copy.deepcopy(default_config)  # a registered variant that is not trained
    bad["variants"], bad["train"]["advantage"] = ["two_kl_dr"], "ppo"
    assert sorted(k for k, _ in cfg.schema_errors(bad)) == [["train", "advantage"], ["variants", 0]]


def test_schema_takes_two_kl_as_a_variant_and_a_fixed_point_run(default_config):
    good = copy.deepcopy(default_config)
    good["variants"] = ["two_kl"]
    good["replicates"]["variants"] = ["two_kl"]
    good["fixed_point"]["runs_sweep"] = ["two_kl/k3_ratio", "grpo/k3"]
    assert cfg.schema_errors(good) == []
    bad = copy.deepcopy(default_config)
    bad["fixed_point"]["runs_sweep"] = ["two_kl/k3_ratio", "two_kl_x/k3"]
    assert [k for k, _ in cfg.schema_errors(bad)] == [["fixed_point", "runs_sweep", 1]]
    bad = copy.deepcopy(default_config)
    bad["train"]["two_kl_alpha"] = 1.0  # alpha in (0, 1)
    assert [k for k, _ in cfg.schema_errors(bad)] == [["train", "two_kl_alpha"]]
