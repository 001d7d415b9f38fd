"""The resident simulator behind libdpu.c: one process per DPU set a host program allocates.

libdpu.c starts `python -m cnmtune.runtime.hostapi.server --fd 3` with its end of a socket pair
on fd 3 and sends one request per host API call (protocol.py). The DPUs are a SimDevice, or a
SampledSimDevice when the program allocates more than CNMTUNE_SIMULATED_DPUS (default 64)
DPUs: then only the first and the last DPU execute (kernel time is exact for PrIM-style
partitionings, outputs of the others read as zeros; see runtime/sampled.py). Each reply
carries the simulated seconds of its call; a refused call carries the UPMEM SDK's status code
and one line naming the cause (symbol, sizes, or the DPU, tasklet, pc and function of a fault).

Environment: CNMTUNE_SIM_CONFIG (simulator config, default `calibrated`), CNMTUNE_NR_DPUS (what
DPU_ALLOCATE_ALL gets, default one rank), CNMTUNE_SIMULATED_DPUS, CNMTUNE_REPORT (report.py).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from cnmtune.dpu.memory_map import MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import CnmtuneError, Deadlock, ElfError, IramOverflow, SimFault, SimTimeout, WramOverflow
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME, Device
from cnmtune.runtime.hostapi.protocol import DpuStatus, HostApiError, Op
from cnmtune.runtime.hostapi.report import LaunchEvent, SetReport, TransferEvent, add_to_report_file
from cnmtune.runtime.sampled import SampledSimDevice
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.upmem.protocol import ProtocolError, Reader, Writer, frame, read_frame

ALLOCATE_ALL = 0xFFFFFFFF
MAX_DPUS = 2560  # a whole UPMEM system (40 ranks)
DEFAULT_SIMULATED_DPUS = 64
BACKENDS = ("simulator", "hw")  # profile backends cnmtune's simulator stands in for


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "")
    try:
        return int(text) if text else default
    except ValueError:
        raise HostApiError(DpuStatus.INVALID_PROFILE, f"{name}={text!r} is not a number") from None


def parse_profile(profile: str) -> dict[str, str]:
    """The SDK's profile string, "key=value,key=value"; INVALID_PROFILE when malformed or not simulable."""
    pairs: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in profile.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise HostApiError(DpuStatus.INVALID_PROFILE, f"profile item {item!r} is not key=value")
        pairs[key.strip()] = value.strip()
    backend = pairs.get("backend", "simulator")
    if backend not in BACKENDS:
        raise HostApiError(DpuStatus.INVALID_PROFILE,
                           f"backend={backend}: cnmtune's simulator stands in for {' and '.join(BACKENDS)} only")
    return pairs


def _status_of(exc: Exception) -> DpuStatus:
    """The SDK status a host program gets for a failure of the simulator or the program."""
    if isinstance(exc, HostApiError):
        return exc.status
    if isinstance(exc, (SimTimeout, Deadlock)):  # the SDK would wait for these DPUs forever
        return DpuStatus.TIMEOUT
    if isinstance(exc, SimFault):
        return DpuStatus.DPU_FAULT
    if isinstance(exc, IramOverflow):
        return DpuStatus.INVALID_IRAM_ACCESS
    if isinstance(exc, WramOverflow):
        return DpuStatus.INVALID_WRAM_ACCESS
    if isinstance(exc, ElfError):
        return DpuStatus.ELF_INVALID_FILE
    if isinstance(exc, FileNotFoundError):
        return DpuStatus.ELF_NO_SUCH_FILE
    return DpuStatus.INTERNAL


