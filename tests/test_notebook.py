"""examples/quickstart.ipynb runs top to bottom in a fresh Jupyter kernel (nbclient), so
the notebook cannot rot: every cell must execute without an error."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"


@pytest.mark.slow
def test_quickstart_notebook_runs(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="the dev extra (nbformat) is not installed")
    nbclient = pytest.importorskip("nbclient", reason="the dev extra (nbclient) is not installed")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = [
        output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    ]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "after 20 steps" in text and "done after" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the time series and the comparison
    table = next(o for o in reversed(outputs) if "text/html" in o.get("data", {}))
    assert "easy" in table["data"]["text/plain"] and "ci_low" in table["data"]["text/plain"]
