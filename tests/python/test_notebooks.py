"""nbclient executes every tutorial notebook (notebooks/NN-*.ipynb) with the nbcuda Jupyter kernel.

A notebook passes when every code cell runs without an error output, except the cells tagged
`raises-exception`, which must raise (they show an error on purpose). The notebooks check their
own results (Rust cells with `nb::get` and `assert!` against CPU references), so a wrong result
is an error cell and fails the test.

Each notebook's run time (Jupyter kernel start included) is recorded and printed as a table at
the end of the module, with the backend it ran on. The 60 s goal per notebook on ptxsim is
reported there, not asserted: timing goals belong in benchmarks.
"""

from __future__ import annotations

import contextlib
import time

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from nbkernel import FIRST_CELL_TIMEOUT, KERNEL_NAME, ROOT, STARTUP_TIMEOUT, check_kernelspec

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p.name for p in NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))
GOAL_S = 60.0
# name -> (seconds, backend, outcome)
RESULTS: dict[str, tuple[float, str, str]] = {}


def backend_of(nb) -> str:
    """The backend named in a `%device` output (`... (backend: ptxsim)`), if any."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/plain", "") if "data" in out else ""
            text = text if isinstance(text, str) else "".join(text)
            if "(backend: " in text:
                return text.split("(backend: ", 1)[1].split(")", 1)[0]
    return "?"


def error_text(out) -> str:
    return f"{out.get('ename')}: {out.get('evalue', '')[:600]}"


@pytest.fixture(scope="module", autouse=True)
def timing_table(request):
    """Prints the run-time table once every notebook of this module has run."""
    yield
    if not RESULTS:
        return
    lines = [
        "",
        f"tutorial notebooks, run time with Jupyter kernel start (goal: < {GOAL_S:.0f} s each on ptxsim)",
        f"{'notebook':<32} {'backend':<8} {'seconds':>8}  result",
    ]
    for name in NOTEBOOKS:
        if name in RESULTS:
            secs, backend, outcome = RESULTS[name]
            over = "  (over the goal)" if secs > GOAL_S and backend == "ptxsim" else ""
            lines.append(f"{name:<32} {backend:<8} {secs:>8.1f}  {outcome}{over}")
    total = sum(r[0] for r in RESULTS.values())
    lines.append(f"{'total':<32} {'':<8} {total:>8.1f}")
    # Written past pytest's output capture, so the table shows without -s.
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        for line in lines:
            if reporter is not None:
                reporter.write_line(line)
            else:
                print(line)


EXPECTED_TUTORIALS = [
    "01-vector-add.ipynb",
    "02-matrix-multiply.ipynb",
    "03-reduction.ipynb",
    "04-gaussian-blur.ipynb",
    "05-heat-diffusion.ipynb",
    "06-particles.ipynb",
    "07-launch-configuration.ipynb",
    "08-precision.ipynb",
    "09-streams-and-events.ipynb",
    "10-debugging.ipynb",
    "11-half-precision-and-tensor-cores.ipynb",
    "12-graphs-and-unified-memory.ipynb",
]


def test_the_tutorials_are_all_there():
    assert NOTEBOOKS == EXPECTED_TUTORIALS, f"expected the 12 tutorial notebooks, found {NOTEBOOKS}"
    for name in NOTEBOOKS:
        nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata.get("kernelspec", {}).get("name") == KERNEL_NAME, name
        assert nb.cells and nb.cells[0].cell_type == "markdown", f"{name} starts without an explanation"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_tutorial_notebook_runs(name):
    check_kernelspec()
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=int(FIRST_CELL_TIMEOUT),
        startup_timeout=STARTUP_TIMEOUT,
        # nbclient lets cells tagged raises-exception fail and stops at any other error.
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    start = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as e:
        RESULTS[name] = (time.monotonic() - start, backend_of(nb), "FAILED")
        pytest.fail(f"{name}: a cell failed\n{e}", pytrace=False)
    RESULTS[name] = (time.monotonic() - start, backend_of(nb), "ok")

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), f"{name}: not every code cell ran"
    problems = []
    for i, cell in enumerate(code, 1):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        tagged = "raises-exception" in cell.metadata.get("tags", [])
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if tagged and not errors:
            problems.append(f"code cell {i} ({first}) is tagged raises-exception but raised nothing")
        if not tagged and errors:
            problems.append(f"code cell {i} ({first}): {error_text(errors[0])}")
    assert not problems, f"{name}:\n" + "\n".join(problems)
