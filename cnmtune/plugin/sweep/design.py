"""The design space of a sweep: user-facing DpuConfig parameters, the factorial grid, the cost proxy.

Parameters have user units (frequency_mhz, launch_overhead_us, bandwidths in GB/s) and map to
one or more DpuConfig fields (dma_alpha sets the read and the write latency). The cost proxy
is an arithmetic expression over them (CostExpression), evaluated without eval().
"""

from __future__ import annotations

import ast
import itertools
import operator
from dataclasses import dataclass

from cnmtune.errors import SweepError
from cnmtune.runtime.sim.config import DpuConfig

__all__ = ["PARAMETERS", "CostExpression", "DesignPoint", "Parameter", "design_points", "parameter_help",
           "parse_param"]


@dataclass(frozen=True)
class Parameter:
    """A user-facing design parameter: its DpuConfig field(s), unit scale and type."""

    name: str
    fields: tuple[str, ...]
    scale: float
    kind: type
    unit: str
    help: str

    def user_value(self, config: DpuConfig) -> float:
        """The parameter's value in user units at `config` (its first field)."""
        value = getattr(config, self.fields[0]) / self.scale
        return round(value) if self.kind is int else value


def _p(name: str, fields: str | tuple[str, ...], scale: float, kind: type, unit: str, help: str) -> Parameter:
    return Parameter(name, (fields,) if isinstance(fields, str) else fields, scale, kind, unit, help)


PARAMETERS: dict[str, Parameter] = {p.name: p for p in (
    _p("frequency_mhz", "frequency_hz", 1e6, float, "MHz", "DPU clock"),
    _p("revolver", "revolver_period", 1, int, "cycles", "revolver period (min cycles between a tasklet's issues)"),
    _p("pipeline_depth", "pipeline_depth", 1, int, "stages", "pipeline depth (drain at the end of a launch)"),
    _p("dma_alpha", ("dma_read_alpha", "dma_write_alpha"), 1, float, "cycles", "MRAM DMA latency, read and write"),
    _p("dma_read_alpha", "dma_read_alpha", 1, float, "cycles", "MRAM->WRAM DMA latency"),
    _p("dma_write_alpha", "dma_write_alpha", 1, float, "cycles", "WRAM->MRAM DMA latency"),
    _p("dma_beta", "dma_beta", 1, float, "cycles/B", "DMA cost per byte"),
    _p("dma_overhead", "dma_engine_overhead", 1, float, "cycles", "DMA engine occupancy per transfer"),
    _p("wram_dma_share", "wram_dma_share", 1, float, "", "issue slots the DMA engine's WRAM accesses take"),
    _p("mram_access_bytes", "mram_direct_access_bytes", 1, int, "B", "bytes moved by a direct MRAM load/store"),
    _p("launch_overhead_us", "launch_overhead_s", 1e-6, float, "us", "host cost of one launch"),
    _p("xfer_call_us", "xfer_call_s", 1e-6, float, "us", "fixed cost of one host transfer call"),
    _p("xfer_mram_read_us", "xfer_mram_read_s", 1e-6, float, "us", "extra fixed cost of an MRAM read call"),
    _p("xfer_mram_per_dpu_us", "xfer_mram_per_dpu_s", 1e-6, float, "us", "cost per DPU of an MRAM call"),
    _p("xfer_wram_ns_per_byte", "xfer_wram_s_per_B", 1e-9, float, "ns/B", "WRAM transfer cost per byte per DPU"),
    _p("xfer_to_ns_per_byte", "xfer_to_s_per_B", 1e-9, float, "ns/B",
       "MRAM write cost per byte per DPU on one DPU"),
    _p("xfer_to_rank_exponent", "xfer_to_rank_exponent", 1, float, "",
       "power of the rank's DPUs in a write's cost per byte per DPU"),
    _p("xfer_from_row_ns_per_byte", "xfer_from_row_s_per_B", 1e-9, float, "ns/B", "MRAM read cost per byte per DPU"),
    _p("xfer_from_shared_ns_per_byte", "xfer_from_shared_s_per_B", 1e-9, float, "ns/B",
       "MRAM read cost per byte per DPU, times the rank's DPUs (the host side)"),
    _p("dpus_per_rank", "dpus_per_rank", 1, int, "DPUs", "DPUs per rank (ranks transfer side by side)"),
)}


def parameter_help() -> str:
    """One line per parameter, for --help."""
    return "; ".join(f"{p.name} ({p.unit})" for p in PARAMETERS.values())


def _unknown(name: str) -> SweepError:
    return SweepError(f"unknown design parameter {name!r}; valid: {', '.join(PARAMETERS)}")


def _evenly(name: str, parameter: Parameter, text: str) -> tuple[float, ...]:
    """'LO:HI:N' -> N evenly spaced values from LO to HI (integer parameters: rounded, each once)."""
    try:
        low, high, count = text.split(":")
        low, high, count = float(low), float(high), int(count)
    except ValueError:
        raise SweepError(f"--param {name}: {text.strip()!r} is not LO:HI:N (N evenly spaced values)") from None
    if count < 2 or not low < high:
        raise SweepError(f"--param {name}: {text.strip()!r}: LO:HI:N needs LO < HI and N >= 2")
    values = [low + (high - low) * k / (count - 1) for k in range(count)]
    return tuple(sorted({round(v) for v in values})) if parameter.kind is int else tuple(values)


