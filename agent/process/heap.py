"""glibc's heap in the agent process: fewer arenas, and the free heap returned after a load.

Python and the native libraries under it (numpy, CTranslate2, ONNX Runtime) allocate through
glibc, whose defaults suit a server with cores to spare, not a bot in a 2 GB VM. Measured on
the default bot's models (tiny.en and base, the Silero VAD) with 12 corpus clips decoded three
times by four threads (PSS after the decodes; docs/architecture.md §5a):

- Every thread that allocates may get an arena of its own, up to 8 per core, and keeps what it
  freed there: 443 MB by default, 396 MB with two arenas. The realtime tier decodes one at a
  time, but each decode runs on whichever pool thread ``asyncio.to_thread`` hands it, so with
  two arenas a decode's buffers (~60 MB) are freed into one arena and allocated again in the
  other. ``bench.agent_heap`` (94 decodes one at a time, pool threads busy beside them; three
  runs each): PSS after the decodes 313-318 MB with one arena (:data:`ARENA_MAX`) against
  332-364 MB with two, for the same CPU (41-45 s either way), and 257 against 262-278 MB once
  trimmed.
- Loading a whisper model leaves its file's converted buffers free but kept in the heap (about
  65 MB for the two models); :func:`trim` after a load returns them.

Not done here: a fixed mapping threshold (``MALLOC_MMAP_THRESHOLD_=131072``) brought the same
decodes down to 271 MB, but cost 21% more CPU per decode (twice the page faults), which a
1 vCPU bot needs for latency; ``bench.agent_heap`` measured 56-67% more CPU per second of
audio on a slower host, and 19-30% at 4 MB for a third of the saving. An operator may still
set it in the agent's environment. Playwright's node driver gets one
(:data:`agent.browser.session.DRIVER_MALLOC`): it decodes nothing.

On a libc without ``mallopt`` or ``malloc_trim`` (musl, macOS) these do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

# mallopt's parameter number for the arena limit (glibc malloc.h, M_ARENA_MAX).
_M_ARENA_MAX = -8
ARENA_MAX = 1


def _libc_function(name: str) -> Any | None:
    path = ctypes.util.find_library("c")
    if path is None:
        return None
    try:
        return getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):
        return None


def tune() -> bool:
    """Cap glibc's arenas at :data:`ARENA_MAX`; call it before threads allocate.

    ``MALLOC_ARENA_MAX`` in the environment wins: a setting the operator gave is left alone.

    Returns:
        Whether the cap was set here.
    """
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, ARENA_MAX))


def trim() -> bool:
    """Give glibc's free heap back to the machine (``malloc_trim(0)``; blocking, milliseconds).

    Returns:
        Whether memory was released.
    """
    malloc_trim = _libc_function("malloc_trim")
    if malloc_trim is None:
        return False
    malloc_trim.argtypes = [ctypes.c_size_t]
    malloc_trim.restype = ctypes.c_int
    return bool(malloc_trim(0))
