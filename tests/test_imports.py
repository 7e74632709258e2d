"""The package has no import circles, and every module imports alone.

An import circle is a set of modules that reach each other through their imports, at module
level or inside a function (where it only waits for the first call to bite). Importing
`a.b.c` runs the packages `a` and `a.b` first, so an import of a submodule counts as an import of
every package above it that the importing module is not inside. Imports under
`if TYPE_CHECKING:` never run and do not count."""
import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpverify"


def _modules() -> dict:
    """Dotted module name → source path, for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports_run(tree):
    """Every Import/ImportFrom node, except under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(name: str, path: Path, node, modules: dict) -> list:
    """The project modules one import statement of module `name` reaches."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if node.level:
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
    return submodules or ([target] if target in modules else [])


def import_graph() -> dict:
    modules = _modules()
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        inside = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 2)}
        for node in _imports_run(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(name, path, node, modules):
                parts = target.split(".")
                for k in range(1, len(parts) + 1):   # the packages above it run first
                    reached = ".".join(parts[:k])
                    if reached in modules and reached not in inside:
                        graph[name].add(reached)
    return graph


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_finder_sees_a_circle_through_a_lazy_import_and_a_package():
    graph = {"p": {"p.a"}, "p.a": set(), "p.b": set(), "q": set()}
    assert circles(graph) == []
    graph["p.a"].add("q")
    graph["q"].add("p")   # q imports p.x lazily: p's __init__ runs first, and imports p.a
    assert circles(graph) == [["p", "p.a", "q"]]
    # a submodule import counts as an import of the packages above it
    code = ast.parse("def f():\n    from .zcdp import maths\n")
    node = next(_imports_run(code))
    modules = {"dpverify.options": None, "dpverify.zcdp": None, "dpverify.zcdp.maths": None}
    assert _targets("dpverify.options", Path("options.py"), node, modules) == [
        "dpverify.zcdp.maths"]


def test_no_import_circles():
    assert circles(import_graph()) == []


def test_every_module_imports_alone():
    """Each module imported first, in an interpreter where no other module of the package has
    been imported yet (the package's modules are dropped from sys.modules between them)."""
    names = [n for n in _modules() if not n.endswith("__main__")]
    script = (
        "import importlib, sys\n"
        f"names = {names!r}\n"
        "failed = []\n"
        "for name in names:\n"
        "    for k in [k for k in sys.modules if k == 'dpverify' or k.startswith('dpverify.')]:\n"
        "        del sys.modules[k]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{name}: {exc!r}')\n"
        "print('\\n'.join(failed))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=PACKAGE.parent, timeout=240)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "", run.stdout


def test_the_plugin_and_the_results_load_without_scipy_stats():
    """pytest loads the plugin in every project that installs dpverify, and loky workers load
    the results' module: neither may pull in scipy.stats (about a second), which the audits
    import when they need it."""
    script = ("import sys, dpverify.interfaces.pytest_plugin, dpverify.result\n"
              "print('scipy.stats' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=PACKAGE.parent, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
