"""Code dependencies of a workflow rule, derived rather than listed: the import closure, within this
package, of the script a rule runs (and of any module it loads by name, e.g. a figure family's
compute or plot module). Every import statement counts, also one inside a function; importing
a module imports its parent packages' __init__ modules. The rules declare the closure as inputs,
so editing any module a job runs reruns that job, and only those jobs.
"""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

PACKAGE = "grpo_repro"


def module_path(name: str, src: Path) -> Path | None:
    """File of module `name` under `src` (a package's __init__.py), or None."""
    base = src.joinpath(*name.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _module_name(path: Path, src: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(src.resolve())
    except ValueError:
        return None  # a script outside the package
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, src: Path) -> set[str]:
    """Names of the package modules `path` imports (any import statement, anywhere in the file)."""
    stat = path.stat()  # a file edited since it was last read is read again
    found = _imports(str(path), str(src), stat.st_mtime_ns, stat.st_size)
    return {m for m in found if m.split(".")[0] == PACKAGE and module_path(m, src)}


@functools.cache
def _imports(path: str, src: str, mtime_ns: int, size: int) -> frozenset[str]:
    """The module names one version of a file imports, parsed once per process: a Snakefile asks
    for the closure of every rule's script, and the scripts share most of their modules."""
    path, src = Path(path), Path(src)
    name = _module_name(path, src)
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in _statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                if name is None:
                    continue
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # `from pkg import module`
    return frozenset(found)


def _statements(tree: ast.Module):
    """Every statement of a module, nested ones too (an import is a statement: expressions, which
    hold most of a file's nodes, are not entered)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo.extend(getattr(node, field, ()))


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def closure(entries, src: str | Path) -> list[str]:
    """Sorted package files (as given paths under `src`) that `entries` import, directly or not.
    `entries`: script paths and/or dotted module names of the package."""
    src = Path(src)
    todo: list[str] = []
    for entry in entries:
        if str(entry).endswith(".py"):
            todo.extend(imported_modules(Path(entry), src))
        else:
            todo.append(str(entry))
    seen: set[str] = set()
    while todo:
        for mod in _with_parents(todo.pop()):
            if mod in seen or module_path(mod, src) is None:
                continue
            seen.add(mod)
            todo.extend(imported_modules(module_path(mod, src), src))
    return sorted(str(module_path(m, src)) for m in seen)


def put_on_pythonpath(src: str | Path) -> None:
    """Put the package's source folder first on the PYTHONPATH the workflow's jobs inherit, so a
    job imports the package of this checkout also inside a conda environment (envs/*.yaml install
    the requirements only) and under SLURM (sbatch exports the environment)."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(src)]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(src), *rest])
