"""The lead group's admin permissions, kept exactly as listed here after every migrate (post_migrate).

What the README and the pages promise a lead in the admin: reading everything the product stores (labels,
gold, verdicts, gates: the audit trail, which the admin shows but never edits), managing annotator and
reviewer accounts, editing eval set descriptions, and adding or editing judge configs no run uses yet (the
admin uses the judge page's form, with its key and host allowlists). Login lockouts (django-axes) come from
the role itself (evals/admin.py). Evidence (labels, gold, gating marks, gate results) is view-only: it
changes through the product, which keeps revisions.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.db.models import Q

from evals.role_groups import LEAD_GROUP

VIEW = ("view",)
LEAD_PERMISSIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "evals": {
        "user": ("view", "add", "change"),  # evals/admin.py keeps superusers, leads and staff flags out of reach
        "evalset": ("view", "change"),
        "case": VIEW,
        "output": VIEW,
        "rubric": VIEW,
        "rubricversion": VIEW,
        "criterion": VIEW,
    },
    "labeling": {
        "annotation": VIEW,
        "label": VIEW,
        "goldlabel": VIEW,
        "golddispute": VIEW,
        "labelingqueue": VIEW,
    },
    "judging": {
        "judgeconfig": ("view", "add", "change"),
        "judgerun": VIEW,
        "runitem": VIEW,
        "verdict": VIEW,
        "goldsplit": VIEW,
        "holdoutlook": VIEW,
    },
    "calibration": {
        "gatingmark": VIEW,
        "gatingreview": VIEW,
        "gateresult": VIEW,
    },
    "api": {"gatetoken": VIEW, "verdictpush": VIEW},
}


def lead_permissions():
    wanted = Q(pk__in=[])
    for app, models in LEAD_PERMISSIONS.items():
        for model, actions in models.items():
            codenames = [f"{action}_{model}" for action in actions]
            wanted |= Q(content_type__app_label=app, content_type__model=model, codename__in=codenames)
    return Permission.objects.filter(wanted)


def sync_lead_group(**kwargs) -> Group:
    """Create the lead group or bring its permissions back to LEAD_PERMISSIONS (idempotent)."""
    group, _ = Group.objects.get_or_create(name=LEAD_GROUP)
    group.permissions.set(lead_permissions())
    return group
