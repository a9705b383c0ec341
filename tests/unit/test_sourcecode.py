"""Source-level rules: the sans-I/O core imports no I/O, and the tree passes ruff's F/E9 checks."""
import ast
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SANS_IO_PACKAGES = ("http", "balance", "config", "admin")
FORBIDDEN = ("asyncio", "socket", "splicer.engine", "splicer.runtime", "splicer._engine")


def sans_io_modules():
    mods = sorted(p for pkg in SANS_IO_PACKAGES for p in (ROOT / "splicer" / pkg).glob("*.py"))
    mods += sorted((ROOT / "splicer" / "health").glob("*.py"))  # runtime/probes.py is the I/O side
    # the access log's sans-I/O half (collect, logger and target are its runtime and I/O side)
    mods += [ROOT / "splicer" / "log" / f"{m}.py" for m in ("record", "escape", "format", "syslog")]
    assert len(mods) >= 3 * 2, mods
    return mods


def imported_names(source: str, package: str) -> list[tuple[int, str]]:
    """Every module an import statement in `source` names, relative imports resolved
    against `package` (the dotted package the module lives in)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]  # from splicer import engine
    return out


def module_imports(path: pathlib.Path) -> list[tuple[int, str]]:
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    return imported_names(path.read_text(), package)


def is_forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


@pytest.mark.parametrize("name, bad", [
    ("asyncio", True), ("asyncio.events", True), ("socket", True), ("socketserver", False),
    ("splicer.engine.binding", True), ("splicer.runtime", True), ("splicer.http.h1", False), ("h11", False),
])
def test_forbidden_name_matching(name, bad):
    assert is_forbidden(name) is bad


def test_import_collector_sees_every_form():
    src = ("import asyncio\nfrom socket import socket\nfrom splicer import engine\nfrom ..runtime import io\n"
           "from . import headers\nimport h11\n\ndef f():\n    import splicer.runtime.proxy\n")
    names = imported_names(src, "splicer.http")
    assert [(line, n) for line, n in names if is_forbidden(n)] == [
        (1, "asyncio"), (2, "socket"), (2, "socket.socket"), (3, "splicer.engine"), (4, "splicer.runtime"),
        (4, "splicer.runtime.io"), (9, "splicer.runtime.proxy")]
    assert (5, "splicer.http.headers") in names and (6, "h11") in names


@pytest.mark.parametrize("path", sans_io_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_sans_io_module_imports_no_io(path):
    bad = [f"{path.name}:{line}: {name}" for line, name in module_imports(path) if is_forbidden(name)]
    assert bad == []


def test_ruff_f_and_e9_clean():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    proc = subprocess.run([ruff, "check", "--select", "F,E9", "--no-cache", "splicer", "tests"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_memo_of_the_core_is_emptied_between_unit_tests():
    """tests/unit/conftest.py finds the core's memos itself: those known today among them."""
    import splicer.http.normalize as normalize
    import splicer.http.sample as sample
    from tests.unit.conftest import core_memos
    caches, memos = core_memos()
    for known in (normalize._remembered_ambiguity, sample._address, sample._param_index):
        assert any(c is known for c in caches), known
    assert len(memos) == 4
