"""Which pass pipeline cnmtune-cc applies to a C source: the environment, the tuning cache, a tune
on a miss, or the -O level (cnmtune.plugin.cc.driver's docstring gives the order)."""

from __future__ import annotations

import os

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.cc.args import DEFAULT_LEVEL, Invocation, UsageError, notice


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "yes", "true", "on")


def choose_pipeline(inv: Invocation, source: str, toolchain: str):
    """The Pipeline for one C source (see the module docstring), with its one-line notice."""
    from cnmtune.passes import Pipeline

    if text := os.environ.get("CNMTUNE_PIPELINE", "").strip():
        pipeline = Pipeline.parse(text)
        notice(f"{source}: pipeline {pipeline.text} (CNMTUNE_PIPELINE)")
        return pipeline
    fallback = inv.level or DEFAULT_LEVEL
    if os.environ.get("CNMTUNE_TUNING_CACHE", "").strip().lower() in ("0", "no", "off", "false"):
        return Pipeline.parse(fallback)
    from cnmtune.plugin.tune.cache import TuningCache, key_for

    cache = TuningCache()
    keys = [key_for(source, inv.defines, kind, inv.include_dirs)
            for kind in ((toolchain, "proxy") if toolchain != "proxy" else (toolchain,))]
    for key in keys:
        try:
            entry = cache.lookup(key)
        except CnmtuneError as exc:
            notice(f"warning: {exc}; compiling without it")
            break
        if entry is not None:
            return _tuned(source, entry, key.toolchain != toolchain, "cache")
    if _env_flag("CNMTUNE_TUNE"):
        entry = tune_now(source, keys[-1], cache, fallback, inv.defines)
        if entry is not None:
            return _tuned(source, entry, toolchain != "proxy", "tuned now")
    else:
        notice(f"{source}: no tuned pipeline in the tuning cache for ({keys[0].describe()}); using {fallback} "
               f"(tune with `cnmtune tune --app DIR` for an application, `cnmtune tune KERNEL` for a kernel, or "
               "build with CNMTUNE_TUNE=1)")
    return Pipeline.parse(fallback)


def _tuned(source: str, entry, on_proxy: bool, how: str):
    from cnmtune.passes import Pipeline

    pipeline = Pipeline.parse(entry.pipeline)
    where = ", tuned on the proxy toolchain" if on_proxy else ""
    notice(f"{source}: tuned pipeline {pipeline.text} ({how}{where})")
    return pipeline


def tune_now(source: str, key, cache, fallback: str = DEFAULT_LEVEL, defines: dict[str, str | None] | None = None):
    """Tune the kernel `source` belongs to on the proxy toolchain, built with this compile's
    `defines` (-D), and record the result; the entry for `key`, or None (with a notice naming
    `fallback`) when this source cannot be tuned."""
    from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE
    from cnmtune.errors import KernelError
    from cnmtune.plugin.tune.cache import STACK, TASKLETS, kernel_dir_of, record_tune
    from cnmtune.runtime.kernel import Kernel
    from cnmtune.runtime.workload import define_text, define_value

    root = kernel_dir_of(source)
    if root is None:
        notice(f"{source}: cannot tune a source without a workload (KERNEL/dpu/*.c next to KERNEL/workload.py); "
               f"using {fallback}")
        return None
    kernel = Kernel.load(root)
    tasklets = int(dict(key.defines)[TASKLETS])
    given = {name: define_value(value) for name, value in (defines or {}).items()}
    if given.pop(STACK, DEFAULT_STACK_SIZE) != DEFAULT_STACK_SIZE:
        notice(f"{source}: cannot tune with {STACK}={dict(key.defines)[STACK]}: the tuner builds with the default "
               f"stack ({DEFAULT_STACK_SIZE}); using {fallback}")
        return None
    given.pop(TASKLETS, None)
    try:
        kernel.workload.resolve_defines(given)
    except KernelError as exc:
        notice(f"{source}: cannot tune with these defines ({exc}); using {fallback}")
        return None
    from cnmtune.costmodel.learn.cost_model import SHIPPED_MODEL, model_path
    from cnmtune.plugin.tune import TuneSpec, tune
    from cnmtune.runtime.executor import make_executor
    from cnmtune.runtime.toolchain import ProxyToolchain

    model = model_path(os.environ.get("CNMTUNE_MODEL") or SHIPPED_MODEL,
                       "set CNMTUNE_MODEL=path/to/model.onnx to tune (see `cnmtune model train`)")
    env = os.environ.get
    try:
        size = env("CNMTUNE_TUNE_SIZE", "small").strip()
        spec = TuneSpec(kernel=str(root), size=size,
                        pipelines=int(env("CNMTUNE_TUNE_PIPELINES", "50")), seed=int(env("CNMTUNE_TUNE_SEED", "0")),
                        dpus=tuple(int(x) for x in env("CNMTUNE_TUNE_DPUS", "").split(",") if x.strip()) or None,
                        tasklets=(tasklets,), top_k=int(env("CNMTUNE_TUNE_TOP_K", "5")),
                        rounds=int(env("CNMTUNE_TUNE_ROUNDS", "2")), model=str(model),
                        defines=tuple(given.items()), tune_defines=False)  # the host is built with the same defines
        workers = int(env("CNMTUNE_TUNE_WORKERS")) if env("CNMTUNE_TUNE_WORKERS") else None
    except ValueError as exc:
        raise UsageError(f"bad CNMTUNE_TUNE_* setting: {exc}") from None
    shown = "".join(f", {define_text(name, value)}" for name, value in spec.defines)
    notice(f"{source}: tuning {kernel.name} ({spec.pipelines} pipelines, size {spec.size}, "
           f"NR_TASKLETS={tasklets}{shown}, top {spec.top_k}); the result is cached for later builds")
    with make_executor(workers) as executor:
        report = tune(spec, executor, None)
    if report.chosen is None:
        notice(f"{source}: tuning {kernel.name} found no verified variant; using {fallback}")
        return None
    record_tune(cache, kernel, spec, report, ProxyToolchain().identity)
    entry = cache.lookup(key)
    if entry is None:
        notice(f"{source}: the tune of {kernel.name} does not match this compile (its include directories?); "
               f"using {fallback}")
    return entry
