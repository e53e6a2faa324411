"""The launch of train_grpo (grpo_repro.train.launch): the `accelerate launch` command of a
multi-process run states every setting (torchrun mode: without --multi_gpu, accelerate runs ONE
process on a host without CUDA; without its own --config_file, a user's default accelerate
configuration fills in devices, port and precision), and the device layout of both vLLM modes
(vllm_mode server: the job's last GPU serves vLLM, the others train)."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from grpo_repro import config as cfg
from grpo_repro.train import launch as launch_mod
from grpo_repro.train import vllm_server
from grpo_repro.train.launch import accelerate_config, command
from grpo_repro.train.run_settings import GRPORun, grpo_run
from tests.helpers import ROOT


def flags(cmd: list[str]) -> dict[str, str | None]:
    """accelerate's own flags of a launch command (before the launched module)."""
    head = cmd[
        cmd.index("accelerate.commands.launch") + 1 : cmd.index("grpo_repro.train.launch") - 1
    ]
    out, i = {}, 0
    while i < len(head):
        if i + 1 < len(head) and not head[i + 1].startswith("--"):
            out[head[i]] = head[i + 1]
            i += 2
        else:
            out[head[i]] = None
            i += 1
    return out


COMMANDS = [  # (devices, gpu_ids, bf16, the flags expected besides the fixed ones)
    (2, None, False, {"--num_processes": "2", "--mixed_precision": "no"}),
    (3, ["4", "5", "6"], False, {"--num_processes": "3", "--gpu_ids": "4,5,6"}),
    (
        7,
        [str(i) for i in range(7)],
        True,
        {"--gpu_ids": "0,1,2,3,4,5,6", "--mixed_precision": "bf16"},
    ),
]


@pytest.mark.parametrize("devices,gpu_ids,bf16,expect", COMMANDS)
def test_command_states_every_setting(devices, gpu_ids, bf16, expect):
    cmd = command(
        devices, {"variant": "grpo", "n_epoch_prompts": 8}, gpu_ids, 41234, bf16, "/x.yaml"
    )
    got = flags(cmd)
    fixed = {
        "--config_file": "/x.yaml",
        "--multi_gpu": None,
        "--num_machines": "1",
        "--machine_rank": "0",
        "--main_process_port": "41234",
        "--dynamo_backend": "no",
    }
    assert {k: got.get(k, "<absent>") for k in {**fixed, **expect}} == {**fixed, **expect}
    assert ("--gpu_ids" in got) == bool(gpu_ids)  # CPU runs: no device ids
    assert cmd[-2:] == ["--variant=grpo", "--n-epoch-prompts=8"]
    assert cmd[cmd.index("grpo_repro.train.launch") - 1] == "-m"


def test_single_process_command_is_the_module_alone():
    cmd = command(1, {"variant": "grpo"})
    assert cmd == [sys.executable, "-m", "grpo_repro.train.launch", "--variant=grpo"]


def test_each_launch_gets_a_free_port(monkeypatch):
    """Never accelerate's default 29500, which simultaneous jobs would share: gpus.free_port."""
    ports = iter([40001, 40002])
    monkeypatch.setattr(launch_mod, "free_port", lambda: next(ports))
    got = [flags(command(2, {}, config_file="/x"))["--main_process_port"] for _ in range(2)]
    assert got == ["40001", "40002"]


def test_accelerate_config_is_a_valid_cluster_config(tmp_path):
    from accelerate.commands.config.config_args import load_config_from_file

    path = tmp_path / "accelerate_config.yaml"
    path.write_text(yaml.safe_dump(accelerate_config(7, 41234, [str(i) for i in range(7)], True)))
    loaded = load_config_from_file(str(path))  # accelerate's loader rejects unknown keys
    assert (loaded.num_processes, loaded.num_machines, loaded.machine_rank) == (7, 1, 0)
    assert loaded.gpu_ids == "0,1,2,3,4,5,6" and loaded.main_process_port == 41234
    assert loaded.mixed_precision == "bf16" and loaded.debug is False
    assert loaded.dynamo_config == {}


PRINT_ENV = """import json, os, sys
keys = ("CUDA_VISIBLE_DEVICES", "MASTER_PORT", "ACCELERATE_MIXED_PRECISION", "WORLD_SIZE",
        "ACCELERATE_DEBUG_MODE", "ACCELERATE_DYNAMO_BACKEND")
with open(os.path.join(sys.argv[1], f"rank_{os.environ['RANK']}.json"), "w") as f:
    json.dump({k: os.environ.get(k) for k in keys}, f)
"""


