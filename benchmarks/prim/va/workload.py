"""VA: element-wise vector addition (PrIM), cnmtune's own implementation.

Compile-time side: BL (log2 block bytes, PrIM range 3..11 bounded by the 8..2048-byte DMA
rule), the element type as a PrIM-style bare define (INT32 by default). The host side
(inputs, partitioning, launch, verification) arrives with the simulator's Device API.
"""

from cnmtune.runtime.workload import Workload


class VectorAdd(Workload):
    name = "va"
    defines = {"BL": 10, "INT32": None}
    define_choices = {"BL": tuple(range(3, 12))}
    nr_tasklets = 16
