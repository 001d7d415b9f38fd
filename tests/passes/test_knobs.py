"""LLVM knobs in pipelines: parsing, canonical text, and that a knob changes one build only."""

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm
import pytest
from elftools.elf.elffile import ELFFile

from cnmtune.errors import CompileError, PipelineError
from cnmtune.passes import Pipeline, apply_pipeline
from cnmtune.passes.knobs import KNOBS, process_knobs
from cnmtune.runtime.executor import DaskExecutor
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.toolchain import ProxyToolchain, Variant
from cnmtune.runtime.toolchain.cache import BuildCache
from cnmtune.runtime.toolchain.knob_process import fork_server, knob_process


@pytest.mark.parametrize("text, canonical", [
    ("O2,unroll-count=4", "O2,unroll-count=4"),
    ("-O3 -unroll-count=8", "O3,unroll-count=8"),
    ("unroll-count=2, O2", "O2,unroll-count=2"),
    ("sroa,loop-unroll,unroll-count=2", "sroa,loop-unroll,unroll-count=2"),
])
def test_knobs_parse_to_canonical_text(text, canonical):
    pipeline = Pipeline.parse(text)
    assert pipeline.text == canonical and Pipeline.parse(canonical) == pipeline
    assert pipeline.knobs == (("unroll-count", int(canonical.rsplit("=", 1)[1])),)
    assert pipeline.id != Pipeline.parse(canonical.rsplit(",", 1)[0]).id  # knobs are part of the identity


@pytest.mark.parametrize("text, cause", [
    ("O2,unroll-count=65", "knob unroll-count takes an integer in 0..64, got '65'"),
    ("O2,unroll-count=x", "knob unroll-count takes an integer in 0..64, got 'x'"),
    ("O2,unroll-threshold=300", "unknown knob 'unroll-threshold' in 'unroll-threshold=300'; valid knobs: "
                                + ", ".join(KNOBS)),
    ("O0,unroll-count=4", "knobs need an optimising pipeline: O0 runs no pass"),
    ("unroll-count=4", "pipeline 'unroll-count=4' sets knobs but names no level or pass"),
    ("O2,unroll-count=4,unroll-count=2", "a knob is set twice: unroll-count=4, unroll-count=2"),
])
def test_bad_knobs_are_refused_with_the_cause(text, cause):
    with pytest.raises(PipelineError) as err:
        Pipeline.parse(text)
    assert str(err.value) == cause


def test_a_knob_changes_its_build_and_no_later_one():
    """O2 -> O2 with unroll-count=4 -> O2 again, in one process, on uni (whose O2 build changes once
    -unroll-count has been given at all, even as 0: the option overrides its fully unrolled
    `#pragma unroll` loop): the knobbed build differs and is reproducible, the plain builds are
    identical, and this process's LLVM never saw the knob."""
    uni = find_kernel("uni")
    toolchain = ProxyToolchain()
    ir = toolchain.frontend(Variant.of(uni, "O2", 16), uni.sources[0])

    def build(text: str) -> tuple[str, int]:
        """The object's hash and the assembly's line count of uni's source under `text`."""
        obj = toolchain.codegen(toolchain.optimize(ir, Pipeline.parse(text)))
        asm = toolchain.codegen(toolchain.optimize(ir, Pipeline.parse(text)), "asm").decode()
        return hashlib.sha256(obj).hexdigest(), asm.count("\n")

    plain, plain_lines = build("O2")
    unrolled, unrolled_lines = build("O2,unroll-count=4")
    assert unrolled != plain and unrolled_lines < plain_lines  # the count overrides uni's `#pragma unroll`
    assert build("O2") == (plain, plain_lines) and process_knobs() == ()
    assert build("O2,unroll-count=4")[0] == unrolled
    assert build("sroa,loop-rotate,loop-unroll,unroll-count=4")[0] != build("sroa,loop-rotate,loop-unroll")[0]


def test_a_pipeline_with_knobs_is_not_applied_in_a_process_without_them(va):
    toolchain = ProxyToolchain()
    module = llvm.parse_assembly(toolchain.frontend(Variant.of(va, "O2", 16), va.sources[0]))
    with pytest.raises(PipelineError, match=r"^pipeline O2,unroll-count=4 needs LLVM knobs unroll-count=4 but "
                                            r"this process runs with none"):
        apply_pipeline(module, Pipeline.parse("O2,unroll-count=4"), toolchain.target_machine())


