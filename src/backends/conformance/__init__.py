"""The conformance suite of the stencil DSL, shipped with stencilforge.

Every corpus program with its NumPy reference, the domain and argument refusals, and a sample
of hostile arguments, runnable on any backend from any directory::

    stencilforge conformance mymodule:mybackend
    python -m pytest -p backends.conformance.plugin --pyargs backends.conformance \\
        --stencilforge-backend mymodule:mybackend

The checks themselves are plain functions (``checks``, ``refusals``, ``hostile``) over a
backend; the shipped ``test_*`` modules call them with the backend of the command line, and
stencilforge's own suite with each built-in backend.
"""
