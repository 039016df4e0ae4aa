"""The engine's layout is its architecture: layers import downwards only, and nothing imports in a
circle; the step library's areas stand on floors the same way (``FLOORS``). Read from the source
(every import, module-level or inside a function), so the check needs no import of the code and
catches a lazy import that runs the wrong way."""

import ast
import graphlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "components")
# lowest first: a module may import its own layer and the ones before it, never one after
LAYERS = (
    "flows.settings",
    "flows.home",
    "flows.language",
    "flows.plan",
    "flows.services",
    "flows.track",
    "flows.execute",
    "flows.ops",
    "flows.cli",
)
FACADES = {"flows", "flows.schedule"}  # the lazy public face and the old deployment path: above every layer
# components/ by floor, lowest first: a module may import its own area and those on lower floors, never one
# on its own floor or higher. The core is ``components`` itself: its top-level modules (registry, context,
# bounds, outputs, ...) and its public face.
FLOORS = (
    ("components",),
    ("components.data", "components.report"),  # arrays and padding; verdicts on numbers (no torch)
    ("components.models",),  # networks, and decoding lists of ids (padded as data pads them)
    ("components.train",),
    ("components.probes",),  # measure trained models; fit slopes as the report judges them
)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports, resolved to modules (``from a import b`` is ``a.b``
    where ``a.b`` is a module)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> int | None:
    for i, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return i
    return None


def _area(module: str) -> str | None:
    """The area of a ``components`` module (``components`` for the core), or None outside every floor."""
    if not module.startswith("components"):
        return None
    if MODULES[module].parent == REPO / "components":
        return "components"
    area = ".".join(module.split(".")[:2])
    return area if any(area in floor for floor in FLOORS) else None


def _floor(area: str) -> int:
    return next(i for i, floor in enumerate(FLOORS) if area in floor)


def area_imports() -> dict[tuple[str, str], list[str]]:
    """(area, area it imports) -> the imports between them, ``module -> module``: what the floors check."""
    out: dict[tuple[str, str], list[str]] = {}
    for module, deps in GRAPH.items():
        for dep in deps:
            mine, theirs = _area(module), _area(dep)
            if mine and theirs and mine != theirs:
                out.setdefault((mine, theirs), []).append(f"{module} -> {dep}")
    return out


def test_every_engine_module_belongs_to_a_layer():
    loose = [m for m in MODULES if m.startswith("flows") and m not in FACADES and _layer(m) is None]
    assert not loose, f"modules outside every layer (put them in one, or name a new layer in LAYERS): {loose}"


def test_every_component_module_is_on_a_floor():
    loose = [m for m in MODULES if m.startswith("components") and _area(m) is None]
    assert not loose, f"components modules outside every floor (name their area in FLOORS): {loose}"


def test_no_import_circle_anywhere():
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in GRAPH.items()}  # a package's own
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())  # a generator: it looks only when consumed
    except graphlib.CycleError as e:
        pytest.fail(f"import circle: {' -> '.join(e.args[1])}")


def test_no_layer_imports_a_higher_one():
    upward = []
    for module, deps in GRAPH.items():
        mine = _layer(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = _layer(dep)
            if dep in FACADES or (theirs is not None and theirs > mine):
                upward.append(f"{module} imports {dep}")
    assert not upward, "imports that run upwards:\n" + "\n".join(sorted(upward))


def test_no_component_area_imports_its_own_floor_or_a_higher_one():
    wrong = [
        f"{line} ({mine} on floor {_floor(mine)}, {theirs} on floor {_floor(theirs)})"
        for (mine, theirs), lines in area_imports().items()
        if _floor(theirs) >= _floor(mine)
        for line in lines
    ]
    assert not wrong, "imports that run upwards or sideways between components' areas:\n" + "\n".join(sorted(wrong))


def test_nothing_imports_the_cli_and_components_know_no_engine():
    into_cli = [
        m for m, deps in GRAPH.items() if not m.startswith("flows.cli") and any(d.startswith("flows.cli") for d in deps)
    ]
    assert not into_cli, f"modules that import the CLI: {into_cli}"
    into_engine = [
        f"{m} imports {d}"
        for m, deps in GRAPH.items()
        if m.startswith("components")
        for d in deps
        if d.startswith("flows")
    ]
    assert not into_engine, into_engine


@pytest.mark.slow
def test_parsing_a_pipeline_loads_no_execution_code(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; from flows.plan import build; build(sys.argv[1]); "
        "print(sorted(m for m in sys.modules if m.startswith(('flows.execute', 'flows.track', "
        "'flows.services', 'flows.ops', 'flows.cli', 'prefect', 'mlflow', 'torch'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "pipelines" / "b2_gradients.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_public_face_and_the_old_deployment_path():
    import flows
    from flows.execute.runner import RunResult, run
    from flows.language.errors import PipelineInvalid
    from flows.ops.schedule import run_pipeline
    from flows.plan.build import Plan, build

    assert (flows.build, flows.run, flows.Plan, flows.RunResult, flows.PipelineInvalid) == (
        build,
        run,
        Plan,
        RunResult,
        PipelineInvalid,
    )
    # a deployment registered before the layers names this entry point (Prefect imports it by path)
    from prefect.utilities.importtools import import_object

    assert import_object("flows.schedule.run_pipeline") is run_pipeline


if __name__ == "__main__":  # the listing the floors check: python tests/test_layout.py
    for i, floor in reversed(list(enumerate(FLOORS))):
        print(f"floor {i}: {', '.join(floor)}")
        for (mine, theirs), lines in sorted(area_imports().items()):
            if mine in floor:
                print(f"    {mine} -> {theirs} (floor {_floor(theirs)}): {len(lines)} import{'s' * (len(lines) != 1)}")
