"""Stand-in for cnmtune's UPMEM host harness (tests only; no UPMEM SDK involved).

Speaks the protocol of cnmtune/runtime/upmem/protocol.py on stdin/stdout like host_harness.c,
but runs the program on cnmtune's own SimDevice, so a real kernel (a proxy ELF) computes real
results through UpmemDevice's protocol client. Every request is appended to LOG as one JSON
line, so tests can assert the command sequence.

usage: standin_harness.py LOG [--die-on OP] [--hang-on OP]
"""

from __future__ import annotations

import json
import sys
import time

from cnmtune.errors import CnmtuneError
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.upmem.protocol import ERROR, OK, Op, Reader, Writer, frame, read_frame


def main() -> int:
    log_path = sys.argv[1]
    options = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    device: SimDevice | None = None
    while (payload := read_frame(stdin)) is not None:
        request = Reader(payload)
        op = Op(request.u8())
        entry: dict = {"op": op.name}
        reply = Writer().u8(OK)
        try:
            if op == Op.ALLOC:
                entry.update(nr_dpus=request.u32(), profile=request.text())
                device = SimDevice(entry["nr_dpus"])
                reply.u32(device.nr_dpus)
            elif op == Op.LOAD:
                entry["elf"] = request.text()
                device.load(entry["elf"])
            elif op == Op.COPY_TO:
                entry.update(dpu=request.u32(), symbol=request.text(), offset=request.u32())
                data = request.blob()
                entry["size"] = len(data)
                start = time.perf_counter_ns()
                device.copy_to(entry["dpu"], entry["symbol"], data, entry["offset"])
                reply.u64(time.perf_counter_ns() - start)
            elif op == Op.COPY_FROM:
                entry.update(dpu=request.u32(), symbol=request.text(), offset=request.u32(), size=request.u32())
                start = time.perf_counter_ns()
                data = device.copy_from(entry["dpu"], entry["symbol"], entry["size"], entry["offset"])
                reply.u64(time.perf_counter_ns() - start).raw(data)
            elif op == Op.PUSH_TO:
                entry.update(symbol=request.text(), offset=request.u32(), size=request.u32(), count=request.u32())
                buffers = [request.raw(entry["size"]) for _ in range(entry["count"])]
                start = time.perf_counter_ns()
                device.push_to(entry["symbol"], buffers, entry["offset"])
                reply.u64(time.perf_counter_ns() - start)
            elif op == Op.PUSH_FROM:
                entry.update(symbol=request.text(), offset=request.u32(), size=request.u32())
                start = time.perf_counter_ns()
                data = device.push_from(entry["symbol"], entry["size"], entry["offset"])
                reply.u64(time.perf_counter_ns() - start).raw(b"".join(data))
            elif op == Op.BROADCAST:
                entry.update(symbol=request.text(), offset=request.u32())
                data = request.blob()
                entry["size"] = len(data)
                start = time.perf_counter_ns()
                device.broadcast(entry["symbol"], data, entry["offset"])
                reply.u64(time.perf_counter_ns() - start)
            elif op == Op.LAUNCH:
                entry["cycles_symbol"] = request.text()
                start = time.perf_counter_ns()
                device.launch()
                reply.u64(time.perf_counter_ns() - start)
                if entry["cycles_symbol"]:
                    counters = device.push_from(entry["cycles_symbol"], 8)
                    reply.u32(len(counters))
                    for counter in counters:
                        reply.raw(counter)
                else:
                    reply.u32(0)
            elif op == Op.LOG:
                entry["dpu"] = request.u32()
                reply.blob(device.log(entry["dpu"]).encode())
            request.done()
        except CnmtuneError as exc:
            reply = Writer().u8(ERROR).raw(str(exc).encode())
        with open(log_path, "a") as log:
            log.write(json.dumps(entry) + "\n")
        if options.get("--die-on") == op.name:
            print(f"stand-in harness: dying on {op.name} as asked", file=sys.stderr)
            return 3
        if options.get("--hang-on") == op.name:
            time.sleep(3600)
        stdout.write(frame(reply.payload()))
        stdout.flush()
        if op == Op.QUIT:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
