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

from dataclasses import dataclass

import numpy as np

from cnmtune.dpu.memory_map import MAX_TASKLETS, MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import Deadlock, DeviceError, DmaError, SimFault, SimTimeout
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.dpu.abi import Service, fault_name
from cnmtune.runtime.sim.image import ProgramImage
from cnmtune.runtime.sim.interpreter import (
    SEGMENT_OUT_SIZE, SERVICE_ME, SERVICE_MRAM_READ, SERVICE_MRAM_WRITE, DpuState, Event,
    EventKind, FaultKind, dma_offset, run_segment)
from cnmtune.runtime.sim.printf import c_string, format_printf
from cnmtune.runtime.sim.program import DecodedProgram
from cnmtune.runtime.sim import cosim
from cnmtune.runtime.sim.cosim import cosimulate, exact_costs, timing_parameters
from cnmtune.runtime.sim.timing import DpuTimeline, DpuTiming, deadlock_message, launch_timing, routine_cost_vectors
from cnmtune.runtime.sim.trace import Action, Segment, Trace

DEFAULT_BUDGET = 2_000_000_000  # raw instructions per DPU and launch before SimTimeout
_NONE = np.zeros(0, dtype=np.int64)  # a segment that called no table-charged routine

_ACTION_OF = {
    Service.BARRIER_WAIT: Action.BARRIER, Service.SEM_TAKE: Action.SEM_TAKE, Service.SEM_GIVE: Action.SEM_GIVE,
    Service.HANDSHAKE_NOTIFY: Action.NOTIFY, Service.HANDSHAKE_WAIT_FOR: Action.WAIT_FOR,
    Service.PERFCOUNTER_CONFIG: Action.PERF_CONFIG, Service.PERFCOUNTER_GET: Action.PERF_GET,
    Service.ACQUIRE: Action.ACQUIRE, Service.RELEASE: Action.RELEASE, Service.BOOT: Action.BOOT,
    Service.LOCK: Action.LOCK,
}
_ACTION_OF_SERVICE = np.zeros(max(Service) + 1, np.int64)  # cosimulate's action_of
for _service, _action in _ACTION_OF.items():
    _ACTION_OF_SERVICE[_service] = _action
# Plain values for the per-event path (no Enum construction or attribute lookups there).
_SERVICES = {int(s): s for s in Service}
_S_MRAM_READ, _S_MRAM_WRITE = int(Service.MRAM_READ), int(Service.MRAM_WRITE)
_A_DMA_READ, _A_DMA_WRITE = Action.DMA_READ, Action.DMA_WRITE
_PERF_ACTIONS = (Action.PERF_GET, Action.PERF_CONFIG)
_ECALL, _BUDGET, _GROW, _EBREAK = (int(k) for k in (EventKind.ECALL, EventKind.BUDGET, EventKind.MRAM_GROW,
                                                     EventKind.EBREAK))
_new_segment = tuple.__new__  # Segment(...) without the NamedTuple's Python-level __new__
if (SERVICE_ME, SERVICE_MRAM_READ, SERVICE_MRAM_WRITE) != (Service.ME, Service.MRAM_READ, Service.MRAM_WRITE):
    raise ImportError("interpreter.run_segment's service numbers differ from cnm_ecall.h's")  # it services those


@dataclass(frozen=True)
class StackOverflow:
    """A tasklet whose stack outgrew its reserved size in a launch. A DPU checks no stack: the
    SDK's fault codes have none (dpufault.h: heap full, division by zero, assert, halt, printf
    overflow, profiling) and nothing bounds r22; the tasklet writes on into the memory beside its
    stack (on a DPU, whose stacks grow upward, the next tasklet's; on the proxy the one below).
    The simulator runs on, as the DPU does, and says so."""

    dpu: int
    tasklet: int
    used: int  # bytes below the top of the stack that sp reached
    size: int  # bytes reserved (STACK_SIZE_DEFAULT)

    def __str__(self) -> str:
        return (f"DPU {self.dpu}, tasklet {self.tasklet}: the stack reached {self.used:,} B of its {self.size:,} B "
                "(a DPU does not check: it overwrote the memory beside the stack; raise STACK_SIZE_DEFAULT)")


