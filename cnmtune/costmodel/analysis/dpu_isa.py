"""The UPMEM DPU instruction encoding: the form table, and matching 48-bit words to forms.

The table (``data/dpu_encodings.json``, BSD-3 UPMEM, see ``data/NOTICE.txt``) is derived from
the UPMEM SDK 2020.x header ``backends/commons/src/dpu_instruction_encoder.h``, the one layout
real DPU binaries use (shared/upmem/DPU_ISA.md §0, §3 risk 1). Each form has a name
(``ADDrrici``: instruction, optional ``_S``/``_U`` variant, operand format in lower case), its
operands, a base word and the mask of its operand fields; every other bit of the 48 is fixed.
A word is decoded by the rules of DPU_ISA.md §2:

1. keep the forms whose fixed bits equal the word's;
2. drop a form whose ``rc``, ``dc`` or ``rb`` field would name register 24 or above: only ``ra``
   can name the constants zero, one, lneg, mneg, id, id2, id4, id8, and the ISA reuses those
   patterns for other instructions (``z`` forms, ``stop``, ``boot``, ``call`` vs ``rol_add``);
3. keep the forms with the most fixed bits: a shorthand beats its general form as llvm-objdump
   prints it (``move`` over ``or``, ``jz`` over ``jeq`` over ``sub``), and a form without a pc
   beats its twin whose pc field is zero (``sub rc, ra, rb, z`` over ``sub ..., z, pc``);
4. aliases. Forms with identical fixed bits are one encoding: ``acquire`` (condition 1-3) and
   ``release`` (condition 0) differ only in the condition; ``jump ra, off`` is preferred over
   ``call zero, ra, off``; the ``rric``/``rrici`` twins print as the pc form (the objdump sample
   prints all three such words with a pc); ``ADDSrri``/``ADDssi`` (and ``SUB``) count as
   ``add``/``sub``. The ``rki`` forms (``and.s``/``and.u`` spellings overlapping ``and rri``)
   never decode.

A word matching no form is unknown; a word left with two mnemonics is ambiguous.

Mnemonics are form names in lower case with ``_S``/``_U`` as ``.s``/``.u`` (``lsl_add``,
``move.u``, ``mul_sh_sl``). The shorthands (``move``, ``neg``, ``not``, ``jump``, ``jeq`` ...
``jz``/``jnz``) each encode a general operation, its ``operation``: the non-shorthand form with
the most fixed bits whose pattern contains the shorthand's (``move`` -> ``or``, ``move.s d, imm``
-> ``and.s``, ``jeq``/``jz`` -> ``sub``, ``jump`` -> ``call``, ``neg`` -> ``sub``, ``not`` ->
``xor``); for every other form the operation is the mnemonic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

TABLE_PATH = Path(__file__).with_name("data") / "dpu_encodings.json"
WORD_BITS = 48
WORD_MASK = (1 << WORD_BITS) - 1
#: Form index of a word that matches no form, and of a word left with two mnemonics.
UNKNOWN, AMBIGUOUS = -1, -2

_SHORTHAND = re.compile(r"(?:move|neg|not|jump|j(?:eq|neq|z|nz|[lg][te][us]))(?:\.[su])?")
_ESCAPE_OPERANDS = ("rc", "dc", "rb")
# A bit a 48-bit word never has: "no register check" in the escape-mask arrays.
_NEVER = np.uint64(1 << 63)
_GROUP_SHIFT = 44  # bits 44-47: the primary group selector (values 0-9 occur)


@dataclass(frozen=True)
class DpuForm:
    """One instruction form of the table: its name, mnemonic, operation and bit pattern."""

    name: str
    mnemonic: str
    operation: str
    operands: tuple[str, ...]
    fixed: int
    value: int
    fields: tuple[tuple[str, int, int, int], ...]

    @property
    def shorthand(self) -> bool:
        """Whether the mnemonic is an assembler shorthand for another operation."""
        return self.mnemonic != self.operation

    def operand(self, word: int, name: str) -> int:
        """The raw (unsigned) value of operand ``name`` in ``word`` (0 if the form lacks it)."""
        value = 0
        for operand, offset, mask, position in self.fields:
            if operand == name:
                value |= ((word >> position) & mask) << offset
        return value


def form_mnemonic(name: str) -> str:
    """The mnemonic of a form name: ``ADD_Srrici`` -> ``add.s``, ``JEQrii`` -> ``jeq``."""
    head = re.match(r"[A-Z0-9_]*", name).group(0)
    for suffix, variant in (("_S", ".s"), ("_U", ".u")):
        if head.endswith(suffix):
            return head[:-2].lower() + variant
    return head.lower()


class DpuEncodingTable:
    """The DPU forms and the vectorised matcher over their bit patterns."""

    def __init__(self, entries: list[dict]):
        names = [e["name"] for e in entries]
        mnemonics = [form_mnemonic(n) for n in names]
        fixed = np.array([~e["fieldmask"] & WORD_MASK for e in entries], dtype=np.uint64)
        value = np.array([e["base"] & ~e["fieldmask"] & WORD_MASK for e in entries],
                         dtype=np.uint64)
        operations = _operations(mnemonics, fixed, value)
        self.forms: tuple[DpuForm, ...] = tuple(
            DpuForm(n, m, o, tuple(e["args"]), int(f), int(v),
                    tuple(tuple(x) for x in e["fields"]))
            for n, m, o, e, f, v in zip(names, mnemonics, operations, entries, fixed, value))
        self._index = {f.name: k for k, f in enumerate(self.forms)}
        self._acquire, self._release = self._index["ACQUIRErici"], self._index["RELEASErici"]
        self._build_patterns()
        self._slices: dict[str, dict[int, tuple]] = {}

    def _build_patterns(self) -> None:
        """One pattern per distinct (fixed, value, register checks); its form by rule 4."""
        groups: dict[tuple, list[int]] = {}
        for k, form in enumerate(self.forms):
            if not form.name.endswith("rki"):
                groups.setdefault((form.fixed, form.value, _escapes(form)), []).append(k)
        keys = list(groups)
        self._pattern_form = np.array([min(groups[key], key=self._preference) for key in keys],
                                      dtype=np.int32)
        self._fixed = np.array([key[0] for key in keys], dtype=np.uint64)
        self._value = np.array([key[1] for key in keys], dtype=np.uint64)
        self._escape = np.array([[key[2][j] for key in keys] for j in range(2)], dtype=np.uint64)
        self._bits = np.array([bin(key[0]).count("1") for key in keys], dtype=np.int16)
        group_bits = np.uint64(0xF << _GROUP_SHIFT)
        self._buckets = [np.flatnonzero(((np.uint64(g << _GROUP_SHIFT) ^ self._value)
                                         & self._fixed & group_bits) == 0) for g in range(16)]
        emitted = {int(k) for k in self._pattern_form} | {self._acquire, self._release}
        self._emitted = tuple(sorted(emitted))

    def _preference(self, k: int) -> tuple:
        form = self.forms[k]
        return (not form.shorthand, "pc" not in form.operands, len(form.mnemonic), form.name)

    def form(self, name: str) -> DpuForm:
        """The form called ``name`` (e.g. ``"ADDrri"``)."""
        return self.forms[self._index[name]]

    def index(self, name: str) -> int:
        """The index of the form called ``name`` in ``forms``."""
        return self._index[name]

    def mnemonics(self, shorthands: bool = True) -> tuple[str, ...]:
        """Every name a decoded word can be counted under, sorted: mnemonics as objdump writes
        them, or with ``shorthands=False`` the operations they encode."""
        pick = (lambda f: f.mnemonic) if shorthands else (lambda f: f.operation)
        return tuple(sorted({pick(self.forms[k]) for k in self._emitted}))

    def names(self, forms: np.ndarray, shorthands: bool = True) -> list[str]:
        """The mnemonic (or operation) of each form index in ``forms`` (all valid)."""
        unique, inverse = np.unique(forms, return_inverse=True)
        labels = [self.forms[k].mnemonic if shorthands else self.forms[k].operation
                  for k in unique.tolist()]
        return [labels[j] for j in inverse.tolist()]

    def match(self, words: np.ndarray) -> np.ndarray:
        """The form index of every 64-bit instruction slot; UNKNOWN when nothing matches (or
        the upper 16 bits are set), AMBIGUOUS when two mnemonics are left."""
        words = np.asarray(words, dtype=np.uint64)
        unique, inverse = np.unique(words, return_inverse=True)
        forms = np.full(len(unique), UNKNOWN, dtype=np.int32)
        group = (unique >> np.uint64(_GROUP_SHIFT)).astype(np.intp)  # > 15: upper bits set
        ties: list[int] = []
        for g in np.unique(group[group < 16]).tolist():
            rows, patterns = np.flatnonzero(group == g), self._buckets[g]
            if not patterns.size:
                continue
            w = unique[rows, None]
            ok = (w & self._fixed[patterns]) == self._value[patterns]
            for escape in self._escape[:, patterns]:
                ok &= (w & escape) != escape
            score = np.where(ok, self._bits[patterns], -1)
            column = score.argmax(axis=1)
            best = score[np.arange(len(rows)), column]
            found = best >= 0
            forms[rows[found]] = self._pattern_form[patterns[column[found]]]
            tied = found & ((score == best[:, None]).sum(axis=1) > 1)
            ties.extend(rows[tied].tolist())
        for r in ties:
            forms[r] = self._resolve_tie(self.candidates(int(unique[r])))
        released = np.isin(forms, (self._acquire, self._release))
        if released.any():
            cc = (unique[released] >> np.uint64(24)) & np.uint64(3)
            forms[released] = np.where(cc == 0, self._release, self._acquire)
        return forms[inverse]

    def candidates(self, word: int) -> list[int]:
        """The forms left for one word after rules 1-3 (with rule 4's choice per pattern)."""
        if word >> WORD_BITS:
            return []
        w = np.uint64(word)
        ok = (w & self._fixed) == self._value
        for escape in self._escape:
            ok &= (w & escape) != escape
        if not ok.any():
            return []
        best = self._bits[ok].max()
        return self._pattern_form[ok & (self._bits == best)].tolist()

    def _resolve_tie(self, forms: list[int]) -> int:
        if len({self.forms[k].mnemonic for k in forms}) > 1:
            return AMBIGUOUS
        return min(forms, key=self._preference)

    def operand(self, words: np.ndarray, forms: np.ndarray, name: str) -> np.ndarray:
        """Operand ``name`` of every word under its form (int64; -1 where the form lacks it)."""
        slices = self._slices.get(name)
        if slices is None:
            slices = self._slices[name] = {
                k: tuple((np.uint64(o), np.uint64(m), np.uint64(p))
                         for op, o, m, p in f.fields if op == name)
                for k, f in enumerate(self.forms) if name in f.operands}
        out = np.full(len(words), -1, dtype=np.int64)
        for k in np.intersect1d(np.unique(forms), list(slices)).tolist():
            rows = np.flatnonzero(forms == k)
            w = np.asarray(words, dtype=np.uint64)[rows]
            value = np.zeros(len(rows), dtype=np.uint64)
            for offset, mask, position in slices[k]:
                value |= ((w >> position) & mask) << offset
            out[rows] = value.astype(np.int64)
        return out


def _escapes(form: DpuForm) -> tuple[int, int]:
    """Word-bit masks of rule 2: a register operand names >= 24 when its value bits 3 and 4
    are both set. Up to two per form (a destination and rb); ``_NEVER`` pads."""
    masks = []
    for operand in _ESCAPE_OPERANDS:
        positions = [pos + bit - offset for op, offset, mask, pos in form.fields
                     if op == operand for bit in (3, 4)
                     if 0 <= bit - offset and (mask >> (bit - offset)) & 1]
        if len(positions) == 2:
            masks.append((1 << positions[0]) | (1 << positions[1]))
    assert len(masks) <= 2, form.name
    return tuple(masks + [int(_NEVER)] * (2 - len(masks)))


def _operations(mnemonics: list[str], fixed: np.ndarray, value: np.ndarray) -> list[str]:
    """The general operation of every form: itself, or for a shorthand the non-shorthand form
    with the most fixed bits whose pattern contains the shorthand's (same .s/.u variant first,
    then alphabetical)."""
    shorthand = np.array([bool(_SHORTHAND.fullmatch(m)) for m in mnemonics])
    bits = np.array([bin(int(f)).count("1") for f in fixed])
    operations = list(mnemonics)
    for k in np.flatnonzero(shorthand).tolist():
        covers = ~shorthand & ((fixed & ~fixed[k]) == 0) & ((value[k] & fixed) == value)
        if not covers.any():
            raise ValueError(f"DPU encoding table: shorthand form #{k} ({mnemonics[k]}) "
                             "encodes no general form")
        best = np.flatnonzero(covers & (bits == bits[covers].max())).tolist()
        variant = mnemonics[k][-2:] if mnemonics[k][-2:] in (".s", ".u") else ""
        operations[k] = min((mnemonics[j] for j in best),
                            key=lambda m: (m[-2:] != variant if variant else "." in m, m))
    return operations


@lru_cache(maxsize=1)
def encoding_table(path: Path = TABLE_PATH) -> DpuEncodingTable:
    """The shipped DPU encoding table, parsed once per process."""
    return DpuEncodingTable(json.loads(Path(path).read_text()))
