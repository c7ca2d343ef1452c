"""What ``pip wheel .`` ships: the product's modules, and no module that only tests import.

The test bed (librdkafka's mock driver, the share-consumer scenarios, the sandbox served
from a thread) lives in ``tests/support/``; an operator who installs kshare gets the
sandbox that ``kshare sandbox`` serves and nothing the suite alone needs. The wheel is
built from a copy of the sources, so a stale ``build/`` folder in the checkout cannot
leak a deleted module into it, and its files are read from the zip itself.

"Reachable" is read from the wheel's own sources: the modules the console script's entry
point imports, at module level or inside a function, and, transitively, what those
import, plus the command modules ``kshare_cli/cli/app.py`` imports by name
(``COMMANDS``) and the ``kshare dlq`` subcommands (``SUBCOMMANDS``).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Only tests and benchmarks import these: none may be in the wheel.
TEST_BED_MODULES = ("rdkafka_mock", "scenarios", "sandbox_thread")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    """The wheel ``pip wheel . --no-deps`` builds from a copy of this checkout's sources."""
    source = tmp_path_factory.mktemp("source")
    shutil.copy(REPO / "pyproject.toml", source)
    shutil.copy(REPO / "README.md", source)
    shutil.copytree(
        REPO / "kshare_cli", source / "kshare_cli", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("kshare_cli-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


@dataclass(frozen=True, slots=True)
class Module:
    """One Python module of the wheel."""

    name: str
    source: str
    is_package: bool


def python_modules(archive: zipfile.ZipFile) -> dict[str, Module]:
    """Every module in the wheel by dotted name."""
    modules: dict[str, Module] = {}
    for path in archive.namelist():
        if not path.endswith(".py"):
            continue
        parts = PurePosixPath(path).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Module(name, archive.read(path).decode("utf-8"), is_package)
    return modules


def imported_modules(module: Module, known: set[str]) -> set[str]:
    """The wheel's modules that ``module`` imports anywhere (lazy imports in functions too)."""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, node.module] if node.module else base)
            found.add(origin)
            found.update(f"{origin}.{alias.name}" for alias in node.names)
    return found & known


def named_command_modules(module: Module, table: str) -> list[str]:
    """The ``kshare_cli.cli`` modules a command table (name, module, function) imports by name."""
    for node in ast.parse(module.source).body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == table
            and node.value is not None
        ):
            rows = ast.literal_eval(node.value)
            return [f"kshare_cli.cli.{row[1]}" for row in rows]
    raise AssertionError(f"{module.name} has no {table} table")


def reachable_modules(archive: zipfile.ZipFile) -> set[str]:
    """The modules ``kshare`` (and ``python -m kshare_cli``) can import, from the wheel."""
    modules = python_modules(archive)
    known = set(modules)
    entry_points = next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
    (script,) = [
        line.split("=", 1)[1].strip().split(":")[0]
        for line in archive.read(entry_points).decode().splitlines()
        if line.startswith("kshare ")
    ]
    roots = [script, "kshare_cli.__main__"]
    roots += named_command_modules(modules["kshare_cli.cli.app"], "COMMANDS")
    roots += named_command_modules(modules["kshare_cli.cli.dlq_cmd"], "SUBCOMMANDS")
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        pending.extend(imported_modules(modules[name], known))
    return seen


def test_the_wheel_holds_no_test_bed_module(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    sources = {name: module.source for name, module in python_modules(wheel).items()}
    assert "kshare_cli.sandbox.runner" in sources  # the sandbox kshare serves is shipped
    assert [n for n in names if PurePosixPath(n).stem in TEST_BED_MODULES] == []
    assert [n for n in names if n.startswith(("tests/", "benchmarks/"))] == []
    assert [name for name, text in sources.items() if "SandboxThread" in text] == []
    assert [name for name, text in sources.items() if "rdkafka_mock" in text] == []


def test_every_module_in_the_wheel_is_reachable_from_the_kshare_command(
    wheel: zipfile.ZipFile,
) -> None:
    shipped = set(python_modules(wheel))
    reachable = reachable_modules(wheel)
    # The walk does find what only a lazy import or a command table reaches.
    assert {"kshare_cli.sandbox.demo", "kshare_cli.cli.dlq_redrive_cmd"} <= reachable
    assert sorted(shipped - reachable) == []
