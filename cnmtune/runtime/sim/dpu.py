"""One simulated DPU: its memories, the runtime services, and co-simulation with the timing model.

Functional execution (the jitted interpreter) and timing (DpuTimeline) run interleaved: the
timing model asks for a tasklet's next segment when that tasklet may proceed in model time,
so every value a program can observe from time (perfcounter, lock outcomes, handshake
results) is the timing model's. Each launch also yields a Trace for re-timing.

Memory persists as on UPMEM: WRAM is initialised from the ELF at load, not at launch (globals
and the mem_alloc heap pointer survive launches), MRAM persists; atomic bits are cleared at
each launch.
"""

from __future__ import annotations

import numpy as np

from cnmtune.dpu.memory_map import MAX_TASKLETS, MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import DeviceError, DmaError, SimFault, SimTimeout
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.dpu.abi import Service, fault_name
from cnmtune.runtime.sim.image import ProgramImage
from cnmtune.runtime.sim.interpreter import DpuState, Event, EventKind, FaultKind, Interpreter
from cnmtune.runtime.sim.printf import c_string, format_printf
from cnmtune.runtime.sim.timing import DpuTimeline, DpuTiming
from cnmtune.runtime.sim.trace import Action, Segment, Trace

DEFAULT_BUDGET = 2_000_000_000  # raw instructions per DPU and launch before SimTimeout
_SLOT_BUDGET = 2 ** 62
_DMA_MIN, _DMA_MAX = 8, 2048
_NONE = np.zeros(0, dtype=np.int64)  # a segment that called no table-charged routine

_ACTION_OF = {
    Service.BARRIER_WAIT: Action.BARRIER, Service.SEM_TAKE: Action.SEM_TAKE, Service.SEM_GIVE: Action.SEM_GIVE,
    Service.HANDSHAKE_NOTIFY: Action.NOTIFY, Service.HANDSHAKE_WAIT_FOR: Action.WAIT_FOR,
    Service.PERFCOUNTER_CONFIG: Action.PERF_CONFIG, Service.PERFCOUNTER_GET: Action.PERF_GET,
    Service.ACQUIRE: Action.ACQUIRE, Service.RELEASE: Action.RELEASE, Service.BOOT: Action.BOOT,
    Service.LOCK: Action.LOCK,
}


class SimulatedDpu:
    """Memories and services of one DPU (see the module docstring)."""

    def __init__(self, index: int):
        self.index = index
        self.image: ProgramImage | None = None
        self.state: DpuState | None = None
        self._log: list[str] = []

    # ------------------------------------------------------------ host side
    def load(self, image: ProgramImage, config: DpuConfig) -> None:
        """Load a program: WRAM and MRAM from the ELF, CLOCKS_PER_SEC patched to the frequency."""
        self.image = image
        program, routines = image.decode(config)
        mram_end = max((offset + len(data) for offset, data in image.mram_init), default=0)
        self.state = DpuState(len(routines), mram_end)
        self.state.wram[:] = np.frombuffer(image.wram_init, np.uint8)
        for offset, data in image.mram_init:
            self.state.mram[offset:offset + len(data)] = np.frombuffer(data, np.uint8)
        if "CLOCKS_PER_SEC" in image.symbols:
            self.write(image.symbol("CLOCKS_PER_SEC"), int(config.frequency_hz).to_bytes(4, "little"))
        self._log.clear()

    def write(self, address: int, data: bytes, symbol: str = "") -> None:
        """Host write into WRAM or MRAM (grows the MRAM model as needed)."""
        memory, offset = self._host_range(address, len(data), symbol)
        memory[offset:offset + len(data)] = np.frombuffer(data, np.uint8)

    def read(self, address: int, nbytes: int, symbol: str = "") -> bytes:
        """Host read from WRAM or MRAM (unwritten MRAM reads as zeros)."""
        memory, offset = self._host_range(address, nbytes, symbol)
        return memory[offset:offset + nbytes].tobytes()

    def log_text(self) -> str:
        """Everything the DPU printed so far."""
        return "".join(self._log)

    def _host_range(self, address: int, nbytes: int, symbol: str) -> tuple[np.ndarray, int]:
        where = f"{symbol} " if symbol else ""
        if 0 <= address and address + nbytes <= WRAM_SIZE:
            return self.state.wram, address
        offset = address - MRAM_BASE
        if 0 <= offset and offset + nbytes <= MRAM_SIZE:
            self.state.grow_mram(offset + nbytes)
            return self.state.mram, offset
        raise DeviceError(f"DPU {self.index}: host access of {nbytes} B at {where}{address:#x} is outside WRAM and MRAM")

    # ------------------------------------------------------------ launch
    def launch(self, config: DpuConfig, budget: int = DEFAULT_BUDGET) -> tuple[DpuTiming, Trace]:
        """Run the loaded program once on every tasklet it declares; return timing and trace."""
        if self.image is None:
            raise DeviceError(f"DPU {self.index}: no program loaded")
        program, routines = self.image.decode(config)
        source = _Functional(self, Interpreter(program), routines, budget)
        timing = DpuTimeline(config, routines, source, self.index).run()
        return timing, Trace.from_segments(routines, source.segments)