class HostApiServer:
    """One DPU set: answers request payloads with reply payloads (protocol.py)."""

    def __init__(self) -> None:
        self.config_name = os.environ.get("CNMTUNE_SIM_CONFIG", "calibrated")
        self.device: Device | None = None
        self.report: SetReport | None = None
        self.host_pid = 0
        self.log_marks: dict[int, int] = {}
        self.finished = False

    # ------------------------------------------------------------ dispatch
    def handle(self, payload: bytes) -> bytes:
        """The reply to one request (errors become status replies, never exceptions)."""
        try:
            request = Reader(payload)
            op = Op(request.u8())
            before = self._simulated_s()
            fields = getattr(self, f"_{op.name.lower()}")(request)
            request.done()
            seconds = self._simulated_s() - before
            return Writer().u8(0).u64(round(seconds * 1e9)).raw(fields).payload()
        except (HostApiError, CnmtuneError, ProtocolError, OSError, ValueError) as exc:
            return self._refusal(_status_of(exc), str(exc))
        except Exception as exc:  # a bug of cnmtune's: the host program still gets one line and a status
            return self._refusal(DpuStatus.INTERNAL, f"cnmtune internal error: {type(exc).__name__}: {exc}")

    @staticmethod
    def _refusal(status: DpuStatus, message: str) -> bytes:
        line = " ".join(message.split())
        return Writer().u8(1).u32(int(status)).raw(line.encode()).payload()

    def _simulated_s(self) -> float:
        times = self.device.times if self.device else None
        return times.transfer_s + times.kernel_s if times else 0.0

    def _loaded(self) -> Device:
        if self.device is None or self.device.image is None:
            raise HostApiError(DpuStatus.INVALID_DPU_SET, "no program loaded (dpu_load first)")
        return self.device

    def _place(self, symbol: str, offset: int, length: int) -> None:
        """Refuse an unknown symbol, or bytes past its end, as the SDK does."""
        image = self._loaded().image
        if symbol not in image.symbols:
            raise HostApiError(DpuStatus.UNKNOWN_SYMBOL, f"symbol {symbol!r} is not defined by {image.path.name}")
        address = image.symbols[symbol]
        region_end = WRAM_SIZE if address < WRAM_SIZE else MRAM_BASE + MRAM_SIZE
        size = region_end - address if symbol == DPU_MRAM_HEAP_POINTER_NAME else image.symbol_sizes.get(symbol, 0)
        size = size or region_end - address  # a symbol without a size (a label) reaches to its memory's end
        if offset + length > size:
            raise HostApiError(DpuStatus.INVALID_SYMBOL_ACCESS,
                               f"{length} B at offset {offset} of {symbol!r} ({size} B in {image.path.name})")

    def _record_transfer(self, call: str, to_dpu: bool, nbytes: int, nr_dpus: int, seconds_before: float) -> None:
        self.report.transfers.append(TransferEvent(call, to_dpu, nbytes, nr_dpus, self._simulated_s() - seconds_before,
                                                   len(self.report.launches)))

    # ------------------------------------------------------------ operations
    def _alloc(self, request: Reader) -> bytes:
        count, by_ranks, profile, self.host_pid = request.u32(), request.u32(), request.text(), request.u32()
        if self.device is not None:
            raise HostApiError(DpuStatus.ALLOCATION, "this simulator process already holds a DPU set")
        parse_profile(profile)
        config = DpuConfig.named(self.config_name)
        per_rank = config.dpus_per_rank
        if count == ALLOCATE_ALL:
            nr_dpus = _env_int("CNMTUNE_NR_DPUS", per_rank)
        else:
            nr_dpus = count * per_rank if by_ranks else count
        if not 1 <= nr_dpus <= MAX_DPUS:
            raise HostApiError(DpuStatus.ALLOCATION, f"cannot allocate {nr_dpus} DPUs (1 to {MAX_DPUS}, a whole system)")
        simulated = _env_int("CNMTUNE_SIMULATED_DPUS", DEFAULT_SIMULATED_DPUS)
        if nr_dpus > simulated:
            self.device = SampledSimDevice(nr_dpus, config=config)
            print(f"cnmtune: {nr_dpus} DPUs allocated, more than CNMTUNE_SIMULATED_DPUS={simulated}: DPUs "
                  f"{' and '.join(map(str, self.device.sampled))} execute, the others' outputs read as zeros",
                  file=sys.stderr)
        else:
            self.device = SimDevice(nr_dpus, config=config)
        sampled = getattr(self.device, "sampled", range(nr_dpus))
        self.report = SetReport(nr_dpus, len(sampled), self.config_name)
        return Writer().u32(nr_dpus).u32(per_rank).payload()

    def _load(self, request: Reader) -> bytes:
        path = Path(request.text())
        if self.device is None:
            raise HostApiError(DpuStatus.INVALID_DPU_SET, "no DPUs allocated")
        if not path.is_file():
            raise HostApiError(DpuStatus.ELF_NO_SUCH_FILE, f"no DPU program at {path}")
        self.device.load(path)
        self.report.program = str(path)
        return b""

    def _copy_to(self, request: Reader) -> bytes:
        return self._write(request, "dpu_copy_to")

    def _broadcast(self, request: Reader) -> bytes:
        return self._write(request, "dpu_broadcast_to")

    def _write(self, request: Reader, call: str) -> bytes:
        """One buffer to DPUs [first, first + count): dpu_copy_to on one DPU is a copy; on more (the
        SDK broadcasts then) and dpu_broadcast_to, one broadcast call. Priced as the Device API's calls."""
        symbol, offset, first, count = request.text(), request.u32(), request.u32(), request.u32()
        data = request.blob()
        self._place(symbol, offset, len(data))
        before = self._simulated_s()
        if call == "dpu_copy_to" and count == 1:
            self.device.write([first], symbol, [data], offset, "copy")
        else:
            self.device.write(range(first, first + count), symbol, [data] * count, offset, "broadcast",
                              shared_buffer=True)
        self._record_transfer(call, True, len(data), count, before)
        return b""

    def _dpu_list(self, request: Reader) -> list[int]:
        dpus = [request.u32() for _ in range(request.u32())]
        bad = [d for d in dpus if d >= self.device.nr_dpus]
        if bad:
            raise HostApiError(DpuStatus.INVALID_DPU_SET, f"DPU {bad[0]} does not exist ({self.device.nr_dpus} allocated)")
        return dpus

    def _copy_from(self, request: Reader) -> bytes:
        return self._push_from(request, call="dpu_copy_from")

    def _push_to(self, request: Reader) -> bytes:
        """dpu_push_xfer TO_DPU: one call to the DPUs with a prepared buffer (shared: the host
        prepared the same buffer for all of them)."""
        symbol, offset = request.text(), request.u32()
        dpus, length, shared = self._dpu_list(request), request.u32(), bool(request.u32())
        buffers = [request.raw(length) for _ in dpus]
        self._place(symbol, offset, length)
        if not dpus:  # no DPU has a prepared buffer: the SDK's transfer matrix is empty, nothing moves
            return b""
        before = self._simulated_s()
        self.device.write(dpus, symbol, buffers, offset, "push", shared_buffer=shared)
        self._record_transfer("dpu_push_xfer", True, length, len(dpus), before)
        return b""

    def _push_from(self, request: Reader, call: str = "dpu_push_xfer") -> bytes:
        symbol, offset = request.text(), request.u32()
        dpus, length = self._dpu_list(request), request.u32()
        self._place(symbol, offset, length)
        if not dpus:  # as _push_to
            return b""
        before = self._simulated_s()
        data = self.device.read(dpus, symbol, length, offset, "copy" if call == "dpu_copy_from" else "push")
        self._record_transfer(call, False, length, len(dpus), before)
        return b"".join(data)

    def _launch(self, request: Reader) -> bytes:
        device = self._loaded()
        self.log_marks = {d: len(device.log(d)) for d in getattr(device, "sampled", range(device.nr_dpus))}
        device.launch()
        record = device.launches[-1]
        sampled = list(getattr(device, "sampled", range(device.nr_dpus)))
        slowest = max(range(len(record.timings)), key=lambda i: record.timings[i].cycles, default=0)
        cycles = record.timings[slowest].cycles if record.timings else 0
        self.report.launches.append(LaunchEvent(record.kernel_s, sampled[slowest] if sampled else 0, cycles))
        self.report.warnings.extend(w for w in map(str, record.stack_overflows) if w not in self.report.warnings)
        return b""

    def _log(self, request: Reader) -> bytes:
        dpu = request.u32()
        device = self._loaded()
        if dpu >= device.nr_dpus:
            raise HostApiError(DpuStatus.INVALID_DPU_SET, f"DPU {dpu} does not exist ({device.nr_dpus} allocated)")
        return Writer().text(device.log(dpu)[self.log_marks.get(dpu, 0):]).payload()

    def _quit(self, request: Reader) -> bytes:
        self.finished = True
        return b""

    # ------------------------------------------------------------ the end
    def close(self) -> None:
        """Report the set (stderr summary, CNMTUNE_REPORT file) and release the DPUs."""
        if self.report is None:
            return
        print(self.report.summary(), file=sys.stderr, flush=True)
        path = os.environ.get("CNMTUNE_REPORT")
        if path:
            add_to_report_file(Path(path), self.host_pid, self.report)
        self.report = None
        if self.device is not None:
            self.device.close()


def serve(sock: socket.socket) -> None:
    """Answer requests on `sock` until QUIT or the host program goes away, then report."""
    server = HostApiServer()
    stream = sock.makefile("rb")
    try:
        while not server.finished:
            try:
                payload = read_frame(stream)
            except (ProtocolError, OSError):
                break
            if payload is None:
                break
            reply = server.handle(payload)
            try:
                sock.sendall(frame(reply))
            except OSError:
                break
    finally:
        server.close()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the simulator process (`--fd N`: its end of libdpu.c's socket pair)."""
    parser = argparse.ArgumentParser(prog="python -m cnmtune.runtime.hostapi.server", description=__doc__.split("\n")[0])
    parser.add_argument("--fd", type=int, required=True, help="connected socket to the host program")
    args = parser.parse_args(argv)
    serve(socket.socket(fileno=args.fd))


if __name__ == "__main__":
    main()
