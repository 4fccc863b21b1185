"""The demo's accounts, their public password, and which of them anyone could still sign in as.

The password is printed in the README and by `make run`, so while a demo account keeps it, anyone who reaches
the server can sign in under that name (as `lee`, a lead with the admin). The login page names such accounts
(templates/registration/login.html) until each has a password of its own or is deactivated.
"""

from __future__ import annotations

import hashlib

from django.contrib.auth.hashers import check_password
from django.core.cache import cache
from django.db.models import Exists, OuterRef

from evals.models import Membership, Role, User

# The refund-support team's workspace, where the demo's data and people are.
DEMO_WORKSPACE = "refund-support"
DEMO_WORKSPACE_NAME = "Refund support"
DEMO_USERS = [
    ("maria", Role.ANNOTATOR, "labels all day; has finished her share"),
    ("deshawn", Role.ANNOTATOR, "the second annotator on every output"),
    ("ana", Role.ANNOTATOR, "new: her queue is full"),
    ("rita", Role.REVIEWER, "adjudicates disagreements"),
    ("lee", Role.LEAD, "approves rubrics and gating criteria; can open the admin"),
]
# The demo's password, public: load_demo gives it to the accounts it makes unless ICEWATER_DEMO_PASSWORD says
# otherwise.
DEFAULT_DEMO_PASSWORD = "icewater-demo"


def public_demo_logins() -> list[User]:
    """The active demo accounts whose password is still the public one, in DEMO_USERS order.

    Checking a password costs a deliberately slow hash (a few tenths of a second each), and the login page asks
    at every visit: the answer is cached under a digest of the accounts' stored password hashes, which any new
    password or deactivation changes, so it is never stale and a visitor cannot make the server hash again.
    """
    names = [name for name, _, _ in DEMO_USERS]
    # `leads`: a lead of some workspace (the notice says so: signing in as one decides that team's rubrics).
    leads = Exists(Membership.objects.filter(user=OuterRef("pk"), role=Role.LEAD))
    found = User.objects.filter(username__in=names, is_active=True).annotate(leads=leads)
    accounts = sorted(found, key=lambda u: names.index(u.username))
    if not accounts:
        return []
    digest = hashlib.sha256("\0".join(f"{u.username}\0{u.password}" for u in accounts).encode()).hexdigest()
    key = f"public-demo-logins:{digest}"
    public = cache.get(key)
    if public is None:
        # Not User.check_password: on a match it may rehash and save the password, a write from a page view.
        public = [u.username for u in accounts if check_password(DEFAULT_DEMO_PASSWORD, u.password)]
        cache.set(key, public, timeout=None)
    return [u for u in accounts if u.username in public]
