"""The wheels the device check carries to a GPU machine without network (envs/device_wheels.txt),
and the check that they are complete beside the machine's image (envs/device_image.txt): installed
into an empty folder with --no-index (no download, no dependency resolution: what the machine does),
every requirement of every carried wheel (Requires-Dist, markers read for the image's Python 3.12 on
x86_64 Linux) held by a carried wheel or the image, at a version it allows where the version is
known, and (`--imported FILE`: the device check's own record, gpu_paper_scale.json's
`distributions`) every distribution the check imported held too.

Usage: python workflow/benchmarks/device_wheels.py download DIR    (where PyPI is reachable)
       python workflow/benchmarks/device_wheels.py check DIR [--imported gpu_paper_scale.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[2]
WHEELS = ROOT / "envs" / "device_wheels.txt"
IMAGE = ROOT / "envs" / "device_image.txt"
#: the machine's Python and platform (pip download's --python-version and --platform)
PYTHON = "3.12"
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64"]
PLATFORMS += ["manylinux2014_x86_64", "manylinux1_x86_64"]
#: the environment markers of the machine (Requires-Dist's `; python_version < "3.13"` and the like)
MARKERS = {
    **default_environment(),
    "python_version": PYTHON,
    "python_full_version": f"{PYTHON}.3",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def pinned(path: Path) -> dict[str, str | None]:
    """{canonical name: version or None} of a list of `name` or `name==version` lines."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[canonicalize_name(name)] = version or None
    return out


#: pip's options that pick wheels for the machine, not for this Python (download and install)
FOR_MACHINE = ["--no-deps", "--only-binary=:all:", "--python-version", PYTHON]
FOR_MACHINE += ["--implementation", "cp", *(a for p in PLATFORMS for a in ("--platform", p))]


def download(folder: Path) -> None:
    """The carried wheels of envs/device_wheels.txt, for the machine's Python and platform."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            *FOR_MACHINE,
            "-d",
            str(folder),
            "-r",
            str(WHEELS),
        ],
        check=True,
    )


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The wheel's Requires-Dist that apply on the machine (no extras)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    reqs = [
        Requirement(line.split(":", 1)[1]) for line in lines if line.startswith("Requires-Dist:")
    ]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({**MARKERS, "extra": ""})]


def problems(folder: Path, imported: list[str] = ()) -> list[str]:
    """What keeps the wheels in `folder` from running the device check beside the image (the
    module docstring's three checks); [] when nothing does."""
    found = []
    wheels = sorted(folder.glob("*.whl"))
    names = [parse_wheel_filename(w.name)[:2] for w in wheels]
    carried = {canonicalize_name(n): str(v) for n, v in names}
    missing = set(pinned(WHEELS)) - set(carried)
    found += [f"{n}: listed in {WHEELS.name}, no wheel in {folder}" for n in sorted(missing)]
    with tempfile.TemporaryDirectory() as target:
        res = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-index", *FOR_MACHINE,
             "--no-compile", "--target", target, *map(str, wheels)],
            capture_output=True, text=True,
        )  # fmt: skip
        if res.returncode:
            found.append(f"pip install --no-index into an empty folder failed: {res.stderr[-800:]}")
    have = {**pinned(IMAGE), **carried}
    for w in wheels:
        for req in wheel_requirements(w):
            name = canonicalize_name(req.name)
            if name not in have:
                found.append(f"{w.name} needs {req}: neither carried nor in the image")
            elif have[name] is not None and not req.specifier.contains(
                have[name], prereleases=True
            ):
                found.append(f"{w.name} needs {req}, and {name} is {have[name]}")
    found += [
        f"the device check imported {d}: neither carried nor in the image"
        for d in sorted({canonicalize_name(d) for d in imported} - set(have))
    ]
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=["download", "check"])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--imported", type=Path, help="gpu_paper_scale.json of a run of the check")
    a = ap.parse_args(argv)
    if a.command == "download":
        download(a.folder)
        return 0
    imported = json.loads(a.imported.read_text())["distributions"] if a.imported else []
    found = problems(a.folder, imported)
    print("\n".join(found) or f"complete: {len(list(a.folder.glob('*.whl')))} wheels")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
