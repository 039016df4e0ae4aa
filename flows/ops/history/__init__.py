"""Results of one pipeline over time, judged night by night: ``bottlenecks history``.

Which module does what:

read.py       MLflow: parent runs, step runs grouped over seeds, cached steps, slots that did not run
table.py      the runs as a table (one row per judged run) with what the judge needs in ``attrs``
direction.py  which way is better for a metric (a documented rule, ``--higher`` / ``--lower`` globs)
compare.py    one metric against its noise: the seeds' spread (Welch t), or a relative threshold
claims.py     a claim's verdict over time and the reasons on both sides
pipeline.py   whether the pipeline changed between two runs, and the difference
judge.py      the newest run judged: status, claims, metrics (Holm over a night's seed tests), context
render.py     the table as text, the trend plot, both logged to the judged run
_model.py     the error, the thresholds option and a flag

The notification of a verdict is ``flows.ops.notify``.
"""

from flows.ops.history._model import REGRESSIONS, Flag, HistoryError, Thresholds, parse_thresholds
from flows.ops.history.claims import VERDICTS, _reason, verdict_name
from flows.ops.history.direction import Directions, directions
from flows.ops.history.judge import Judgement, judge, regressions
from flows.ops.history.read import parent_runs
from flows.ops.history.render import log_trend, render, trend_plot
from flows.ops.history.table import INFO_COLUMNS, from_values, table

__all__ = [
    "INFO_COLUMNS",
    "REGRESSIONS",
    "VERDICTS",
    "Directions",
    "Flag",
    "HistoryError",
    "Judgement",
    "Thresholds",
    "_reason",
    "directions",
    "from_values",
    "judge",
    "log_trend",
    "parent_runs",
    "parse_thresholds",
    "regressions",
    "render",
    "table",
    "trend_plot",
    "verdict_name",
]
