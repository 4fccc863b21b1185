"""The watch: anytime-valid monitoring of a release in production (issue 39). Pure functions, no Django.

evidence.py holds the betting tests restarted on a schedule, tracks.py the two kinds of watched rate (the
production pass rate by PPI, and the judge's TPR/TNR on the audit stream), monitor.py one watch's state, its
update and its alarms, simulation.py known-truth streams for the tests and bench/watch.py.
"""

from calibration.stats.watch.monitor import (
    NOT_APPLICABLE,
    PASS_RATE,
    TNR,
    TPR,
    Alarm,
    AuditedOutput,
    Band,
    BandPoint,
    Outputs,
    WatchSettings,
    WatchState,
    pass_rate_band,
    rate_band,
    replay,
    start_watch,
    update,
)

__all__ = [
    "NOT_APPLICABLE",
    "PASS_RATE",
    "TNR",
    "TPR",
    "Alarm",
    "AuditedOutput",
    "Band",
    "BandPoint",
    "Outputs",
    "WatchSettings",
    "WatchState",
    "pass_rate_band",
    "rate_band",
    "replay",
    "start_watch",
    "update",
]
