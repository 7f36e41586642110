"""Sentences the manuscript quotes, generated from the numbers (report/self_prediction/numbers.py)."""


def test_the_manuscript_says_how_self_training_changed_the_targets_predictability():
    from report.self_prediction.numbers import _target_shift

    numbers = {"mode_baseline_untrained_a_on_a": 65.7, "mode_baseline_trained_a_on_a": 91.7,
               "mode_baseline_untrained_b_on_b": 75.5, "mode_baseline_trained_b_on_b": 53.2,
               "mode_baseline_untrained_a_on_b": 75.5, "mode_baseline_trained_a_on_b": 53.2}  # cross rows: not used
    assert _target_shift(numbers) == ("the mode baseline of a model's own behaviour moved from 65.7% to 91.7% "
                                      "for a and from 75.5% to 53.2% for b")
    assert _target_shift({}) == "n/a"


def test_the_manuscript_names_the_held_out_tasks_experiment_1_could_not_score():
    from report.self_prediction.numbers import _tasks_sentence

    held_out = ["animals", "years", "myopic_reward", "categories"]
    assert _tasks_sentence(["animals", "categories", "years"], held_out) == (
        "On myopic_reward, no self-trained model gave an answer in the requested form, so no trained prediction "
        "there could be scored: experiment 1's trained comparison covers 3 of the 4 held-out tasks.")
    assert _tasks_sentence(["animals"], held_out).startswith("On years, myopic_reward and categories, ")
    assert _tasks_sentence(held_out, held_out) == "Every held-out task has scored trained predictions."
    assert _tasks_sentence(None, held_out) == ""


def test_the_manuscript_says_how_many_concepts_and_scripts_a_run_used():
    from report.self_prediction.numbers import _subset_phrase

    assert _subset_phrase(24, 50) == "the first 24 of the 50"
    assert _subset_phrase(None, 48) == "the 48"
    assert _subset_phrase(["fire", "ocean", "bread"], 50) == "3 chosen of the 50"
    assert _subset_phrase(4, None) == "the first 4"
    assert _subset_phrase(None, 50, skipped=True) == _subset_phrase(12, 50, skipped=True) == "the 50"
    assert _subset_phrase(None, None) == "the"


def test_the_manuscript_gives_the_mad_on_the_originals_scope():
    from report.self_prediction.numbers import _calibration_cells_text

    arm = {"mad": 12.0, "low": 8.0, "high": 20.0, "points": 24}
    cells = {"cells": 9, "cells_total": 15, "self_lower": 6, "self_credibly_better": 1, "cross_credibly_better": 0,
             "items_min": 12,
             "task": "animals", "property": "second_character",
             "original": {"pooled": {"untrained_self": arm, "trained_self": arm,
                                     "trained_cross": {**arm, "mad": 18.0, "low": 11.0, "high": 25.0},
                                     "difference": {"difference": -6.0, "low": -14.0, "high": 1.5, "items": 12}}}}
    text = _calibration_cells_text({"mad_cells": cells}, rope=2.0)
    assert text.startswith("The original computes the MAD on one task and one property at a time; its headline "
                           "calibration figure is the animals task's second character")
    assert ("after training is 12.0 [8.0, 20.0] for self- and 18.0 [11.0, 25.0] for cross-prediction; before "
            "training, 12.0 [8.0, 20.0]; self minus cross is \u22126.0 [\u221214.0, 1.5] (paired bootstrap): the data "
            "cannot tell which is better calibrated there.") in text
    assert "Of the 15 task x property cells of the held-out tasks, 9 have enough points" in text
    assert "in 6 of them self-prediction has the lower MAD, and the paired interval lies below 0 in 1 and above 0 in 0" in text
    # a run with too few points on the cell says so instead of printing a MAD
    few = {**cells, "original": {"pooled": {"untrained_self": arm, "trained_self": {**arm, "mad": float("nan"), "points": 6},
                                            "trained_cross": arm,
                                            "difference": {"difference": float("nan"), "low": float("nan"),
                                                           "high": float("nan"), "items": 2}}}}
    small = {**cells, "original": {"pooled": {**cells["original"]["pooled"],
                                              "difference": {"difference": -6.0, "low": -14.0, "high": 1.5, "items": 4}}}}
    assert "(paired bootstrap): too few items for a verdict (fewer than 10)." in _calibration_cells_text(
        {"mad_cells": small}, rope=2.0)
    assert "This run has too few points on that cell for a MAD (6 after training" in _calibration_cells_text(
        {"mad_cells": few}, rope=2.0)
    # cells of a handful of items: no count of intervals, a caution instead
    rough = _calibration_cells_text({"mad_cells": {**cells, "items_min": 4}}, rope=2.0)
    assert "in 6 of them self-prediction has the lower MAD. A cell holds as few as 4" in rough
    assert "@" not in rough  # citeproc would read a cross-reference in the numbers' metadata as a citation
    assert "lies below 0" not in rough
    assert _calibration_cells_text({}, rope=2.0) == ""


