"""The calibration app's addresses: each sub-package's own, under one namespace (the names are unchanged)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from calibration.audits import urls as audit_urls
from calibration.gate import urls as gate_urls
from calibration.report import urls as report_urls
from calibration.workbench import urls as workbench_urls

app_name = "calibration"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", include(report_urls)),
    path("", include(gate_urls)),
    path("workbench/", include(workbench_urls)),
    path("audits/", include(audit_urls)),
]
