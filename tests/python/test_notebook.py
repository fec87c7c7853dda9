"""nbclient executes the tutorial notebooks with the nbcuda Jupyter kernel, and every output
matches the output the notebook stores."""

from __future__ import annotations

import copy
import re

import nbformat
import pytest
from nbclient import NotebookClient

from nbkernel import (
    FIRST_CELL_TIMEOUT,
    KERNEL_NAME,
    ROOT,
    RUST_STARTING_NOTE,
    STARTUP_TIMEOUT,
    check_kernelspec,
)

NOTEBOOKS = ["rust_basics.ipynb"]


def normalise(outputs: list) -> list[tuple[str, str, str]]:
    """Outputs as (type, name or MIME, text): consecutive streams of one name merged (their
    split into messages is timing), the Rust start-up note dropped (it is there only when the
    cell waited for evcxr), trailing spaces dropped, HTML/images reduced to their MIME."""
    result: list[tuple[str, str, str]] = []
    for out in outputs:
        kind = out["output_type"]
        if kind == "stream":
            text = out["text"] if isinstance(out["text"], str) else "".join(out["text"])
            if out["name"] == "stderr":
                text = text.replace(RUST_STARTING_NOTE, "")
                if not text:
                    continue
            if result and result[-1][0] == "stream" and result[-1][1] == out["name"]:
                result[-1] = ("stream", out["name"], result[-1][2] + text)
            else:
                result.append(("stream", out["name"], text))
        elif kind in ("execute_result", "display_data"):
            data = out["data"]
            text = data.get("text/plain", "")
            text = text if isinstance(text, str) else "".join(text)
            result.append((kind, ",".join(sorted(data)), text))
        elif kind == "error":
            result.append(("error", out["ename"], ""))
    return [(k, n, re.sub(r"[ \t]+\n", "\n", t).rstrip()) for k, n, t in result]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_outputs_match(name):
    check_kernelspec()
    stored = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    expected = [normalise(c.outputs) for c in stored.cells if c.cell_type == "code"]
    assert sum(len(e) for e in expected) >= 3, "the notebook stores too few outputs to test"

    nb = copy.deepcopy(stored)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=int(FIRST_CELL_TIMEOUT),
        startup_timeout=STARTUP_TIMEOUT,
        allow_errors=False,
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    client.execute()

    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    noted = [i for i, c in enumerate(code_cells) if RUST_STARTING_NOTE.strip() in str(c.outputs)]
    assert noted in ([], [0]), f"the start-up note must come once, in the first cell: {noted}"
    got = [normalise(c.outputs) for c in code_cells]
    mismatches = [
        f"code cell {i + 1}:\n{cell.source}\nexpected {want!r}\ngot      {have!r}"
        for i, (cell, want, have) in enumerate(zip(code_cells, expected, got))
        if have != want
    ]
    assert not mismatches, "\n\n".join(mismatches)
    assert [c.execution_count for c in code_cells] == list(range(1, len(code_cells) + 1))