def test_the_methods_say_where_the_runs_items_come_from():
    from report.self_prediction.sentences import dataset_source_text

    own = [{"name": "animals", "family": "word_sequence", "licence": "CC-BY-4.0"},
           {"name": "years", "family": "number_sequence", "licence": "CC-BY-4.0"}]
    imported = [{"name": "li_animals", "family": "word_sequence", "licence": "MIT", "source": "the release"},
                {"name": "li_numbers", "family": "number_sequence", "licence": "MIT", "source": "the release"}]
    t = dataset_source_text(own)
    assert t["items_source_sentence"].startswith("The items themselves are ours") and "CC-BY-4.0" in t["items_source_sentence"]
    assert t["number_tasks_sentence"].startswith("The number task (years) is ours")
    assert t["datasets_limitation_head"] == ", synthetic tasks"
    t = dataset_source_text(imported)
    assert "ours" not in t["items_source_sentence"] and "imported" in t["items_source_sentence"] and "MIT" in t["items_source_sentence"]
    assert "ours" not in t["number_tasks_sentence"] and "li_numbers" in t["number_tasks_sentence"]
    assert t["datasets_limitation_head"] == "" and "template" not in t["datasets_limitation"]
    t = dataset_source_text(own[:1] + imported[:1])
    assert "animals are ours" in t["items_source_sentence"] and "li_animals are the original" in t["items_source_sentence"]
    assert t["number_tasks_sentence"] == ""


def _committed_meta():
    import json

    from reproduce.citation import read_manifests
    from reproduce.config import REPO_ROOT, load_params
    from report.self_prediction.numbers import build_numbers

    a = REPO_ROOT / "data" / "analysis"
    read = lambda p: json.loads((a / p).read_text())  # noqa: E731
    counts = {m["name"]: m.get("counts", {}) for m in read_manifests(REPO_ROOT / "data_raw", "experiment")}
    _, profile = load_params(REPO_ROOT / "params.yaml", profile="default")
    metrics, null = read("metrics.json"), read("null/null.json")
    return build_numbers(read("numbers.json"), metrics, profile, "default", read("power/power.json"), counts,
                         null), metrics, null


