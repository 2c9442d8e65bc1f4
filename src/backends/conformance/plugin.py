"""The pytest plugin of the conformance suite: ``--stencilforge-backend``, its fixtures, and a
summary per feature.

Load it explicitly (it is not registered for every pytest run)::

    python -m pytest -p backends.conformance.plugin --pyargs backends.conformance \\
        --stencilforge-backend mymodule:mybackend

``--stencilforge-backend`` takes a registered backend name (``c_cpu``, an installed
``stencilforge.backends`` entry point) or ``module:attribute`` (the module importable from the
current directory or ``PYTHONPATH``). The fixtures: ``conformance_backend`` (that backend),
``conformance_reference`` (the option's text, for checks that run it in a subprocess) and
``reference_backend`` (``embedded_numpy``, whose errors the others must reproduce).
"""

from __future__ import annotations

from collections import Counter

import attrs
import pytest

import backends
from backends.base import Backend
from benchmarks.selection import resolve_backend

__all__ = ["FEATURE_MARK", "OPTION"]

OPTION = "--stencilforge-backend"
#: The marker that files a test under a feature: ``@pytest.mark.stencilforge_feature("scans")``.
FEATURE_MARK = "stencilforge_feature"
_OUTCOMES = ("passed", "failed", "skipped")


@attrs.frozen
class _Selection:
    reference: str
    backend: Backend


@attrs.frozen
class _FeatureSummary:
    """Each test's outcome by node id, filed under its feature (filled as reports arrive)."""

    outcomes: dict[str, tuple[str, str]] = attrs.field(factory=dict)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        feature = next((str(v) for k, v in report.user_properties if k == FEATURE_MARK), None)
        if feature is None:
            return
        if report.failed:
            self.outcomes[report.nodeid] = (feature, "failed")
        elif report.when == "call" or (report.when == "setup" and report.skipped):
            self.outcomes.setdefault(report.nodeid, (feature, report.outcome))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.outcomes:
            return
        counts: dict[str, Counter[str]] = {}
        for feature, outcome in self.outcomes.values():
            counts.setdefault(feature, Counter())[outcome] += 1
        width = max(len(feature) for feature in counts)
        terminalreporter.section("stencilforge conformance by feature")
        terminalreporter.write_line(
            f"{'feature':<{width}}  {'passed':>6}  {'failed':>6}  {'skipped':>7}"
        )
        for feature, count in counts.items():
            verdict = "FAILED" if count["failed"] else "ok"
            terminalreporter.write_line(
                f"{feature:<{width}}  {count['passed']:>6}  {count['failed']:>6}  "
                f"{count['skipped']:>7}  {verdict}"
            )


_SELECTION = pytest.StashKey[_Selection]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stencilforge", "stencilforge conformance")
    group.addoption(
        OPTION,
        metavar="BACKEND",
        help="the backend to prove: a registered name or module:attribute",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{FEATURE_MARK}(name): the DSL feature a conformance test checks"
    )
    config.pluginmanager.register(_FeatureSummary(), "stencilforge-feature-summary")
    reference = config.getoption(OPTION)
    if reference is None:
        return
    try:
        backend = resolve_backend(reference)
    except ValueError as error:
        raise pytest.UsageError(f"{OPTION} {reference}: {error}") from None
    _allow_64_bit_jax(backend)
    config.stash[_SELECTION] = _Selection(reference, backend)


def _allow_64_bit_jax(backend: Backend) -> None:
    """Let JAX keep 64-bit values for a backend on ``jax.numpy``: the corpus is mostly float64
    and int64, which JAX otherwise truncates to 32 bits."""
    namespace = backend.array_namespace
    if namespace is not None and namespace.__name__.startswith("jax"):
        import jax  # noqa: PLC0415  (optional: only for a backend that already uses it)

        jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker(FEATURE_MARK)
        if marker is not None:
            item.user_properties.append((FEATURE_MARK, marker.args[0]))


def _selection(config: pytest.Config) -> _Selection:
    if _SELECTION not in config.stash:
        raise pytest.UsageError(
            f"the conformance suite needs a backend: {OPTION} NAME or {OPTION} module:attribute"
        )
    return config.stash[_SELECTION]


@pytest.fixture(scope="session")
def conformance_backend(pytestconfig: pytest.Config) -> Backend:
    """The backend under test, as ``--stencilforge-backend`` names it."""
    return _selection(pytestconfig).backend


@pytest.fixture(scope="session")
def conformance_reference(pytestconfig: pytest.Config) -> str:
    """``--stencilforge-backend``'s text: how another process finds the backend under test."""
    return _selection(pytestconfig).reference


@pytest.fixture(scope="session")
def reference_backend() -> Backend:
    """The backend whose errors and results the others must reproduce."""
    return backends.embedded_numpy
