"""``python -m benchmarks``: the main job.

For now it measures the pipeline core (CachedStep hit times); the stencil workloads join it
as the DSL and compiled backends land.
"""

from __future__ import annotations

from benchmarks import cache_hits

if __name__ == "__main__":
    cache_hits.main()