def test_the_abstract_gives_each_finding_with_its_interval_verdict_and_rate_in_at_most_200_words():
    """On the committed run's outputs, and with a sibling control added to them."""
    from report.self_prediction.abstract import MAX_WORDS, abstract_text

    from report.formatting import interval_text

    meta, metrics, null = _committed_meta()
    real = abstract_text(meta, metrics, null, injection=True, mirror=True)  # the committed run has the sibling
    assert len(real.split()) <= MAX_WORDS, len(real.split())
    sib = metrics["sibling"]["contrasts"]["self_minus_sibling"]["population"]
    assert f"cross-predictor's data): {interval_text(sib)} points, " in real and "add a sibling control" in real
    metrics = {k: v for k, v in metrics.items() if k != "sibling"}
    text = abstract_text(meta, metrics, null, injection=True, mirror=True)
    assert len(text.split()) <= MAX_WORDS, len(text.split())
    assert meta["text"]["headline_estimate"] in text and "false-positive rate" in text
    assert f"{meta['n']['calibration_mad_difference_pooled_difference']} [" in text
    assert "(95% bootstrap): inconclusive." in text  # experiment 2's verdict, short
    # experiment 3's verdict in short, by the main text's rule on the unrounded interval
    d = metrics["behaviour"]["excess"]["pooled_excess_new_minus_old"]
    from analysis.verdicts import INCONCLUSIVE, verdict

    assert verdict(d["low"], d["high"], 2.0) == INCONCLUSIVE and "beyond chance: inconclusive (not clear of " \
        "the ±2.0-point equivalence region)." in text
    assert "concept injection and a mirror test" in text and "sibling" not in text
    sib = {"contrasts": {"self_minus_sibling": {"estimand": "new_task_and_run", "population": {
        "mean": 3.21, "low": -4.5, "high": 11.02, "verdict": "inconclusive"}}}}
    rates = {**null["rates"], "sibling": {"self_minus_sibling": {"population": {
        "rate": 0.04, "low": 0.01, "high": 0.1, "positives": 1, "reps": 25, "within": True}}}}
    text = abstract_text(meta, {**metrics, "sibling": sib}, {**null, "rates": rates}, injection=True, mirror=True)
    assert len(text.split()) <= MAX_WORDS, len(text.split())
    assert "data): 3.2 [−4.5, 11.0] points, inconclusive (false-positive rate 4.0%, 1 of 25 null worlds)" in text
    assert "add a sibling control" in text
    # the side experiments' findings, one sentence each, in counts (no verdict word), within the limit
    ctl = {"k": 12, "n": 12}
    inj = {"models": {m: {"detection_best": {}, "detection_cells": 3, "detection_cells_above_fp": 0,
                          "steering": {"steer": 3, "cells": 9}, "detection_observed": {"control": ctl}}
                      for m in ("a", "b")}}
    mir = {"models": {"a": {"noticing_observed": {"k": 0, "n": 48}}, "b": {"noticing_observed": {"k": 1, "n": 54}}}}
    text = abstract_text(meta, {**metrics, "sibling": sib}, {**null, "rates": rates}, injection=inj, mirror=mir)
    assert len(text.split()) <= MAX_WORDS, len(text.split())
    assert ("Concept injection: detection's 95% interval lay above the control rate in 0 of 6 steering "
            "cells; both models put P(yes) above P(no) on every control trial (the ceiling).") in text
    assert "Mirror test: 1 of 102 replies remarked on the form of earlier replies shown as the model's." in text
    assert "run concept injection" not in text and "mirror test." not in text.split("Experiment 1")[0]
    inj["models"]["b"]["detection_observed"]["control"] = {"k": 11, "n": 12}
    del inj["models"]["b"]["steering"]  # numbers without the steering check count every cell
    assert "rate in 0 of 6 cells;" in abstract_text(meta, metrics, null, injection=inj, mirror=mir)
    # a model none of whose cells could be counted still enters the ceiling's sentence
    inj["models"]["c"] = {"detection_observed": {"control": {"k": 5, "n": 12}}}
    assert "; a put P(yes) above P(no)" in abstract_text(meta, metrics, null, injection=inj, mirror=mir)
    # no countable cell at all: the experiment is named instead of a sentence of findings
    none = {"models": {"c": inj["models"]["c"]}}
    assert "and run concept injection and a mirror test." in abstract_text(meta, metrics, null, injection=none,
                                                                            mirror=True)
    # past the limit, the side experiments' findings give way to naming them
    long = {**meta, "run": {**meta["run"], "models": " and ".join(["a-model-with-a-long-name"] * 30)}}
    text = abstract_text(long, metrics, null, injection=inj, mirror=mir)
    assert "Concept injection:" not in text and "and run concept injection and a mirror test." in text
    assert "; a put P(yes) above P(no) on every control trial" in abstract_text(meta, metrics, null, injection=inj,
                                                                             mirror=mir)