def test_a_users_default_accelerate_config_is_ignored(tmp_path):
    """A default config (`accelerate config`) with other devices, port, precision and debug mode:
    the launched processes see the job's settings only."""
    hf_home = tmp_path / "hf"
    (hf_home / "accelerate").mkdir(parents=True)
    (hf_home / "accelerate" / "default_config.yaml").write_text(
        yaml.safe_dump(
            {
                "compute_environment": "LOCAL_MACHINE",
                "distributed_type": "MULTI_GPU",
                "num_processes": 4,
                "gpu_ids": "5,6,7,8",
                "main_process_port": 29517,
                "mixed_precision": "fp16",
                "debug": True,
                "dynamo_config": {"dynamo_backend": "INDUCTOR"},
            }
        )
    )
    script = tmp_path / "print_env.py"
    script.write_text(PRINT_ENV)
    accel = tmp_path / "accelerate_config.yaml"
    port = launch_mod.free_port()
    accel.write_text(yaml.safe_dump(accelerate_config(2, port, ["0", "1"])))
    cmd = command(2, {}, ["0", "1"], port, False, accel)
    i = cmd.index("grpo_repro.train.launch")
    cmd = cmd[: i - 1] + [str(script), str(tmp_path)]  # the launched program: print_env.py
    env = {**os.environ, "HF_HOME": str(hf_home), "OMP_NUM_THREADS": "1"}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    for rank in (0, 1):
        seen = json.loads((tmp_path / f"rank_{rank}.json").read_text())
        assert seen == {
            "CUDA_VISIBLE_DEVICES": "0,1",
            "MASTER_PORT": str(port),
            "ACCELERATE_MIXED_PRECISION": "no",
            "WORLD_SIZE": "2",
            "ACCELERATE_DEBUG_MODE": None,
            "ACCELERATE_DYNAMO_BACKEND": "NO",
        }
    assert not (tmp_path / "rank_2.json").exists()


# ------------------------------------------------------------------ the layout of launch()


@pytest.fixture
def calls(monkeypatch):
    """launch() with its side effects recorded: the in-process run, the subprocess, the server."""
    made = {"run": [], "subprocess": [], "serve": []}

    def fake_subprocess(cmd, env):
        made["subprocess"].append({"cmd": cmd, "env": env})
        if "--config_file" in cmd:  # the file exists while accelerate reads it
            path = cmd[cmd.index("--config_file") + 1]
            made["subprocess"][-1]["accelerate"] = yaml.safe_load(open(path).read())

    @contextlib.contextmanager
    def fake_serve(model, gpu, log_path, dtype):
        made["serve"].append({"model": model, "gpu": gpu, "log": str(log_path), "dtype": dtype})
        yield "http://127.0.0.1:45678"

    monkeypatch.setattr(launch_mod, "run_grpo", lambda run, *a: made["run"].append(run))
    monkeypatch.setattr(launch_mod, "run_processes", fake_subprocess)
    monkeypatch.setattr(vllm_server, "serve", fake_serve)
    return made


def settings(path, **train):
    """The grpo run (seed 0) of a shipped configuration with `train` keys changed."""
    config = cfg.load(ROOT / "config" / path)
    config["train"].update(train)
    return grpo_run(config, "grpo", 0)


def call(run, **kw):
    launch_mod.launch(run, "/ref", "p.jsonl", 8, "/out/grpo/seed_0", "/run.json", **kw)


def sent_run(sub) -> GRPORun:
    """The run a launched process gets (its `--run-json`, the command's last argument)."""
    flag, text = sub["cmd"][-1].split("=", 1)
    assert flag == "--run-json"
    return GRPORun.from_json(text)


def test_default_config_trains_in_this_process_with_its_settings(calls):
    run = settings("config.yaml")
    call(run)
    assert calls["run"] == [run] and not calls["subprocess"] and not calls["serve"]


