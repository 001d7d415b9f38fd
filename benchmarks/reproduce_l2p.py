"""Reproduce the L2P paper's evaluation on cnmtune's reference dataset: JSON + PNGs + one table.

Parts (``--parts``, default all):

- ``indist``   in-distribution, per-kernel 3:1:1 split: one model over all kernels (row split and
               split by binary), one model per kernel (the paper's per-benchmark protocol), the
               GBT and random-ranking baselines, MC-dropout calibration, int8 vs fp32  (Fig. 4)
- ``ablation`` the global model without / with the log-count input layer and the analytical
               prior, and the prior alone, on the split by binary
- ``transfer`` cross-application: for each target kernel a model trained on the other kernels
               (leave-one-out, or ``--transfer-folds K`` kernel folds), evaluated without
               transfer and after fine-tuning on 1 % of the target (first 6 blocks frozen), on
               the same remaining 99 %; per size of the target (a user tunes one size), fine-tuned
               on 1 % of that size's rows and evaluated on its other rows; plus the fine-tuning
               data-fraction sweep (``--fractions``)
- ``zeroshot`` zero-shot ranking: each kernel ranked by ``transfer``'s network that never saw
               it and by gradient-boosted trees fitted on the same rows (``--zeroshot-models``),
               on its variants at its default size on its most DPUs: Kendall tau, and whether
               the model's top 10 holds a variant within 5 % of the best; the same for the
               static heuristic (no learning) and, over several folds, for the network blended
               with it (inverse-variance weights measured on the other folds)
- ``pairwise`` train-kernel x target-kernel MAPE matrix with (Fig. 5) and without (Fig. 6)
               transfer, sources = the per-kernel models of ``indist`` over ``--pairwise``
- ``times``    training, fine-tuning and prediction times (Figs. 8-9)

    python benchmarks/reproduce_l2p.py [--data out/reference.sqlite] [--out benchmarks/results]
        [--kernels va,red,...] [--pairwise va,gemv,...] [--parts indist,transfer,...]
        [--epochs 300] [--transfer-folds 20] [--folds 1,2] [--zeroshot-models network,gbt]
        [--fractions none] [--cache DIR]
        [--threads 1] [--quick]

``--quick`` is a smoke run (small network, few epochs): the numbers mean nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import script_io
import torch
from rich.console import Console

from cnmtune.atomic import atomic_write
from cnmtune.costmodel.learn import plots
from cnmtune.costmodel.learn.baselines import AnalyticalBaseline, GbtBaseline, RandomBaseline
from cnmtune.costmodel.learn.model import TRANSFER_FROZEN, L2PConfig, L2PModel
from cnmtune.costmodel.learn.onnx_export import export_onnx, quantize_model
from cnmtune.costmodel.learn.prediction import Prediction, evaluate
from cnmtune.costmodel.learn.recipe import FINETUNE_EPOCHS, MODEL_DEFAULTS, TRAIN_DEFAULTS
from cnmtune.costmodel.learn.samples import TARGETS, SampleSet, load_samples
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.learn.training import finetune, predict, train
from cnmtune.costmodel.learn.uncertainty import fit_std_scale, interval_coverage, mc_dropout_predict
from cnmtune.display import Table
from cnmtune.plugin.cli.output import ProgressLines

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "cnmtune" / "data" / "reference.parquet"
FRACTIONS = (0.001, 0.005, 0.01, 0.05, 0.1)
#: zeroshot: a kernel's top 10 counts when it holds a variant this close to the best (issue 40: 5 %)
ZERO_SHOT_WITHIN = 0.05
#: zeroshot: the fold models it ranks with (--zeroshot-models): transfer's networks, trees on the same rows
ZERO_SHOT_MODELS = ("network", "gbt")
#: Fewest rows to fine-tune on in the per-size transfer (the fine-tuning default).
ONE_SIZE_MINIMUM = 8
PARTS = ("indist", "ablation", "transfer", "zeroshot", "pairwise", "times")
#: Default subset of the pairwise matrix: one kernel per PrIM/PIM-ML behaviour class
#: (streaming, reduction, scan, histogram, dense and sparse linear algebra, graph, transpose,
#: dynamic programming, ML training).
PAIRWISE = ("va", "red", "scan-ssa", "hst-s", "gemv", "spmv", "bfs", "trns", "nw", "lirq")
console = Console()


def _summary(report: dict) -> dict:
    """Means over kernels (not over samples: every kernel counts once, as in the paper)."""
    kernels = [k for k in report if k != "all"]

    def mean(metric: str) -> float | None:
        values = [report[k][metric] for k in kernels if report[k].get(metric) is not None]
        return float(np.mean(values)) if values else None

    r2 = [report[k]["runtime_r2"] for k in kernels if report[k].get("runtime_r2") is not None]
    return {"runtime_mape": mean("runtime_mape"), "speedup_mape": mean("speedup_mape"),
            "runtime_r2_mean": float(np.mean(r2)) if r2 else None, "runtime_r2_min": min(r2) if r2 else None,
            "tau": mean("tau"), "top10_regret": mean("top10_regret"), "top10_recall": mean("top10_recall"),
            "kernels": len(kernels)}


class Run:
    """Options, data and the growing result record of one reproduction."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out: Path = args.out
        self.out.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        samples = load_samples(args.data)
        self.samples = samples.select(args.kernels) if args.kernels else samples
        self.load_seconds = time.perf_counter() - start
        self.config = L2PConfig(**{**MODEL_DEFAULTS, **({"depth": 2, "width": 64} if args.quick else {})})
        self.freeze = min(TRANSFER_FROZEN, self.config.depth // 2)
        self.train_kwargs = {**TRAIN_DEFAULTS, "epochs": args.epochs, "threads": args.threads, "seed": args.seed}
        if args.patience is not None:
            self.train_kwargs["patience"] = args.patience
        self.finetune_kwargs = {"epochs": args.finetune_epochs, "threads": args.threads}
        self.result: dict = {"data": str(args.data), "data_hash": self.samples.data_hash,
                             "samples": len(self.samples),
                             "kernels": self.samples.kernel_names, "config": self.config.to_dict(),
                             "train": {k: v for k, v in self.train_kwargs.items() if k != "threads"},
                             "finetune": {"fraction": 0.01, "freeze": self.freeze, **self.finetune_kwargs},
                             "seed": args.seed, "threads": args.threads, "quick": args.quick}
        self.per_kernel_models: dict = {}
        self.times: dict[str, float] = {}
        self.png: list[str] = []

    def log(self, text: str) -> None:
        console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {text}", highlight=False)

    def train(self, train_set: SampleSet, val_set: SampleSet, config: L2PConfig | None = None, **override):
        options = {**self.train_kwargs, **override}
        lines = ProgressLines(console, always=True)

        def on_epoch(epoch: int, train_loss: float, val_loss: float) -> None:
            lines("  epoch", epoch + 1, options["epochs"], f"loss train {train_loss:.4f}  val {val_loss:.4f}")

        return train(config or self.config, train_set, val_set, on_epoch=on_epoch, **options)

    def cached(self, name: str, settings, train_set: SampleSet, val_set: SampleSet,
               suffix: str) -> tuple[Path, str] | None:
        """Where ``--cache`` keeps the model ``name`` trained with ``settings`` on these sets (None
        without ``--cache``), and the key it is kept under."""
        if self.args.cache is None:
            return None
        key = json.dumps([settings, train_set.data_hash, val_set.data_hash], sort_keys=True)
        self.args.cache.mkdir(parents=True, exist_ok=True)
        return self.args.cache / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}{suffix}", key

    def trained_model(self, name: str, train_set: SampleSet, val_set: SampleSet, **override):
        """A model trained as ``train`` would, read from ``--cache`` when an identical training
        (same config, options and data) was saved there; (model, training seconds)."""
        settings = [self.config.to_dict(), {**self.train_kwargs, **override, "threads": None}]
        if (cached := self.cached(name, settings, train_set, val_set, ".pt")) is None:
            result = self.train(train_set, val_set, **override)
            return result.model, result.seconds
        from cnmtune.costmodel.learn.checkpoint import load_checkpoint, save_checkpoint

        path, key = cached
        if path.is_file():
            model, meta = load_checkpoint(path)
            return model, meta["seconds"]
        result = self.train(train_set, val_set, **override)
        save_checkpoint(path, result.model, {"seconds": result.seconds, "key": json.loads(key)})
        return result.model, result.seconds

    def gbt(self) -> GbtBaseline:
        """The gradient-boosted-tree baseline as every part fits it (fewer trees with --quick)."""
        return GbtBaseline(seed=self.args.seed, max_iter=60 if self.args.quick else 1000, threads=self.args.threads)

    def fitted_gbt(self, name: str, train_set: SampleSet, val_set: SampleSet) -> GbtBaseline:
        """``gbt()`` fitted on these sets, read from ``--cache`` (an ONNX tree ensemble) when an
        identical fit was saved there."""
        gbt = self.gbt()
        settings = {"gbt": {"max_iter": gbt.max_iter, "learning_rate": gbt.learning_rate,
                            "max_leaf_nodes": gbt.max_leaf_nodes, "seed": gbt.seed}}
        cached = self.cached(name, settings, train_set, val_set, ".onnx")
        if cached is not None and cached[0].is_file():
            return GbtBaseline.load(cached[0], expect_schema_hash=train_set.schema.hash)
        gbt.fit(train_set, val_set)
        if cached is not None:
            gbt.save(cached[0])
        return gbt

    @property
    def path(self) -> Path:
        """The JSON record of this output directory."""
        return self.out / "reproduce_l2p.json"

    def recorded(self) -> dict:
        """The record an earlier run left in the output directory ({} with --fresh or none)."""
        if self.args.fresh or not self.path.is_file():
            return {}
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def save(self) -> Path:
        """Write the record; parts of an earlier run in the same directory that this run did not
        redo are kept (so parts can run separately, e.g. in parallel processes)."""
        path, merged = self.path, self.recorded()
        merged.update({k: v for k, v in self.result.items() if k not in ("times_seconds", "pngs")})
        merged["times_seconds"] = {**merged.get("times_seconds", {}), **self.times}
        merged["pngs"] = sorted(set(merged.get("pngs", [])) | set(self.png))
        atomic_write(path, (json.dumps(merged, indent=1, sort_keys=True, default=float) + "\n").encode())
        self.merged = merged
        return path


