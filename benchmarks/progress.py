"""A text progress indicator on stderr, so a long run shows what it is doing.

On a terminal it rewrites one line (``[ 3/14] hdiff large c_cpu``); elsewhere (CI logs, pipes)
it prints one line per step. No dependency: ``tqdm`` would add nothing needed here.
"""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts steps towards ``total`` and shows the current one on ``stream``."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self._interactive = self.stream.isatty()
        self._width = 0

    def step(self, label: str) -> None:
        """Announce the step that starts now."""
        self.done += 1
        if not self.enabled:
            return
        text = f"[{self.done:>{len(str(self.total))}}/{self.total}] {label}"
        if self._interactive:
            self.stream.write("\r" + text.ljust(self._width))
            self._width = max(self._width, len(text))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Clear the interactive line (a no-op for line-per-step output)."""
        if self.enabled and self._interactive and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
