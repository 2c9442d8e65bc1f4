"""stencilforge's benchmark harness: ``python -m benchmarks``."""