# -- in-distribution ------------------------------------------------------------------------

def indist(run: Run) -> None:
    samples, out, record = run.samples, run.out, {}
    for split_name, by_binary in (("row", False), ("binary", True)):
        train_set, val_set, test_set = samples.split(run.args.seed, by_binary=by_binary)
        run.log(f"global model, {split_name} split: {len(train_set)} train / {len(val_set)} val / {len(test_set)} test")
        result = run.train(train_set, val_set)
        report = evaluate(test_set, predict(result.model, test_set.X))
        record[f"global_{split_name}"] = {"config": run.config.to_dict(), "summary": _summary(report),
                                          "per_kernel": report,
                                          "epochs_run": len(result.train_losses), "best_epoch": result.best_epoch,
                                          "seconds": result.seconds}
        run.times[f"train global ({len(train_set)} samples)"] = result.seconds
        run.png.append(str(plots.kernel_bars(report, out / f"l2p_fig4_global_{split_name}.png",
                                             f"one model over all kernels, test split ({split_name})")))
        gbt = run.gbt().fit(train_set, val_set)
        gbt_report = evaluate(test_set, gbt.predict(test_set.X))
        record[f"gbt_{split_name}"] = {"summary": _summary(gbt_report), "per_kernel": gbt_report,
                                       "seconds": gbt.seconds, "trees": [m.n_iter_ for m in gbt.models]}
        run.times[f"train GBT baseline ({len(train_set)} samples)"] = gbt.seconds
        random_report = evaluate(test_set, RandomBaseline(run.args.seed).predict(test_set.X))
        record[f"random_{split_name}"] = {"summary": _summary(random_report)}
        if split_name == "row":
            record["mc_dropout"] = mc_dropout(run, result.model, val_set, test_set, 4 if run.args.quick else 30)
            record["int8"] = int8(run, result.model, test_set)
        run.log(f"  L2P {_fmt(record[f'global_{split_name}']['summary'])}")
        run.log(f"  GBT {_fmt(record[f'gbt_{split_name}']['summary'])}")

    # the paper's protocol: one model per benchmark
    for split_name, by_binary in (("row", False), ("binary", True)):
        if by_binary and not run.args.per_kernel_binary:
            continue
        report, seconds, epochs = {}, [], []
        for kernel in samples.kernel_names:
            train_set, val_set, test_set = samples.select([kernel]).split(run.args.seed, by_binary=by_binary)
            result = run.train(train_set, val_set, batch_size=run.args.per_kernel_batch)
            report[kernel] = evaluate(test_set, predict(result.model, test_set.X))[kernel]
            seconds.append(result.seconds)
            epochs.append(len(result.train_losses))
            if not by_binary:
                run.per_kernel_models[kernel] = result.model
            run.log(f"  per-kernel {split_name} {kernel}: runtime MAPE {report[kernel]['runtime_mape']:.2f} %, "
                    f"R² {report[kernel]['runtime_r2']:.3f}, {result.seconds:.0f} s")
        record[f"per_kernel_{split_name}"] = {"summary": _summary(report), "per_kernel": report,
                                              "seconds": seconds, "epochs_run": epochs}
        run.times[f"train one kernel (mean of {len(seconds)})"] = float(np.mean(seconds))
        run.png.append(str(plots.kernel_bars(report, out / f"l2p_fig4_per_kernel_{split_name}.png",
                                             f"one model per kernel, test split ({split_name})")))
        run.log(f"  per-kernel {split_name}: {_fmt(record[f'per_kernel_{split_name}']['summary'])}")
    run.result["in_distribution"] = record


