"""cnmtune's in-process link writes the bytes ld.lld writes for the proxy's DPU programs
(cnmtune.runtime.toolchain.linker), and leaves to ld.lld what it does not support."""

from __future__ import annotations

import pytest

from cnmtune.errors import LinkError
from cnmtune.passes import random_pipeline
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.toolchain import Variant, linker

# the runtime alone (va), soft multiply and divide (gemv, hst-s), MRAM tables and compiler_rt's
# hidden helpers made local (lornq), WRAM tables (bfs, nw), several kernel functions (ts, trns)
KERNELS = ("va", "gemv", "hst-s", "lornq", "bfs", "nw", "ts", "trns")


@pytest.mark.parametrize("name", KERNELS)
def test_the_in_process_link_is_ld_lld_byte_for_byte(toolchain, tmp_path, name):
    kernel = find_kernel(name)
    for pipeline, tasklets in (("O0", 1), ("O2", 16), (random_pipeline(20, seed=3).text, 4)):
        variant = Variant.of(kernel, pipeline, tasklets)
        objects = toolchain.objects(variant)
        image = toolchain.link_in_process(objects, variant.nr_tasklets, variant.stack_size)
        toolchain.link_with_lld(objects, tmp_path / "lld.elf", variant.nr_tasklets, variant.stack_size, variant.label)
        assert image is not None and image == (tmp_path / "lld.elf").read_bytes(), variant.label


def test_what_it_does_not_support_ld_lld_links(toolchain, make_kernel, monkeypatch):
    # bs prints a string literal: a mergeable string section, which lld deduplicates
    bs = Variant.of(find_kernel("bs"), "O2", 16)
    assert toolchain.link_in_process(toolchain.objects(bs), bs.nr_tasklets, bs.stack_size) is None
    assert toolchain.compile(bs).memory.kernel_instructions > 0
    # an undefined function: ld.lld reports it
    kernel = make_kernel("extern int nowhere(int);\nint main(void) { return nowhere(3); }\n")
    broken = Variant.of(kernel, "O2", 1)
    assert toolchain.link_in_process(toolchain.objects(broken), 1, 1024) is None
    with pytest.raises(LinkError, match="nowhere"):
        toolchain.compile(broken)
    # a linker script this linker was not written for
    va = Variant.of(find_kernel("va"), "O2", 4)
    objects = toolchain.objects(va)
    assert toolchain.link_in_process(objects, 4, 1024) is not None
    monkeypatch.setattr(linker, "SCRIPT_SHA256", "0" * 64)
    linker._script_matches.cache_clear()
    try:
        assert toolchain.link_in_process(objects, 4, 1024) is None
    finally:
        monkeypatch.undo()
        linker._script_matches.cache_clear()
