"""HST-S: histogram of 12-bit pixels, one private histogram per tasklet (PrIM), cnmtune's own.

Size = total pixels over all DPUs (PrIM's strong scaling, -x 1; the default preset is one
1536 x 1024 image). Keywords (also in `params`): `bins` (default 256, PrIM's -b; even, since
the histogram moves in 8-byte words) and `image`, a path to a raw image of 16-bit big-endian
pixels (PrIM's input format, e.g. its image_VanHateren.iml), byte-swapped and clamped to 4095
as PrIM does. Without `image`, a seeded synthetic 1536-wide 12-bit image with natural-image
structure is used (a lit gradient, smooth blobs, texture noise; a skewed histogram, not a
uniform one). Either image is repeated when the size asks for more pixels than it holds.
Pixel p falls in bin (p * bins) >> 12.

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in
8..2048 B). WRAM: each tasklet allocates 2^BL + 4*bins bytes next to its 1 KiB stack; the
workload refuses (KernelError) a tasklet count, BL and bins that do not fit in 64 KiB
(e.g. bins = 4096 runs at most 3 tasklets), where a DPU's mem_alloc would fault.

Host side as PrIM: the pixels (uint32) are split in equal chunks of ceil(N / DPUs) pixels
rounded up to 8 bytes (parallel pushes need equal sizes) to heap offset 0; arguments {size
(valid bytes), transfer_size (chunk bytes), bins, kernel} (4 x uint32) by a parallel push to
DPU_INPUT_ARGUMENTS; after the launch a parallel pull of bins uint32 at offset transfer_size
from every DPU, summed on the host.

The DPU work is PrIM's (private histograms, the block stream, the strided merge, the
histogram written in pieces of at most 2048 bytes).

Remaining differences from PrIM:
- PrIM's input is its image file (van Hateren, 1536 x 1024, not shipped; give it with
  `image`); the synthetic image has another histogram. Only the multiply's cost depends on
  the pixel (the product pixel * bins is shorter for pixels below bins), so the DPU time
  differs by the share of such pixels: small;
- the last DPU counts only its valid pixels: a chunk's odd last pixel is read as part of an
  8-byte word but not counted (PrIM rounds the pixel count up to 8 and bins the padding):
  at most 7 pixels on one DPU, none at the presets;
- sizes above the image repeat the image (PrIM keeps reading past the end of its file and
  repeats the last pixel value read): only above 1,572,864 pixels; the multiply cost as above.
"""

from pathlib import Path
from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

DEPTH = 12
IMAGE_WIDTH, IMAGE_HEIGHT = 1536, 1024  # PrIM's input image
WRAM_GLOBALS = 256  # bytes: a bound on this kernel's WRAM globals (arguments, barrier, ...)


def synthetic_image(nr_pixels: int, seed: int) -> np.ndarray:
    """The first rows of a seeded 1536 x 1024 12-bit image (uint32), repeated to nr_pixels."""
    rng = np.random.default_rng(seed)
    rows = min(IMAGE_HEIGHT, -(-nr_pixels // IMAGE_WIDTH))
    y, x = np.mgrid[0:rows, 0:IMAGE_WIDTH].astype(np.float32)
    y /= IMAGE_HEIGHT
    x /= IMAGE_WIDTH
    light = 0.3 + 0.45 * (1.0 - y) + 0.15 * x  # a lit top, a darker bottom
    for _ in range(12):  # smooth objects, brighter or darker than their surroundings
        cy, cx = rng.uniform(0, 1, 2)
        radius = rng.uniform(0.03, 0.2)
        light += rng.uniform(-0.3, 0.3) * np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * radius ** 2))
    light += rng.normal(0.0, 0.04, light.shape).astype(np.float32)  # texture
    pixels = np.clip(4095.0 * np.clip(light, 0.0, 1.0) ** 2, 0, 4095).astype(np.uint32).ravel()
    return np.resize(pixels, nr_pixels)


def load_image(path: str, nr_pixels: int) -> np.ndarray:
    """PrIM's image file: 16-bit big-endian pixels, clamped to 4095, repeated to nr_pixels."""
    raw = np.fromfile(Path(path), dtype=">u2")
    if raw.size == 0:
        raise KernelError(f"image file {path} holds no 16-bit pixels")
    return np.resize(np.minimum(raw.astype(np.uint32), (1 << DEPTH) - 1), nr_pixels)


class HistogramSmall(Workload):
    name = "hst-s"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 8192, "default": IMAGE_WIDTH * IMAGE_HEIGHT, "large": 4 * IMAGE_WIDTH * IMAGE_HEIGHT}
    params: ClassVar[dict[str, object]] = {"bins": 256, "image": ""}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, bins=None, image=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.bins = int(self.params["bins"] if bins is None else bins)
        self.image = str(self.params["image"] if image is None else image)
        if self.bins < 2 or self.bins % 2 or self.bins > (1 << DEPTH):
            raise KernelError(f"{self.name}: bins must be even, in 2..{1 << DEPTH}; got {self.bins}")
        wram = self.wram_bytes()
        if wram > WRAM_SIZE:
            raise KernelError(f"{self.name}: {self.bins} bins, BL={self.config['BL']} and {self.tasklets} "
                              f"tasklets need {wram} bytes of WRAM (> {WRAM_SIZE}); use fewer tasklets, "
                              "fewer bins or a smaller BL")

    def wram_bytes(self) -> int:
        """WRAM the kernel needs: per tasklet a block, a private histogram and a stack."""
        block = 1 << int(self.config["BL"])
        return self.tasklets * (block + 4 * self.bins + DEFAULT_STACK_SIZE) + WRAM_GLOBALS

    def inputs(self):
        if self.image:
            return {"pixels": load_image(self.image, self.size)}
        return {"pixels": synthetic_image(self.size, self.seed)}

    def reference(self, inputs):
        bins = (inputs["pixels"].astype(np.uint64) * self.bins) >> DEPTH
        return {"histogram": np.bincount(bins, minlength=self.bins).astype(np.uint32)}

    def execute(self, device, inputs):
        pixels = inputs["pixels"]
        per_dpu = -(-self.size // self.nr_dpus)
        per_dpu += per_dpu % 2  # chunk bytes a multiple of 8
        transfer = per_dpu * 4
        if transfer + self.bins * 4 > MRAM_SIZE:
            raise KernelError(f"{self.name}: {per_dpu} pixels per DPU do not fit in MRAM")
        padded = np.zeros(per_dpu * self.nr_dpus, np.uint32)
        padded[: self.size] = pixels
        args = []
        for dpu in range(self.nr_dpus):
            valid = max(0, min(per_dpu, self.size - dpu * per_dpu)) * 4
            args.append(np.array([valid, transfer, self.bins, 0], dtype=np.uint32))
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded, self.nr_dpus))
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, self.bins * 4, offset=transfer)
        total = np.zeros(self.bins, np.uint32)
        for chunk in chunks:
            total += np.frombuffer(chunk, np.uint32)
        return {"histogram": total}