def mc_dropout(run: Run, model, val_set: SampleSet, test_set: SampleSet, passes: int = 30) -> dict:
    """Coverage of the 90 % MC-dropout interval on the test split, raw and with the std scale
    fitted on the validation split; accuracy of the MC mean against the deterministic pass."""
    start = time.perf_counter()
    val = mc_dropout_predict(model, val_set.X, passes, seed=run.args.seed)
    test = mc_dropout_predict(model, test_set.X, passes, seed=run.args.seed + 1)
    seconds = time.perf_counter() - start
    record = {"passes": passes, "seconds_val_and_test": seconds}
    for i, target in enumerate(model.config.targets):
        scale = fit_std_scale(val_set.y[:, i], val.mean[:, i], val.std[:, i], 0.9)
        record[target] = {
            "coverage90_raw": interval_coverage(test_set.y[:, i], test.mean[:, i], test.std[:, i], 0.9),
            "std_scale_from_val": scale,
            "coverage90_recalibrated": interval_coverage(test_set.y[:, i], test.mean[:, i], test.std[:, i], 0.9,
                                                         scale),
            "median_std_log": float(np.median(test.std[:, i])),
            "spearman_error_vs_std": float(_spearman(np.abs(test_set.y[:, i] - test.mean[:, i]), test.std[:, i])),
        }
    from cnmtune.costmodel.learn.prediction import Prediction

    mc_report = evaluate(test_set, Prediction(test.mean.astype(np.float32), model.config.targets))
    record["mc_mean_summary"] = _summary(mc_report)
    run.log(f"  MC dropout: runtime coverage {record['runtime']['coverage90_raw']:.3f} raw, "
            f"{record['runtime']['coverage90_recalibrated']:.3f} recalibrated")
    return record


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from cnmtune.costmodel.learn.metrics import spearman_rho

    return spearman_rho(a, b)


