"""`cnmtune model ...`: train, fine-tune and evaluate the L2P cost model on a dataset store.

`train` and `finetune` write two files: the ONNX model a Scorer loads (``X.onnx``) and the
training checkpoint beside it (``X.pt`` + ``X.pt.json``) that `finetune` starts from. `trees`
fits a network's zero-shot trees on the rows it was trained on (``X.trees.onnx``, beside it).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich import box

from cnmtune.costmodel.learn.recipe import FINETUNE_EPOCHS, MODEL_DEFAULTS, TRAIN_DEFAULTS
from cnmtune.display import Table
from cnmtune.errors import CnmtuneError, UsageError
from cnmtune.plugin.cli.output import ProgressLines, console, emit_json, err_console, note, warn

model_app = typer.Typer(help="Train, fine-tune and evaluate the L2P cost model (ONNX).",
                        no_args_is_help=True)


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def _onnx_path(path: Path) -> Path:
    if path.suffix != ".onnx":
        raise UsageError(f"output {path} must end in .onnx (the checkpoint goes beside it as .pt)")
    return path


def _metrics_table(title: str, report: dict[str, dict[str, float]], k: int, key: str = "kernel") -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0))  # nine columns fit 80
    columns = (("samples", "samples", "{:.0f}"), ("runtime_mape", "runtime MAPE %", "{:.2f}"),
               ("runtime_r2", "runtime R² (log)", "{:.3f}"), ("runtime_rmse_log", "RMSE (log)", "{:.3f}"),
               ("speedup_mape", "speedup MAPE %", "{:.2f}"),
               ("tau", "Kendall τ", "{:.3f}"), (f"top{k}_recall", f"top-{k} recall", "{:.2f}"),
               (f"top{k}_regret", f"top-{k} regret %", "{:.2f}"))
    shown = [c for c in columns if any(c[0] in row for row in report.values())]
    table.add_column(key, no_wrap=True)  # kernel@size whole; the figures fold rather than end in "…"
    for name, label, _ in shown:  # narrow enough for a 16-character kernel@size at 80 columns
        table.add_column(label, justify="right", overflow="fold", min_width=7 if name == "tau" else 6)
    for kernel, row in report.items():
        if kernel == "all" and table.row_count:
            table.add_section()
        cells = []
        for key, _, pattern in shown:
            value = row.get(key)
            cells.append("-" if value is None else pattern.format(value * 100 if key.endswith("_regret") else value))
        table.add_row(kernel, *cells)
    return table


def _toolchain() -> tuple[str, str]:
    """Kind and LLVM version of the toolchain that builds dataset binaries (the proxy)."""
    from cnmtune.runtime.toolchain import ProxyToolchain

    toolchain = ProxyToolchain()
    return toolchain.kind, toolchain.llvm_version


def _save(output: Path, model, schema, data_hash: str, metrics: dict, meta: dict) -> Path:
    """Write the checkpoint (output.pt) and the ONNX model (output), and remove the trees beside it
    if they were fitted on other rows; returns the checkpoint path."""
    from cnmtune.costmodel.learn.checkpoint import save_checkpoint
    from cnmtune.costmodel.learn.onnx_export import export_onnx
    from cnmtune.costmodel.learn.samples import input_columns
    from cnmtune.costmodel.learn.zero_shot import drop_stale_trees

    kind, llvm_version = _toolchain()
    checkpoint = output.with_suffix(".pt")
    save_checkpoint(checkpoint, model, {
        **meta, "schema": schema.to_dict(), "input_columns": list(input_columns(schema)),
        "data_hash": data_hash, "metrics": metrics,
        "toolchain": {"kind": kind, "llvm_version": llvm_version}})
    export_onnx(model, output, schema=schema, toolchain_kind=kind, llvm_version=llvm_version,
                data_hash=data_hash, metrics=metrics)
    stale = drop_stale_trees(output, data_hash)
    if stale is not None:
        warn(f"removed {stale}: its trees were fitted on other rows than {output.name} was trained on "
             "(`cnmtune model trees` fits new ones)")
    return checkpoint


@model_app.command("train")
def train_command(
    db: Path = typer.Option(..., "--db", help="dataset store (from `cnmtune dataset generate`) or its .parquet export"),
    output: Path = typer.Option(..., "-o", "--output", help="ONNX model to write (checkpoint: same name .pt)"),
    kernels: str | None = typer.Option(None, "--kernels", "-k", help="train on these kernels only (comma-separated)"),
    exclude: str | None = typer.Option(None, "--exclude", help="leave these kernels out (comma-separated)"),
    targets: str = typer.Option("runtime,speedup", "--targets", help="outputs: runtime, speedup or both"),
    log_inputs: bool = typer.Option(True, "--log-inputs/--raw-inputs",
                                    help="log1p of the count columns inside the network"),
    prior: bool = typer.Option(True, "--prior/--no-prior", help="analytical cycle estimate as an extra input"),
    block_prior: bool = typer.Option(MODEL_DEFAULTS["block_prior"], "--block-prior/--fixed-block-prior",
                                     help="the prior's DMA term at the kernel's constant block size (else 256 B)"),
    dropout: float = typer.Option(0.5, "--dropout", help="dropout of the hidden blocks"),
    split: str = typer.Option("row", "--split", help="3:1:1 per kernel over rows, or over distinct binaries ('binary')"),
    epochs: int = typer.Option(TRAIN_DEFAULTS["epochs"], "--epochs", help="maximum epochs"),
    patience: int = typer.Option(TRAIN_DEFAULTS["patience"], "--patience",
                                 help="stop after this many epochs without a better validation loss"),
    lr_patience: int = typer.Option(TRAIN_DEFAULTS["lr_patience"], "--lr-patience",
                                    help="halve the learning rate after this many epochs without a better "
                                         "validation loss (0: constant rate)"),
    batch_size: int = typer.Option(TRAIN_DEFAULTS["batch_size"], "--batch-size", help="minibatch size"),
    lr: float = typer.Option(TRAIN_DEFAULTS["lr"], "--lr", help="Adam learning rate"),
    weight_decay: float = typer.Option(TRAIN_DEFAULTS["weight_decay"], "--weight-decay", help="Adam weight decay"),
    seed: int = typer.Option(0, "--seed", help="seed of the split, the initial weights and the minibatch order"),
    threads: int | None = typer.Option(None, "--threads", help="torch intra-op threads (default: torch's)"),
    int8: bool = typer.Option(False, "--int8", help="also write the int8-quantised scoring model X.int8.onnx"),
    top_k: int = typer.Option(10, "--top-k", help="k of the top-k recall and regret"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of tables"),
) -> None:
    """Train on a 3:1:1 split per kernel with early stopping; report test-split metrics per kernel."""
    from cnmtune.costmodel.learn.model import L2PConfig
    from cnmtune.costmodel.learn.prediction import evaluate
    from cnmtune.costmodel.learn.samples import load_samples
    from cnmtune.costmodel.learn.training import predict, train

    output = _onnx_path(output)
    if split not in ("row", "binary"):
        raise UsageError(f"--split must be 'row' or 'binary', not {split!r}")
    try:
        config = L2PConfig(targets=tuple(_names(targets) or ()), dropout=dropout, log_inputs=log_inputs, prior=prior,
                           block_prior=block_prior)
    except ValueError as exc:
        raise UsageError(f"--targets/--dropout: {exc}") from None
    samples = load_samples(db).select(_names(kernels), _names(exclude))
    if not len(samples):
        raise CnmtuneError(f"{db}: no samples left after --kernels/--exclude")
    train_set, val_set, test_set = samples.split(seed, by_binary=split == "binary")
    columns = (TextColumn("train"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[losses]}"),
               TimeElapsedColumn())
    lines = ProgressLines(err_console)  # a log file's progress, where the bar draws nothing

    def on_epoch(epoch: int, train_loss: float, val_loss: float) -> None:
        losses = f"train {train_loss:.4f}  val {val_loss:.4f}"
        bar.update(task, completed=epoch + 1, losses=losses)
        lines("epoch", epoch + 1, epochs, f"loss {losses}")

    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("train", total=epochs, losses="")
        result = train(config, train_set, val_set, epochs=epochs, patience=patience, batch_size=batch_size,
                       lr=lr, weight_decay=weight_decay, seed=seed, threads=threads,
                       lr_patience=lr_patience or None, on_epoch=on_epoch)
    report = evaluate(test_set, predict(result.model, test_set.X), top_k)
    metrics = {"evaluated_on": f"test split ({split}, seed {seed})", "per_kernel": report}
    checkpoint = _save(output, result.model, samples.schema, train_set.data_hash, metrics, {
        "kernels": samples.kernel_names, "seed": seed, "split": split, "epochs_run": len(result.train_losses),
        "best_epoch": result.best_epoch})
    record = {
        "onnx": str(output), "checkpoint": str(checkpoint), "targets": list(config.targets),
        "config": config.to_dict(),
        "samples": {"train": len(train_set), "val": len(val_set), "test": len(test_set),
                    "dropped_without_speedup": samples.dropped},
        "epochs_run": len(result.train_losses), "best_epoch": result.best_epoch,
        "best_val_loss": result.val_losses[result.best_epoch], "seconds": round(result.seconds, 3),
        "data_hash": train_set.data_hash, "metrics": report,
    }
    if int8:
        record.update(_int8(output, test_set, top_k))
    if as_json:
        emit_json(record)
        return
    console.print(_metrics_table(
        f"test split: {len(test_set)} of {len(samples)} samples, best epoch {result.best_epoch + 1} of "
        f"{len(result.train_losses)} ({result.seconds:.1f} s)", report, top_k))
    written = f"{output}, {record['int8_onnx']}" if int8 else str(output)
    note(f"wrote {written} and {checkpoint}")
    if int8:
        console.print(f"int8 on the test split: runtime MAPE {record['int8_metrics']['all']['runtime_mape']:.3f} % "
                      f"(fp32 {report['all']['runtime_mape']:.3f} %)", highlight=False, markup=False)


def _int8(output: Path, test_set, top_k: int) -> dict:
    """Quantise the written model; its path and test-split metrics."""
    from cnmtune.costmodel.learn.onnx_export import quantize_model
    from cnmtune.costmodel.learn.prediction import evaluate
    from cnmtune.costmodel.learn.scorer import Scorer

    path = quantize_model(output)
    return {"int8_onnx": str(path), "int8_metrics": evaluate(test_set, Scorer(path).predict(test_set.X), top_k)}


@model_app.command("trees")
def trees_command(
    db: Path = typer.Option(..., "--db", help="the dataset store (or .parquet export) the network was trained on"),
    network: Path = typer.Option("shipped", "--model", help="the network X.onnx (its X.pt.json beside it), or "
                                                            "'shipped'"),
    max_iter: int = typer.Option(1000, "--max-iter", help="at most this many trees per target"),
    threads: int | None = typer.Option(1, "--threads", help="OpenMP threads of the tree building (0: all cores)"),
    top_k: int = typer.Option(10, "--top-k", help="k of the top-k recall and regret"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of tables"),
) -> None:
    """Fit the network's zero-shot trees (X.trees.onnx beside X.onnx): gradient-boosted trees on the
    rows it was trained on, early stopping on its validation rows; the tuner ranks with them until
    it first fine-tunes the network on a kernel's runs."""
    from cnmtune.costmodel.learn.baselines import GbtBaseline
    from cnmtune.costmodel.learn.cost_model import model_path
    from cnmtune.costmodel.learn.prediction import evaluate
    from cnmtune.costmodel.learn.samples import load_samples
    from cnmtune.costmodel.learn.scorer import Scorer
    from cnmtune.costmodel.learn.zero_shot import training_rows, trees_path

    network = model_path(network)
    scorer = Scorer(network)
    train_set, val_set, test_set = training_rows(load_samples(db, scorer.schema), scorer)
    output = trees_path(network)
    columns = (TextColumn("trees {task.fields[target]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("val loss {task.fields[loss]}"), TimeElapsedColumn())
    lines = ProgressLines(err_console)

    def on_chunk(target: str, trees: int, loss: float) -> None:
        bar.update(task, completed=trees, target=target, loss=f"{loss:.4f}")
        lines(f"trees {target}", trees, max_iter, f"val loss {loss:.4f}")

    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("trees", total=max_iter, target="", loss="")
        trees = GbtBaseline(max_iter=max_iter, threads=threads or None).fit(train_set, val_set, on_chunk=on_chunk)
    report = evaluate(test_set, trees.predict(test_set.X), top_k)
    metrics = {"evaluated_on": f"the test rows of {network.name}", "per_kernel": report}
    trees.save(output, data_hash=train_set.data_hash, metrics=metrics, toolchain=scorer.toolchain)
    record = {"onnx": str(output), "network": str(network), "samples": {"train": len(train_set), "val": len(val_set),
              "test": len(test_set)}, "trees": [m.n_iter_ for m in trees.models], "seconds": round(trees.seconds, 3),
              "data_hash": train_set.data_hash, "metrics": report}
    if as_json:
        emit_json(record)
        return
    console.print(_metrics_table(f"trees on {network.name}'s test rows: {len(test_set)} samples, "
                                 f"{'+'.join(map(str, record['trees']))} trees ({trees.seconds:.1f} s)", report, top_k))
    note(f"wrote {output}")


@model_app.command("finetune")
def finetune_command(
    base: Path = typer.Argument(..., help="trained model: X.onnx (its X.pt checkpoint is used), X.pt or 'shipped'"),
    db: Path = typer.Option(..., "--db", help="dataset store with the new kernel's samples"),
    kernel: str = typer.Option(..., "--kernel", help="the new kernel to transfer to"),
    output: Path = typer.Option(..., "-o", "--output", help="ONNX model to write (checkpoint: same name .pt)"),
    fraction: float = typer.Option(0.01, "--fraction", help="share of the kernel's samples to fine-tune on"),
    minimum: int = typer.Option(8, "--min-samples", help="fine-tune on at least this many samples"),
    freeze: int = typer.Option(6, "--freeze", help="hidden blocks kept frozen (with normalisation and input layer)"),
    epochs: int = typer.Option(FINETUNE_EPOCHS, "--epochs", help="fine-tuning epochs (fixed; no validation split)"),
    fixed_stats: bool = typer.Option(True, "--fixed-stats/--train-stats",
                                     help="keep every BatchNorm's running statistics while tuning"),
    dropout: bool = typer.Option(False, "--dropout/--no-dropout", help="dropout in the tuned blocks"),
    lr: float = typer.Option(1e-3, "--lr", help="Adam learning rate"),
    seed: int = typer.Option(0, "--seed", help="seed of the sample choice, dropout and minibatch order"),
    threads: int | None = typer.Option(None, "--threads", help="torch intra-op threads (default: torch's)"),
    top_k: int = typer.Option(10, "--top-k", help="k of the top-k recall and regret"),
    by_size: bool = typer.Option(False, "--by-size", help="also per problem size of the kernel"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of tables"),
) -> None:
    """Transfer a trained model to a new kernel: freeze the first blocks, fine-tune on a small fraction."""
    from cnmtune.costmodel.learn.checkpoint import load_checkpoint
    from cnmtune.costmodel.learn.cost_model import model_path
    from cnmtune.costmodel.learn.samples import load_samples
    from cnmtune.costmodel.analysis.schema import FeatureSchema
    from cnmtune.costmodel.learn.prediction import evaluate_by_size
    from cnmtune.costmodel.learn.training import finetune, predict

    output = _onnx_path(output)
    base = model_path(base)
    checkpoint = {".onnx": base.with_suffix(".pt"), ".pt": base}.get(base.suffix)
    if checkpoint is None:
        raise UsageError(f"base model {base} must be an .onnx file (with its .pt beside it) or a .pt checkpoint")
    model, meta = load_checkpoint(checkpoint)
    if "schema" not in meta:
        raise CnmtuneError(f"{checkpoint}: checkpoint metadata names no feature schema")
    schema = FeatureSchema.from_dict(meta["schema"])
    samples = load_samples(db, schema).select([kernel])
    try:
        result = finetune(model, samples, fraction, freeze, seed, epochs=epochs, minimum=minimum, lr=lr,
                          threads=threads, k=top_k, fixed_statistics=fixed_stats, dropout=dropout)
    except ValueError as exc:  # e.g. --freeze beyond the model's depth
        raise CnmtuneError(f"cannot fine-tune {checkpoint}: {exc}") from None
    metrics = {"evaluated_on": f"{kernel}: samples not fine-tuned on (seed {seed})",
               "per_kernel": result.metrics}
    new_checkpoint = _save(output, result.model, schema, result.tuned_on.data_hash, metrics, {
        "kernels": [kernel], "base": str(checkpoint), "base_data_hash": meta.get("data_hash"),
        "fraction": fraction, "freeze": freeze, "epochs": epochs, "seed": seed, "fixed_stats": fixed_stats,
        "dropout": dropout})
    record = {"onnx": str(output), "checkpoint": str(new_checkpoint), "base": str(checkpoint), "kernel": kernel,
              "tuned_on": len(result.tuned_on), "evaluated_on": len(result.evaluated_on),
              "seconds": round(result.seconds, 3), "metrics": result.metrics}
    if by_size:  # on the samples not tuned on, as the metrics
        record["metrics_by_size"] = evaluate_by_size(result.evaluated_on, predict(result.model, result.evaluated_on.X),
                                                     top_k)
    if as_json:
        emit_json(record)
        return
    console.print(_metrics_table(
        f"{kernel}: fine-tuned on {len(result.tuned_on)} samples, evaluated on {len(result.evaluated_on)}",
        result.metrics, top_k))
    if by_size:
        console.print(_metrics_table("per size (ranking: every variant of the kernel at one size)",
                                     record["metrics_by_size"], top_k, key="kernel@size"))
    note(f"wrote {output} and {new_checkpoint}")


@model_app.command("evaluate")
def evaluate_command(
    model: Path = typer.Argument(..., help="an ONNX model from `cnmtune model train` or `finetune`, or 'shipped'"),
    db: Path = typer.Option(..., "--db", help="dataset store to evaluate on"),
    kernels: str | None = typer.Option(None, "--kernels", "-k", help="these kernels only (comma-separated)"),
    top_k: int = typer.Option(10, "--top-k", help="k of the top-k recall and regret"),
    threads: int = typer.Option(1, "--threads", help="onnxruntime intra-op threads"),
    plot: Path | None = typer.Option(None, "--plot", help="write PNG plots (per-kernel bars, predicted vs "
                                                         "true) into this directory"),
    by_size: bool = typer.Option(False, "--by-size", help="also per (kernel, size) group"),
    rows: str = typer.Option("all", "--rows", help="all samples, or one part of the split `model train` made: "
                                                   "train, val or test (with its --seed and --split)"),
    seed: int = typer.Option(0, "--seed", help="with --rows: the seed the model was trained with"),
    split: str = typer.Option("row", "--split", help="with --rows: 'row' or 'binary', as the model was trained"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
) -> None:
    """Accuracy and ranking quality of an ONNX model on every sample of a store (or the held-out part of
    its training split, --rows test), per kernel and per configuration (DPUs x tasklets), with
    --by-size per kernel and problem size."""
    from cnmtune.costmodel.learn.cost_model import model_path
    from cnmtune.costmodel.learn.prediction import evaluate, evaluate_by_config, evaluate_by_size
    from cnmtune.costmodel.learn.samples import load_samples
    from cnmtune.costmodel.learn.scorer import Scorer

    parts = ("train", "val", "test")
    if rows not in ("all", *parts) or split not in ("row", "binary"):
        raise UsageError(f"--rows must be all, train, val or test and --split row or binary, not {rows!r} / "
                           f"{split!r}")
    model = model_path(model)
    scorer = Scorer(model, intra_op_threads=threads)
    samples = load_samples(db, scorer.schema).select(_names(kernels))
    if rows != "all":  # the split is drawn per kernel, so a kernel's parts do not depend on the others selected
        samples = samples.split(seed, by_binary=split == "binary")[parts.index(rows)]
    prediction = scorer.predict(samples.X)
    report = evaluate(samples, prediction, top_k)
    by_config = evaluate_by_config(samples, prediction, top_k)
    sizes = evaluate_by_size(samples, prediction, top_k) if by_size else None
    plots = _plots(plot, model, db, samples, prediction, report) if plot is not None else []
    if as_json:
        emit_json({"model": str(model), "db": str(db), "rows": rows, "targets": list(scorer.targets), "metrics": report,
                   "metrics_by_config": by_config, **({"metrics_by_size": sizes} if by_size else {}),
                   "plots": [str(p) for p in plots]})
        return
    which = "" if rows == "all" else f" ({rows} rows of the seed-{seed} {split} split)"
    console.print(_metrics_table(f"{model.name} on {db.name}{which}: {len(samples)} samples", report, top_k))
    console.print(_metrics_table("per configuration (ranking: the pipelines of a kernel at one configuration)",
                                 by_config, top_k, key="DPUs, tasklets"))
    if sizes is not None:
        console.print(_metrics_table("per kernel and size (ranking: every variant of a kernel at one size)",
                                     sizes, top_k, key="kernel@size"))
    for path in plots:
        note(f"wrote {path}")


def _plots(directory: Path, model: Path, db: Path, samples, prediction, report) -> list[Path]:
    """The evaluate command's PNGs: per-kernel metric bars and predicted-vs-true scatters."""
    import numpy as np

    from cnmtune.costmodel.learn import plots

    if directory.exists() and not directory.is_dir():
        raise CnmtuneError(f"--plot {directory} is a file, not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    stem, title = model.name.removesuffix(".onnx"), f"{model.name} on {db.name}"
    written = [plots.kernel_bars(report, directory / f"{stem}_kernels.png", title)]
    true = np.exp(samples.y.astype(np.float64))
    for i, (target, values, label) in enumerate((("runtime", prediction.runtime_s, "kernel seconds"),
                                                  ("speedup", prediction.speedup, "speedup"))):
        if values is not None:
            written.append(plots.predicted_vs_true(true[:, i], values, samples.kernels,
                                                   directory / f"{stem}_{target}.png", title, label))
    return written


@model_app.command("perfvec-train")
def perfvec_train_command(
    db: Path = typer.Option(..., "--db", help="store with re-timings (`cnmtune dataset retime`)"),
    output: Path = typer.Option(..., "-o", "--output", help="model directory to write (blocks.onnx, design.onnx)"),
    exclude: str | None = typer.Option(None, "--exclude", help="leave these kernels out (comma-separated)"),
    dim: int = typer.Option(64, "--dim", help="size of the representations"),
    width: int = typer.Option(128, "--width", help="width of the encoders' hidden layers"),
    depth: int = typer.Option(2, "--depth", help="hidden layers of each encoder"),
    epochs: int = typer.Option(400, "--epochs", help="maximum epochs"),
    patience: int = typer.Option(40, "--patience", help="stop after this many epochs without a better validation loss"),
    seed: int = typer.Option(0, "--seed", help="seed of the validation designs, the weights and the batch order"),
    threads: int | None = typer.Option(None, "--threads", help="torch intra-op threads (default: torch's)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of a table"),
) -> None:
    """Train the PerfVec design model (program x design representations) on exact re-timings;
    report its accuracy on the designs held out for early stopping."""
    import numpy as np

    from cnmtune.costmodel.learn.perfvec import PerfVecConfig, accuracy, predict_log_cycles, train_perfvec
    from cnmtune.costmodel.learn.perfvec_onnx import export_perfvec
    from cnmtune.plugin.sweep.perfvec_data import training_data
    from cnmtune.store import Store

    try:
        config = PerfVecConfig(dim=dim, width=width, depth=depth)
    except ValueError as exc:
        raise UsageError(f"--dim/--width/--depth: {exc}") from None
    with Store(db) as store:
        data, _ = training_data(store)
    left_out = set(_names(exclude) or ())
    data = data.take([i for i, k in enumerate(data.kernels) if k not in left_out], np.arange(len(data.designs)))
    if not data.programs:
        raise CnmtuneError(f"{db}: no program left after --exclude")
    lines = ProgressLines(err_console)
    with Progress(TextColumn("train"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[losses]}"),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("train", total=epochs, losses="")

        def on_epoch(epoch: int, train_loss: float, val_loss: float) -> None:
            losses = f"train {train_loss:.4f}  val {val_loss:.4f}"
            bar.update(task, completed=epoch + 1, losses=losses)
            lines("epoch", epoch + 1, epochs, f"loss {losses}")

        result = train_perfvec(data, config, epochs=epochs, patience=patience, seed=seed, threads=threads,
                               on_epoch=on_epoch)
    held = data.take(np.arange(len(data.programs)), result.val_designs)
    metrics = {"evaluated_on": f"{len(result.val_designs)} validation designs (seed {seed})",
               **accuracy(held.cycles, predict_log_cycles(result.model, held))}
    export_perfvec(result.model, output, data_hash=data.data_hash, metrics=metrics)
    record = {"model": str(output), "config": config.to_dict(), "programs": len(data.programs),
              "designs": len(data.designs), "epochs_run": len(result.train_losses), "best_epoch": result.best_epoch,
              "seconds": round(result.seconds, 3), "data_hash": data.data_hash, "metrics": metrics}
    if as_json:
        emit_json(record)
        return
    console.print(f"{len(data.programs)} programs x {len(data.designs)} designs, best epoch {result.best_epoch + 1} "
                  f"of {len(result.train_losses)} ({result.seconds:.1f} s); on {metrics['evaluated_on']}: "
                  f"MAPE {metrics['mape']:.2f} %, median Kendall tau {metrics['median_tau']:.3f}", highlight=False)
    note(f"wrote {output}")