def parse_param(text: str) -> tuple[str, tuple[float, ...]]:
    """'frequency_mhz=267,350,400' -> ('frequency_mhz', (267.0, 350.0, 400.0)); 'NAME=LO:HI:N' gives N
    evenly spaced values from LO to HI."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not values.strip():
        raise SweepError(f"malformed --param {text!r}; use NAME=V1,V2,... with NAME one of: {', '.join(PARAMETERS)}")
    parameter = PARAMETERS.get(name)
    if parameter is None:
        raise _unknown(name)
    if ":" in values:
        return name, _evenly(name, parameter, values)
    out = []
    for item in values.split(","):
        try:
            value = float(item)
        except ValueError:
            raise SweepError(f"--param {name}: {item.strip()!r} is not a number") from None
        if parameter.kind is int:
            if value != int(value):
                raise SweepError(f"--param {name}: {item.strip()!r} must be an integer")
            value = int(value)
        out.append(value)
    if len(set(out)) != len(out):
        raise SweepError(f"--param {name}: a value is given twice")
    return name, tuple(out)


@dataclass(frozen=True)
class DesignPoint:
    """One point of the grid: the parameter values (user units) and the DpuConfig they make."""

    values: tuple[tuple[str, float], ...]
    config: DpuConfig

    @property
    def label(self) -> str:
        """'frequency_mhz=350 revolver=11'."""
        return " ".join(f"{k}={v:g}" for k, v in self.values)


def design_points(base: DpuConfig, grid: dict[str, tuple[float, ...]]) -> list[DesignPoint]:
    """The full factorial grid over `grid` (parameter -> levels), other constants from `base`."""
    for name in grid:
        if name not in PARAMETERS:
            raise _unknown(name)
    for name in ("dma_read_alpha", "dma_write_alpha"):
        if name in grid and "dma_alpha" in grid:
            raise SweepError(f"give dma_alpha or {name}, not both (dma_alpha sets both latencies)")
    names = list(grid)
    points = []
    for combo in itertools.product(*(grid[n] for n in names)):
        changes = {}
        for name, value in zip(names, combo):
            parameter = PARAMETERS[name]
            for f in parameter.fields:
                scaled = value * parameter.scale
                changes[f] = round(scaled) if isinstance(getattr(base, f), int) else float(scaled)
        try:
            config = base.with_(**changes)
        except ValueError as exc:
            raise SweepError(f"design point {dict(zip(names, combo))}: {exc}") from None
        if any(v < 0 for v in changes.values()) or any(
                v <= 0 for k, v in changes.items() if k in ("dpus_per_rank", "frequency_hz")):
            raise SweepError(f"design point {dict(zip(names, combo))}: values must be >= 0, and the frequency and "
                             "DPUs per rank > 0")
        points.append(DesignPoint(tuple(zip(names, combo)), config))
    return points


# ---------------------------------------------------------------- the cost proxy
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class CostExpression:
    """A cost proxy over the design parameters: numbers, parameter names, + - * / ** and
    parentheses ('frequency_mhz*1.0 + revolver*2', 'frequency_mhz**2 / 1000').

    The text is parsed with Python's parser and only those node types are accepted; it is
    evaluated by walking the tree here, never by eval(), so it cannot call or reach anything.
    A parameter not swept takes the base config's value (user units).
    """

    def __init__(self, text: str = "frequency_mhz"):
        self.text = text.strip()
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            raise SweepError(f"cost expression {text!r} does not parse: {exc.msg}") from None
        self._tree = tree.body
        self.names = sorted(self._check(self._tree))

    def _check(self, node: ast.AST) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return set()
        if isinstance(node, ast.Name):
            if node.id not in PARAMETERS:
                raise SweepError(f"cost expression {self.text!r}: unknown name {node.id!r}; "
                                 f"use parameters ({', '.join(PARAMETERS)}) and numbers")
            return {node.id}
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self._check(node.left) | self._check(node.right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return self._check(node.operand)
        raise SweepError(f"cost expression {self.text!r}: {type(node).__name__} is not allowed; "
                         "use numbers, parameter names, + - * / ** and parentheses")

    def __call__(self, point: DesignPoint) -> float:
        """The cost of a design point."""
        values = dict(point.values)
        env = {n: values[n] if n in values else PARAMETERS[n].user_value(point.config) for n in self.names}
        try:
            return float(self._eval(self._tree, env))
        except (ZeroDivisionError, OverflowError, TypeError) as exc:  # TypeError: complex from (-x)**0.5
            raise SweepError(f"cost expression {self.text!r} at {point.label}: {exc}") from None

    def _eval(self, node: ast.AST, env: dict[str, float]) -> float:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise OverflowError("exponent above 64")
            result = _BINARY[type(node.op)](left, right)
            if isinstance(result, complex):
                raise TypeError("complex result")
            return result
        return _UNARY[type(node.op)](self._eval(node.operand, env))