def _build_va(pipeline: str) -> str:
    return ProxyToolchain().compile(Variant.of(find_kernel("va"), pipeline, 16)).elf_hash


def test_knobbed_builds_run_in_dask_workers(dask_client, tmp_path):
    """Dask's worker processes are daemonic (no multiprocessing children): the knob process is a
    plain subprocess, and a worker's knobbed ELF is the one this process builds."""
    executor = DaskExecutor(dask_client)
    for pipeline in ("O2,unroll-count=4", "O2"):
        executor.submit(_build_va, pipeline)
    built = {outcome.arg: outcome.value for outcome in executor.results()}
    here = ProxyToolchain(BuildCache(tmp_path))
    assert built == {p: here.compile(Variant.of(find_kernel("va"), p, 16)).elf_hash
                     for p in ("O2,unroll-count=4", "O2")}
    assert built["O2,unroll-count=4"] != built["O2"]


def test_knob_pipelines_that_optimise_to_one_module_share_one_code_generation(va, tmp_path, monkeypatch):
    """A knob process's bitcode is the IR's and the pipeline's alone (asked twice, the same bytes,
    where a context shared with the first parse renamed the second's types); O2 and O3 with
    unroll-count=1 optimise va to one module, so the second build generates no code and gets the
    first's object; with unroll-count=4 they differ and get two. Each object is its pipeline's code."""
    toolchain = ProxyToolchain(BuildCache(tmp_path))
    ir = toolchain.frontend(Variant.of(va, "O2", 16), va.sources[0])
    process = knob_process((("unroll-count", 1),), toolchain.codegen_level)
    assert process.optimize(ir, "O2,unroll-count=1") == process.optimize(ir, "O2,unroll-count=1")
    codegen, generated = toolchain.codegen, []
    monkeypatch.setattr(toolchain, "codegen",
                        lambda module, emit="obj": generated.append(emit) or codegen(module, emit))
    objects = {text: toolchain.objects(Variant.of(va, text, 16))
               for text in ("O2,unroll-count=1", "O3,unroll-count=1", "O2,unroll-count=4", "O3,unroll-count=4")}
    assert objects["O2,unroll-count=1"] == objects["O3,unroll-count=1"]
    assert objects["O2,unroll-count=4"] != objects["O3,unroll-count=4"]
    assert len(generated) == 3
    for text, [path] in objects.items():
        assert path.read_bytes() == codegen(toolchain.optimize(ir, Pipeline.parse(text)))


def test_a_dead_knob_process_is_one_error_and_the_next_build_starts_another(va):
    toolchain = ProxyToolchain()
    ir = toolchain.frontend(Variant.of(va, "O2", 16), va.sources[0])
    pipeline = Pipeline.parse("O2,unroll-count=5")
    first = toolchain.codegen(toolchain.optimize(ir, pipeline))
    os.kill(knob_process(pipeline.knobs, toolchain.codegen_level).pid, signal.SIGKILL)
    with pytest.raises(CompileError, match=r"^the process optimising with LLVM knobs unroll-count=5 died "
                                           r"\(exit status -9\) on O2,unroll-count=5$"):
        toolchain.optimize(ir, pipeline)
    assert toolchain.codegen(toolchain.optimize(ir, pipeline)) == first  # the same object from a new process


