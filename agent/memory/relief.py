"""Give the agent's own free heap back to the machine: a full collection, then ``malloc_trim``.

Python and the native libraries under it (numpy, CTranslate2, ONNX Runtime) allocate through
glibc, which keeps freed memory in its arenas. After a burst (a long decode, a speech
synthesised) that memory is free inside the process but still counted in its PSS;
``malloc_trim(0)`` returns it. On a libc without ``malloc_trim`` only the collection runs.
"""

from __future__ import annotations

import gc
import logging

from agent.process import heap

log = logging.getLogger(__name__)


def trim_heap() -> bool:
    """Collect garbage and trim glibc's arenas (blocking: run in a thread).

    Returns:
        Whether ``malloc_trim`` ran and released memory.
    """
    gc.collect()
    released = heap.trim()
    # DEBUG: the guard's own line (``memory tidied`` or the limit's report) says what it freed.
    log.debug("heap trimmed", extra={"released": released})
    return released
