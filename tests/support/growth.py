"""Linear-time checks that do not depend on how fast or busy the machine is.

A bound in seconds fails on a loaded machine and passes a slow algorithm on a
fast one. Instead the same work is timed at two sizes, ``factor`` apart, in CPU
time (time spent descheduled is not charged), best of a few runs each: linear
work grows by about ``factor``, quadratic work by ``factor`` squared.

The cyclic garbage collector is off while the clock runs (as :mod:`timeit` does):
a full collection walks the whole heap, which in a test process is far larger
than the input, so whether one lands in a run depends on what ran before, not
on the code under test. With it on, the SF parser on an inner list of 25,000
then 100,000 items measured 3.4x to 9.4x on a loaded two-core machine; with it
off, 3.2x to 4.6x.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

__all__ = ["assert_constant", "assert_linear"]


def _cpu(run: Callable[[], object]) -> float:
    started = time.process_time()
    result = run()
    elapsed = time.process_time() - started
    del result  # freed off the clock
    return elapsed


def _best_of(
    work: Callable[[int], Callable[[], object]], size: int, factor: int, repeat: int
) -> tuple[float, float]:
    """The best CPU times of ``work(size)()`` and ``work(factor * size)()``."""
    run_small, run_large = work(size), work(factor * size)
    small = large = float("inf")
    collecting = gc.isenabled()
    gc.disable()
    try:
        # Alternately, so that both sizes see the same spells of load.
        for _ in range(repeat):
            small = min(small, _cpu(run_small))
            large = min(large, _cpu(run_large))
    finally:
        if collecting:
            gc.enable()
    return small, large


def _report(factor: int, small: float, large: float, verdict: str) -> str:
    ratio = large / max(small, 1e-9)
    took = f"{ratio:.1f}x the CPU time ({small:.3f} s -> {large:.3f} s)"
    return f"{factor}x the input took {took}: {verdict}"


def assert_linear(
    work: Callable[[int], Callable[[], object]],
    size: int,
    *,
    factor: int = 4,
    repeat: int = 3,
) -> None:
    """Assert that ``work(n)()`` grows linearly: ``work(size)`` against ``work(factor * size)``.

    ``work(n)`` builds the input of size ``n`` (not timed) and returns the call to time;
    that call may assert on its result (both sizes are then checked).
    The bound is ``2.5 * factor`` (10 for the default 4, against 16 for quadratic work),
    plus 20 ms for the clock's granularity on small inputs.
    """
    small, large = _best_of(work, size, factor, repeat)
    bound = 2.5 * factor * small + 0.02
    assert large <= bound, _report(factor, small, large, "worse than linear")


def assert_constant(work: Callable[[int], Callable[[], object]], size: int) -> None:
    """Assert that ``work(n)()`` costs the same whatever ``n`` (work behind a cap).

    As :func:`assert_linear` at ``size`` and four times it, with a bound of twice
    ``work(size)``'s time plus 20 ms.
    """
    small, large = _best_of(work, size, 4, 3)
    assert large <= 2 * small + 0.02, _report(4, small, large, "it grows with the input")
