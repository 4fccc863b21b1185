"""The JSON API's operations, one module per concern, each on a Router that api/ninja_api.py mounts on the one
NinjaAPI: pushes (outputs and verdicts), judge runs, the calibration report, judge guidance and gold splits, the
gate, audit plans. Shared by them: the names a call gives and how they are found (`names.py`). The OTLP traces
receiver is a plain view beside them (api/otlp.py)."""
