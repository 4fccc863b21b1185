"""A refused sign-in: why (a short reason for the log and the tests) and what the person reads.

Every refusal is one `SignInRefused`, raised wherever the check sits (the discovery document, the callback, the
ID token, the claims, the role map) and turned into one page and one log line by the views. Nothing is made
before the last check passes, so a refusal leaves no account and no membership behind.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("icewater.signin")

# reason: (headline, what happened, what to do). The reason is what the log and the tests read.
PAGES: dict[str, tuple[str, str, str]] = {
    "provider-unreachable": (
        "The company sign-in is not answering",
        "Icewater could not read the identity provider's configuration.",
        "Try again in a minute; if it persists, tell whoever runs Icewater (the server log says more).",
    ),
    "wrong-issuer": (
        "The sign-in came from the wrong identity provider",
        "The provider that answered is not the one Icewater is configured to trust.",
        "Sign in again from this page; if it happens again, tell whoever runs Icewater.",
    ),
    "wrong-audience": (
        "The sign-in was meant for another application",
        "The identity provider's answer was addressed to another application, not to Icewater.",
        "Sign in again from this page; if it happens again, tell whoever runs Icewater.",
    ),
    "bad-signature": (
        "The sign-in could not be verified",
        "The identity provider's answer was not signed by a key the provider publishes.",
        "Sign in again from this page; if it happens again, tell whoever runs Icewater.",
    ),
    "expired": (
        "The sign-in had expired",
        "The identity provider's answer was too old (or the clocks of the two servers disagree).",
        "Sign in again from this page.",
    ),
    "replayed": (
        "This sign-in was already used or was not started here",
        "The answer from the identity provider does not belong to a sign-in this browser started, or it was "
        "used once already (a reloaded or shared sign-in link).",
        "Start again from the sign-in page.",
    ),
    "nonce": (
        "The sign-in did not match the request",
        "The identity provider's answer was issued for another sign-in request.",
        "Start again from the sign-in page.",
    ),
    "unverified-email": (
        "Your email address is not verified",
        "The identity provider says your email address has not been verified, and Icewater only accepts "
        "verified addresses.",
        "Verify your address with your company's identity provider, then sign in again.",
    ),
    "no-workspace": (
        "You have no workspace in Icewater",
        "None of your groups at the identity provider gives access to a workspace here.",
        "Ask your Icewater lead or IT to add you to a group that grants access, then sign in again.",
    ),
    "provider-error": (
        "The identity provider refused the sign-in",
        "The identity provider answered with an error instead of signing you in.",
        "Start again from the sign-in page; if it happens again, tell whoever runs Icewater.",
    ),
    "missing-claim": (
        "The identity provider sent too little",
        "The identity provider's answer lacked what Icewater needs to know who you are.",
        "Tell whoever runs Icewater: the provider must send a subject and, for the role map, the groups claim.",
    ),
    "inactive": (
        "Your Icewater account is deactivated",
        "An administrator deactivated your account here.",
        "Ask a site administrator to activate it again.",
    ),
}


class SignInRefused(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        if reason not in PAGES:
            raise ValueError(f"unknown refusal reason {reason!r}")
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail  # for the log: never a token, a code or a secret


def log_refusal(refusal: SignInRefused, address: str) -> None:
    logger.warning("sign-in refused: reason=%s from=%s (%s)", refusal.reason, address, refusal.detail)