def _parent_pid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_knob_processes_are_forked_by_one_server_and_a_forked_caller_gets_its_own(va):
    """Each knob set's process is forked by this process's fork server (no new interpreter per
    knob set); a process forked from this one starts a server of its own and builds the same
    object, while this one's processes keep answering it."""
    toolchain = ProxyToolchain()
    ir = toolchain.frontend(Variant.of(va, "O2", 16), va.sources[0])
    first, second = Pipeline.parse("O2,unroll-count=11"), Pipeline.parse("O2,unroll-count=13")  # new knob sets
    built = toolchain.codegen(toolchain.optimize(ir, first))
    toolchain.optimize(ir, second)
    servers = {_parent_pid(knob_process(p.knobs, toolchain.codegen_level).pid) for p in (first, second)}
    assert len(servers) == 1 and _parent_pid(servers.pop()) == os.getpid()
    child = os.fork()
    if child == 0:  # the forked child answers with its exit status, whatever happens
        ok = False
        try:
            ours = knob_process(first.knobs, toolchain.codegen_level)
            ok = toolchain.codegen(toolchain.optimize(ir, first)) == built \
                and _parent_pid(_parent_pid(ours.pid)) == os.getpid()
        finally:
            os._exit(0 if ok else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
    assert toolchain.codegen(toolchain.optimize(ir, first)) == built


def test_a_dead_fork_server_is_one_error_and_its_knob_processes_keep_answering(va):
    toolchain = ProxyToolchain()
    ir = toolchain.frontend(Variant.of(va, "O2", 16), va.sources[0])
    kept, new = Pipeline.parse("O2,unroll-count=6"), Pipeline.parse("O2,unroll-count=7")
    built = toolchain.codegen(toolchain.optimize(ir, kept))
    server = fork_server()._process
    server.kill()
    server.wait()
    assert toolchain.codegen(toolchain.optimize(ir, kept)) == built  # forked before: still answers
    with pytest.raises(CompileError, match=r"^the fork server of the knob processes died \(exit status -9\)$"):
        toolchain.optimize(ir, new)
    assert toolchain.codegen(toolchain.optimize(ir, new))  # the next knob set starts a new server
    assert fork_server()._process.pid != server.pid


def test_runtime_unrolling_unrolls_a_loop_with_a_run_time_trip_count(va):
    """va's DPU loop runs over a block whose length is known only at run time: O2 leaves it rolled,
    unroll-runtime=1 unrolls it (with a remainder loop), and the simulated kernel is faster with the
    same verified output."""
    toolchain = ProxyToolchain()
    plain = toolchain.compile(Variant.of(va, "O2", 16))
    unrolled = toolchain.compile(Variant.of(va, "O2,unroll-runtime=1", 16))
    assert unrolled.elf_hash != plain.elf_hash
    assert unrolled.memory.iram_instructions > plain.memory.iram_instructions  # the unrolled body and its remainder
    fast, slow = run_binary(unrolled, 1, 8192), run_binary(plain, 1, 8192)
    assert fast.verified and slow.verified and fast.kernel_s < 0.9 * slow.kernel_s


def test_the_inline_threshold_decides_what_is_inlined(make_kernel):
    """Two helpers, each called twice: at O2 (threshold 225) the large one stays a call and the
    medium one is inlined; threshold 1000 inlines both, threshold 0 neither (llvm.set_option
    accepts any name, so the knob is shown by its effect)."""
    def helper(name, lines):
        body = "".join(f"    x = x * {3 + 2 * i} + (x >> {1 + i % 7});\n" for i in range(lines))
        return f"static uint32_t {name}(uint32_t x) {{\n{body}    return x;\n}}\n"

    kernel = make_kernel("#include <defs.h>\n#include <stdint.h>\n__host uint32_t v[16];\n"
                         + helper("large", 40) + helper("medium", 3)
                         + "int main(void) { for (int i = 0; i < 16; i++) "
                           "v[i] = large(v[i]) + large(v[i] ^ 1) + medium(v[i]) + medium(v[i] ^ 2); return 0; }\n")
    toolchain = ProxyToolchain()

    def functions(pipeline):
        with open(toolchain.compile(Variant.of(kernel, pipeline, 1)).elf_path, "rb") as handle:
            return {s.name for s in ELFFile(handle).get_section_by_name(".symtab").iter_symbols()
                    if s["st_info"]["type"] == "STT_FUNC"} & {"large", "medium"}

    assert functions("O2") == {"large"}
    assert functions("O2,inline-threshold=1000") == set()
    assert functions("O2,inline-threshold=0") == {"large", "medium"}


def test_a_knob_process_starts_without_the_toolchain_or_numpy():
    """A tune starts a knob process per knob set in every compile worker: its program imports
    llvmlite and cnmtune.passes only (0.2 s, against 0.7 s with the toolchain's imports)."""
    probe = ("import sys; from cnmtune.passes.knob_server import serve; "
             "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('cnmtune.runtime', "
             "'cnmtune.costmodel', 'cnmtune.plugin'))))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
