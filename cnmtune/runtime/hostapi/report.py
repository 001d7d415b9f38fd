"""What a host program's DPU set cost in simulated time: per launch, per transfer, and in total.

The server keeps one `SetReport` per allocated set. When the set is freed (or the program ends)
it prints `summary()` on stderr and, when CNMTUNE_REPORT names a file, adds `to_dict()` to it:
`{"host_pid": ..., "sets": [...]}`, one entry per set of that program run, written atomically
under a lock file beside it (a file left by another run is replaced, not appended to).
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cnmtune.atomic import atomic_write
from cnmtune.wording import counted, plural

SHOWN_LAUNCHES = 4  # launches listed one by one in the stderr summary


@dataclass(frozen=True)
class LaunchEvent:
    """One dpu_launch: kernel seconds (slowest DPU + launch overhead) and who was slowest."""

    kernel_s: float
    slowest_dpu: int
    cycles: int


@dataclass(frozen=True)
class TransferEvent:
    """One transfer call: the SDK call, its direction, bytes per DPU, DPUs reached, seconds."""

    call: str
    to_dpu: bool
    nbytes: int
    nr_dpus: int
    seconds: float
    launches_before: int


@dataclass
class SetReport:
    """Everything one DPU set did, in order."""

    nr_dpus: int
    simulated_dpus: int
    config: str
    program: str = ""
    launches: list[LaunchEvent] = field(default_factory=list)
    transfers: list[TransferEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # each once: what ran on where a DPU checks nothing

    def totals(self) -> dict[str, float]:
        """Seconds and bytes summed: kernel, CPU-DPU (transfers to DPUs), DPU-CPU (from DPUs)."""
        to = [t for t in self.transfers if t.to_dpu]
        back = [t for t in self.transfers if not t.to_dpu]
        return {
            "kernel_s": sum(launch.kernel_s for launch in self.launches),
            "host_to_dpu_s": sum(t.seconds for t in to),
            "dpu_to_host_s": sum(t.seconds for t in back),
            "host_to_dpu_bytes": sum(t.nbytes * t.nr_dpus for t in to),
            "dpu_to_host_bytes": sum(t.nbytes * t.nr_dpus for t in back),
        }

    def to_dict(self) -> dict:
        """The JSON form: the set, its totals, every launch and transfer."""
        return {"nr_dpus": self.nr_dpus, "simulated_dpus": self.simulated_dpus, "config": self.config,
                "program": self.program, "totals": self.totals(),
                "launches": [asdict(launch) for launch in self.launches],
                "transfers": [asdict(transfer) for transfer in self.transfers], "warnings": self.warnings}

    def summary(self) -> str:
        """A few lines for stderr."""
        totals = self.totals()
        sampled = "" if self.simulated_dpus == self.nr_dpus else f", {self.simulated_dpus} of them simulated"
        lines = [f"cnmtune: {counted(self.nr_dpus, 'DPU')}{sampled}, simulator config {self.config}, "
                 f"program {Path(self.program).name or '(none loaded)'}"]
        launches = len(self.launches)
        lines.append(f"  DPU kernel  {launches:>4} {plural('launch', launches):<11} "
                     f"{1e3 * totals['kernel_s']:12.4f} ms")
        for number, launch in enumerate(self.launches[:SHOWN_LAUNCHES], 1):
            lines.append(f"    launch {number}: {1e3 * launch.kernel_s:.4f} ms, slowest DPU {launch.slowest_dpu} "
                         f"({launch.cycles:,} cycles)")
        if len(self.launches) > SHOWN_LAUNCHES:
            lines.append(f"    ... {len(self.launches) - SHOWN_LAUNCHES} more (CNMTUNE_REPORT=path lists all)")
        for label, to_dpu, key in (("CPU-DPU", True, "host_to_dpu"), ("DPU-CPU", False, "dpu_to_host")):
            calls = sum(t.to_dpu == to_dpu for t in self.transfers)
            lines.append(f"  {label}     {calls:>4} {plural('transfer', calls):<11} "
                         f"{1e3 * totals[key + '_s']:12.4f} ms  {totals[key + '_bytes']:,} B")
        lines.extend(f"  warning: {warning}" for warning in self.warnings)
        return "\n".join(lines)


def add_to_report_file(path: Path, host_pid: int, report: SetReport) -> None:
    """Add one set's report to the JSON file of this program run (see the module docstring)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:  # left in place: unlinking it would race
        fcntl.flock(lock, fcntl.LOCK_EX)
        document = {"host_pid": host_pid, "sets": []}
        try:
            existing = json.loads(path.read_text())
            if existing.get("host_pid") == host_pid:
                document = existing
        except (OSError, ValueError, AttributeError):
            pass
        document["sets"].append(report.to_dict())
        atomic_write(path, (json.dumps(document, indent=1) + "\n").encode())