def int8(run: Run, model, test_set: SampleSet) -> dict:
    """Test-split metrics of the exported fp32 model and of its int8 companion."""
    with tempfile.TemporaryDirectory(prefix="cnmtune-repro-") as tmp:
        path = export_onnx(model, Path(tmp) / "m.onnx", schema=test_set.schema, toolchain_kind="proxy",
                           llvm_version="n/a", data_hash="reproduce")
        q_path = quantize_model(path)
        fp32, q8 = Scorer(path), Scorer(q_path)
        record = {}
        for name, scorer in (("fp32", fp32), ("int8", q8)):
            prediction = scorer.predict(test_set.X)
            record[name] = _summary(evaluate(test_set, prediction))
            record[f"{name}_bytes"] = (path if name == "fp32" else q_path).stat().st_size
            X = np.ascontiguousarray(np.tile(test_set.X, (-(-10_000 // len(test_set.X)), 1))[:10_000])
            scorer.predict(X)
            best = min(_timed(scorer.predict, X) for _ in range(5))
            record[f"{name}_variants_per_second"] = 10_000 / best
            run.times[f"ONNX {name} scoring, 10,000 variants"] = best
        record["runtime_mape_delta"] = record["int8"]["runtime_mape"] - record["fp32"]["runtime_mape"]
        record["speedup_mape_delta"] = record["int8"]["speedup_mape"] - record["fp32"]["speedup_mape"]
        record["max_abs_log_diff"] = float(np.abs(q8.predict(test_set.X).log_targets
                                                  - fp32.predict(test_set.X).log_targets).max())
    run.log(f"  int8: runtime MAPE {record['fp32']['runtime_mape']:.3f} -> {record['int8']['runtime_mape']:.3f} %, "
            f"{record['fp32_variants_per_second']:.0f} -> {record['int8_variants_per_second']:.0f} variants/s")
    return record


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


# -- ablation -------------------------------------------------------------------------------

def ablation(run: Run) -> None:
    """The global model on the split by binary with the fixed input layers switched on in turn.

    The variant equal to the default configuration reuses ``indist``'s global binary-split
    model when that part ran (in this or an earlier run with the same output directory)."""
    train_set, val_set, test_set = run.samples.split(run.args.seed, by_binary=True)
    base = run.config.to_dict()
    variants = {
        "paper (raw inputs)": L2PConfig(**{**base, "log_inputs": False, "prior": False}),
        "+ log inputs": L2PConfig(**{**base, "log_inputs": True, "prior": False}),
        "+ log inputs + prior": L2PConfig(**{**base, "log_inputs": True, "prior": True}),
    }
    earlier = _earlier(run).get("in_distribution", {}).get("global_binary")
    record = {}
    for name, config in variants.items():
        if earlier is not None and config == run.config and earlier.get("config") == config.to_dict():
            record[name] = {**earlier, "reused": "in_distribution.global_binary"}
        else:
            result = run.train(train_set, val_set, config)
            report = evaluate(test_set, predict(result.model, test_set.X))
            record[name] = {"config": config.to_dict(), "summary": _summary(report), "per_kernel": report,
                            "epochs_run": len(result.train_losses), "seconds": result.seconds}
        run.log(f"  ablation {name}: {_fmt(record[name]['summary'])}")
    prior_only = AnalyticalBaseline().fit(train_set)
    record["prior alone (fitted line)"] = {"summary": _summary(evaluate(test_set, prior_only.predict(test_set.X)))}
    run.log(f"  ablation prior alone: {_fmt(record['prior alone (fitted line)']['summary'])}")
    run.result["ablation"] = {"split": "binary", "variants": record}


def _earlier(run: Run) -> dict:
    """This run's record merged over the JSON of an earlier run in the output directory."""
    return {**run.recorded(), **run.result}


# -- cross-application transfer -------------------------------------------------------------

def _folds(kernels: list[str], count: int, seed: int) -> list[list[str]]:
    count = max(1, min(count, len(kernels)))
    if count == len(kernels):
        return [[k] for k in kernels]
    order = np.random.default_rng(seed).permutation(kernels).tolist()
    return [sorted(order[i::count]) for i in range(count)]


def _chosen(folds: list[list[str]], numbers: list[int] | None) -> list[list[str]]:
    """The folds numbered ``numbers`` (1-based; all when None)."""
    if numbers is None:
        return folds
    wrong = [n for n in numbers if not 1 <= n <= len(folds)]
    if wrong:
        raise SystemExit(f"--folds {','.join(map(str, wrong))}: there are folds 1..{len(folds)}")
    return [folds[n - 1] for n in sorted(set(numbers))]


def _transfer_folds(run: Run) -> list[list[str]]:
    """The kernel folds this run trains on the others of (``--transfer-folds``, ``--folds``)."""
    names = run.samples.kernel_names
    return _chosen(_folds(names, run.args.transfer_folds or len(names), run.args.seed), run.args.folds)


def _fold_model(run: Run, fold: list[str]) -> tuple[SampleSet, L2PModel, float]:
    """The rows of every kernel but ``fold``'s, and the network trained on them (read from
    ``--cache`` when there): (source rows, model, training seconds)."""
    run.log(f"  fold without {', '.join(fold)}")
    source = run.samples.select(exclude=fold)
    train_set, val_set, _ = source.split(run.args.seed)
    model, seconds = run.trained_model("without-" + "+".join(fold), train_set, val_set)
    return source, model, seconds


def transfer(run: Run) -> None:
    samples, seed, fractions = run.samples, run.args.seed, run.args.fractions
    folds = _transfer_folds(run)
    per_kernel, per_size, sweep, train_seconds, tune_seconds = {}, {}, {}, [], []
    for fold in folds:
        source, model, seconds = _fold_model(run, fold)
        train_seconds.append(seconds)
        for kernel in fold:
            target = samples.select([kernel])
            tuned = finetune(model, target, 0.01, run.freeze, seed, **run.finetune_kwargs)
            tune_seconds.append(tuned.seconds)
            rest = tuned.evaluated_on
            without = evaluate(rest, predict(model, rest.X))[kernel]
            per_kernel[kernel] = {"with_transfer": tuned.metrics[kernel], "without_transfer": without,
                                  "tuned_on": len(tuned.tuned_on), "evaluated_on": len(rest),
                                  "finetune_seconds": tuned.seconds, "trained_on": sorted(set(source.kernel_names))}
            for size in sorted(set(target.sizes.tolist())):  # a user tunes one size: 1 % of it
                if np.count_nonzero(target.sizes == size) < 2 * ONE_SIZE_MINIMUM:
                    continue  # too few rows to tune on 8 and judge on the rest
                at_size = finetune(model, target.take(target.sizes == size), 0.01, run.freeze, seed,
                                   minimum=ONE_SIZE_MINIMUM, **run.finetune_kwargs)
                per_size.setdefault(kernel, {})[str(size)] = {"tuned_on": len(at_size.tuned_on),
                                                              **at_size.metrics[kernel]}
            for fraction in fractions:
                # minimum 2 (BatchNorm needs a pair): 0.1 % of a 1,560-sample kernel is 2 samples
                swept = finetune(model, target, fraction, run.freeze, seed, minimum=2,
                                 **run.finetune_kwargs)
                sweep.setdefault(kernel, {})[str(fraction)] = {"samples": len(swept.tuned_on),
                                                               **swept.metrics[kernel]}
            run.log(f"  transfer -> {kernel}: runtime MAPE {without['runtime_mape']:.1f} % without, "
                    f"{tuned.metrics[kernel]['runtime_mape']:.2f} % with (tuned on {len(tuned.tuned_on)}, "
                    f"{tuned.seconds:.1f} s)")
    kernels = sorted(per_kernel)

    def mean(kind: str, metric: str) -> float:
        return float(np.mean([per_kernel[k][kind][metric] for k in kernels if per_kernel[k][kind][metric] is not None]))

    summary = {kind: {m: mean(kind, m) for m in ("runtime_mape", "speedup_mape", "tau", "top10_regret")}
               for kind in ("with_transfer", "without_transfer")}
    groups = [group for sizes in per_size.values() for group in sizes.values()]
    largest = [sizes[max(sizes, key=int)] for sizes in per_size.values()]
    summary["one_size"] = {f"{m}_{which}": float(np.mean([g[m] for g in chosen if g[m] is not None]))
                           for m in ("runtime_mape", "tau") for which, chosen in (("all", groups), ("largest", largest))}
    sweep_mean = {str(f): {m: float(np.mean([sweep[k][str(f)][m] for k in kernels]))
                           for m in ("runtime_mape", "speedup_mape", "tau", "samples")} for f in fractions}
    run.result["transfer"] = {
        "protocol": ("leave-one-kernel-out" if all(len(f) == 1 for f in folds)
                     else f"{len(folds)} kernel folds (train on the other folds)"),
        "folds": folds, "summary": summary, "per_kernel": per_kernel, "per_size": per_size, "fraction_sweep": sweep,
        "fraction_sweep_mean": sweep_mean, "train_seconds": train_seconds, "finetune_seconds": tune_seconds}
    run.times[f"train on the other kernels (mean of {len(train_seconds)})"] = float(np.mean(train_seconds))
    run.times["fine-tune on 1 % of a kernel (mean)"] = float(np.mean(tune_seconds))
    matrix = np.array([[per_kernel[k]["without_transfer"]["runtime_mape"], per_kernel[k]["with_transfer"]["runtime_mape"]]
                       for k in kernels])
    run.png.append(str(plots.heatmap(matrix.T, ["without transfer", "with transfer (1 %)"], kernels,
                                     run.out / "l2p_loo_transfer.png",
                                     "trained on the other kernels -> target kernel, runtime MAPE %")))
    if fractions:
        curves = {"mean over kernels": [sweep_mean[str(f)]["runtime_mape"] for f in fractions]}
        curves.update({k: [sweep[k][str(f)]["runtime_mape"] for f in fractions] for k in kernels[:6]})
        run.png.append(str(plots.fraction_sweep(fractions, curves, run.out / "l2p_fraction_sweep.png",
                                                "transfer: fine-tuning data fraction")))
    run.log(f"  transfer mean runtime MAPE: {summary['with_transfer']['runtime_mape']:.2f} % with, "
            f"{summary['without_transfer']['runtime_mape']:.1f} % without; tuned on 1 % of one size: "
            f"{summary['one_size']['runtime_mape_all']:.2f} % over (kernel, size) groups")


def _ranking(variants: SampleSet, prediction, kernel: str) -> dict:
    """How a prediction ranks one kernel's variants: Kendall tau, the best of its 10 fastest
    against the best (regret), whether that is within ZERO_SHOT_WITHIN, and its runtime MAPE."""
    metrics = evaluate(variants, prediction)[kernel]
    regret = metrics["top10_regret"]
    return {"tau": metrics["tau"], "top10_regret": regret,
            "top10_within": regret is not None and regret <= ZERO_SHOT_WITHIN, "runtime_mape": metrics["runtime_mape"]}


def _ranking_text(ranking: dict) -> str:
    tau = "-" if ranking["tau"] is None else f"{ranking['tau']:.3f}"
    return f"τ {tau}, the top 10's best {100 * (ranking['top10_regret'] or 0):.1f} % off the best"


def _ranking_summary(rankings: list[dict]) -> dict:
    taus = [r["tau"] for r in rankings if r["tau"] is not None]
    return {"median_tau": float(np.median(taus)) if taus else None,
            "top10_within": sum(r["top10_within"] for r in rankings)}


def _centred_variance(log_errors: list[np.ndarray]) -> float:
    """The mean over kernels of the variance of a model's log errors around the kernel's own mean
    error: a model off by one factor on a whole kernel still orders its variants perfectly."""
    return float(np.mean([np.mean((e - e.mean()) ** 2) for e in log_errors]))


def _prior_weight(network_errors: list[np.ndarray], prior_errors: list[np.ndarray]) -> float:
    """The prior's inverse-variance weight in a log-space blend with the network: the network's
    centred error variance over the sum of both."""
    network, prior = _centred_variance(network_errors), _centred_variance(prior_errors)
    return network / (network + prior) if network + prior > 0 else 0.0


def _blend(network: Prediction, prior: Prediction, weight: float) -> Prediction:
    """The network's log runtimes moved by ``weight`` toward the prior's, the prior first put on the
    network's scale (the median log ratio over these variants)."""
    log_network, log_prior = np.log(network.runtime_s), np.log(prior.runtime_s)
    log_prior -= np.median(log_prior - log_network)
    blended = network.log_targets.copy()
    blended[:, network.targets.index("runtime")] = log_network + weight * (log_prior - log_network)
    return Prediction(blended, network.targets)


def _fold_gbt(run: Run, fold: list[str]) -> GbtBaseline:
    """The gradient-boosted trees fitted on the rows ``_fold_model``'s network trains on (read from
    ``--cache`` when there)."""
    train_set, val_set, _ = run.samples.select(exclude=fold).split(run.args.seed)
    start = time.perf_counter()
    gbt = run.fitted_gbt("gbt-without-" + "+".join(fold), train_set, val_set)
    run.log(f"  trees without {', '.join(fold)}: {time.perf_counter() - start:.0f} s")
    return gbt


def zeroshot(run: Run) -> None:
    """Each kernel ranked, nothing fine-tuned, by the models of the fold that left it out
    (``--zeroshot-models``: ``transfer``'s network, the gradient-boosted trees fitted on the same
    rows), on its variants at its largest (default) size on the most DPUs it ran at there, the
    tuner's setting: Kendall tau, and whether the model's 10 fastest hold a variant within
    ZERO_SHOT_WITHIN of the best (issue 40). Beside them, the static heuristic that learns nothing
    (tune --model analytical, the ablation's heuristic arm), and with the network and more than
    one fold the two blended: log times averaged with the prior's inverse-variance weight,
    measured for each fold on the other folds' kernels (no kernel's own errors weigh its blend)."""
    heuristic = AnalyticalBaseline.static(run.samples.schema)
    folds = _transfer_folds(run)
    models = run.args.zeroshot_models
    scored = {}  # kernel -> (fold, variants, {model: its prediction})
    for number, fold in enumerate(folds):
        fitted = {}
        if "network" in models:
            network = _fold_model(run, fold)[1]
            fitted["network"] = lambda X, network=network: predict(network, X)
        if "gbt" in models:
            fitted["gbt"] = _fold_gbt(run, fold).predict
        fitted["heuristic"] = heuristic.predict
        for kernel in fold:
            target = run.samples.select([kernel])
            at_size = target.take(target.sizes == target.sizes.max())
            variants = at_size.take(at_size.dpus == at_size.dpus.max())
            scored[kernel] = (number, variants, {name: model(variants.X) for name, model in fitted.items()})
    blend = "network" in models and len(folds) > 1
    errors = {}
    for kernel, (_, variants, predicted) in scored.items():
        log_true = variants.y[:, TARGETS.index("runtime")].astype(np.float64)
        errors[kernel] = {name: np.log(p.runtime_s) - log_true for name, p in predicted.items()}

    def weight_without(number: int | None) -> float:
        kernels = [k for k, (n, *_) in scored.items() if n != number]
        return _prior_weight([errors[k]["network"] for k in kernels], [errors[k]["heuristic"] for k in kernels])

    per_kernel = {}
    for kernel, (number, variants, predicted) in scored.items():
        found = {"size": int(variants.sizes[0]), "dpus": int(variants.dpus[0]), "variants": len(variants),
                 **{name: _ranking(variants, p, kernel) for name, p in predicted.items()}}
        if blend:
            weight = weight_without(number)
            mixed = _blend(predicted["network"], predicted["heuristic"], weight)
            found["blend"] = {**_ranking(variants, mixed, kernel), "prior_weight": weight}
        per_kernel[kernel] = found
        text = "; ".join(f"{name}: {_ranking_text(found[name])}" for name in (*predicted, "blend") if name in found)
        run.log(f"  zero-shot {kernel}: {len(variants)} variants at size {variants.sizes[0]} on "
                f"{variants.dpus[0]} DPUs; {text}")
    kernels = sorted(per_kernel)
    run.result["zeroshot"] = {
        "within": ZERO_SHOT_WITHIN, "kernels": len(per_kernel), "per_kernel": {k: per_kernel[k] for k in kernels},
        **{name: _ranking_summary([per_kernel[k][name] for k in kernels])
           for name in (*models, "heuristic", "blend") if name in per_kernel[kernels[0]]}}
    if blend:
        run.result["zeroshot"]["blend"]["prior_weight_all_folds"] = weight_without(None)


def pairwise(run: Run) -> None:
    """Source = a per-kernel model of ``indist``; target = another kernel of the subset."""
    kernels = [k for k in (run.args.pairwise or PAIRWISE) if k in run.samples.kernel_names]
    missing = [k for k in kernels if k not in run.per_kernel_models]
    for kernel in missing:  # pairwise without indist: train the source models here
        train_set, val_set, _ = run.samples.select([kernel]).split(run.args.seed)
        run.per_kernel_models[kernel] = run.trained_model(f"only-{kernel}", train_set, val_set,
                                                          batch_size=run.args.per_kernel_batch)[0]
    n = len(kernels)
    with_t, without_t = np.full((n, n), np.nan), np.full((n, n), np.nan)
    for j, target_name in enumerate(kernels):
        target = run.samples.select([target_name])
        for i, source_name in enumerate(kernels):
            model = run.per_kernel_models[source_name]
            tuned = finetune(model, target, 0.01, run.freeze, run.args.seed, **run.finetune_kwargs)
            rest = tuned.evaluated_on
            with_t[i, j] = tuned.metrics[target_name]["runtime_mape"]
            without_t[i, j] = evaluate(rest, predict(model, rest.X))[target_name]["runtime_mape"]
    off = ~np.eye(n, dtype=bool)
    run.result["pairwise"] = {"kernels": kernels, "with_transfer": with_t.tolist(), "without_transfer": without_t.tolist(),
                              "mean_off_diagonal_with": float(np.mean(with_t[off])) if n > 1 else None,
                              "mean_off_diagonal_without": float(np.mean(without_t[off])) if n > 1 else None,
                              # a source model that extrapolates to 1e300 % dominates a mean
                              "median_off_diagonal_with": float(np.median(with_t[off])) if n > 1 else None,
                              "median_off_diagonal_without": float(np.median(without_t[off])) if n > 1 else None,
                              "note": "diagonal: the source kernel's own model fine-tuned on 1 % of itself"}
    run.png.append(str(plots.heatmap(with_t, kernels, kernels, run.out / "l2p_fig5_transfer.png",
                                     "runtime MAPE %, fine-tuned on 1 % of the target")))
    run.png.append(str(plots.heatmap(without_t, kernels, kernels, run.out / "l2p_fig6_no_transfer.png",
                                     "runtime MAPE %, without transfer")))
    run.log(f"  pairwise over {n} kernels: median off-diagonal runtime MAPE "
            f"{run.result['pairwise']['median_off_diagonal_with']:.1f} % with, "
            f"{run.result['pairwise']['median_off_diagonal_without']:.1f} % without transfer")


def times(run: Run) -> None:
    """Prediction times (torch, one thread) on top of the training / fine-tuning times measured."""
    train_set, val_set, test_set = run.samples.split(run.args.seed)
    model = next(iter(run.per_kernel_models.values()), None)
    if model is None:
        model = run.train(train_set, val_set, epochs=1).model
    X = np.ascontiguousarray(np.tile(test_set.X, (-(-10_000 // len(test_set.X)), 1))[:10_000])
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        predict(model, X)
        run.times["torch prediction, 10,000 variants, 1 thread"] = min(_timed(predict, model, X) for _ in range(3))
    finally:
        torch.set_num_threads(previous)
    measured = {**_earlier(run).get("times_seconds", {}), **run.times}  # parts run in other processes too
    run.png.append(str(plots.time_bars(measured, run.out / "l2p_fig8_9_times.png",
                                       "training, fine-tuning and prediction times")))


def _fmt(summary: dict) -> str:
    value = lambda k, p: "-" if summary.get(k) is None else format(summary[k], p)
    return (f"runtime MAPE {value('runtime_mape', '.2f')} %, speedup MAPE {value('speedup_mape', '.2f')} %, "
            f"R² min {value('runtime_r2_min', '.3f')}, τ {value('tau', '.3f')}, "
            f"top-10 regret {value('top10_regret', '.4f')}")


def headline(r: dict) -> Table:
    """The must-show numbers of a result record against their targets."""
    table = Table(title="L2P reproduction: headline numbers")
    for column in ("measure", "value", "target"):
        table.add_column(column, justify="right" if column != "measure" else "left")
    pct = lambda v: "-" if v is None else f"{v:.2f} %"
    num = lambda v: "-" if v is None else f"{v:.3f}"
    ind = r.get("in_distribution", {})
    for key, label in (("per_kernel_row", "per-kernel models, row split"), ("global_row", "global model, row split"),
                       ("global_binary", "global model, split by binary"), ("per_kernel_binary",
                                                                            "per-kernel models, split by binary"),
                       ("gbt_row", "GBT baseline, row split"), ("gbt_binary", "GBT baseline, split by binary")):
        if key in ind:
            s = ind[key]["summary"]
            table.add_row(f"{label}: runtime MAPE", pct(s["runtime_mape"]), "<= 5 %")
            table.add_row(f"{label}: speedup MAPE", pct(s["speedup_mape"]), "<= 5 %")
            table.add_row(f"{label}: min R² over kernels", num(s["runtime_r2_min"]), ">= 0.9")
            table.add_row(f"{label}: Kendall τ", num(s["tau"]), ">= 0.8")
            table.add_row(f"{label}: top-10 regret", pct(100 * s["top10_regret"] if s["top10_regret"] is not None
                                                         else None), "")
            table.add_section()
    for key in ("random_row",):
        if key in ind:
            table.add_row("random ranking: Kendall τ", num(ind[key]["summary"]["tau"]), "")
            table.add_row("random ranking: top-10 regret", pct(100 * ind[key]["summary"]["top10_regret"]), "")
    if "mc_dropout" in ind:
        mc = ind["mc_dropout"]["runtime"]
        table.add_row("MC dropout 90 % interval coverage (raw / recal.)",
                      f"{mc['coverage90_raw']:.3f} / {mc['coverage90_recalibrated']:.3f}", "0.9")
    if "int8" in ind:
        table.add_row("int8 - fp32 runtime MAPE", f"{ind['int8']['runtime_mape_delta']:+.3f} pp", "")
        table.add_row("int8 scoring", f"{ind['int8']['int8_variants_per_second']:,.0f} /s", ">= 100,000 /s")
    if "transfer" in r:
        t = r["transfer"]["summary"]
        table.add_section()
        table.add_row(f"transfer ({r['transfer']['protocol']}), 1 %: runtime MAPE",
                      pct(t["with_transfer"]["runtime_mape"]), "<= 10 %")
        table.add_row("transfer, 1 %: speedup MAPE", pct(t["with_transfer"]["speedup_mape"]), "")
        table.add_row("without transfer: runtime MAPE", pct(t["without_transfer"]["runtime_mape"]), "")
        if "one_size" in t:
            table.add_row("transfer, 1 % of one size: runtime MAPE (all sizes / largest)",
                          f"{pct(t['one_size']['runtime_mape_all'])} / {pct(t['one_size']['runtime_mape_largest'])}", "")
            table.add_row("transfer, 1 % of one size: Kendall τ (all sizes / largest)",
                          f"{num(t['one_size']['tau_all'])} / {num(t['one_size']['tau_largest'])}", "")
        ft = r["transfer"]["finetune_seconds"]
        table.add_row("fine-tuning one kernel (max)", f"{max(ft):.1f} s", "< 30 s")
    if "zeroshot" in r:
        z = r["zeroshot"]
        table.add_section()
        names = {"network": "the network", "gbt": "the gradient-boosted trees", "heuristic": "the static heuristic"}
        for name, ranking in ((n, z[n]) for n in (*names, "blend") if n in z):
            what = names.get(name) or (f"the network blended with the heuristic (prior weight "
                                       f"{ranking['prior_weight_all_folds']:.3f} over all folds)")
            table.add_row(f"zero-shot ranking ({z['kernels']} kernels, default size), {what}: median Kendall τ / "
                          f"top 10 within {100 * z['within']:g} % of the best",
                          f"{num(ranking['median_tau'])} / {ranking['top10_within']} of {z['kernels']}",
                          ">= 0.6 / >= 16 of 20" if name in ("network", "gbt") else "")
    if "pairwise" in r and r["pairwise"].get("median_off_diagonal_with") is not None:
        table.add_row(f"pairwise ({len(r['pairwise']['kernels'])} kernels): median off-diagonal MAPE with / "
                      "without", f"{r['pairwise']['median_off_diagonal_with']:.1f} / "
                      f"{r['pairwise']['median_off_diagonal_without']:.1f} %", "")
    return table


PART_FUNCTIONS = {"indist": indist, "ablation": ablation, "transfer": transfer, "zeroshot": zeroshot,
                  "pairwise": pairwise, "times": times}


def _fractions(text: str) -> tuple[float, ...]:
    if text == "none":
        return ()
    values = tuple(float(v) for v in text.split(",") if v)
    if not all(0.0 < v < 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"fractions must be in (0, 1), got {text}")
    return values


def _zeroshot_models(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n for n in text.split(",") if n))
    if not names or set(names) - set(ZERO_SHOT_MODELS):
        raise argparse.ArgumentTypeError(f"choose from {','.join(ZERO_SHOT_MODELS)}, got {text!r}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="store or Parquet export")
    script_io.out_option(parser, "reproduce_l2p.json and the PNGs")
    parser.add_argument("--kernels", type=lambda s: [k for k in s.split(",") if k], help="only these kernels")
    parser.add_argument("--pairwise", type=lambda s: [k for k in s.split(",") if k],
                        help=f"kernels of the pairwise matrix (default: {','.join(PAIRWISE)})")
    parser.add_argument("--parts", type=lambda s: [p for p in s.split(",") if p], default=list(PARTS))
    parser.add_argument("--epochs", type=int, help=f"maximum epochs (default {TRAIN_DEFAULTS['epochs']}, --quick 3)")
    parser.add_argument("--patience", type=int)
    parser.add_argument("--finetune-epochs", type=int, help=f"fine-tuning epochs (default {FINETUNE_EPOCHS}, --quick 5)")
    parser.add_argument("--per-kernel-batch", type=int, default=32,
                        help="minibatch of the per-kernel models (~940 training samples each)")
    parser.add_argument("--per-kernel-binary", action="store_true", help="also per-kernel models on the binary split")
    parser.add_argument("--transfer-folds", type=int, help="kernel folds for transfer (default: leave-one-out)")
    parser.add_argument("--folds", type=lambda s: [int(n) for n in s.split(",") if n],
                        help="run only these of the --transfer-folds folds (1-based, e.g. 1,3): split the "
                             "training over processes sharing one --cache; a run without it reuses their models")
    parser.add_argument("--zeroshot-models", type=_zeroshot_models, default=ZERO_SHOT_MODELS,
                        help=f"the fold models zeroshot ranks with (default {','.join(ZERO_SHOT_MODELS)}; the "
                             "static heuristic always)")
    parser.add_argument("--fractions", type=_fractions, default=FRACTIONS,
                        help=f"fine-tuning fractions of the sweep (default {','.join(map(str, FRACTIONS))}; "
                             "none: no sweep)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 x 64 network (numbers mean nothing)")
    parser.add_argument("--cache", type=Path, help="keep the trained transfer, zero-shot and pairwise source models "
                                                       "here and reuse them when training would be identical")
    parser.add_argument("--fresh", action="store_true",
                        help="overwrite the JSON (default: keep the parts of an earlier run that this one skips)")
    args = parser.parse_args()
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    if args.epochs is None:
        args.epochs = 3 if args.quick else TRAIN_DEFAULTS["epochs"]
    if args.finetune_epochs is None:
        args.finetune_epochs = 5 if args.quick else FINETUNE_EPOCHS
    torch.set_num_threads(args.threads)
    run = Run(args)
    run.log(f"{len(run.samples)} samples of {len(run.samples.kernel_names)} kernels from {args.data} "
            f"({run.load_seconds:.1f} s)")
    for part in dict.fromkeys(args.parts):  # in the order given
        run.log(f"[bold]{part}[/bold]")
        PART_FUNCTIONS[part](run)
        run.save()
    run.save()
    console.print(headline(run.merged))
    console.print(f"wrote {run.save()} and {len(run.png)} PNG(s) in {run.out}", highlight=False)


if __name__ == "__main__":
    main()
