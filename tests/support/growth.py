"""Linear-time checks that do not depend on how fast or busy the machine is.

A bound in seconds fails on a loaded machine and passes a slow algorithm on a
fast one. Instead the same work is timed at two sizes, ``factor`` apart, in CPU
time (time spent descheduled is not charged), best of a few runs each: linear
work grows by about ``factor``, quadratic work by ``factor`` squared.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["assert_linear"]


def _cpu(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def assert_linear(
    work: Callable[[int], Callable[[], object]],
    size: int,
    *,
    factor: int = 4,
    repeat: int = 3,
) -> None:
    """Assert that ``work(n)()`` grows linearly: ``work(size)`` against ``work(factor * size)``.

    ``work(n)`` builds the input of size ``n`` (not timed) and returns the call to time.
    The bound is ``2.5 * factor`` (10 for the default 4, against 16 for quadratic work),
    plus 20 ms for the clock's granularity on small inputs.
    """
    small = _cpu(work(size), repeat)
    large = _cpu(work(factor * size), repeat)
    bound = 2.5 * factor * small + 0.02
    assert large <= bound, (
        f"{factor}x the input took {large / max(small, 1e-9):.1f}x the CPU time "
        f"({small:.3f} s -> {large:.3f} s): worse than linear"
    )
