"""The multi-process launch command of train_grpo (grpo_repro.train.launch.command): accelerate
launch in its torchrun mode. Without --multi_gpu, accelerate runs ONE process on a host without
CUDA (its simple launcher) and the run silently trains on one device."""

from grpo_repro.train.launch import command


def test_command_is_torchrun_mode_with_one_process_per_device():
    cmd = command(3, {"variant": "grpo", "n_epoch_prompts": 8})
    i = cmd.index("accelerate.commands.launch")
    assert "--multi_gpu" in cmd[i:] and cmd[cmd.index("--num_processes") + 1] == "3"
    assert cmd[-2:] == ["--variant=grpo", "--n-epoch-prompts=8"]
    assert cmd[cmd.index("-m", i) + 1] == "grpo_repro.train.launch"
