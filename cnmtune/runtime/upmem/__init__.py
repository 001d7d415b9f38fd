"""The UPMEM SDK: finding it, and running kernels on its hardware or functional-simulator backend."""

from cnmtune.runtime.upmem.device import (
    DEVICE_KINDS,
    PROFILES,
    UpmemDevice,
    UpmemLaunch,
)
from cnmtune.runtime.upmem.sdk import UpmemSdk

__all__ = ["DEVICE_KINDS", "PROFILES", "UpmemDevice", "UpmemLaunch", "UpmemSdk"]
