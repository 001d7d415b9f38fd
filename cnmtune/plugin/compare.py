"""Side-by-side comparison of one kernel compiled under several pipelines.

Compiles each variant, extracts its static features and lays them out as one table (kernel
opcode histogram, runtime calls, footprints) plus a grouped bar chart of the histograms.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cnmtune.costmodel import Features, model_features
from cnmtune.display import Table
from cnmtune.runtime.toolchain import Binary, Toolchain, Variant
from cnmtune.runtime.workload import define_text
from cnmtune.wording import counted

SUMMARY_ROWS: tuple[tuple[str, str], ...] = (
    ("IRAM instructions (kernel + runtime)", "iram_instructions"),
    ("  kernel", "iram_kernel_instructions"),
    ("  runtime", "iram_runtime_instructions"),
    ("soft-arithmetic instructions", "iram_softlib_instructions"),
    ("kernel loops", "loops"),
    ("max loop depth", "max_loop_depth"),
    ("WRAM static bytes", "wram_static_bytes"),
)


@dataclass(frozen=True)
class CompiledVariant:
    """A compiled variant and its features."""

    binary: Binary
    features: Features

    @property
    def pipeline(self) -> str:
        return self.binary.variant.pipeline.text


def compile_all(toolchain: Toolchain, variants: list[Variant]) -> list[CompiledVariant]:
    """Compile every variant and extract its features (errors propagate with the variant named)."""
    compiled = []
    for variant in variants:
        binary = toolchain.compile(variant)
        compiled.append(CompiledVariant(binary, model_features(binary.elf_path)))
    return compiled


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def comparison_table(compiled: list[CompiledVariant], ids: dict[str, str]) -> Table:
    """One column per variant, headed by its pipeline's short id in `ids`: summary rows, kernel
    calls, then the kernel opcode histogram."""
    variant = compiled[0].binary.variant  # the pipeline is all that differs
    given = "".join(f", {define_text(name, value)}" for name, value in variant.defines)
    table = Table(title=f"{variant.kernel.name} ({counted(variant.nr_tasklets, 'tasklet')}{given}): static features "
                        "per pipeline")
    table.add_column("feature")
    for item in compiled:
        table.add_column(ids[item.pipeline], justify="right")
    for label, attr in SUMMARY_ROWS:
        table.add_row(label, *(str(item.features.scalar(attr)) for item in compiled))
    callees = sorted({c for item in compiled for c in item.features.kernel_calls})
    table.add_section()
    for callee in callees:
        table.add_row(f"calls {callee}", *(str(item.features.kernel_calls.get(callee, 0)) for item in compiled))
    mnemonics = sorted(
        {m for item in compiled for m in item.features.kernel_histogram},
        key=lambda m: (-max(item.features.kernel_histogram.get(m, 0) for item in compiled), m),
    )
    table.add_section()
    for mnemonic in mnemonics:
        table.add_row(f"op {mnemonic}", *(str(item.features.kernel_histogram.get(mnemonic, 0)) for item in compiled))
    return table


def comparison_record(compiled: list[CompiledVariant]) -> list[dict]:
    """JSON-safe records, one per variant."""
    return [
        {"variant": item.binary.variant.label, "pipeline": item.pipeline, "elf_hash": item.binary.elf_hash,
         "features": item.features.to_dict()}
        for item in compiled
    ]


def plot_histograms(compiled: list[CompiledVariant], path: Path) -> Path:
    """Grouped bar chart of the kernel opcode histograms, written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    mnemonics = sorted({m for item in compiled for m in item.features.kernel_histogram})
    x = np.arange(len(mnemonics))
    width = 0.8 / len(compiled)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.45 * len(mnemonics)), 4.5))
    for k, item in enumerate(compiled):
        counts = [item.features.kernel_histogram.get(m, 0) for m in mnemonics]
        ax.bar(x + k * width - 0.4 + width / 2, counts, width, label=_short(item.pipeline, 40))
    ax.set_xticks(x, mnemonics, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("static count in kernel code")
    ax.set_title(f"{compiled[0].binary.variant.kernel.name}: kernel opcode histogram per pipeline")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
