"""Who holds a claim on a unit of shared work: one writer, named by host, process id and start time."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimOwner:
    """Who holds claims: one writer, named by its host, process id and start time."""

    host: str
    pid: int
    started: float

    @classmethod
    def this_process(cls) -> ClaimOwner:
        """A new owner for a writer starting now in this process."""
        return cls(socket.gethostname(), os.getpid(), time.time())

    def gone(self) -> bool:
        """True when the owner ran on this host and its process no longer exists."""
        if self.host != socket.gethostname():
            return False  # another host's process cannot be seen: only its lease tells
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's
            return False
        return False
