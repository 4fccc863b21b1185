"""Real human-annotation data, imported through the product's importers, reproduces published figures.

The files stay in ../shared/datasets (next to the repository, in CI too); each test converts them to
our documented JSONL formats in a temporary directory and calls import_rubric / import_cases /
import_labels / import_verdicts, then reads the figures back through the calibration report.
Expected values are the ones printed in each dataset's README (published, or independently
computed there with krippendorff / scikit-learn / statsmodels), never recomputed here.

Mapping (the READMEs' suggestion): annotator A = response position 0, B = position 1; position 2 is
either a third annotator (so Krippendorff's alpha covers all three, as published) or the adjudicator
of A != B items (which makes gold the 3-way majority). Both mappings give the same gold.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
from django.core.management import call_command

from calibration.report.compose import calibration_report, human_agreement, segmented_report
from evals.lookup import eval_set_named
from evals.models import RubricVersion
from judging.judge_lookup import judge_named
from tests.factories import analyze, default_workspace

DATASETS = Path(
    os.environ.get("ICEWATER_DATASETS_DIR", Path(__file__).resolve().parents[3].parent / "shared" / "datasets")
)
if os.environ.get("CI") and not DATASETS.is_dir():
    # CI always has ../shared beside the clone: a silent skip there would hide the real-data checks.
    raise RuntimeError(f"CI run without the public datasets at {DATASETS}; set ICEWATER_DATASETS_DIR")

pytestmark = [
    pytest.mark.slow,  # reproduces published figures from the public datasets
    pytest.mark.django_db,
    pytest.mark.skipif(not DATASETS.is_dir(), reason=f"public datasets not found at {DATASETS}"),
]


def write_jsonl(path: Path, records) -> Path:
    with path.open("w") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")
    return path


def run(command: str, *args) -> str:
    default_workspace()  # the one workspace the commands work in (they need no --workspace then)
    out = io.StringIO()
    call_command(command, *[str(a) for a in args], stdout=out)
    if command.startswith("import_"):
        analyze()  # thousands of rows just arrived: let the planner know (see factories.analyze)
    return out.getvalue()


def import_rubric(tmp: Path, name: str, criteria: list[tuple[str, str]], gold_policy: str | None = None) -> str:
    policy = {"gold_policy": gold_policy} if gold_policy else {}
    rubric = {
        "name": name,
        "version": "1",
        "instruction": "Judge each criterion from the source text only.",
        "criteria": [
            {"key": key, "definition": text, "pass_example": "", "fail_example": "", **policy} for key, text in criteria
        ],
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(rubric))
    run("import_rubric", path)
    return f"{name}@1"


# --- QAGS (Wang, Cho & Lewis 2020) ----------------------------------------------------------------


def qags_items():
    """(case_id, article, sentence, [(worker, yes/no) x 3]) for CNN/DM then XSum, 953 sentences."""
    for part in ("cnndm", "xsum"):
        with (DATASETS / "qags" / f"mturk_{part}.jsonl").open() as fh:
            for i, line in enumerate(fh):
                doc = json.loads(line)
                for j, s in enumerate(doc["summary_sentences"]):
                    votes = [(f"{part}-w{r['worker_id']}", r["response"]) for r in s["responses"]]
                    yield f"{part}-{i}-{j}", doc["article"], s["sentence"], votes


def import_qags(tmp: Path, eval_set: str, rubric: str, items, reverse: bool = False, cases: bool = True) -> None:
    """QAGS cases and labels into `eval_set`; `reverse` writes each sentence's three labels in the
    opposite line order (the same labels, so the same people, in another order)."""
    if cases:
        rows = [{"case_id": cid, "input": article, "reference": "", "response": s} for cid, article, s, _ in items]
        run("import_cases", "--eval-set", eval_set, write_jsonl(tmp / f"{eval_set}-cases.jsonl", rows))
    labels = [
        {
            "case_id": cid,
            "criterion": "factually_consistent",
            "annotator": worker,  # real worker ids; the file order makes position 0 slot A, 1 slot B, 2 the third
            "outcome": "PASS" if answer == "yes" else "FAIL",
            "evidence": "NONE",
        }
        for cid, _, _, votes in items
        for worker, answer in (reversed(votes) if reverse else votes)
    ]
    path = write_jsonl(tmp / f"{eval_set}-{rubric}-labels.jsonl", labels)
    run("import_labels", "--eval-set", eval_set, "--rubric", rubric, path)


@pytest.fixture
def qags(tmp_path):
    rubric = import_rubric(tmp_path, "qags", [("factually_consistent", "The sentence is supported by the article.")])
    items = list(qags_items())
    import_qags(tmp_path, "qags", rubric, items)
    return tmp_path, rubric, items


def worker_pair_kappas(items) -> list[float]:
    """Cohen's kappa (scikit-learn) of every pair of real QAGS workers over the sentences they share,
    straight from the files; pairs that gave one and the same answer on every shared sentence are left out."""
    from itertools import combinations

    from sklearn.metrics import cohen_kappa_score

    shared: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for _, _, _, votes in items:
        for (w1, a), (w2, b) in combinations(sorted(votes), 2):
            shared[(w1, w2)].append((a, b))
    out = []
    for answers in shared.values():
        if len({x for pair in answers for x in pair}) > 1:
            out.append(cohen_kappa_score([a for a, _ in answers], [b for _, b in answers], labels=["yes", "no"]))
    return out


def test_qags_human_ceiling_reproduces_the_published_alpha_and_pairs_the_real_workers(qags):
    _, rubric, items = qags
    assert len(items) == 953
    h = human_agreement(
        eval_set=eval_set_named("qags", default_workspace()),
        rubric_version=RubricVersion.objects.by_ref(rubric, default_workspace()),
    )
    ceiling = h["factually_consistent"]
    # JUDGE-BENCH (Bavaresco et al. 2025): nominal alpha over the three positions, pooled, n = 953.
    assert ceiling.alpha == pytest.approx(0.4878830126174004, abs=1e-12)
    low, high = ceiling.alpha_ci
    assert low < 0.4879 < high and high - low < 0.15
    # The mean pairwise kappa pairs the real workers (246 people, 841 pairs sharing a sentence, 520 with
    # a defined kappa): each pair shares a median of 3 sentences, so the ceiling is alpha.
    want = worker_pair_kappas(items)
    assert ceiling.pairwise.kappa == pytest.approx(sum(want) / len(want), abs=1e-12)
    assert (ceiling.pairwise.pairs, ceiling.pairwise.undefined_pairs) == (len(want), 841 - len(want)) == (520, 321)
    assert ceiling.pairwise.median_items == 3 and ceiling.ceiling[0] == "alpha"
    # Every sentence has three labels: annotator A vs B (position-dependent) is not reported at all.
    assert (ceiling.n, ceiling.kappa, ceiling.over_two) == (0, None, 953)


def test_qags_human_ceiling_does_not_depend_on_the_line_order_of_the_labels(qags):
    from calibration.data.frame_reading import human_pairs
    from calibration.data.frames import Scope, load_labels
    from calibration.stats.metrics import cohen_agreement

    tmp, rubric, items = qags
    import_qags(tmp, "qags-reversed", rubric, items, reverse=True)
    rv = RubricVersion.objects.by_ref(rubric, default_workspace())
    ceilings = [
        human_agreement(eval_set=eval_set_named(name, default_workspace()), rubric_version=rv)["factually_consistent"]
        for name in ("qags", "qags-reversed")
    ]
    assert ceilings[0] == ceilings[1]  # alpha, pairwise kappa, both intervals, every count
    # Negative control: the first two annotations by slot (the A vs B figure before the order-free
    # ceiling) is a different number for the same labels: README kappa(A, B) 0.5046, kappa(C, B) 0.4881.
    by_slot = [
        cohen_agreement(p["a"], p["b"]).kappa
        for p in (
            human_pairs(load_labels(Scope(eval_set_named(name, default_workspace()), rv)))
            for name in ("qags", "qags-reversed")
        )
    ]
    assert by_slot[0] == pytest.approx(0.5046, abs=5e-5) and by_slot[1] == pytest.approx(0.4881, abs=5e-5)


def always_yes(tmp: Path, rubric: str, items, judge: str = "always-yes") -> dict:
    """Import an always-"supported" judge's verdicts on QAGS and return the report's one row."""
    verdicts = [
        {
            "case_id": cid,
            "agent_version": "default",
            "criterion": "factually_consistent",
            "outcome": "PASS",
            "evidence": "NONE",
            "raw": "always yes",
        }
        for cid, *_ in items
    ]
    run(
        "import_verdicts",
        "--eval-set",
        "qags",
        "--rubric",
        rubric,
        "--judge",
        judge,
        write_jsonl(tmp / f"{rubric}-verdicts.jsonl", verdicts),
    )
    report = json.loads(
        run("calibration_report", "--eval-set", "qags", "--rubric", rubric, "--judge", judge, "--format", "json")
    )
    [row] = report["criteria"]
    return row


def test_qags_always_yes_judge_is_caught_by_kappa_despite_its_agreement(qags):
    """Negative control on real data: a judge that always says "supported" agrees with the majority on
    67.89% of sentences (the README's majority-yes rate) and has kappa exactly 0."""
    tmp, rubric, items = qags
    row = always_yes(tmp, rubric, items)
    assert row["n"] == 953 and row["gold_policy"] == "majority" and row["awaiting_gold"] == 0
    assert row["gold_pass_rate"] == pytest.approx(0.6789, abs=5e-5)
    assert row["observed_agreement"] == pytest.approx(0.6789, abs=5e-5)
    assert row["kappa"] == 0.0
    assert row["false_pass"] == round(953 * (1 - 0.6789))  # every majority-"no" sentence passes
    assert "constant_judge" in [w["code"] for w in row["warnings"]]
    assert row["tier"] == "unusable"
    assert row["human_alpha"] == pytest.approx(0.4879, abs=5e-5) and row["human_kappa"] is None
    assert row["human_ceiling"] == row["human_alpha"] and row["human_ceiling_source"] == "alpha"
    assert {"human_pairs_sparse", "human_ab_subset"} <= {w["code"] for w in row["warnings"]}


def test_qags_under_the_conservative_gold_policies(qags):
    """FaithBench-style gold without fake adjudications: any_fail makes one worker's "no" gold FAIL;
    unanimous keeps gold only where all three agree (README: 65.58% of sentences) and leaves the rest waiting."""
    tmp, _, items = qags
    criterion = [("factually_consistent", "The sentence is supported by the article.")]
    any_no = sum(any(answer == "no" for _, answer in votes) for *_, votes in items)
    for policy in ("any_fail", "unanimous"):
        rubric = import_rubric(tmp, f"qags-{policy}", criterion, gold_policy=policy)
        import_qags(tmp, "qags", rubric, items, cases=False)
        row = always_yes(tmp, rubric, items, judge=f"always-yes-{policy}")
        assert row["gold_policy"] == policy and row["labeled_items"] == 953 and row["gold_ties"] == 0
        if policy == "any_fail":
            assert (row["n"], row["awaiting_gold"]) == (953, 0)
            assert row["false_pass"] == any_no and row["gold_pass_rate"] == pytest.approx(1 - any_no / 953)
        else:
            assert row["awaiting_gold"] == 953 - round(0.6558 * 953) == 328 and row["n"] == 625
            assert "much_gold_pending" in {w["code"] for w in row["warnings"]}


# --- XSum hallucination (Maynez et al. 2020) ------------------------------------------------------

SYSTEM_PREFIX = {"bert_withckpt": "BERTS2S", "ptgen": "PtGen", "tconvs2s": "TConvS2S", "bert_nockpt": "TranS2S"}


def xsum_items():
    """Complete (bbcid, system) items: summary and the three is_factual labels by position."""
    labels: dict[tuple[str, str], dict] = defaultdict(dict)
    summary: dict[tuple[str, str], str] = {}
    with (DATASETS / "xsum_hallucination" / "factuality_annotations_xsum_summaries.csv").open() as fh:
        for row in csv.DictReader(fh):
            key = (row["bbcid"], row["system"])
            summary[key] = row["summary"]
            if row["is_factual"] in ("yes", "no"):
                labels[key][row["worker_id"]] = row["is_factual"]
    complete = {k: v for k, v in labels.items() if set(v) == {"wid_0", "wid_1", "wid_2"}}
    return {k: (summary[k], v) for k, v in complete.items()}


def entailment_judge() -> dict[tuple[str, str], str]:
    """The README's deliberately weak judge: Entailment >= 0.5 means PASS for `factual`."""
    out = {}
    with (DATASETS / "xsum_hallucination" / "eval_scores_xsum_summaries.csv").open() as fh:
        for row in csv.DictReader(fh):
            prefix, _, bbcid = row["system_bbcid"].rpartition("_")
            out[(bbcid, SYSTEM_PREFIX[prefix])] = "PASS" if float(row["Entailment"]) >= 0.5 else "FAIL"
    return out


def import_xsum(tmp: Path, third_position_adjudicates: bool) -> str:
    rubric = import_rubric(tmp, "xsum", [("factual", "Every claim of the summary is supported by the article.")])
    items = xsum_items()
    references = {}
    with (DATASETS / "xsum_hallucination" / "hallucination_annotations_xsum_summaries.csv").open() as fh:
        for row in csv.DictReader(fh):
            if row["system"] == "Gold":
                references[row["bbcid"]] = row["summary"]
    # One case per BBC document, one output per system (the agent version), as the README suggests.
    cases = [
        {
            "case_id": bbcid,
            "agent_version": system,
            "input": f"BBC article {bbcid} (the dataset does not include the article text)",
            "reference": references.get(bbcid, ""),
            "response": text,
        }
        for (bbcid, system), (text, _) in sorted(items.items())
    ]
    run("import_cases", "--eval-set", "xsum", write_jsonl(tmp / "cases.jsonl", cases))
    lines = []
    for (bbcid, system), (_, votes) in sorted(items.items()):
        base = {"case_id": bbcid, "agent_version": system, "criterion": "factual"}
        outcome = {p: "PASS" if v == "yes" else "FAIL" for p, v in votes.items()}
        lines.append({**base, "annotator": "xsum-pos0", "outcome": outcome["wid_0"], "evidence": "NONE"})
        lines.append({**base, "annotator": "xsum-pos1", "outcome": outcome["wid_1"], "evidence": "NONE"})
        if not third_position_adjudicates:
            lines.append({**base, "annotator": "xsum-pos2", "outcome": outcome["wid_2"], "evidence": "NONE"})
        elif outcome["wid_0"] != outcome["wid_1"]:
            lines.append({**base, "adjudicator": "xsum-pos2", "outcome": outcome["wid_2"], "rationale": "third rater"})
    run("import_labels", "--eval-set", "xsum", "--rubric", rubric, write_jsonl(tmp / "labels.jsonl", lines))
    judge = entailment_judge()
    verdicts = [
        {
            "case_id": bbcid,
            "agent_version": system,
            "criterion": "factual",
            "outcome": judge[(bbcid, system)],
            "evidence": "NONE",
            "raw": "Entailment >= 0.5",
        }
        for (bbcid, system) in sorted(items)
    ]
    run(
        "import_verdicts",
        "--eval-set",
        "xsum",
        "--rubric",
        rubric,
        "--judge",
        "entailment",
        write_jsonl(tmp / "verdicts.jsonl", verdicts),
    )
    return rubric


@pytest.mark.parametrize("third_position_adjudicates", [False, True], ids=["three-annotators", "adjudicator"])
def test_xsum_factual_reproduces_human_and_weak_judge_figures(tmp_path, third_position_adjudicates):
    rubric = import_xsum(tmp_path, third_position_adjudicates)
    report = calibration_report(
        eval_set=eval_set_named("xsum", default_workspace()),
        rubric_version=RubricVersion.objects.by_ref(rubric, default_workspace()),
        judge_config=judge_named("entailment", default_workspace()),
    )
    row = report.row("factual")
    if third_position_adjudicates:
        # Two annotators (the third only adjudicates): README kappa(A, B) = 0.7830 over 1,848 items
        # (A x B [[1621, 49], [25, 153]]), and with one pair the mean pairwise kappa is the same number.
        assert row.human.n == 1848 and row.human.over_two == 0
        assert row.human.kappa == pytest.approx(0.7830, abs=5e-5)
        assert row.human.pairwise_kappa == pytest.approx(0.7830, abs=5e-5) and row.human.pairs == 1
    else:
        # Three annotators: alpha 0.7744 (README), mean pairwise kappa = mean of the README's
        # kappa(A,B), kappa(A,C), kappa(B,C) = (0.7830 + 0.7785 + 0.7622) / 3; no A vs B.
        assert row.human.alpha == pytest.approx(0.7744, abs=5e-5)
        assert row.human.pairwise_kappa == pytest.approx((0.7830 + 0.7785 + 0.7622) / 3, abs=5e-5)
        assert row.human.pairs == 3 and row.human.pair_median_items == 1848
        assert (row.human.n, row.human.kappa, row.human.over_two) == (0, None, 1848)
    assert row.human.ceiling_value == row.human.pairwise_kappa and row.human.ceiling_source == "mean pairwise kappa"
    # The weak judge vs the 3-rater majority: kappa 0.0705, agreement 0.6726,
    # confusion (rows majority no/yes, cols judge no/yes) [[1162, 502], [103, 81]].
    assert row.judge.n == 1848 and row.buckets.pending_gold == 0
    assert row.judge.kappa == pytest.approx(0.0705, abs=5e-5)
    assert row.judge.observed_agreement == pytest.approx(0.6726, abs=5e-5)
    assert (row.judge.true_fail, row.judge.false_pass, row.judge.false_fail, row.judge.true_pass) == (
        1162,
        502,
        103,
        81,
    )
    assert row.judge.reference_pass_rate == pytest.approx(0.0996, abs=5e-5)
    assert row.tier == "unusable"
    low, high = row.judge.kappa_ci
    assert low < 0.0705 < high


def test_xsum_split_by_system_reproduces_the_per_system_alpha(tmp_path):
    rubric = import_xsum(tmp_path, third_position_adjudicates=False)
    seg = segmented_report(
        eval_set=eval_set_named("xsum", default_workspace()),
        rubric_version=RubricVersion.objects.by_ref(rubric, default_workspace()),
        judge_config=judge_named("entailment", default_workspace()),
    )
    alpha = {s.agent_version: s.rows[0].human.alpha for s in seg.segments}
    n = {s.agent_version: s.rows[0].human.over_two for s in seg.segments}  # all three label each
    # README: alpha for factual by system.
    assert alpha["BERTS2S"] == pytest.approx(0.7943, abs=5e-5) and n["BERTS2S"] == 454
    assert alpha["PtGen"] == pytest.approx(0.6810, abs=5e-5) and n["PtGen"] == 454
    assert alpha["TConvS2S"] == pytest.approx(0.7924, abs=5e-5) and n["TConvS2S"] == 469
    assert alpha["TranS2S"] == pytest.approx(0.7790, abs=5e-5) and n["TranS2S"] == 471
    out = json.loads(
        run(
            "calibration_report",
            "--eval-set",
            "xsum",
            "--rubric",
            rubric,
            "--judge",
            "entailment",
            "--by",
            "agent_version",
            "--format",
            "json",
        )
    )
    kappas = [s["criteria"][0]["kappa"] for s in out["segments"]]
    assert out["mean_kappa"]["factual"]["mean_kappa"] == pytest.approx(sum(kappas) / 4)


# --- USR Topical-Chat (Mehri & Eskenazi 2020) -----------------------------------------------------

USR_CRITERIA = {"uses_knowledge": "Uses Knowledge", "understandable": "Understandable"}


def test_usr_topical_chat_binary_criteria_and_the_judge_bench_subset(tmp_path):
    rubric = import_rubric(
        tmp_path,
        "usr-tc",
        [("understandable", "The response makes sense on its own."), ("uses_knowledge", "The response uses the fact.")],
    )
    contexts = json.loads((DATASETS / "usr_dialog" / "usr_topical_chat.json").read_text())
    scores = json.loads((DATASETS / "usr_dialog" / "eval_usr_topical_chat.json").read_text())
    cases, labels, verdicts = [], [], []
    for i, (ctx, scored) in enumerate(zip(contexts, scores, strict=True)):
        truth = next((r["response"] for r in ctx["responses"] if r["model"] == "Original Ground Truth"), "")
        for r, s in zip(ctx["responses"], scored["responses"], strict=True):
            # One case per context, one output per system (agent version = the system's name).
            base = {"case_id": f"tc-{i}", "agent_version": r["model"]}
            cases.append(
                {
                    **base,
                    "input": f"{ctx['context']}\n\nFACT: {ctx['fact']}",
                    "reference": truth,
                    "response": r["response"],
                }
            )
            for key, column in USR_CRITERIA.items():
                for pos in range(3):
                    labels.append(
                        {
                            **base,
                            "criterion": key,
                            "annotator": f"usr-pos{pos}",
                            "outcome": "PASS" if r[column][pos] == 1 else "FAIL",
                            "evidence": "NONE",
                        }
                    )
            # README's bad judges, threshold 0.5: cola for Understandable, fact_mrpc for Uses Knowledge.
            for key, metric in (("understandable", "cola"), ("uses_knowledge", "fact_mrpc")):
                verdicts.append(
                    {
                        **base,
                        "criterion": key,
                        "outcome": "PASS" if s[metric] >= 0.5 else "FAIL",
                        "evidence": "NONE",
                        "raw": f"{metric}={s[metric]}",
                    }
                )
    run("import_cases", "--eval-set", "usr-tc", write_jsonl(tmp_path / "cases.jsonl", cases))
    run("import_labels", "--eval-set", "usr-tc", "--rubric", rubric, write_jsonl(tmp_path / "labels.jsonl", labels))
    run(
        "import_verdicts",
        "--eval-set",
        "usr-tc",
        "--rubric",
        rubric,
        "--judge",
        "glue",
        write_jsonl(tmp_path / "verdicts.jsonl", verdicts),
    )
    scope = dict(
        eval_set=eval_set_named("usr-tc", default_workspace()),
        rubric_version=RubricVersion.objects.by_ref(rubric, default_workspace()),
    )
    report = calibration_report(**scope, judge_config=judge_named("glue", default_workspace()))
    uk, un = report.row("uses_knowledge"), report.row("understandable")
    # README, all 360 responses: alpha nominal, the mean of kappa(A,B), kappa(A,C), kappa(B,C) over the
    # three positions (imported as three annotators), and the weak judges' kappa vs majority.
    assert uk.human.pairs == 3 and un.human.pairs == 3 and uk.human.n == 0 and uk.human.over_two == 360
    assert uk.human.alpha == pytest.approx(0.7090, abs=5e-5)
    assert uk.human.pairwise_kappa == pytest.approx((0.7419 + 0.6977 + 0.6868) / 3, abs=5e-5)
    assert un.human.alpha == pytest.approx(0.4828, abs=5e-5)
    assert un.human.pairwise_kappa == pytest.approx((0.4747 + 0.4224 + 0.5641) / 3, abs=5e-5)
    assert uk.judge.kappa == pytest.approx(0.1143, abs=5e-5) and un.judge.kappa == pytest.approx(0.1268, abs=5e-5)
    assert uk.tier == un.tier == "unusable"
    # JUDGE-BENCH scored only the last response of every context ("New Human Generated", 60 items):
    # alpha there is 0.479651 for uses knowledge and -0.005618 for understandable.
    subset = human_agreement(**scope, agent_version="New Human Generated")
    assert subset["uses_knowledge"].alpha == pytest.approx(0.479651, abs=5e-7)
    assert subset["understandable"].alpha == pytest.approx(-0.005618, abs=5e-7)
