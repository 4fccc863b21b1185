"""Judge robustness probes: how easily the judge is moved by what should not matter, per criterion.

- `registry`: the probes (name, version, transform, the criteria each is neutral or meaningful for),
  built in and from ICEWATER_PROBES;
- `transforms`: the pure transcript transforms;
- `runs`: planning and starting a probe run (one judge run per arm);
- `flips`: the flip-rate math (pure); `results`: a probe run's results read from its verdicts.

A user's own probe module imports what it needs from here: `from judging.probes import Declaration, Probe`.
"""

from __future__ import annotations

from .registry import MEANINGFUL, NEUTRAL, ORIGINAL, Declaration, Probe, available, choose

__all__ = ["MEANINGFUL", "NEUTRAL", "ORIGINAL", "Declaration", "Probe", "available", "choose"]
