"""The dataset store's schema (``cnmtune.store``): its tables, as the ordered migrations that build them.

A store file records its version in ``PRAGMA user_version``; opening it with a newer cnmtune runs
the migrations it lacks, one transaction each (``Store._migrate``).
"""

from __future__ import annotations

_RUN_COLUMNS_4 = ("elf_hash, dpus, tasklets, size, config_hash, cycles, kernel_seconds, transfer_seconds, verified,"
                  " status, error, seconds, device")  # a run's columns up to version 4, but its id
_RUN_COLUMNS_4_OF_R = ", ".join(f"r.{c.strip()}" for c in _RUN_COLUMNS_4.split(","))
# Ordered migrations: MIGRATIONS[i] takes the file from version i to version i + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the base tables
        "CREATE TABLE pipelines (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)",
        ("CREATE TABLE compiles (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL,"
        " pipeline_id INTEGER NOT NULL REFERENCES pipelines(id), defines TEXT NOT NULL,"
        " tasklets INTEGER NOT NULL, elf_hash TEXT, status TEXT NOT NULL,"
        " error TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0,"
        " UNIQUE (kernel, pipeline_id, defines, tasklets))"),
        ("CREATE TABLE features (elf_hash TEXT NOT NULL, schema_hash TEXT NOT NULL,"
        " data TEXT NOT NULL, PRIMARY KEY (elf_hash, schema_hash))"),
        ("CREATE TABLE runs (id INTEGER PRIMARY KEY, elf_hash TEXT NOT NULL,"
        " dpus INTEGER NOT NULL, tasklets INTEGER NOT NULL, size INTEGER NOT NULL,"
        " config_hash TEXT NOT NULL, cycles INTEGER, kernel_seconds REAL,"
        " transfer_seconds REAL, verified INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,"
        " error TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0,"
        " UNIQUE (elf_hash, dpus, tasklets, size, config_hash))"),
    ),
    (  # 2: IRAM size of a binary, device of a run, lookup indexes
        "ALTER TABLE compiles ADD COLUMN iram_bytes INTEGER",
        "ALTER TABLE runs ADD COLUMN device TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX compiles_elf ON compiles (elf_hash)",
        "CREATE INDEX compiles_kernel ON compiles (kernel, status)",
    ),
    (  # 3: one row per generation session (what was asked, where it ran, how long it took)
        ("CREATE TABLE generations (id INTEGER PRIMARY KEY, started REAL NOT NULL,"
         " spec TEXT NOT NULL, executor TEXT NOT NULL, workers INTEGER NOT NULL,"
         " seconds REAL NOT NULL DEFAULT 0, compiles INTEGER NOT NULL DEFAULT 0,"
         " runs INTEGER NOT NULL DEFAULT 0, finished INTEGER NOT NULL DEFAULT 0)"),
    ),
    (  # 4: units of work claimed by a running writer (process), until their lease expires
        ("CREATE TABLE claims (unit TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL,"
         " started REAL NOT NULL, expires REAL NOT NULL)"),
        "CREATE INDEX claims_owner ON claims (host, pid, started)",
    ),
    (  # 5: a run is of a kernel's host program, with its defines and parameters, not of a binary
        # alone (gemv and mlp build the same binaries); runs of a binary that more than one
        # (kernel, defines) builds are dropped, since whose they were is not recorded
        ("CREATE TABLE runs_5 (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, defines TEXT NOT NULL,"
         " params TEXT NOT NULL DEFAULT '', elf_hash TEXT NOT NULL, dpus INTEGER NOT NULL,"
         " tasklets INTEGER NOT NULL, size INTEGER NOT NULL, config_hash TEXT NOT NULL, cycles INTEGER,"
         " kernel_seconds REAL, transfer_seconds REAL, verified INTEGER NOT NULL DEFAULT 0,"
         " status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0,"
         " device TEXT NOT NULL DEFAULT '',"
         " UNIQUE (kernel, defines, params, elf_hash, dpus, tasklets, size, config_hash))"),
        (f"INSERT INTO runs_5 (id, kernel, defines, {_RUN_COLUMNS_4}) SELECT r.id, b.kernel, b.defines,"
         f" {_RUN_COLUMNS_4_OF_R} FROM runs r JOIN (SELECT elf_hash, MIN(kernel) AS kernel, MIN(defines) AS defines"
         " FROM compiles WHERE elf_hash IS NOT NULL GROUP BY elf_hash"
         " HAVING COUNT(DISTINCT kernel || ' ' || defines) = 1) b ON b.elf_hash = r.elf_hash"),
        "DROP TABLE runs",
        "ALTER TABLE runs_5 RENAME TO runs",
    ),
    (  # 6: training data of the PerfVec design model (store_retimes.py): sampled designs, recorded
        # runs (trace sets), and each run's exact re-timing under each design
        ("CREATE TABLE designs (hash TEXT PRIMARY KEY, seed INTEGER NOT NULL, idx INTEGER NOT NULL,"
         " config TEXT NOT NULL)"),
        ("CREATE TABLE trace_sets (unit TEXT PRIMARY KEY, kernel TEXT NOT NULL, pipeline TEXT NOT NULL,"
         " tasklets INTEGER NOT NULL, defines TEXT NOT NULL, dpus INTEGER NOT NULL, size INTEGER NOT NULL,"
         " seed INTEGER NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', directory TEXT,"
         " launches INTEGER, seconds REAL NOT NULL DEFAULT 0)"),
        ("CREATE TABLE retimes (unit TEXT NOT NULL REFERENCES trace_sets(unit),"
         " design_hash TEXT NOT NULL REFERENCES designs(hash), status TEXT NOT NULL, cycles INTEGER,"
         " kernel_seconds REAL, transfer_seconds REAL, error TEXT NOT NULL DEFAULT '',"
         " seconds REAL NOT NULL DEFAULT 0, PRIMARY KEY (unit, design_hash))"),
    ),
    (  # 7: the link model that priced a run's transfer time (DpuConfig.link_hash; '' where not
        # recorded): config_hash keys the kernel time only, which the link constants do not change
        "ALTER TABLE runs ADD COLUMN link_hash TEXT NOT NULL DEFAULT ''",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
