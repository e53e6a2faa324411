"""Check that the GPU environment (envs/gpu.txt) installs as pinned: resolve it with pip's dry run
and fail if any package pinned (`name==version`) in it or in the tested CPU environment
(envs/cpu.txt; where both pin a package, the GPU file's pin counts) would be installed at another
version: a GPU run uses the library versions the tests ran with.

A bare `pip install vllm` brings a vLLM release that pins another torch and an older transformers
and silently replaces the project's pins; this check catches such a requirements file before a GPU
node is set up. It resolves the file from scratch (`--ignore-installed`: what a fresh machine
gets) and, with `--into-env`, into the running environment (what `pip install -r` would change
here: a pinned package already installed at another version counts as replaced too).

Usage: python workflow/checks/gpu_env.py [REQUIREMENTS, default envs/gpu.txt] [--into-env]
       [--pins FILE, default envs/cpu.txt]
Exit status 0 when every pin holds, 1 otherwise (each replaced pin printed), 2 if pip fails.
Needs the package index (a dry run downloads metadata only).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines: list[str]) -> dict[str, str]:
    """{name: version} of the `name==version` lines of a requirements file (comments skipped)."""
    found = {}
    for line in lines:
        m = _PIN.match(line.split("#", 1)[0].strip())
        if m:
            found[canonical(m.group(1))] = m.group(2)
    return found


def public(version: str) -> str:
    """A version without its local label: `2.13.0+cu130` satisfies `==2.13.0` (PEP 440)."""
    return version.split("+", 1)[0]


def replaced(pinned: dict[str, str], resolved: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, pinned, resolved) for each pinned package the resolution gives at another version;
    a pinned package the resolution leaves out is not replaced."""
    return [
        (name, want, resolved[name])
        for name, want in sorted(pinned.items())
        if name in resolved and public(resolved[name]) != public(want)
    ]


def installed(names) -> dict[str, str]:
    """{name: version} of those `names` installed in this environment."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def resolve(requirements: Path, into_env: bool) -> dict[str, str]:
    """{name: version} pip's dry run would install for `requirements`."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report"]
        cmd += [str(report), "-r", str(requirements)]
        if not into_env:
            cmd.append("--ignore-installed")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            errors = [x for x in done.stderr.splitlines() if not x.startswith("WARNING")]
            print("\n".join(errors[-30:]), file=sys.stderr)
            raise SystemExit(f"pip could not resolve {requirements} (exit {done.returncode})")
        items = json.loads(report.read_text())["install"]
    return {canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("requirements", nargs="?", default=str(ROOT / "envs" / "gpu.txt"))
    ap.add_argument("--into-env", action="store_true", help="resolve into this environment")
    ap.add_argument("--pins", default=str(ROOT / "envs" / "cpu.txt"), help="pins that must hold")
    a = ap.parse_args(argv)
    req = Path(a.requirements)
    pinned = {**pins(Path(a.pins).read_text().splitlines()), **pins(req.read_text().splitlines())}
    try:
        resolved = resolve(req, a.into_env)
    except SystemExit as err:
        print(err, file=sys.stderr)
        return 2
    if a.into_env:  # what stays installed counts as resolved
        resolved = {**installed(pinned), **resolved}
    bad = replaced(pinned, resolved)
    where = "into this environment" if a.into_env else "from scratch"
    for name, want, got in bad:
        print(f"{req}: {name}=={want} would be replaced by {got} ({where})")
    if not bad:
        print(f"{req}: all {len(pinned)} pins hold {where} ({len(resolved)} packages resolved)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
