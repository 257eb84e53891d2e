"""The benchmarks' CPU clocks, read from /proc."""

from __future__ import annotations

import ctypes
import os
import threading
import time

from ops.bench.kit import JitClock, jit_seconds

PR_SET_NAME = 15


def _spin(name: bytes, seconds: float, named: threading.Event, done: threading.Event) -> None:
    """Burn CPU for ``seconds`` in a thread the kernel knows as ``name``."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    named.set()
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    done.wait()


def test_the_jit_clock_counts_the_compiler_threads_and_nothing_else() -> None:
    pid = os.getpid()
    named, done = [threading.Event(), threading.Event()], threading.Event()
    assert jit_seconds(pid) == {}  # no thread of this process is a compiler thread yet
    clock = JitClock({"jvm": pid, "gone": 2**22 + 1})
    compiler = threading.Thread(target=_spin, args=(b"C2 CompilerThre", 0.3, named[0], done))
    other = threading.Thread(target=_spin, args=(b"worker", 0.3, named[1], done))
    for thread in (compiler, other):
        thread.start()
    for event in named:
        event.wait()
    try:
        while compiler.is_alive() and sum(jit_seconds(pid).values()) < 0.29:
            time.sleep(0.01)
        used = clock.read().seconds
    finally:
        done.set()
        compiler.join()
        other.join()
    assert 0.25 <= used["jvm"] <= 0.45  # the compiler thread's 0.3 s, not the other thread's as well
    assert "gone" not in used  # a process that is not there has no compiler threads
