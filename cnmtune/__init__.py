"""cnmtune: a compiler-integrated cost-model plugin for UPMEM compute-near-memory systems.

The package root is also the composition root: it installs the DPU lowering model as the
simulator's slot model (cnmtune.dpu.slots), so the runtime charges DPU instructions without
importing the cost model.
"""

from cnmtune.dpu.slots import install_slot_model as _install_slot_model

__version__ = "0.1.0"


def _lowered_slots(elf: bytes, name: str):
    from cnmtune.costmodel.analysis.lowering import dpu_slots

    return dpu_slots(elf, name)


def _lowering_identity() -> str:
    from cnmtune.costmodel.analysis.lowering import LOWERING_VERSION

    return LOWERING_VERSION


_install_slot_model(_lowered_slots, _lowering_identity)
