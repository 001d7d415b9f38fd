"""The autotuner (`cnmtune tune`) by role, and the tuning cache that cnmtune-cc reads.

space (what is searched), search (the state of a tune: TuneSpec, Search), moves (the search's
mutations and crossovers), build (compile and features), score (the cost model, fine-tuning),
select (what a round builds and runs), measure (runs on the target), record (measure callbacks),
report (candidates and the outcome), tuner (the loop: tune), sample (explore: a sampled whole
space to judge a search by), cache (tuned pipelines for cnmtune-cc).
"""

from cnmtune.plugin.tune.report import Candidate, TuneReport
from cnmtune.plugin.tune.sample import Exploration, explore
from cnmtune.plugin.tune.search import TUNE_TASKLETS, TuneSpec
from cnmtune.plugin.tune.tuner import tune

__all__ = ["TUNE_TASKLETS", "Candidate", "Exploration", "TuneReport", "TuneSpec", "explore", "tune"]
