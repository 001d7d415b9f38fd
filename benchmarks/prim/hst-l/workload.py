"""HST-L: histogram of 12-bit pixels in NR_HISTO shared histograms under mutexes (PrIM), cnmtune's own.

The host side, inputs, keywords (`bins`, `image`) and verification are HST-S's (see
benchmarks/prim/hst-s/workload.py; this workload subclasses it, so the two directories go
together): size = total pixels over all DPUs, one 1536 x 1024 image by default, bin =
(pixel * bins) >> 12, pixels split in equal 8-byte-rounded chunks to heap offset 0, arguments
{size, transfer_size, bins, kernel}, one launch, the DPUs' histograms pulled from offset
transfer_size and summed. Presets: small 512, default 16,384, large 131,072 (smaller than
HST-S's; PrIM's one image, 1,572,864 pixels, can still be asked for with the size): HST-L
serialises every pixel through a mutex, and the simulator executes every failed lock
attempt of a spinning tasklet, about 1 ms of simulation per pixel at 16 tasklets.

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 8, as PrIM's HST-L; 3..11);
NR_HISTO, the number of shared WRAM histograms (default 1; a power of two, at most the
tasklet count: the workload refuses more with a KernelError). Tasklet t updates histogram
t & (NR_HISTO - 1), taking that histogram's mutex around every single increment; the tasklets
of a histogram's group synchronise on a barrier that tasklet 0 builds at run time. WRAM:
NR_HISTO x 4*bins bytes of histograms plus, per tasklet, a 2^BL block and a 1 KiB stack (the
workload refuses combinations above 64 KiB).

The DPU work is PrIM's (shared histograms, a mutex around every increment, its id read from
a WRAM array per pixel, the group barriers built at run time, the merge).

Remaining differences from PrIM:
- the mutexes are initialised: histogram g has its own atomic bit (PrIM never initialises its
  mutex array, so all its locks are atomic bit 0, one global lock); with the default
  NR_HISTO = 1 the behaviour is the same; with more histograms PrIM's groups contend on one
  lock, so PrIM's DPU time is higher there;
- the differences listed for HST-S (input image, valid pixels only, repeated image).
"""

from pathlib import Path

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime import Kernel

# HST-S's workload (host side, inputs, reference); its module stays HST-S's own
HistogramSmall = Kernel.load(Path(__file__).resolve().parent.parent / "hst-s").workload

WRAM_GLOBALS = 256  # bytes: a bound on this kernel's WRAM globals (arguments, barriers, ...)


class HistogramLarge(HistogramSmall):
    name = "hst-l"
    defines = {"BL": 8, "NR_HISTO": 1}
    define_choices = {"BL": tuple(range(3, 12)), "NR_HISTO": (1, 2, 4, 8, 16)}
    tuned_defines = ("BL", "NR_HISTO")
    # smaller than HST-S's: every pixel takes a mutex, and each failed attempt of a spinning
    # tasklet is one simulated service call (~1 ms of simulation per pixel at 16 tasklets)
    sizes = {"small": 512, "default": 16_384, "large": 131_072}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, bins=None, image=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, bins, image)
        if int(self.config["NR_HISTO"]) > self.tasklets:
            raise KernelError(f"{self.name}: NR_HISTO={self.config['NR_HISTO']} exceeds the "
                              f"{self.tasklets} tasklets; use at most one histogram per tasklet")

    def wram_bytes(self) -> int:
        """Shared histograms, then per tasklet a block and a stack."""
        block = 1 << int(self.config["BL"])
        histos = int(self.config["NR_HISTO"]) * 4 * self.bins
        return histos + self.tasklets * (block + DEFAULT_STACK_SIZE) + WRAM_GLOBALS
