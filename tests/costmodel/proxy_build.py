"""Real proxy ELFs for the cost model tests, built with zig and a small linker script.

The linker script reproduces the region and memory symbols of cnmtune's DPU linker script
(runtime, kernel, softlib ranges in .text; __host variables, stacks, heap start in WRAM; MRAM
end; absolute NR_TASKLETS and STACK_SIZE_DEFAULT), so these tests need no toolchain module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NR_TASKLETS = 4
STACK_SIZE = 256
HOST_BYTES = 16
MRAM_BYTES = 1024

LINKER_SCRIPT = f"""
ENTRY(_start)
NR_TASKLETS = {NR_TASKLETS};
STACK_SIZE_DEFAULT = {STACK_SIZE};
SECTIONS
{{
  . = 0x80000000;
  .text : {{
    __cnm_text_runtime_start = .;
    *(.text.start)
    *crt0.o(.text .text.*)
    *runtime.o(.text .text.*)
    __cnm_text_runtime_end = .;
    __cnm_text_kernel_start = .;
    *kernel.o(.text .text.*)
    __cnm_text_kernel_end = .;
    __cnm_text_softlib_start = .;
    *libcompiler_rt.a:*(.text .text.*)
    __cnm_text_softlib_end = .;
  }}
  . = 0x0;
  .data : {{ *(.rodata .rodata.* .srodata .srodata.* .data .data.* .sdata .sdata.*) }}
  .bss : {{ *(.bss .bss.* .sbss .sbss.* COMMON) }}
  .data.__sys_host : {{ __sys_host_start = .; *(.dpu_host) __sys_host_end = .; }}
  .data.stacks (NOLOAD) : ALIGN(8) {{
    __sys_stacks_start = .;
    . += NR_TASKLETS * STACK_SIZE_DEFAULT;
    __sys_stacks_end = .;
  }}
  __sys_heap_pointer_reset = .;
  . = 0x08000000;
  .mram (NOLOAD) : {{ *(.mram .mram.*) }}
  __sys_used_mram_end = .;
  /DISCARD/ : {{ *(.comment) *(.riscv.attributes) *(.eh_frame) }}
}}
"""

CRT0 = r"""
int main(void);
__attribute__((section(".text.start"), noreturn)) void _start(void)
{
    int status = main();
    for (;;) {
        register int a7 __asm__("a7") = 0;            /* CNM_ECALL_STOP */
        register int a0 __asm__("a0") = status;
        __asm__ volatile("ecall" : : "r"(a7), "r"(a0));
    }
}
"""

# The runtime: an allocator and two services, each an ecall following cnm_ecall.h's pattern
# (as in cnmtune/dpu/runtime/services.c, kernels never hold an ecall themselves).
RUNTIME = r"""
#include <cnm_sys.h>

static unsigned heap_used;
void *mem_alloc(unsigned bytes)
{
    void *p = __sys_heap_pointer_reset + heap_used;
    heap_used += (bytes + 7u) & ~7u;
    return p;
}

void mram_read(const void *from, void *to, unsigned bytes)
{
    (void)__cnm_ecall3(CNM_ECALL_MRAM_READ, (uint32_t)(uintptr_t)from, (uint32_t)(uintptr_t)to, bytes);
}

void barrier_wait(void *barrier)
{
    (void)__cnm_ecall3(CNM_ECALL_BARRIER_WAIT, (uint32_t)(uintptr_t)barrier, 0, 0);
}
"""

# Three nested loops with a 32-bit multiply and divide in the innermost one, an MRAM read in
# the outer one, a float multiply and a barrier wait outside, calls to the runtime (mem_alloc,
# mram_read, barrier_wait) and one to a kernel helper.
KERNEL = r"""
void *mem_alloc(unsigned bytes);
void mram_read(const void *from, void *to, unsigned bytes);
void barrier_wait(void *barrier);
__attribute__((section(".dpu_host"))) volatile int host_args[4];
__attribute__((section(".mram"))) int mram_buf[256];
volatile int a[8], b[8], c[8];
volatile float fout;

__attribute__((noinline)) int helper(int x) { return x + 3; }

int main(void)
{
    int *wbuf = mem_alloc(64);
    int s = 0;
    for (int i = 0; i < host_args[0]; i++) {
        mram_read(&mram_buf[i * 16], wbuf, 64);
        for (int j = 0; j < host_args[1]; j++)
            for (int k = 0; k < host_args[2]; k++)
                s += a[j] * b[k] / (c[i] + 1);
    }
    fout = (float)s * 1.5f;
    barrier_wait(0);
    return helper(s);
}
"""

# The service table the tests use when the DPU runtime's header is not there (yet).
ECALL_DEFINES = """\
#define CNM_ECALL_STOP 0
#define CNM_ECALL_ME 1
#define CNM_ECALL_BOOT 2
#define CNM_ECALL_FAULT 3
#define CNM_ECALL_MRAM_READ 4
#define CNM_ECALL_MRAM_WRITE 5
#define CNM_ECALL_ACQUIRE 6
#define CNM_ECALL_RELEASE 7
#define CNM_ECALL_BARRIER_WAIT 8
#define CNM_ECALL_SEM_TAKE 9
#define CNM_ECALL_SEM_GIVE 10
#define CNM_ECALL_HANDSHAKE_NOTIFY 11
#define CNM_ECALL_HANDSHAKE_WAIT_FOR 12
#define CNM_ECALL_PERFCOUNTER_CONFIG 13
#define CNM_ECALL_PERFCOUNTER_GET 14
#define CNM_ECALL_PRINTF 15
#define CNM_ECALL_PUTS 16
#define CNM_ECALL_PUTCHAR 17
"""

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "cnmtune" / "dpu" / "include"

RV32_FLAGS = ["-target", "riscv32-freestanding-none", "-mcpu=generic_rv32", "-mabi=ilp32",
              "-fno-sanitize=all", "-ffreestanding", "-g0", "-nostartfiles",
              "-ffunction-sections", "-fdata-sections", "-fno-unwind-tables",
              "-fno-asynchronous-unwind-tables", "-Wl,--gc-sections"]


def zig_cc(args: list[str], cwd: Path) -> None:
    """Run `python -m ziglang cc ARGS` in ``cwd``; fail the test with its diagnostics."""
    result = subprocess.run([sys.executable, "-m", "ziglang", "cc", *args], cwd=cwd,
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"zig cc {' '.join(args)} failed:\n{result.stderr}")


def write_sources(root: Path) -> None:
    """The C sources and the linker script of the test program."""
    for name, text in (("crt0.c", CRT0), ("runtime.c", RUNTIME), ("kernel.c", KERNEL),
                       ("proxy.ld", LINKER_SCRIPT)):
        (root / name).write_text(text)


def build(root: Path, level: str) -> Path:
    """Link the test program in ``root`` at optimisation ``level`` ("O0", "O2")."""
    out = root / f"kernel-{level}.elf"
    zig_cc([*RV32_FLAGS, f"-{level}", f"-I{INCLUDE_DIR}", "-Wl,-T,proxy.ld", "crt0.c", "runtime.c", "kernel.c",
            "-o", out.name], root)
    return out
