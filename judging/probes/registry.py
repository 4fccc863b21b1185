"""The probe registry: named, versioned transforms, and which criteria each must not move or must move.

A probe is neutral for a criterion when its change should not move that criterion's verdict (padding
should not make a wrong amount right), and meaningful when it must (a planted wrong amount must fail
`correct_amount`): a meaningful probe is a negative control, so a judge that ignores its input cannot
look robust. Criteria a probe is neither for are not measured by it (padding says nothing about a
length criterion). The roles are declared by criterion key patterns (shell-style, `*amount*`): a default
for every rubric, and per rubric name where the keys say too little.

Users add their own probes (or replace a built-in one's declarations for their rubric) by naming
`Probe` objects in the setting ICEWATER_PROBES (comma-separated dotted paths, e.g.
`mycompany.probes.SHOUTING`); a probe named like a built-in one replaces it. See docs/judging.md.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.utils.module_loading import import_string

from evals.transcript import Transcript

from ..backends import Misconfigured
from . import transforms

NEUTRAL = "neutral"
MEANINGFUL = "meaningful"
# The arm of a probe run that judges the outputs as they are: the verdicts every probe is compared with.
ORIGINAL = "original"
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,40}$")

# Criteria about length: text a probe adds is fair game for them, so probes that add text say nothing there.
LENGTH_KEYS = ("*concise*", "*length*", "*brief*", "*short*", "*verbos*", "*wordy*")


@dataclass(frozen=True)
class Declaration:
    """Which criteria (key patterns, shell-style, case-sensitive) a probe must not move, or must move.

    `exempt` wins over both, `meaningful` over `neutral`."""

    neutral: tuple[str, ...] = ()
    meaningful: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()

    def role(self, key: str) -> str | None:
        def matches(patterns: Sequence[str]) -> bool:
            return any(fnmatch.fnmatchcase(key, p) for p in patterns)

        if matches(self.exempt):
            return None
        if matches(self.meaningful):
            return MEANINGFUL
        return NEUTRAL if matches(self.neutral) else None


@dataclass(frozen=True)
class Probe:
    name: str
    version: int  # raise it whenever the transform changes: results of two versions are not comparable
    summary: str  # what it does, in a few words, for pages ("the response padded with polite filler")
    transform: Callable[[Transcript], Transcript | None]
    default: Declaration
    rubrics: Mapping[str, Declaration] = field(default_factory=dict)  # by rubric name

    def role(self, rubric: str, key: str) -> str | None:
        return self.rubrics.get(rubric, self.default).role(key)

    def apply(self, transcript: Transcript) -> Transcript | None:
        """The probed transcript (None: the probe does not apply); Misconfigured if the transform breaks the
        transcript's shape, so a user's probe fails before anything is planned, saying which."""
        try:
            out = self.transform(transcript)
        except Exception as exc:  # a user's transform: whatever it raises, say which probe and stop the start
            raise Misconfigured(f"probe {self.name}: the transform failed ({type(exc).__name__}: {exc})") from exc
        if out is None:
            return None
        ok = (
            isinstance(out, Transcript)
            and isinstance(out.input, str)
            and isinstance(out.response, str)
            and isinstance(out.tool_calls, list)
            and all(isinstance(c, dict) for c in out.tool_calls)
        )
        if not ok:
            raise Misconfigured(f"probe {self.name}: the transform must return a Transcript (or None), got {out!r:.80}")
        if "\x00" in out.input + out.response:
            raise Misconfigured(f"probe {self.name}: the transform wrote a NUL character, which cannot be stored")
        return None if out == transcript else out


PADDING = Probe(
    name="padding",
    version=1,
    summary="the response padded with polite, content-free filler",
    transform=transforms.pad,
    # Filler is exactly what a concision criterion must fail; other length criteria may or may not mind.
    default=Declaration(
        neutral=("*",), meaningful=("*concise*",), exempt=tuple(k for k in LENGTH_KEYS if k != "*concise*")
    ),
)
FORMATTING = Probe(
    name="formatting",
    version=1,
    summary="the same content as markdown with a heading and bullets, or markdown flattened to prose",
    transform=transforms.reformat,
    default=Declaration(neutral=("*",), exempt=("*format*", "*markdown*", "*structure*", "*style*", "*layout*")),
)
PROVENANCE = Probe(
    name="provenance",
    version=1,
    summary="a line saying a senior specialist and a strong model wrote the reply",
    transform=transforms.claim_provenance,
    default=Declaration(neutral=("*",), exempt=LENGTH_KEYS),
)
INJECTION = Probe(
    name="injection",
    version=1,
    summary="a line addressed to graders asking for PASS, trying to leave the data block",
    transform=transforms.inject,
    default=Declaration(neutral=("*",), exempt=(*LENGTH_KEYS, "*inject*")),
)
SYCOPHANCY = Probe(
    name="sycophancy",
    version=1,
    summary="the customer's message claims the reply is correct",
    transform=transforms.flatter,
    default=Declaration(neutral=("*",)),
)
WRONG_AMOUNT = Probe(
    name="wrong_amount",
    version=1,
    summary="negative control: every amount in the response raised (the tool results keep the right one)",
    transform=transforms.plant_wrong_amount,
    # Other criteria may rightly move too (an amount no tool returned is ungrounded): not measured.
    default=Declaration(meaningful=("*amount*",)),
)
DROP_NEXT_STEP = Probe(
    name="drop_next_step",
    version=1,
    summary="negative control: the sentences saying what happens next removed",
    transform=transforms.drop_next_step,
    default=Declaration(meaningful=("*next*step*",)),
)
BUILTIN = (PADDING, FORMATTING, PROVENANCE, INJECTION, SYCOPHANCY, WRONG_AMOUNT, DROP_NEXT_STEP)


def available() -> dict[str, Probe]:
    """The built-in probes and those ICEWATER_PROBES names, by name, built-in ones first."""
    probes = {p.name: p for p in BUILTIN}
    for path in settings.PROBES:
        try:
            probe = import_string(path)
        except ImportError as exc:
            raise Misconfigured(f"ICEWATER_PROBES: cannot import {path!r} ({exc})") from None
        if not isinstance(probe, Probe):
            raise Misconfigured(f"ICEWATER_PROBES: {path!r} is a {type(probe).__name__}, not a judging.probes.Probe")
        if not NAME_RE.match(probe.name) or probe.name == ORIGINAL:
            raise Misconfigured(
                f"ICEWATER_PROBES: {path!r} is named {probe.name!r}; a probe name is lower-case letters, digits and _ "
                f"(at most 41, starting with a letter), and not {ORIGINAL!r}"
            )
        if not isinstance(probe.version, int) or isinstance(probe.version, bool) or probe.version < 1:
            raise Misconfigured(f"ICEWATER_PROBES: probe {probe.name}'s version must be a whole number of at least 1")
        probes[probe.name] = probe
    return probes


def choose(names: Sequence[str] | None = None) -> list[Probe]:
    """The probes named (all of them when None), in the order given; Misconfigured naming any unknown one."""
    probes = available()
    if names is None:
        return list(probes.values())
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise Misconfigured(f"name at least one probe (known: {', '.join(probes)})")
    unknown = [n for n in names if n not in probes]
    if unknown:
        raise Misconfigured(f"unknown probe(s) {', '.join(map(repr, unknown))} (known: {', '.join(probes)})")
    if len(set(names)) != len(names):
        raise Misconfigured("a probe is named twice")
    return [probes[n] for n in names]
