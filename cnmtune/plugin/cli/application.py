"""`cnmtune app build|run`: unmodified UPMEM applications on the embedded simulator."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from cnmtune.display import Table
from cnmtune.plugin.app import AppProject, AppRun, make_variables
from cnmtune.runtime.hostapi import host_environment
from cnmtune.plugin.cli.output import (FAILURE_EXIT, console, emit_json, milliseconds, note, phase_bars,
                                      print_error, print_pipeline_legend)
from cnmtune.wording import counted

application_app = typer.Typer(
    help="Build and run unmodified UPMEM applications (a C host on the SDK's dpu.h, DPU C, a Makefile in "
         "PrIM's layout) on cnmtune's simulator.",
    no_args_is_help=True,
)

DIRECTORY = typer.Argument(..., help="the application's directory (its Makefile builds bin/host_code and bin/dpu_code)")
DPUS = typer.Option(None, "--dpus", "-d", help="make variable NR_DPUS")
TASKLETS = typer.Option(None, "--tasklets", "-t", help="make variable NR_TASKLETS")
VARIABLES = typer.Option([], "--var", "-V", metavar="NAME=VALUE", help="another make variable NAME=VALUE (e.g. BL=10), repeatable")
HOST = typer.Option(None, "--host-binary", help="the host program, relative to DIRECTORY (default: the output of the "
                                                 "Makefile's line that calls dpu-pkg-config)")


@application_app.command("build")
def build_command(directory: Path = DIRECTORY, dpus: Optional[int] = DPUS, tasklets: Optional[int] = TASKLETS,
                  var: list[str] = VARIABLES, host_binary: Optional[str] = HOST) -> None:
    """Build with the application's own Makefile: host against cnmtune's dpu.h, DPU code with cnmtune-cc."""
    project = AppProject(directory, host_binary)
    output = project.build(make_variables(dpus, tasklets, var))
    if output.strip():
        console.print(output.rstrip(), highlight=False, markup=False)
    note(f"built {project.host_binary}")


@application_app.command("env")
def env_command() -> None:
    """Print shell exports that put cnmtune's dpu-pkg-config and DPU compiler first on PATH (for eval)."""
    _, env = host_environment()
    for name in ("PATH", "CNMTUNE_PYTHON"):
        print(f"export {name}={shlex.quote(env[name])}")


