"""cnmtune's DPU simulator: functional interpreter, timing model, traces, and the SimDevice."""

from cnmtune.runtime.sim.config import DpuConfig, RoutineCost
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.sim.jit import watch_compiles
from cnmtune.runtime.sim.timing import DpuTiming, retime
from cnmtune.runtime.sim.trace import Trace

watch_compiles()  # a first run says that it compiles, and its times leave the compile out

__all__ = ["DpuConfig", "DpuTiming", "RoutineCost", "SimDevice", "Trace", "retime"]