class _Functional:
    """SegmentSource backed by the interpreter: runs a tasklet to its next timing event."""

    def __init__(self, dpu: SimulatedDpu, interpreter: Interpreter, routines: tuple[str, ...], budget: int):
        self.dpu, self.interpreter, self.routines = dpu, interpreter, routines
        self.image, self.state = dpu.image, dpu.state
        self.budget = budget
        self.executed = 0
        self.segments: list[Segment] = []
        self.last_action: list[Action | None] = [None] * MAX_TASKLETS
        state, image = self.state, self.image
        state.regs[:] = 0
        state.pcs[:] = image.entry
        state.routine_acc[:] = 0
        state.in_routine[:, 0] = -1
        state.mram_accesses[:] = 0
        for t in range(MAX_TASKLETS):
            low = image.stacks_start + t * image.stack_size
            state.stack_lo[t], state.stack_hi[t] = low, low + image.stack_size

    def step(self, tasklet: int, now: float, value: int | None) -> Segment:
        state, t = self.state, tasklet
        if value is not None:
            state.regs[t, 10] = value & 0xFFFFFFFF
            if self.last_action[t] in (Action.PERF_GET, Action.PERF_CONFIG):  # 64-bit results only:
                state.regs[t, 11] = (value >> 32) & 0xFFFFFFFF  # a1 is live across other services
        slots = instructions = 0
        while True:
            event = self.interpreter.run(t, state, _SLOT_BUDGET, max(self.budget - self.executed, 1))
            slots += event.slots
            instructions += event.instructions
            self.executed += event.instructions
            if event.kind == EventKind.ECALL:
                segment = self._service(t, event, slots, instructions)
                if segment is not None:
                    self.segments.append(segment)
                    self.last_action[t] = segment.action
                    return segment
                continue
            if event.kind == EventKind.MRAM_GROW:
                state.grow_mram(event.address - MRAM_BASE + 8)
                continue
            if event.kind == EventKind.BUDGET:
                raise SimTimeout(self._where(t, event.pc, f"instruction budget of {self.budget:,} exhausted "
                                                          "(infinite loop?)"))
            if event.kind == EventKind.EBREAK:
                raise SimFault(self._where(t, event.pc, "ebreak"))
            raise SimFault(self._fault_message(t, event))

    # ------------------------------------------------------------ services
    def _service(self, t: int, event: Event, slots: int, instructions: int) -> Segment | None:
        state = self.state
        regs = state.regs[t]
        a0, a1, a2 = int(regs[10]), int(regs[11]), int(regs[12])
        try:
            service = Service(int(regs[17]))
        except ValueError:
            raise SimFault(self._where(t, event.pc, f"unknown service {int(regs[17])} in a7")) from None
        state.pcs[t] = (event.pc + 4) & 0xFFFFFFFF
        if service == Service.ME:
            regs[10] = t
            return None
        if service in (Service.PRINTF, Service.PUTS, Service.PUTCHAR):
            self.dpu._log.append(format_printf(state.wram, a0, a1) if service == Service.PRINTF
                                 else c_string(state.wram, a0) + "\n" if service == Service.PUTS
                                 else chr(a0 & 0xFF))
            return None
        if service == Service.FAULT:
            raise SimFault(self._where(t, event.pc, f"program fault {fault_name(a0)}"))
        counts, params = self._take_routines(t)
        accesses = int(state.mram_accesses[t])
        state.mram_accesses[t] = 0

        def segment(action: Action, arg0: int = 0, arg1: int = 0) -> Segment:
            return Segment(t, slots, instructions, counts, params, accesses, action, arg0, arg1)

        if service == Service.STOP:
            state.pcs[t] = event.pc
            return segment(Action.STOP)
        if service in (Service.MRAM_READ, Service.MRAM_WRITE):
            read = service == Service.MRAM_READ
            mram_addr, wram_addr = (a0, a1) if read else (a1, a0)
            self._dma(t, event.pc, read, mram_addr, wram_addr, a2)
            return segment(Action.DMA_READ if read else Action.DMA_WRITE, a2)
        action = _ACTION_OF[service]
        if action in (Action.BARRIER, Action.SEM_TAKE, Action.SEM_GIVE):
            if not 0 <= a0 < WRAM_SIZE - 3:
                raise SimFault(self._where(t, event.pc, f"{service.name.lower()} on {a0:#x}, not a WRAM object"))
            initial = int(state.wram[a0 + 2])
            return segment(action, a0, initial - 256 if action != Action.BARRIER and initial > 127 else initial)
        if action in (Action.ACQUIRE, Action.RELEASE, Action.LOCK):
            return segment(action, a0 & 0xFF)
        return segment(action, a0, a1)

    def _take_routines(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        acc = self.state.routine_acc[t]
        if not acc.any():
            return _NONE, _NONE
        counts, params = acc[:, 0].copy(), acc[:, 1].copy()
        acc[:] = 0
        return counts, params

    def _dma(self, t: int, pc: int, read: bool, mram_addr: int, wram_addr: int, nbytes: int) -> None:
        name = "mram_read" if read else "mram_write"
        problem = None
        if nbytes % 8 or not _DMA_MIN <= nbytes <= _DMA_MAX:
            problem = f"size {nbytes} B (must be a multiple of 8 in 8..2048)"
        elif wram_addr % 8 or mram_addr % 8:
            problem = f"misaligned address (WRAM {wram_addr:#x}, MRAM {mram_addr:#x}; both must be 8-aligned)"
        elif not 0 <= wram_addr <= WRAM_SIZE - nbytes:
            problem = f"WRAM range {wram_addr:#x}+{nbytes} outside the 64 KiB WRAM"
        elif not MRAM_BASE <= mram_addr <= MRAM_BASE + MRAM_SIZE - nbytes:
            problem = f"MRAM range {mram_addr:#x}+{nbytes} outside MRAM [{MRAM_BASE:#x}, {MRAM_BASE + MRAM_SIZE:#x})"
        if problem:
            raise DmaError(self._where(t, pc, f"{name}: {problem}"))
        state = self.state
        offset = mram_addr - MRAM_BASE
        state.grow_mram(offset + nbytes)
        if read:
            state.wram[wram_addr:wram_addr + nbytes] = state.mram[offset:offset + nbytes]
        else:
            state.mram[offset:offset + nbytes] = state.wram[wram_addr:wram_addr + nbytes]

    # ------------------------------------------------------------ messages
    def _where(self, t: int, pc: int, what: str) -> str:
        caller = int(self.state.regs[t, 1])
        function = self.image.function_at(pc)
        if function in self.routines:
            # a service wrapper: name the kernel code that called it
            function = f"{function} called from {self.image.function_at(caller)} (ra {caller:#010x})"
        return f"DPU {self.dpu.index}, tasklet {t}: {what} at pc {pc:#010x} in {function}"

    def _fault_message(self, t: int, event: Event) -> str:
        address = event.address
        text = {
            FaultKind.MEMORY_OUT_OF_BOUNDS: f"memory access out of bounds at address {address:#010x}",
            FaultKind.MISALIGNED: f"misaligned memory access at address {address:#010x}",
            FaultKind.STACK_OVERFLOW: (f"stack overflow: sp {address:#010x} left this tasklet's stack "
                                       f"[{int(self.state.stack_lo[t]):#x}, {int(self.state.stack_hi[t]):#x}]"),
            FaultKind.ILLEGAL_INSTRUCTION: "illegal instruction",
            FaultKind.FETCH_OUT_OF_BOUNDS: f"jump outside the program to {address:#010x}",
            FaultKind.WRITE_TO_IRAM: f"store into IRAM at address {address:#010x}",
            FaultKind.FETCH_MISALIGNED: f"jump to misaligned pc {address:#010x}",
        }.get(event.fault, f"fault {event.fault.name} at address {address:#010x}")
        return self._where(t, event.pc, text)
