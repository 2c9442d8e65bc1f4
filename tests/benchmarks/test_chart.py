"""The charts of a run: ``results.png`` and one roofline chart per workload, readable.

Made from rows written here (no timing), so the checks hold on any machine: the files are
written, no two labels of an axis overlap, and the legend is outside every plotting area.
"""

from __future__ import annotations

import itertools

import pytest

from benchmarks import chart
from benchmarks.results import OK, Row, with_derived

matplotlib = pytest.importorskip("matplotlib")

BACKENDS = ("numpy", "embedded_numpy", "c_cpu", "dace_cpu", "jax_jit", "jax", "numba")
WORKLOADS = ("laplacian", "hdiff", "tridiagonal", "vertical_advection")


def _rows() -> list[Row]:
    rows = []
    for (index, backend), workload in itertools.product(enumerate(BACKENDS), WORKLOADS):
        rows.append(Row(workload, "small", (16, 16, 8), backend, "stencilforge", OK, 32768,
                        median=1e-5 * (index + 1), minimum=1e-5, maximum=1e-4, samples=3))
        rows.append(Row(workload, "large", (256, 256, 64), backend, "stencilforge", OK, 2**26,
                        median=0.002 * (index + 1), minimum=0.002, maximum=0.1, samples=3,
                        copy_bandwidth=4e10, best_copy_bandwidth=4.5e10,
                        compute_bound=0.001 * (index + 1)))
    return with_derived(rows, 4e10)


def _overlaps(first, second) -> bool:
    return first.overlaps(second) and first.width > 0 and second.width > 0


def _assert_readable(figure) -> None:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        labels = [label.get_window_extent(renderer) for label in axes.get_xticklabels()
                  if label.get_text()]
        assert labels
        for first, second in itertools.combinations(labels, 2):
            assert not _overlaps(first, second)
    legends = [*figure.legends, *(a.get_legend() for a in figure.axes if a.get_legend())]
    assert legends
    for legend, axes in itertools.product(legends, figure.axes):
        assert not _overlaps(legend.get_window_extent(renderer), axes.get_window_extent(renderer))


def test_the_results_chart_has_readable_labels_and_the_legend_outside():
    figure = chart.results_figure(_rows(), "a run")
    try:
        assert [axes.get_yscale() for axes in figure.axes] == ["log", "linear"]
        assert "roofline" in figure.axes[1].get_ylabel()
        _assert_readable(figure)
    finally:
        matplotlib.pyplot.close(figure)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_each_roofline_chart_has_readable_labels_and_the_legend_outside(workload):
    figure = chart.roofline_figure(_rows(), workload)
    try:
        assert figure is not None
        _assert_readable(figure)
    finally:
        matplotlib.pyplot.close(figure)


def test_a_workload_without_a_roofline_has_no_roofline_chart():
    small = [row for row in _rows() if row.size == "small"]
    assert chart.roofline_figure(small, "hdiff") is None


def test_the_charts_are_written_one_roofline_chart_per_workload(tmp_path):
    written, note = chart.write_charts(_rows(), tmp_path, "a run")
    assert note is None
    expected = {"results.png", *(f"roofline-{w}.png" for w in WORKLOADS)}
    assert {path.name for path in written} == expected
    for path in written:
        assert path.read_bytes().startswith(b"\x89PNG")