class SimulatedDpu:
    """Memories and services of one DPU (see the module docstring)."""

    def __init__(self, index: int):
        self.index = index
        self.image: ProgramImage | None = None
        self.state: DpuState | None = None
        self._log: list[str] = []
        self.stack_overflows: tuple[StackOverflow, ...] = ()  # of the last launch

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
    def launch(self, config: DpuConfig, budget: int = DEFAULT_BUDGET, reference: bool = False
               ) -> tuple[DpuTiming, Trace]:
        """Run the loaded program once on every tasklet it declares; return timing and trace.

        The launch runs in one jitted call (cosim.py), unless the routine costs are not integers,
        the program prints (it is then run again from the start), or `reference` asks for the
        reference path: DpuTimeline driving _Functional from Python, whose results the jitted call
        reproduces.
        """
        if self.image is None:
            raise DeviceError(f"DPU {self.index}: no program loaded")
        program, routines = self.image.decode(config)
        base, per = routine_cost_vectors(config, routines)
        if self.state.routine_acc.shape[1] != program.n_routines:
            raise ValueError(f"routine_acc has {self.state.routine_acc.shape[1]} routines, "
                             f"the program {program.n_routines}")
        try:
            result = self._run(program, routines, config, budget, base, per, reference)
        except SimFault as fault:  # what followed an overflowed stack is rarely the cause: name it too
            self.stack_overflows = self._stack_overflows()
            if isinstance(fault, _Printed) or not self.stack_overflows:
                raise
            raise type(fault)(f"{fault}; after {'; '.join(map(str, self.stack_overflows))}") from fault
        self.stack_overflows = self._stack_overflows()
        return result

    def _run(self, program: DecodedProgram, routines: tuple[str, ...], config: DpuConfig, budget: int,
             base: np.ndarray, per: np.ndarray, reference: bool) -> tuple[DpuTiming, Trace]:
        if not reference and exact_costs(base, per):
            # a program that prints more than the jitted call keeps WRAM copies for runs again on the
            # reference path: keep the memories to start it from
            memories = (self.state.wram.copy(), self.state.mram.copy()) if self.image.prints else None
            try:
                return _Functional(self, program, routines, budget, base, per).cosimulate(config)
            except _Printed:
                if memories is None:  # prints without the runtime's print routines (a raw ecall)
                    raise
                self.state.wram[:], self.state.mram = memories
        source = _Functional(self, program, routines, budget, base, per)
        timing = DpuTimeline(config, routines, source, self.index).run()
        return timing, source.trace()

    def _stack_overflows(self) -> tuple[StackOverflow, ...]:
        """The tasklets whose sp went below their stack in the launch just run."""
        image, deepest = self.image, self.state.stack_deepest
        return tuple(StackOverflow(self.index, t, image.stack_top(t) - int(deepest[t]), image.stack_size)
                     for t in range(image.nr_tasklets) if image.stack_top(t) - int(deepest[t]) > image.stack_size)


class _Printed(SimFault):
    """More prints in a jitted launch than it keeps WRAM copies for (cosim.PRINT_LIMIT)."""


def _print_text(wram: np.ndarray, service: int, a0: int, a1: int) -> str:
    """What a print service (a0, a1 its arguments) adds to the DPU's log."""
    if service == Service.PRINTF:
        return format_printf(wram, a0, a1)
    return c_string(wram, a0) + "\n" if service == Service.PUTS else chr(a0 & 0xFF)


