"""DSL programs and process workers for the ``c_cpu`` backend tests.

The DSL reads a definition's source, so programs live in real module files (here), and the
crash/race tests run :mod:`c_programs.worker` in separate processes.
"""
