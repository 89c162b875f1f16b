"""Linux's parent-death signal, for the processes this package starts (batch workers, the HiGHS
server of solve/highs_process.py): the kernel kills the process when the thread that started
it ends, even if that thread's process is killed by SIGKILL."""

from __future__ import annotations

import signal
import sys

_PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>


def arm_parent_death_signal() -> bool:
    """Ask the kernel for SIGKILL once the parent is gone; whether it was armed (only on Linux;
    the caller watches its parent itself elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