def test_report_to_reaches_the_run_outside_its_settings(calls):
    full = cfg.load(ROOT / "config" / "config.yaml")
    call(GRPORun.from_params(grpo_run(full, "grpo", 0).params(), report_to="tensorboard"))
    full["train"]["report_to"] = "wandb"
    call(grpo_run(full, "grpo", 0))  # the configuration's tracker: a runtime field too
    (a, b) = calls["run"]
    assert a.report_to == "tensorboard" and b.report_to == "wandb"
    assert a == b and a.params() == b.params()  # neither in the params nor the fingerprint
    assert "report_to" not in a.train and "report_to" not in a.params()["train"]


def test_several_cpu_processes_launch_accelerate(calls):
    run = settings("config.yaml", devices=2, prompts_per_step=8)
    call(run)
    (sub,) = calls["subprocess"]
    assert "--gpu_ids" not in sub["cmd"] and sub["accelerate"]["gpu_ids"] == "all"
    assert sub["accelerate"]["num_processes"] == 2
    assert sent_run(sub) == run and sent_run(sub).params() == run.params()


def test_a_users_accelerate_variables_never_reach_the_launch(calls, monkeypatch):
    """ACCELERATE_* variables of the user's shell (accelerate reads them over its command line:
    precision, dynamo, the device layout) are not in the training processes' environment; the
    rest of the job's environment is."""
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "fp16")
    monkeypatch.setenv("ACCELERATE_DYNAMO_BACKEND", "INDUCTOR")
    monkeypatch.setenv("GRPO_REPRO_PROBE", "kept")
    call(settings("config.yaml", devices=2, prompts_per_step=8))
    (sub,) = calls["subprocess"]
    assert not [k for k in sub["env"] if k.startswith("ACCELERATE_")]
    assert sub["env"]["GRPO_REPRO_PROBE"] == "kept"


def test_paper_layout_serves_vllm_on_the_last_gpu(calls):
    run = settings("paper.yaml")
    ids = [str(i) for i in range(8)]
    call(run, gpu_ids=ids)
    (srv,) = calls["serve"]
    assert srv == {
        "model": "/ref",
        "gpu": "7",
        "log": "/out/grpo/seed_0/vllm_server.log",
        "dtype": "bfloat16",  # grpo_repro.models.rollout_dtype: use_vllm with bf16
    }
    (sub,) = calls["subprocess"]
    assert sub["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6"  # never the server's GPU
    got = flags(sub["cmd"])
    assert got["--gpu_ids"] == "0,1,2,3,4,5,6" and got["--num_processes"] == "7"
    assert sub["accelerate"]["gpu_ids"] == "0,1,2,3,4,5,6"
    sent = sent_run(sub)
    assert sent == run and sent.params() == run.params()  # no server address in them
    assert sent.server_url == "http://127.0.0.1:45678" and run.server_url is None
    assert sent.group_port not in (45678, int(got["--main_process_port"]))


def test_server_with_one_training_process_runs_it_on_the_first_gpu(calls):
    call(settings("paper.yaml", devices=1, prompts_per_step=4), gpu_ids=["3", "5"])
    assert calls["serve"][0]["gpu"] == "5" and not calls["run"]
    (sub,) = calls["subprocess"]
    assert sub["cmd"][:3] == [sys.executable, "-m", "grpo_repro.train.launch"]
    assert sub["env"]["CUDA_VISIBLE_DEVICES"] == "3"


@pytest.mark.parametrize(
    "path,ids,match",
    [
        ("paper.yaml", [str(i) for i in range(7)], r"train.devices \+ 1 = 8 GPUs"),
        ("config.yaml", ["0", "1"], r"train.devices=1"),
    ],
)
def test_a_job_with_the_wrong_number_of_gpus_is_refused(calls, path, ids, match):
    with pytest.raises(ValueError, match=match):
        call(settings(path), gpu_ids=ids)
    assert not calls["serve"] and not calls["subprocess"] and not calls["run"]


def test_training_processes_end_when_the_launcher_is_interrupted(tmp_path):
    import signal
    import time

    pid_file = tmp_path / "pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(2)
    try:
        with pytest.raises(KeyboardInterrupt):
            launch_mod.run_processes([sys.executable, "-c", child], dict(os.environ), grace_s=5)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    pid = int(pid_file.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped by run_processes: not even a zombie


def test_a_failed_training_process_raises():
    with pytest.raises(subprocess.CalledProcessError):
        launch_mod.run_processes([sys.executable, "-c", "raise SystemExit(5)"], dict(os.environ))