@application_app.command("run")
def run_command(directory: Path = DIRECTORY,
                args: Optional[list[str]] = typer.Argument(None, help="the host program's arguments, after --"),
                dpus: Optional[int] = DPUS, tasklets: Optional[int] = TASKLETS, var: list[str] = VARIABLES,
                host_binary: Optional[str] = HOST,
                clock: str = typer.Option("simulated", "--clock",
                                          help="what the host's clock reads during DPU calls: simulated or wall"),
                build: bool = typer.Option(True, "--build/--no-build",
                                           help="run make first (whole when the parameters changed)"),
                as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of the table")) -> None:
    """Build, run the host program on the simulator, print its output and the simulated times."""
    if clock not in ("simulated", "wall"):
        raise typer.BadParameter(f"expected simulated or wall, got {clock!r}", param_hint="--clock")
    project = AppProject(directory, host_binary)
    if build:
        project.build(make_variables(dpus, tasklets, var))
    sys.stdout.flush()
    run = project.run(args or [], simulated_clock=clock == "simulated", echo=not as_json)
    if as_json:
        emit_json(run.to_dict() | {"stdout": run.stdout, "stderr": run.stderr})
    else:
        console.print(_times_table(run, project))
    if run.killed_by:  # named as a shell does (a negative code would exit as 256 - N); --json's record names it
        print_error(f"host program killed by {run.killed_by}", as_json=False)
        raise typer.Exit(FAILURE_EXIT)
    if run.returncode != 0:
        raise typer.Exit(run.returncode)


def _times_table(run: AppRun, project: AppProject) -> Table:
    name = project.host_binary.relative_to(project.root)
    ended = f"killed by {run.killed_by}" if run.killed_by else f"exit {run.returncode}"
    table = Table(title=f"{shlex.join([str(name), *run.command[1:]])}: {ended}, {run.wall_s:.2f} s wall; "
                        "simulated times")
    for column in ("set", "DPUs", "launches", "DPU kernel (ms)", "CPU-DPU (ms)", "DPU-CPU (ms)"):
        table.add_column(column, justify="right", no_wrap=True)
    for number, times in enumerate(run.sets, 1):
        dpus = f"{times.nr_dpus}" + ("" if times.simulated_dpus == times.nr_dpus else f" ({times.simulated_dpus} sim.)")
        table.add_row(str(number), dpus, str(times.launches), milliseconds(times.kernel_s),
                      milliseconds(times.host_to_dpu_s), milliseconds(times.dpu_to_host_s))
    return table


def tune_app_command(directory: Path, run: str, variables: list[str], dpus: Optional[str], pipelines: int, seed: int,
                     knobs: bool, top_k: int, model: Optional[Path], save: bool, as_json: bool) -> None:
    """`cnmtune tune --app DIR --run ARGS`: see cnmtune.plugin.app.tune."""
    from cnmtune.passes.enumerate import knob_pipelines, pipeline_set
    from cnmtune.plugin.app.tune import tune_app

    texts = [p.text for p in pipeline_set(pipelines, seed)]
    texts += [p.text for p in knob_pipelines() if p.text not in texts] if knobs else []
    nr_dpus = int(dpus) if dpus and dpus.isdigit() else None
    if dpus and nr_dpus is None:
        raise typer.BadParameter(f"with --app, one DPU count (NR_DPUS), got {dpus!r}", param_hint="--dpus")
    project = AppProject(directory)
    with phase_bars() as progress:
        report = tune_app(project, shlex.split(run), make_variables(nr_dpus, None, variables), texts, top_k=top_k,
                          model=str(model) if model else None, save=save, progress=progress)
    if as_json:
        emit_json(report.to_dict())
        return
    distinct = sum(not c.same_as and not c.error for c in report.candidates)
    shown = sorted((c for c in report.candidates if c.measured_s is not None or (c.error and c.predicted_s)),
                   key=lambda c: (c.measured_s is None, c.measured_s or 0))
    ids = {c.pipeline: f"P{i}" for i, c in enumerate(shown, 1)}
    table = Table(title=f"{report.app} {run}: {counted(report.nr_dpus, 'DPU')}, {counted(report.tasklets, 'tasklet')}; "
                        f"{len(report.candidates)} pipelines, {distinct} distinct DPU programs, the {top_k} best "
                        "predicted run",
                  caption=f"predicted: the cost model at size {report.model_size:,} ({report.model_size_from})")
    for column in ("pipeline", "predicted (ms)", "measured (ms)", "vs default"):
        table.add_column(column, justify="left" if column == "pipeline" else "right")
    for c in shown:
        table.add_row(ids[c.pipeline], milliseconds(c.predicted_s),
                      milliseconds(c.measured_s) if c.measured_s else c.error,
                      f"{report.default_s / c.measured_s:.2f}x" if c.measured_s else "-")
    console.print(table)
    chosen = ids[report.chosen.pipeline] if report.chosen else "the default build (nothing measured faster)"
    kept = "rebuilt with it" if report.recorded else "the DPU program left at the default build"
    console.print(f"default build {milliseconds(report.default_s)} ms; chosen: {chosen}, {report.speedup:.2f}x; "
                  f"{kept}: {milliseconds(report.final_s)} ms", highlight=False, markup=False)
    print_pipeline_legend(ids)
    if report.recorded:
        note(f"recorded in the tuning cache for {', '.join(report.recorded)}: `make` with cnmtune-cc builds it")