class _Functional:
    """SegmentSource backed by the interpreter: runs a tasklet to its next timing event.

    The segments it hands to the timeline are already priced under the launch's DpuConfig (like
    TraceReplay's), and it records the trace itself, in columns (see trace()).

    Per-event work is kept small: the interpreter reports in its output buffer how many priced
    routine entries the run recorded (with the last one's id and parameter) and the ecall's
    arguments, so routine_acc is only read when a segment entered two routines or more.
    Pricing is bit-identical to DpuTimeline's ``slots + float(counts @ base + params @ per)``:
    with a single entry (count 1 at routine k) both dot products have one non-zero term, which
    they compute exactly as ``1.0 * base[k]`` and ``param * per[k]``; with more, the same numpy
    expression is evaluated on the same arrays.
    """

    def __init__(self, dpu: SimulatedDpu, program: DecodedProgram, routines: tuple[str, ...], budget: int,
                 cost_base: np.ndarray, cost_per: np.ndarray):
        self.dpu, self.program, self.routines = dpu, program, routines
        self.image, self.state = dpu.image, dpu.state
        self.budget = budget
        self.executed = 0
        self.last_action: list[Action | None] = [None] * MAX_TASKLETS
        self._base, self._per = cost_base, cost_per
        # plain floats for the one-routine fast path; a non-finite cost (0 * inf is nan in the
        # dot products) always takes the numpy path
        self._finite = bool(np.isfinite(cost_base).all() and np.isfinite(cost_per).all())
        self._base_list, self._per_list = cost_base.tolist(), cost_per.tolist()
        # the trace, by columns: (tasklet, slots, instructions, mram accesses, action, arg0, arg1)
        # per segment; routine entries sparse: (segment, routine, param) for segments with one
        # entry, (segment, counts, params) for segments with more
        self._rows: list[tuple[int, int, int, int, int, int, int]] = []
        self._single: list[tuple[int, int, int]] = []
        self._multi: list[tuple[int, np.ndarray, np.ndarray]] = []
        state, image = self.state, self.image
        state.regs[:] = 0
        state.pcs[:] = image.entry
        state.routine_acc[:] = 0
        state.in_routine[:, 0] = -1
        state.mram_accesses[:] = 0
        for t in range(MAX_TASKLETS):
            state.stack_deepest[t] = image.stack_top(t)
        # what step() passes to run_tasklet on every call (only state.mram is ever reallocated)
        self._fixed = (program.code, program.text_address, program.routine_kind, program.routine_native,
                       state.regs, state.pcs, state.wram, state.stack_deepest, state.routine_acc,
                       state.in_routine, state.mram_accesses, np.zeros(SEGMENT_OUT_SIZE, np.int64), state)

    def step(self, tasklet: int, now: float, value: int | None) -> Segment:
        t = tasklet
        (code, text_address, kinds, natives, regs, pcs, wram, stack_deepest, acc, in_routine, mram_accesses,
         out, state) = self._fixed
        if value is not None:
            regs[t, 10] = value & 0xFFFFFFFF
            if self.last_action[t] in _PERF_ACTIONS:  # 64-bit results only:
                regs[t, 11] = (value >> 32) & 0xFFFFFFFF  # a1 is live across other services
        slots = instructions = entries = rid = param = 0
        dma = False  # a DMA left to _dma (to grow mram, or to raise its error)
        while True:
            run_segment(code, text_address, kinds, natives, t, regs, pcs, wram, state.mram, stack_deepest,
                         acc, in_routine, mram_accesses, self.budget - self.executed, out)
            (kind, pc, run_slots, run_instructions, fault, address, _, _, _, a0, a1, a2, a7, accesses,
             call_slots, call_instructions, call_entries, call_rid, call_param, done) = out.tolist()
            slots += call_slots
            instructions += call_instructions
            self.executed += call_instructions
            if call_entries:
                entries += call_entries
                rid, param = call_rid, call_param
            if done:
                action, arg0, arg1 = _A_DMA_READ if done == 1 else _A_DMA_WRITE, a2, 0
                break
            if kind == _ECALL:
                if a7 == _S_MRAM_READ or a7 == _S_MRAM_WRITE:
                    pcs[t] = (pc + 4) & 0xFFFFFFFF
                    action, arg0, arg1 = _A_DMA_READ if a7 == _S_MRAM_READ else _A_DMA_WRITE, a2, 0
                    dma = True
                    break
                serviced = self._service(t, pc, a0, a1, a7)
                if serviced is not None:
                    action, arg0, arg1 = serviced
                    break
                continue
            if kind == _GROW:
                state.grow_mram(address - MRAM_BASE + 8)
                continue
            if kind == _BUDGET:
                raise SimTimeout(self._where(t, pc, f"instruction budget of {self.budget:,} exhausted "
                                                    "(infinite loop?)"))
            if kind == _EBREAK:
                raise SimFault(self._where(t, pc, "ebreak"))
            raise SimFault(self._fault_message(t, Event(EventKind(kind), pc, run_slots, run_instructions,
                                                        FaultKind(fault), address)))
        # take the segment's routine entries (routine_acc[t] is all zero again afterwards), price them
        index = len(self._rows)
        if not entries:
            priced = slots
        elif entries == 1 and self._finite:  # count 1 at rid: see the class docstring
            acc[t, rid, 0] = 0
            acc[t, rid, 1] = 0
            self._single.append((index, rid, param))
            priced = slots + (self._base_list[rid] + param * self._per_list[rid])
        else:
            row = acc[t]
            counts, params = row[:, 0].copy(), row[:, 1].copy()
            row[:] = 0
            self._multi.append((index, counts, params))
            priced = slots + float(counts @ self._base + params @ self._per)
        if accesses:
            mram_accesses[t] = 0
        if dma:
            if action == _A_DMA_READ:
                self._dma(t, pc, True, a0, a1, a2)
            else:
                self._dma(t, pc, False, a1, a0, a2)
        self._rows.append((t, slots, instructions, accesses, action, arg0, arg1))
        self.last_action[t] = action
        return _new_segment(Segment, (t, priced, instructions, _NONE, _NONE, accesses, action, arg0, arg1))

    def trace(self) -> Trace:
        """Everything step() returned, as a Trace (unpriced, config-free)."""
        return Trace.from_columns(self.routines, self._rows, self._single, self._multi)

    def cosimulate(self, config: DpuConfig) -> tuple[DpuTiming, Trace]:
        """The whole launch in one jitted call (cosim.py), with what DpuTimeline(self).run() and
        trace() would give; its errors worded as step() and the timeline word them."""
        (code, text_address, kinds, natives, regs, pcs, wram, stack_deepest, acc, in_routine, mram_accesses,
         _, state) = self._fixed
        (status, info, state.mram, now, issue, dma_wait, sync_wait, slots, instructions, dma, actions, rows, single,
         multi_index, multi_counts, multi_params, prints, printed) = cosimulate(
            code, text_address, kinds, natives, regs, pcs, wram, state.mram, stack_deepest, acc, in_routine,
            mram_accesses, self.budget, self._base, self._per, timing_parameters(config), _ACTION_OF_SERVICE)
        if status == cosim.PRINTS:
            raise _Printed(f"DPU {self.dpu.index}: more than {cosim.PRINT_LIMIT} prints in one launch")
        for (service, a0, a1), wram_then in zip(prints.tolist(), printed):
            self.dpu._log.append(_print_text(wram_then, service, a0, a1))
        if status != cosim.OK:
            self._raise(status, info.tolist(), now, actions)
        timing = launch_timing(config, now, issue, dma_wait, sync_wait, slots, instructions, *dma.tolist())
        return timing, Trace.from_arrays(self.routines, rows, single, multi_index, multi_counts, multi_params)

    def _raise(self, status: int, info: list[int], now: float, actions: np.ndarray) -> None:
        t, pc = info[0], info[1]
        if status == cosim.DMA_ERROR:
            self._dma_error(t, pc, bool(info[2]), info[3], info[4], info[5])
        if status == cosim.DEADLOCK:
            blocked = [k for k in range(MAX_TASKLETS) if info[0] >> k & 1]
            raise Deadlock(deadlock_message(self.dpu.index, now, [(k, Action(int(actions[k]))) for k in blocked]))
        if status == cosim.BUDGET:
            raise SimTimeout(self._where(t, pc, f"instruction budget of {self.budget:,} exhausted (infinite loop?)"))
        if status == cosim.EBREAK:
            raise SimFault(self._where(t, pc, "ebreak"))
        if status == cosim.FAULT:
            raise SimFault(self._fault_message(t, Event(EventKind.FAULT, pc, 0, 0, FaultKind(info[2]), info[3])))
        service, a0 = info[2], info[3]
        if status == cosim.UNKNOWN_SERVICE:
            raise SimFault(self._where(t, pc, f"unknown service {service} in a7"))
        if status == cosim.FAULT_SERVICE:
            raise SimFault(self._where(t, pc, f"program fault {fault_name(a0)}"))
        if status == cosim.SYNC_OBJECT:
            raise SimFault(self._where(t, pc, f"{Service(service).name.lower()} on {a0:#x}, not a WRAM object"))
        if status == cosim.TABLE_FULL:
            raise SimFault(f"DPU {self.dpu.index}, tasklet {t}: more than {cosim.TABLE_SIZE} distinct barriers, "
                           "semaphores or handshake waits in one launch")
        raise ValueError(f"cosimulate returned status {status}")

    # ------------------------------------------------------------ services
    def _service(self, t: int, pc: int, a0: int, a1: int, a7: int) -> tuple[Action, int, int] | None:
        """Service an ecall other than a DMA: the segment's (action, arg0, arg1), or None to go on."""
        state = self.state
        service = _SERVICES.get(a7)
        if service is None:
            raise SimFault(self._where(t, pc, f"unknown service {a7} in a7"))
        state.pcs[t] = (pc + 4) & 0xFFFFFFFF
        if service == Service.ME:
            state.regs[t, 10] = t
            return None
        if service in (Service.PRINTF, Service.PUTS, Service.PUTCHAR):
            self.dpu._log.append(_print_text(state.wram, service, a0, a1))
            return None
        if service == Service.FAULT:
            raise SimFault(self._where(t, pc, f"program fault {fault_name(a0)}"))
        if service == Service.STOP:
            state.pcs[t] = pc
            return Action.STOP, 0, 0
        action = _ACTION_OF[service]
        if action in (Action.BARRIER, Action.SEM_TAKE, Action.SEM_GIVE):
            if not 0 <= a0 < WRAM_SIZE - 3:
                raise SimFault(self._where(t, pc, f"{service.name.lower()} on {a0:#x}, not a WRAM object"))
            initial = int(state.wram[a0 + 2])
            return action, a0, initial - 256 if action != Action.BARRIER and initial > 127 else initial
        if action in (Action.ACQUIRE, Action.RELEASE, Action.LOCK):
            return action, a0 & 0xFF, 0
        return action, a0, a1

    def _dma(self, t: int, pc: int, read: bool, mram_addr: int, wram_addr: int, nbytes: int) -> None:
        # The DMA engine moves whole 8-byte words: it drops the low 3 bits of both addresses (DERIVED:
        # PrIM's BS, TRNS and GEMV pass such addresses and verify on UPMEM hardware; TRNS reads
        # `done_array + i` and then tests bit i % 8 of the word, GEMV shifts a block read from an odd
        # row start by the rounding). The SDK's docs state the 8-byte rule; they do not say it faults.
        # The MRAM side is decoded as the DPU does (dma_offset): a 0-based offset is legal.
        offset, wram_addr = dma_offset(mram_addr), wram_addr & ~7
        if not 0 <= wram_addr <= WRAM_SIZE - nbytes or offset > MRAM_SIZE - nbytes:  # nbytes: dma_bytes
            self._dma_error(t, pc, read, mram_addr, wram_addr, nbytes)
        state = self.state
        end = offset + nbytes
        if end > len(state.mram):
            state.grow_mram(end)
        if read:
            state.wram[wram_addr:wram_addr + nbytes] = state.mram[offset:end]
        else:
            state.mram[offset:end] = state.wram[wram_addr:wram_addr + nbytes]

    def _dma_error(self, t: int, pc: int, read: bool, mram_addr: int, wram_addr: int, nbytes: int) -> None:
        name = "mram_read" if read else "mram_write"
        if not 0 <= wram_addr <= WRAM_SIZE - nbytes:
            problem = f"WRAM range {wram_addr:#x}+{nbytes} outside the 64 KiB WRAM"
        else:
            offset = dma_offset(mram_addr)
            problem = (f"MRAM range {mram_addr:#x}+{nbytes} (bank offset {offset:#x}) runs past the end of "
                       f"the {MRAM_SIZE >> 20} MiB MRAM bank")
        raise DmaError(self._where(t, pc, f"{name}: {problem}"))

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
            FaultKind.ILLEGAL_INSTRUCTION: "illegal instruction",
            FaultKind.FETCH_OUT_OF_BOUNDS: f"jump outside the program to {address:#010x}",
            FaultKind.WRITE_TO_IRAM: f"store into IRAM at address {address:#010x}",
            FaultKind.FETCH_MISALIGNED: f"jump to misaligned pc {address:#010x}",
        }.get(event.fault, f"fault {event.fault.name} at address {address:#010x}")
        return self._where(t, event.pc, text)
