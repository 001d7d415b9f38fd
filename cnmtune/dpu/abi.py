"""The service-call ABI between DPU programs and the simulator, read from cnm_ecall.h.

The header is the single source of truth: its `#define CNM_ECALL_<NAME> <n>` lines number the
services and its `#define CNM_FAULT_<NAME> <n>` lines the fault codes.
"""

from __future__ import annotations

import enum
import functools
import re
from pathlib import Path

from cnmtune.dpu.memory_map import INCLUDE_DIR
from cnmtune.errors import CnmtuneError

ECALL_HEADER = INCLUDE_DIR / "cnm_ecall.h"
_DEFINE = re.compile(r"#define\s+CNM_(ECALL|FAULT)_([A-Z0-9_]+)\s+(\d+)")
# services the simulator dispatches on by name; the header must define all of them
REQUIRED_SERVICES = ("STOP", "ME", "BOOT", "FAULT", "MRAM_READ", "MRAM_WRITE", "ACQUIRE", "RELEASE",
                     "BARRIER_WAIT", "SEM_TAKE", "SEM_GIVE", "HANDSHAKE_NOTIFY", "HANDSHAKE_WAIT_FOR",
                     "PERFCOUNTER_CONFIG", "PERFCOUNTER_GET", "PRINTF", "PUTS", "PUTCHAR", "LOCK")


@functools.lru_cache(maxsize=8)
def _read(path: str) -> dict[str, dict[int, str]]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CnmtuneError(f"{path}: cannot read the ecall service table ({exc.strerror or exc})") from None
    table: dict[str, dict[int, str]] = {"ECALL": {}, "FAULT": {}}
    for family, name, number in _DEFINE.findall(text):
        table[family][int(number)] = name
    if not table["ECALL"]:
        raise CnmtuneError(f"{path}: no '#define CNM_ECALL_<NAME> <n>' lines")
    return table


def load_services(header: Path | None = None) -> dict[int, str]:
    """Ecall service number -> name."""
    return dict(_read(str(header or ECALL_HEADER))["ECALL"])


def load_faults(header: Path | None = None) -> dict[int, str]:
    """Fault code -> name (the argument of the FAULT service)."""
    return dict(_read(str(header or ECALL_HEADER))["FAULT"])


def _service_enum() -> type[enum.IntEnum]:
    numbers = {name: number for number, name in load_services().items()}
    missing = [name for name in REQUIRED_SERVICES if name not in numbers]
    if missing:
        raise CnmtuneError(f"{ECALL_HEADER}: missing services {', '.join(missing)}")
    return enum.IntEnum("Service", numbers)


Service = _service_enum()


def fault_name(code: int) -> str:
    """Name of a fault code, e.g. 'HEAP_EXHAUSTED' (or 'code N' if unknown)."""
    return load_faults().get(code, f"code {code}")
