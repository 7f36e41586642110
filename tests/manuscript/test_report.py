"""The report machinery without models: number formatting, the Lua filter's cross-references, shortcodes,
includes and callouts, the HTML checks, and citable datasets (release hash, card, CITATION.cff)."""

import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml

from reproduce.citation import citation_cff, read_manifests, release_sha256
from reproduce.self_prediction.task_cards import dataset_card
from reproduce.config import REPO_ROOT
from report import (MINUS, ReportError, blank_fraction, check_html, fmt, fmt_prob, format_key, pandoc_path,
                    render_pandoc)

FILTER = REPO_ROOT / "paper" / "filters" / "quarto-compat.lua"


# ------------------------------------------------------------------------------------------ numbers
def test_numbers_are_printed_with_a_true_minus_and_never_as_minus_zero():
    assert fmt(-0.9494) == f"{MINUS}0.9"
    assert fmt(-0.04) == "0.0"
    assert fmt(40.66) == "40.7"
    assert fmt(float("nan")) == "n/a"


def test_posterior_probabilities_state_their_ends_as_bounds():
    assert fmt_prob(0.99925) == "> 0.99" and fmt_prob(0.00025) == "< 0.01" and fmt_prob(0.1885) == "0.19"


@pytest.mark.parametrize("key,value,expected", [
    ("advantage_overall_mean", -0.9494, f"{MINUS}0.9"),
    ("advantage_overall_p_positive", 0.1885, "0.19"),
    ("advantage_glm_p_value", 0.368, "0.37"),
    ("behaviour_share_new_share", 0.4952, "49.5"),
    ("behaviour_changed_share", 0.2893, "28.9"),
    ("behaviour_model_p_new", 0.4951, "49.5"),
    ("behaviour_share_new_k", 361.0, "361"),
    ("behaviour_evaluated", 2520.0, "2,520"),
    ("n_observations_trained", 8348, "8,348"),
    ("calibration_mad_trained_self_mad", 6.9156, "6.9"),
    # a bound other than zero never prints as 0.0 (the paired delta's upper bound of the committed run)
    ("advantage_paired_delta_high", 0.0041, "0.004"),
    ("advantage_paired_delta_low", -10.52, f"{MINUS}10.5"),
    ("advantage_paired_delta_mean", 0.0041, "0.0"),
    ("advantage_delta_logit_low", -1.0234, f"{MINUS}1.02"),
])
def test_each_kind_of_number_is_formatted_by_its_name(key, value, expected):
    assert format_key(key, value) == expected


# ------------------------------------------------------------------------------------------ the Lua filter
QMD = """---
title: "T {{< meta n.x >}}"
---

# Intro {#sec-intro}

See @fig-one, @tbl-one and @sec-later; the value is {{< meta n.x >}}, and {{< meta run.name >}}.

![First figure.](one.png){#fig-one}

| a | b |
|---|---|
| 1 | 2 |

: A table. {#tbl-one}

::: {.callout-warning title="Careful"}
Inside the box.
:::

# Later {#sec-later}

{{< include part.md >}}

See @fig-two.
"""


def _render(tmp_path, qmd=QMD, meta=None):
    from PIL import Image

    (tmp_path / "index.qmd").write_text(qmd)
    (tmp_path / "part.md").write_text("![Second figure.](one.png){#fig-two}\n")
    Image.new("RGB", (4, 4), "red").save(tmp_path / "one.png")
    (tmp_path / "meta.yml").write_text(yaml.safe_dump(meta or {"n": {"x": "4.2"}, "run": {"name": "tiny"}}))
    shutil.copy(FILTER, tmp_path / "filter.lua")
    from report.render import MARKDOWN

    proc = subprocess.run([pandoc_path(), "index.qmd", "--from", MARKDOWN, "--metadata-file", "meta.yml",
                           "--lua-filter", "filter.lua",
                           "--standalone", "--embed-resources", "--to", "html5", "--number-sections"],
                          cwd=tmp_path, capture_output=True, text=True)
    return proc


def test_filter_numbers_and_links_cross_references_and_fills_shortcodes_and_includes(tmp_path):
    proc = _render(tmp_path)
    assert proc.returncode == 0, proc.stderr
    html = proc.stdout
    assert '<a href="#fig-one">Figure 1</a>' in html and '<a href="#fig-two">Figure 2</a>' in html
    assert '<a href="#tbl-one">Table 1</a>' in html and '<a href="#sec-later">Section 2</a>' in html
    assert "<strong>Figure 1:</strong> First figure." in html and "<strong>Table 1:</strong> A table." in html
    assert "the value is 4.2, and tiny." in html and "<title>T 4.2</title>" in html
    assert 'class="callout callout-warning"' in html and "<strong>Careful</strong>" in html
    assert html.count('src="data:image/png;base64,') == 2  # the included figure too
    assert "{{&lt;" not in html and "@fig" not in html


def test_a_reference_in_parentheses_at_the_start_of_a_line_stays_a_reference(tmp_path):
    """Pandoc's example lists would read "(@tbl-one) rest" at a line's start as a numbered example, and every
    "(@tbl-one)" as that example's number: the renderer turns them off."""
    qmd = QMD.replace("See @fig-two.", "A list item that wraps:\n\n- the variant is reported\n  (@tbl-one) rather "
                      "than as the main result; see (@tbl-one).")
    proc = _render(tmp_path, qmd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count('(<a href="#tbl-one">Table 1</a>)') == 2


def test_no_line_of_the_manuscript_starts_a_numbered_example():
    """Quarto's markdown keeps example lists: a line of the manuscript that starts with "(@label) " would
    start one there, so none may."""
    import re

    for qmd in (FILTER.parent.parent).glob("*.qmd"):
        for n, line in enumerate(qmd.read_text().splitlines(), 1):
            assert not re.match(r"\s*\(@[\w-]+\)(\s|$)", line), f"{qmd.name}:{n} starts a numbered example: {line}"


def test_filter_stops_on_an_unknown_metadata_key(tmp_path):
    proc = _render(tmp_path, meta={"n": {}, "run": {"name": "tiny"}})
    assert proc.returncode != 0 and "{{< meta n.x >}}: no such metadata key" in proc.stderr


def test_filter_stops_on_a_reference_to_a_missing_label(tmp_path):
    proc = _render(tmp_path, QMD + "\nAnd @fig-nowhere.\n")
    assert proc.returncode != 0 and "@fig-nowhere points to no figure" in proc.stderr


def test_the_html_check_names_what_a_reader_would_see(tmp_path):
    page = tmp_path / "p.html"
    page.write_text('<p>{{&lt; meta n.x &gt;}} and ?? and @tbl-x</p>'
                    '<figure id="fig-a"><img src="a.png" /></figure>')
    problems = check_html(page, ["a", "b"])
    text = "\n".join(problems)
    for what in ("unexpanded shortcode", "'??'", "raw cross-reference", "not embedded: a.png",
                 "fig-a has no embedded image", "fig-b is not in the report"):
        assert what in text
    page.write_text('<figure id="fig-a"><img src="data:image/png;base64,AAAA" /></figure><p>fine</p>')
    assert check_html(page, ["a"]) == []


@pytest.mark.slow
def test_render_without_the_generated_inputs_fails_and_writes_nothing(tmp_path):
    paper = tmp_path / "paper"
    shutil.copytree(REPO_ROOT / "paper", paper, ignore=shutil.ignore_patterns("_generated", "_output"))
    (paper / "_generated").mkdir()
    (paper / "_generated" / "numbers.yml").write_text("n: {}\n")
    with pytest.raises(ReportError, match="no such metadata key|file not found"):
        render_pandoc(paper, tmp_path / "out", pdf=False)
    assert not (tmp_path / "out" / "index.html").exists()  # nothing half-written


def test_blank_fraction_tells_a_blank_page_from_a_drawn_one(tmp_path):
    from PIL import Image

    Image.new("RGB", (50, 50), "white").save(tmp_path / "w.png")
    a = np.full((50, 50, 3), 255, np.uint8)
    a[10:30, 5:45] = 0
    Image.fromarray(a).save(tmp_path / "d.png")
    assert blank_fraction(tmp_path / "w.png") == 1.0
    assert blank_fraction(tmp_path / "d.png") == pytest.approx(1 - 20 * 40 / 2500)


# ------------------------------------------------------------------------------------------ citable data
def _manifest(**kw):
    m = {"name": "animals", "version": "1.0.0", "split": "test", "family": "word_sequence",
         "description": "continue a random sequence of animal names", "properties": ["first_word"],
         "max_new_tokens": 24, "stance_question": None, "licence": "CC-BY-4.0", "generator": "g 1.0.0",
         "seed": 1, "n_items": 2, "sha256": "ab" * 32, "files": ["items.jsonl"]}
    m.update(kw)
    m["release_sha256"] = release_sha256(m)
    return m


def test_a_version_bump_changes_the_release_hash_the_card_and_the_citation():
    old, new = _manifest(), _manifest(version="1.1.0")
    assert old["sha256"] == new["sha256"]  # same items
    assert old["release_sha256"] != new["release_sha256"]
    assert dataset_card(old) != dataset_card(new) and new["release_sha256"] in dataset_card(new)
    assert old["release_sha256"] not in citation_cff([new])
    cff = yaml.safe_load(citation_cff([new]))
    ds = [r for r in cff["references"] if r["type"] == "dataset"][0]
    assert ds["version"] == "1.1.0"
    assert {"type": "other", "value": f"release-sha256:{new['release_sha256']}"} in ds["identifiers"]
    # any edit of the items changes it too; the hash ignores only itself
    assert _manifest(sha256="cd" * 32)["release_sha256"] != old["release_sha256"]
    assert release_sha256({**old, "release_sha256": "x"}) == old["release_sha256"]


def test_every_committed_dataset_has_a_card_and_a_matching_citation():
    manifests = read_manifests(REPO_ROOT / "data_raw")
    assert len(manifests) >= 12
    cff = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    cited = {r["title"].rsplit(": ", 1)[1]: r for r in cff["references"] if r["type"] == "dataset"}
    for m in manifests:
        assert m["release_sha256"] == release_sha256(m), f"{m['name']}: manifest hash is stale"
        card = (REPO_ROOT / "data_raw" / m["name"] / "README.md").read_text()
        assert card == dataset_card(m), f"{m['name']}: card is stale; run `looking-inward datasets`"
        for needle in (m["version"], m["sha256"], m["release_sha256"], m["licence"], "Intended use",
                       "Known limitations"):
            assert needle in card
        ref = cited[m["name"]]
        assert ref["version"] == m["version"]
        assert f"release-sha256:{m['release_sha256']}" in json.dumps(ref["identifiers"])
    # the other experiments' datasets (several files each): card, hashes and citation
    from reproduce.injection.data import injection_card, load_injection_dataset
    from reproduce.mirror.data import load_mirror_dataset, mirror_card
    from reproduce.self_prediction.policy_data import load_policy_dataset, policy_card

    others = read_manifests(REPO_ROOT / "data_raw", "experiment")
    from reproduce.injection.catalog import load_dataset
    from reproduce.injection.lindsey_data import card as lindsey_card

    assert [m["name"] for m in others] == ["concept_injection", "concept_injection_lindsey",
                                           "concept_injection_lindsey_info", "mirror_test", "policy_reports"]
    loaders = {"concept_injection": (load_injection_dataset, injection_card),
               "concept_injection_lindsey": (lambda r: load_dataset(r, "concept_injection_lindsey"), lindsey_card),
               "concept_injection_lindsey_info": (lambda r: load_dataset(r, "concept_injection_lindsey_info"),
                                                  lindsey_card),
               "mirror_test": (load_mirror_dataset, mirror_card),
               "policy_reports": (load_policy_dataset, policy_card)}
    for m in others:
        load, card = loaders[m["name"]]
        assert load(REPO_ROOT / "data_raw").release_sha256 == m["release_sha256"]
        assert (REPO_ROOT / "data_raw" / m["name"] / "README.md").read_text() == card(m)
        assert f"release-sha256:{m['release_sha256']}" in json.dumps(cited[m["name"]]["identifiers"])
    assert set(cited) == {m["name"] for m in manifests + others}


def test_text_a_model_wrote_is_printed_as_written_and_not_checked_as_markup(tmp_path):
    """A reply may contain "??", "@fig-x", a shortcode, a citation key or HTML: in a table of example
    transcripts it is printed verbatim, resolves nothing, and does not fail the report's checks."""
    import pandas as pd

    from report.formatting import model_text
    from report.self_prediction.tables import md_table

    reply = 'What is it?? See @fig-one, {{< meta n.nope >}} [@nobody] *not bold* <b>x</b> a|b\nnext line'
    table = md_table(pd.DataFrame({"model": ["m"], "reply": [model_text(reply)]}), "Replies.", "tbl-replies")
    proc = _render(tmp_path, QMD + "\n" + table)
    assert proc.returncode == 0, proc.stderr
    html = proc.stdout
    span = " ".join(re.search(r'<span class="model-text">(.*?)</span>', html, re.S).group(1).split())
    assert span == ("What is it?? See @fig-one, {{&lt; meta n.nope &gt;}} [@nobody] *not bold* &lt;b&gt;x&lt;/b&gt; "
                    "a|b next line")
    (tmp_path / "out.html").write_text(html)
    assert check_html(tmp_path / "out.html", []) == []
    # the same "??" outside a model's text is still caught
    (tmp_path / "bad.html").write_text(html.replace("</body>", "<p>see ??</p></body>"))
    assert any("??" in p for p in check_html(tmp_path / "bad.html", []))


def test_the_gate_sentence_names_the_fits_that_passed_only_at_a_longer_or_more_careful_sampling():
    from report.formatting import gate_sentence

    ok = {"draws": 1000, "r_hat_max": 1.0}
    diags = [{"model": "gemma3-270m", "fit": "detection", "diagnostics": ok},
             {"model": "gemma3-270m", "fit": "yes_bias", "diagnostics": {**ok, "draws": 2000, "refit": "tail ESS 392"}},
             {"model": "all", "fit": "noticing", "diagnostics": {**ok, "draws": 2000, "refit": "bulk ESS 380"}}]
    assert gate_sentence(diags[:1]) == "Every fit passed the convergence gate (1 fit)."
    assert gate_sentence(diags) == ("Every fit passed the convergence gate (3 fits; 2 of them at a sampling with "
                                    "twice the draws, after missing it at a shorter one: yes_bias (gemma3-270m), "
                                    "noticing).")
    diags.append({"model": "smollm2-135m", "fit": "intention",
                  "diagnostics": {**ok, "target_accept": 0.99, "diverged": "3 divergent transitions at target "
                                  "acceptance 0.9"}})
    assert gate_sentence(diags).endswith("noticing; 1 of them at a higher target acceptance, after divergent "
                                         "transitions at a lower one: intention (smollm2-135m)).")


def test_the_methods_name_the_fits_that_started_at_the_retrys_target_acceptance():
    from reproduce.config import load_params
    from report.self_prediction.numbers import _first_sampling

    _, profile = load_params(profile="default")  # target acceptance 0.9, retry 0.99
    diag = {"advantage": {"target_accept": 0.9}, "training effect": {"target_accept": 0.99},
            "calibration log-score": {"target_accept": 0.99},
            "behaviour tracking": {"target_accept": 0.99, "diverged": "2 divergent transitions at target acceptance 0.9"}}
    assert _first_sampling(diag, profile).startswith(
        "first sampling (0.99 from the start for the training effect and calibration log-score models, whose")
    assert _first_sampling({"advantage": {"target_accept": 0.9}, "old run": {}}, profile) == "first sampling"


@pytest.mark.parametrize("system_prompt, methods, difference", [
    (None, "the template's own default system prompt", "this run keeps each chat template's own default"),
    ("", "an empty system message, as the original sends", "As in the original"),
    ("Be brief.", 'the system prompt "Be brief."', "this run sends the system prompt named in the methods"),
])
def test_the_methods_say_what_a_chat_model_read_before_each_prompt(system_prompt, methods, difference):
    from report.self_prediction.numbers import _system_prompt_text

    phrase, sentence = _system_prompt_text(system_prompt, ["smollm2-135m", "gemma3-270m"])
    assert phrase.startswith(methods) and difference in sentence
    # SmolLM2's default is named only where the run has SmolLM2 and keeps the default
    assert ("SmolLM2" in sentence) == (system_prompt is None)
    assert "SmolLM2" not in _system_prompt_text(system_prompt, ["gemma3-270m"])[1]


def test_an_empty_system_prompt_sends_an_empty_system_message_as_the_original():
    from reproduce.lm.formats import PromptFormat
    from reproduce.lm.models import read_tokenizer, resolve, tokenizer_dir

    tok = read_tokenizer(tokenizer_dir(resolve("smollm2-135m")))
    default, empty = (PromptFormat("chat", tok, sp).render("Hi") for sp in (None, ""))
    assert "named SmolLM" in default
    assert empty == "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def _summary(mean, low, high):
    return {"mean": mean, "low": low, "high": high, "p_positive": 0.5}


@pytest.mark.parametrize("part, says", [
    (_summary(0.2, -0.6, 1.1), "compliance accounts for practically none of the difference"),
    (_summary(6.0, 3.0, 9.0), "part of the self-minus-cross difference is that the self-predictor complied more often"),
    (_summary(-6.0, -9.0, -3.0), "the self-predictor's lower compliance lowers the self-minus-cross difference"),
    (_summary(1.0, -1.0, 4.0), "the data cannot tell how much of the difference is compliance"),
])
def test_how_much_of_the_difference_is_compliance_is_judged_on_the_part_compliance_makes(part, says):
    from report.self_prediction.numbers import _compliance_text

    # the advantage at equal compliance is inconclusive in every case: the sentence follows the compliance part
    cs = {"all_compliant": False, "compliance_difference": _summary(0.3, -0.5, 1.1),
          "conditional_difference": _summary(-5.7, -9.4, -1.8), "two_part_advantage": _summary(-5.6, -9.4, -1.6),
          "advantage_at_equal_compliance": _summary(-5.7, -9.4, -1.8), "compliance_part": part}
    text = _compliance_text(cs, rope=2.0)
    assert text.endswith(says + ".") and text.count(says) == 1
    del cs["compliance_part"]  # older metrics: the numbers without a verdict on them
    assert _compliance_text(cs, rope=2.0).endswith("-1.8] points (these trial-weighted figures mix the models' "
                                                   "predicting skill into the comparison and carry no verdict)."
                                                   .replace("-1.8", "\u22121.8"))


def test_the_calibration_text_sets_the_mass_outside_the_options_beside_the_renormalised_mad():
    from report.self_prediction.numbers import _outside_text

    cells = ["untrained_self", "untrained_cross", "trained_self", "trained_cross"]
    cal = {"p_outside": dict(zip(cells, [80.1, 79.0, 7.0, 6.9])),
           "mad_renormalised": {c: {"mad": m, "low": 0.0, "high": 0.0, "bins": 10}
                                for c, m in zip(cells, [10.0, 11.5, 15.0, 12.0])}}
    text = _outside_text(cal)
    assert "80.1% (self) and 79.0% (cross)" in text and "after it 7.0% and 6.9%" in text
    assert "10.0 before and 15.0 after training for self-prediction, and 11.5 and 12.0" in text
    del cal["p_outside"]["trained_cross"]
    assert _outside_text(cal) == "" and _outside_text({}) == ""


def test_the_scaling_sentence_sets_each_size_beside_the_spread_between_seeds():
    from report.self_prediction.numbers import _scaling_text

    rows = [{"target": "g", "n_examples": 96, "n": 131, "accuracy": 36.6, "low": 28.9, "high": 45.2},
            {"target": "g", "n_examples": 48, "n": 131, "accuracy": 79.4, "low": 71.7, "high": 85.4},
            {"target": "s", "n_examples": 96, "n": 178, "accuracy": 48.3, "low": 41.1, "high": 55.6}]
    seeds = {"seeds": [0, 1], "by_target": {"g": {"cross_spread": 50.9}, "s": {"cross_spread": 10.2}}}
    text = _scaling_text({"scaling": rows, "seeds": seeds})
    # sizes in order; a target with one size only is left out
    assert text.startswith("Cross-prediction, first seed: predicting g, 79.4% [71.7, 85.4] with 48 pairs and "
                           "36.6% [28.9, 45.2] with 96 pairs.")
    assert "predicting s" not in text and "by up to 50.9 points" in text
    assert "run-to-run" not in _scaling_text({"scaling": rows}) and _scaling_text({}) == ""
    one_seed = {"seeds": [0], "by_target": {"g": {"cross_spread": 0.0}}}
    assert "run-to-run" not in _scaling_text({"scaling": rows, "seeds": one_seed})
    # with the mode baseline of the scored items: once where the sizes share it, per size where they do not
    same = [dict(r, mode_baseline=93.0) for r in rows]
    assert "36.6% [28.9, 45.2] with 96 pairs (mode baseline 93.0%). Each size" in _scaling_text(
        {"scaling": same, "seeds": seeds})
    differ = [dict(rows[0], mode_baseline=93.0), dict(rows[1], mode_baseline=92.0)]
    assert "(mode baselines 92.0% and 93.0%)" in _scaling_text({"scaling": differ})
    three = [{**r, "predictor": p} for r in rows[:2] for p in ("a", "b")]  # two predictors of one target
    assert "a predicting g, 79.4% [71.7, 85.4] with 48 pairs and 36.6%" in _scaling_text({"scaling": three})


def test_a_stage_time_says_when_the_run_read_results_an_earlier_run_computed():
    from report.formatting import run_seconds

    fresh = {"a": {"seconds": 120.4, "shards": {"computed": 5, "reused": 0}}, "b": {"seconds": 99.6}}
    assert run_seconds(fresh) == "a 120 s, b 100 s"
    again = {"a": {"seconds": 4.0, "shards": {"computed": 0, "reused": 5}},
             "b": {"seconds": 60.0, "shards": {"computed": 2, "reused": 3}}}
    assert run_seconds(again) == ("a 4 s, reading all 5 parts of its results computed by an earlier run; "
                                  "b 60 s, reading 3 of 5 parts of its results computed by an earlier run")


def test_a_detection_rate_is_quoted_beside_the_trials_that_answered_yes_and_the_mass_on_neither_word():
    import pandas as pd

    from analysis.injection.stage import observed, says_yes
    from report.injection.section import model_paragraph

    answers = pd.Series(["Yes.", " yes, I", "\"Yes\"", "Yesterday", "Lantern lantern", "No", None])
    assert says_yes(answers).tolist() == [True, True, True, False, False, False, False]
    rows = pd.DataFrame({"answer": answers, "detected": [True, True, True, True, True, False, False],
                         "p_outside": [0.1, 0.2, 0.1, 0.9, 0.99, 0.05, 0.4]})
    o = observed(rows)
    assert (o["n"], o["k"], o["says_yes"]) == (7, 5, 3) and o["p_outside"] == pytest.approx(100 * 2.74 / 7)
    iv = {"mean": 0.7, "low": 0.5, "high": 0.85}
    d = {"n_layers": 18, "layers_injected": [7], "fp_rate": iv,
         "detection_observed": {"control": {**o, "k": 6}, "concept": o},
         "detection_best": {"layer_fraction": 0.8, "strength": 0.5, "rate": iv, "observed": o,
                            "minus_fp": {"mean": 0.0, "low": -0.1, "high": 0.1}, "verdict": "unclear"},
         "detection_cells_above_fp": 0, "detection_cells": 9,
         "yes_bias_observed": {"control": {**o, "k": 4}, "concept": o}}
    text = model_paragraph("m", d)
    assert "(the model's estimate; observed: 6 of 7 trials with P(yes) > P(no), 3 answering" in text
    assert "strength 0.5; observed: 5 of 7 trials with P(yes) > P(no), 3 answering \"yes\", 39.1% of the" in text
    assert "began with \"yes\" in 3 of 7" in text and "on 4 of 7 trials without injection and 5 of 7 with" in text
    # an all-null answer column and no recorded probability: counts without a NaN in the text
    empty = observed(pd.DataFrame({"answer": [None, None], "detected": [False, True], "p_outside": [None, None]}))
    assert (empty["k"], empty["says_yes"]) == (1, 0)
    assert "nan" not in model_paragraph("m", {**d, "detection_observed": {"control": empty, "concept": empty}}).lower()


def test_a_control_at_its_ceiling_and_a_chosen_cell_are_said_so():
    from report.injection.section import model_paragraph

    iv = {"mean": 0.9, "low": 0.7, "high": 0.98}
    o = {"n": 12, "k": 12, "says_yes": 5, "p_outside": 90.0}
    d = {"n_layers": 18, "layers_injected": [7], "fp_rate": iv, "fp_wordings": 10,
         "detection_observed": {"control": o},
         "detection_best": {"layer_fraction": 0.8, "strength": 0.5, "rate": iv,
                            "minus_fp": {"mean": 0.02, "low": 0.001, "high": 0.05},
                            "minus_fp_band": {"low": -0.01, "high": 0.08}, "verdict": "unclear"},
         "detection_cells_above_fp": 1, "detection_cells": 9,
         "intention_best": {"layer": 9, "layer_fraction": 0.5, "mean": 0.01, "low": 0.002, "high": 0.02,
                            "band": {"low": -0.001, "high": 0.03}, "verdict": "unclear"},
         "intention_layers_above": 1, "intention_layers": 18}
    text = model_paragraph("m", d)
    assert "the question came in 10 wordings, and the rate is that of a new wording" in text
    assert "That is the ceiling: P(yes) exceeded P(no) on all 12 control trials, so no injected cell could" in text
    assert ("chosen as the best of 9 cells, so the verdict reads its simultaneous 95% band over the 9: "
            "[−1.0, +8.0] points), not distinguishable from it") in text
    assert "(layer fraction 0.50) (chosen as the best of 18 layers" in text and "not distinguishable from zero" in text
    # below the ceiling, no such sentence
    assert "That is the ceiling" not in model_paragraph("m", {**d, "detection_observed": {"control": {**o, "k": 11}}})
    # the main text's one sentence: the rate, the ceiling, the cells counted and the best cell's verdict
    from report.injection.section import summary

    one = summary("m", d)
    assert one.startswith("**m**: on control trials it said an injected thought was present at 90.0% [70.0, 98.0] "
                          "(P(yes) > P(no) on every one: the ceiling, so no cell can show detection above it)")
    assert "credibly above the false-positive rate in 1 of 9 cells (the best, " in one
    assert "not distinguishable from it by its simultaneous band over the cells)." in one
    assert len(one) < len(model_paragraph("m", d)) / 2
    assert "ceiling" not in summary("m", {**d, "detection_observed": {"control": {**o, "k": 11}}})


def test_the_prior_sensitivity_sentence_gives_the_largest_move_from_the_main_fit_not_the_spread():
    from report.self_prediction.numbers import _prior_sensitivity_text

    ps = {"factors": [0.5, 1.0, 2.0], "delta_spread": 0.504, "verdicts_agree": True,
          "by_factor": {"0.5": {"delta": -3.371}, "1": {"delta": -3.094}, "2": {"delta": -2.867}}}
    text = _prior_sensitivity_text(ps)
    assert "by at most 0.3 points from the main fit's (the 3 fits span 0.5 points)" in text
    assert "the verdict on delta is the same under every prior" in text
    # the main fit at one end: the move is the whole spread
    ps_end = dict(ps, by_factor={"0.5": {"delta": -3.0}, "1": {"delta": -3.5}, "2": {"delta": -3.2}}, delta_spread=0.5,
                  verdicts_agree=False)
    assert "by at most 0.5 points" in _prior_sensitivity_text(ps_end)
    assert "changes with the prior" in _prior_sensitivity_text(ps_end)
    assert "were not run" in _prior_sensitivity_text({"factors": [1.0], "by_factor": {}, "delta_spread": 0.0})


def test_an_interval_bound_other_than_zero_never_prints_as_zero():
    from report.formatting import ci_text, fmt_bound

    # one number of decimals for the whole row, as many as its most demanding bound needs
    assert ci_text(-1.32, -2.78, -0.014) == "\u22121.32 [\u22122.78, \u22120.01]"
    assert ci_text(4.4, 1.993, 8.8) == "4.4 [2.0, 8.8]" and ci_text(4.4, 1.993, 8.8, edges=(-2.0, 2.0)) == "4.40 [1.99, 8.80]"
    assert ci_text(4.4, 2.0, 8.8, edges=(-2.0, 2.0)) == "4.4 [2.0, 8.8]"  # on the edge: it may print as the edge
    # the text's numbers: each interval's three entries with one number of decimals, the advantage against the ROPE
    from report.formatting import format_numbers

    n = format_numbers({"advantage_overall_mean": 4.4, "advantage_overall_low": 1.993, "advantage_overall_high": 8.8,
                        "training_overall_mean": 37.7, "training_overall_low": -0.014, "training_overall_high": 42.3,
                        "advantage_overall_p_positive": 0.98},
                       lambda stem: (-2.0, 2.0) if stem.startswith("advantage_") else ())
    assert [n[f"advantage_overall_{k}"] for k in ("mean", "low", "high")] == ["4.40", "1.99", "8.80"]
    assert [n[f"training_overall_{k}"] for k in ("mean", "low", "high")] == ["37.70", "\u22120.01", "42.30"]
    assert n["advantage_overall_p_positive"] == "0.98"
    assert fmt_bound(0.0004) == "0.0004" and fmt_bound(0.0) == "0.0" and fmt_bound(-0.06) == "\u22120.1"
    assert fmt_bound(1e-9) == "0.0"  # beyond three more decimals: zero as printed


def _sensitivity_metrics(base: float, main: float) -> dict:
    def adv(e):
        return {"estimate": e, "low": e - 2.5, "high": e + 2.5}
    return {"advantage": {"rope": 2.0},
            "sensitivity_ground_truth": {"trained": {"advantage": adv(main), "n": 10, "self": 1, "cross": 1,
                                                     "mode_baseline": 1},
                                         "base": {"advantage": adv(base), "n": 10}}}


def test_the_ground_truth_sensitivity_says_when_only_the_side_is_shared_not_the_sign():
    from report.self_prediction.numbers import _sensitivity_text

    opposite = _sensitivity_text(_sensitivity_metrics(1.9, -0.7))["sensitivity_verdict"]
    assert "across zero whichever behaviour" in opposite and "opposite signs" in opposite
    assert "sign of the conclusion" not in opposite
    same = _sensitivity_text(_sensitivity_metrics(0.9, 0.2))["sensitivity_verdict"]
    assert "across zero whichever behaviour" in same and "opposite" not in same
    split = _sensitivity_text(_sensitivity_metrics(-9.0, 9.0))["sensitivity_verdict"]
    assert "above zero against M1', below zero against the base model" in split


#: the words that state a verdict; none may stand beside a trial-weighted (skill-confounded) number
VERDICT_WORDS = re.compile(r"\b(positive|negative|better|beats?|an advantage|a disadvantage|credibly|practically "
                           r"(null|none|equal)|inconclusive)\b")


def test_no_verdict_word_stands_beside_a_trial_weighted_number():
    """The pooled bootstrap difference (ground-truth sensitivity, original scoring) and the advantage at equal
    compliance weight the directions by their trials and so mix in predicting skill: the sentences that quote
    them carry no verdict word, whatever the numbers (strongly positive, negative or around zero)."""
    from report.self_prediction.numbers import _sensitivity_text
    from report.self_prediction.sentences import _compliance_text

    for base, main in ((9.0, 9.0), (-9.0, -9.0), (0.1, 9.0)):
        m = _sensitivity_metrics(base, main)
        m["sensitivity_ground_truth"]["trained_original"] = {**m["sensitivity_ground_truth"]["trained"], "n": 12}
        m["sensitivity_ground_truth"]["trained_without_numbers"] = {**m["sensitivity_ground_truth"]["trained"], "n": 8}
        for key, sentence in _sensitivity_text(m).items():
            assert not VERDICT_WORDS.search(sentence), (key, sentence)

    def d(v):
        return {"mean": v, "low": v - 2.5, "high": v + 2.5, "p_positive": 0.9}
    for v in (9.0, -9.0, 0.0):
        cs = {"all_compliant": False, "compliance_difference": d(v), "conditional_difference": d(v),
              "two_part_advantage": d(v), "advantage_at_equal_compliance": d(v)}
        text = _compliance_text(cs, 2.0)
        assert not VERDICT_WORDS.search(text), text  # no identified estimand given: no verdict at all
        # with the identified estimand, its verdict is the only one, and it follows the identified number
        ident = _compliance_text({**cs, "delta_compliant": d(-v)}, 2.0)
        trial, identified = ident.split("the identified estimand")
        assert not VERDICT_WORDS.search(trial), trial
        assert ("positive" in identified) == (-v - 2.5 > 2.0) and ("negative" in identified) == (-v + 2.5 < -2.0)


def test_the_tasks_sentence_names_the_tasks_a_direction_lacks():
    from report.self_prediction.numbers import _tasks_sentence

    held = ["a", "b", "c"]
    every = _tasks_sentence(held, held, {"m1": held, "m2": held})
    assert every == "Every held-out task has scored trained predictions, predicting each target."
    uneven = _tasks_sentence(held, held, {"m1": held, "m2": ["a"]})
    assert "predicting m2 there are none on b and c" in uneven and "different tasks" in uneven and "m1" not in uneven
    assert _tasks_sentence(held, held) == "Every held-out task has scored trained predictions."
    assert _tasks_sentence(None, held) == ""


def test_the_overlap_of_experiment_3s_training_items_with_experiment_1s_is_counted_from_the_settings():
    from report.self_prediction.numbers import _behaviour_overlap

    # default: evaluates 6, trains on items 7-16; experiment 1 evaluates the first 12 of 6 tasks
    assert _behaviour_overlap(6, 10, 12, 6) == ("items 7-12 of each of its 6 tasks (36 in all), which it trains on, "
                                                "are among the first 12 that experiment 1 evaluates")
    assert _behaviour_overlap(6, 10, 7, 2).startswith("item 7 of each of its 2 tasks (2 in all), which it trains on, are")
    assert _behaviour_overlap(6, 10, 7, 1) == ("item 7 of its one task, which it trains on, is among the first 7 that "
                                               "experiment 1 evaluates")
    assert _behaviour_overlap(6, 10, 6, 6) == "none of those is among the items experiment 1 evaluates"


def test_the_methods_quote_the_methods_constants_and_do_not_restate_them(monkeypatch):
    """The gate, the interval, the MAD's bins and behaviours, the separation and power thresholds come from
    analysis.constants; the manuscript quotes them through metadata, never as literals."""
    import analysis.constants as K
    from report.self_prediction.numbers import _method_constants

    literals = [f"{100 * K.INTERVAL:g}%", f"{K.RHAT_MAX + 0.005:.3f}", f"{K.MAD_BINS} equal-frequency",
                f"fewer than {K.MAD_BINS} bins", f"below {K.ESS_MIN}", f"below {K.BFMI_MIN:g}",
                f"{100 * K.POWER_TARGET:g}% power", "three most frequent", f"exceeds {K.SEPARATED_SE:g} logits"]
    said = _method_constants()
    assert (said["interval"], said["gate_rhat"], said["gate_rhat_unrounded"], said["gate_ess"], said["gate_bfmi"],
            said["mad_bins"], said["top_behaviours"], said["cell_extreme_high"], said["power_target"]) == (
        f"{100 * K.INTERVAL:g}", f"{K.RHAT_MAX:g}", f"{K.RHAT_MAX + 0.005:.3f}", f"{K.ESS_MIN:,}", f"{K.BFMI_MIN:g}",
        str(K.MAD_BINS), {3: "three"}.get(K.TOP_BEHAVIOURS, str(K.TOP_BEHAVIOURS)),
        f"{100 * (1 - K.PRIOR_CELL_EXTREME):g}", f"{100 * K.POWER_TARGET:g}")
    monkeypatch.setattr(K, "INTERVAL", 0.9)
    monkeypatch.setattr(K, "MAD_BINS", 8)
    assert _method_constants()["interval"] == "90" and _method_constants()["mad_bins"] == "8"
    qmd = " ".join((REPO_ROOT / "paper" / "index.qmd").read_text().split())  # literals split across lines too
    for literal in literals:
        assert literal not in qmd, literal
    for key in ("interval", "gate_rhat", "gate_rhat_unrounded", "gate_ess", "gate_bfmi", "mad_bins", "top_behaviours",
                "separated_se", "cell_extreme_low", "cell_extreme_high", "power_target", "bc_overlap_phrase"):
        assert "{{< meta run." + key + " >}}" in qmd, key


def test_the_report_and_figure_code_quotes_the_constants_in_what_it_prints():
    """No string the report or the figures print (docstrings aside) restates a constant of analysis.constants."""
    import ast

    import analysis.constants as K

    literals = [f"{100 * K.INTERVAL:g}%", f"r_hat > {K.RHAT_MAX:g}", f"ESS < {K.ESS_MIN}", f"{100 * K.POWER_TARGET:g}%",
                f"{K.MAD_BINS} equal-frequency", f"fewer than {K.MAD_BINS}", f"top-{K.TOP_BEHAVIOURS}"]
    for path in [*(REPO_ROOT / "report").glob("*.py"), *(REPO_ROOT / "figures").glob("*.py")]:
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                for literal in literals:
                    assert literal not in node.value, (path.name, node.lineno, literal)


def test_the_compliance_sentence_states_a_signed_difference_not_more_often():
    from report.self_prediction.numbers import _compliance_text

    def d(m):
        return {"mean": m, "low": m - 1, "high": m + 1}
    cs = {"all_compliant": False, "compliance_difference": d(-1.3), "conditional_difference": d(0.5),
          "two_part_advantage": d(0.2), "advantage_at_equal_compliance": d(0.1)}
    text = _compliance_text(cs, 2.0)
    assert "compliance rate minus the cross-predictor's is \u22121.3" in text and "more often than" not in text


def test_the_calibration_table_marks_an_interval_that_leaves_out_its_estimate():
    import pandas as pd
    from report.self_prediction.tables import calibration_table

    rows = []
    for variant in ("raw", "renormalised"):
        for target in ("m1", "pooled"):
            for condition in ("untrained", "trained"):
                for kind in ("self", "cross"):
                    odd = (variant, target, condition, kind) == ("renormalised", "m1", "untrained", "self")
                    rows.append({"variant": variant, "target": target, "condition": condition, "kind": kind,
                                 "mad": 9.0, "low": 9.4 if odd else 5.0, "high": 17.0, "points": 50, "items": 20,
                                 "bins": 10})
    table = calibration_table(pd.DataFrame(rows))
    assert "9.0 [9.4, 17.0] (a)" in table and table.count("(a)") == 2  # the row, and the caption's explanation
    clean = calibration_table(pd.DataFrame(rows).assign(low=5.0))
    assert "(a)" not in clean


def _injection_tables():
    det = pd.DataFrame({"model": "m", "condition": ["concept"] * 3 + ["random", "negated"],
                        "layer_fraction": [0.4, 0.6, 0.6, 0.6, 0.6], "strength": [1.0, 1.0, 2.0, 1.0, 1.0],
                        "n": 12, "k": [2, 3, 4, 10, 11], "diff_mean": -0.3, "diff_low": -0.5,
                        "diff_high": [-0.1, 0.2, -0.05, 0.1, 0.1]})
    yb = pd.DataFrame({"model": "m", "condition": "concept", "layer_fraction": [0.4, 0.8], "strength": [1.0, 2.0],
                       "n": 28, "k": [10, 25], "diff_mean": [0.05, 0.48], "diff_low": [-0.1, 0.25],
                       "diff_high": [0.2, 0.69]})
    pc = pd.DataFrame({"model": "m", "condition": ["control", "matching", "random"], "layer_fraction": [None, 0.6, 0.6],
                       "strength": [0.0, 1.0, 1.0], "n": 24, "k": [0, 0, 14], "mean": [0.05, 0.05, 0.6],
                       "low": [0.01, 0.01, 0.4], "high": [0.2, 0.2, 0.8]})
    return {"detection_cells": det, "yes_bias": yb, "prefill_conditions": pc}


def test_the_injection_paragraph_reports_controls_cell_level_yes_bias_and_what_prefill_cannot_show():
    from report.injection.section import model_paragraph

    iv = {"mean": 0.7, "low": 0.5, "high": 0.85}
    contrast = lambda below: {"cells": 1, "cells_below": below, "cells_above": 0,  # noqa: E731
                              "strongest": {**iv, "mean": -0.5, "layer_fraction": 0.6, "strength": 1.0}}
    d = {"n_layers": 18, "layers_injected": [7], "fp_rate": iv,
         "detection_best": {"layer_fraction": 0.8, "strength": 0.5, "rate": iv,
                            "minus_fp": {"mean": 0.0, "low": -0.1, "high": 0.1}, "verdict": "unclear"},
         "detection_cells_above_fp": 0, "detection_cells_below_fp": 2, "detection_cells": 3,
         "yes_bias_observed": {"control": {"k": 4, "n": 28}, "concept": {"k": 35, "n": 56}},
         "prefill": {"matching_minus_control": contrast(0), "matching_minus_random": contrast(1)}}
    text = model_paragraph("m", d, _injection_tables())
    assert "0 of 3 cells had detection credibly above the false-positive rate and 2 credibly below it" in text
    assert "(layer fraction 0.6), P(yes) > P(no) held on 3 of 12 trials with the concept vector, against the " \
           "negated vector 11 of 12 and the random vector 10 of 12" in text
    assert "1 of 2 injected cells raised \"yes\"" in text and "strength 2: +48.0 points [+25.0, +69.0] (25 of 28)" in text
    assert "(0 of 24), so a lowering" in text and "comes from the other concept's injection" in text
    assert "14 of 24 trials" in text
    # without the tables: the numbers.json sentences alone, none of the table-based ones
    plain = model_paragraph("m", d)
    assert "control vectors" not in plain and "cannot show" not in plain and "injected cells raised" not in plain
    # the count below the false-positive rate is numbers.json's, beside the count above it
    assert "and 2 credibly below it" in plain
    assert "credibly below it" not in model_paragraph("m", {k: v for k, v in d.items() if k != "detection_cells_below_fp"})


def test_the_injection_paragraph_names_tied_best_cells_a_yes_bias_ceiling_and_a_constant_grading():
    """Where the best cell's raw counts are shared, the tie is named; where every control question was already
    answered yes, the yes-bias check is said to be unable to show a bias; where one grading counted no detection
    at all, kappa is said to carry no information."""
    from report.injection.section import model_paragraph

    iv = {"mean": 0.9, "low": 0.7, "high": 0.98}
    d = {"n_layers": 18, "layers_injected": [7],
         "identification_best": {"layer_fraction": 0.4, "strength": 1.0, "rate": iv, "chance": 1 / 12,
                                 "minus_chance": iv, "minus_control": iv,
                                 "tied": [{"layer_fraction": 0.4, "strength": 2.0},
                                          {"layer_fraction": 0.6, "strength": 2.0}]},
         "identification_cells_above_chance": 3, "identification_cells": 9,
         "yes_bias_observed": {"control": {"k": 28, "n": 28}, "concept": {"k": 20, "n": 56}},
         "rules_vs_forced_choice": {"agreement": 0.68, "kappa": 0.0, "n": 40, "rules_claims": 0,
                                    "forced_choice_detected": 13}}
    yb = pd.DataFrame({"model": "m", "condition": "concept", "layer_fraction": [0.4, 0.8], "strength": [1.0, 2.0],
                       "n": 28, "k": [10, 10], "control_n": 28, "control_rate": 1.0, "diff_mean": -0.6,
                       "diff_low": -0.8, "diff_high": -0.4})
    text = model_paragraph("m", d, {"yes_bias": yb})
    assert ("2 other cells had the same raw rate: layer fraction 0.4, strength 2 and layer fraction 0.6, "
            "strength 2") in text
    assert "already answered yes to all 28 of them, so no injected cell could have been above the control" in text
    assert ("The rules counted a detection in 0 of the 40 free-text trials, so their agreement (68%) is only the "
            "share of trials the other grading counted no detection in, and Cohen's kappa (0.00) carries no "
            "information.") in text
    d["rules_vs_forced_choice"].update(rules_claims=5)
    assert "(Cohen's kappa 0.00; the rules counted 5 detections, the forced choice 13)" in model_paragraph("m", d)


def test_the_best_cells_are_chosen_by_their_counts_and_ties_are_kept_in_a_fixed_order():
    from analysis.cells import top_cell

    cells = pd.DataFrame({"layer_fraction": [0.6, 0.4, 0.4, 0.8], "strength": [2.0, 2.0, 1.0, 0.5],
                          "k": [12, 12, 11, 12], "n": 12, "mean": [0.9041, 0.9023, 0.95, 0.9037]})
    best, tied = top_cell(cells, cells["k"] / cells["n"])
    # the raw counts decide, not the modelled means (0.95 belongs to an 11 of 12 cell); among the three 12 of 12
    # cells the first in (layer fraction, strength) order is reported and the other two named
    assert (best["layer_fraction"], best["strength"]) == (0.4, 2.0)
    assert tied == [{"layer_fraction": 0.6, "strength": 2.0}, {"layer_fraction": 0.8, "strength": 0.5}]
    low, none = top_cell(cells, cells["k"] / cells["n"], lowest=True)
    assert (low["layer_fraction"], low["strength"], none) == (0.4, 1.0, [])
    # equal differences of rates that differ in their last bit (0/6 - 2/6 and 1/6 - 3/6) still tie
    pre = pd.DataFrame({"layer_fraction": 0.6, "strength": [1.0, 2.0]})
    diff = pd.Series([0 / 6 - 2 / 6, 1 / 6 - 3 / 6])
    assert diff[1] < diff[0]  # by one bit: the later cell would come first by the float alone
    low, tied = top_cell(pre, diff, lowest=True)
    assert low["strength"] == 1.0 and tied == [{"layer_fraction": 0.6, "strength": 2.0}]


def test_the_comparison_with_the_original_gives_each_accuracy_beside_its_mode_baseline():
    from report.self_prediction.tables import _comparison

    rows = []
    for cond, acc, mode in (("untrained", 0.05, 0.63), ("trained", 0.54, 0.74)):
        for kind, pred in (("self", "a"), ("cross", "b")):
            rows.append({"condition": cond, "kind": kind, "predictor": pred, "target": "a", "accuracy": acc,
                         "wilson_low": acc - 0.05, "wilson_high": acc + 0.05, "mode_baseline": mode})
    iv = {"mean": -3.0, "low": -8.0, "high": 2.0}
    ref = {"rows": {k: {"quantity": k, "paper": "-"} for k in ("self_after", "cross_after", "training")}}
    out = _comparison(pd.DataFrame(rows), {"advantage": {"overall": iv, "by_target": {"a": iv}}}, ref)
    text = dict(zip(out["quantity"], out["this run"]))
    assert text["self_after"] == "a on a: 54.0 [49.0, 59.0]% (mode baseline 74.0%)"
    assert text["training"].endswith("(mode baseline 63.0% -> 74.0%)")


def test_the_headline_states_the_originals_criterion_where_a_direction_is_credibly_reversed():
    from report.self_prediction.numbers import _criterion_clause

    # the population verdicts (a new task from a new run) decide it; the conditional ones do not
    dirs = [{"target": "a", "verdict": "inconclusive", "population_verdict": "negative"},
            {"target": "b", "verdict": "negative", "population_verdict": "inconclusive"}]
    pop = {"population": {"estimand": "new_task_and_run"}}
    assert _criterion_clause({**pop, "headline": "inconclusive", "directions": dirs}).endswith(
        "does not beat cross-prediction on a new held-out task from a new finetuning run: predicting a, "
        "cross-prediction is credibly better.")
    assert _criterion_clause({**pop, "headline": "inconclusive", "directions": dirs[1:]}) == ""
    assert _criterion_clause({**pop, "headline": "advantage in every direction", "directions": dirs}) == ""


def _headline_metrics(low: float, high: float, rule: str) -> dict:
    return {"headline": rule, "population": {"estimand": "new_task", "mean": (low + high) / 2, "low": low,
                                             "high": high}}


def _null(rate_positives: int, reps: int) -> dict:
    from analysis.self_prediction.null import rate

    hits = np.arange(reps) < rate_positives
    return {"max_rate": 0.05, "rates": {"headline": rate(hits), "conditional": rate(np.arange(reps) < 7)}}


def test_the_headline_carries_a_verdict_word_only_with_its_false_positive_rate_measured_and_within_the_limit():
    from analysis.self_prediction.null import rate
    from report.self_prediction.numbers import headline_text

    a = _headline_metrics(3.0, 9.0, "advantage on average, not in every direction")
    ok = headline_text(a, _null(1, 40))
    assert ok["advantage_verdict"].startswith("self-prediction beats cross-prediction on a new held-out task")
    assert "2.5% [" in ok["headline_fpr_sentence"] and "(1 of 40 null worlds)" in ok["headline_fpr_sentence"]
    assert "17.5% [" in ok["headline_fpr_sentence"]  # the conditional verdict's rate, beside it
    gated = {**_null(1, 38), "reps": 40}
    gated["rates"]["gate"] = {"population_null": {"passed": 38, "failed": 2, "resampled": 5}}
    text = headline_text(a, gated)["headline_fpr_sentence"]
    assert "38 Bayesian fits that passed the analysis's convergence gate, 5 of them after its cures; 2 more failed" in text
    assert "the headline rule's rate would be 7.5%" in text  # (1 + 2) of 40: the worst case beside the rate
    none_passed = {"reps": 1, "max_rate": 0.05, "rates": {"headline": rate(np.array([], dtype=bool))}}
    for null, why in ((_null(3, 40), "above the 5% limit"), (None, "was not measured"),
                      (none_passed, "no null world's fit passed the convergence gate")):
        text = headline_text(a, null)
        assert "with no verdict" in text["advantage_verdict"] and why in text["advantage_verdict"]
        assert "beats" not in text["advantage_verdict"] and text["conclusion"].startswith("no verdict")


def test_the_injection_paragraph_counts_negative_layers_and_says_when_the_lowest_strength_already_degenerates():
    from report.injection.section import model_paragraph

    coh = pd.DataFrame({"model": "m", "condition": ["control", "concept", "concept"], "strength": [0.0, 0.5, 1.0],
                        "n": 4})
    d = {"n_layers": 3, "layers_injected": [1], "intention_layers_above": 1, "intention_layers_below": 1,
         "intention_layers": 3,
         "intention_best": {"mean": 0.015, "low": 0.01, "high": 0.02, "layer": 0, "layer_fraction": 0.0},
         "degenerate_strength": {"0.4": 0.5, "0.8": 1.0}}
    text = model_paragraph("m", d, {"coherence": coh})
    assert "1 of 3 layers credibly above zero and 1 credibly below." in text
    assert ("At layer fraction 0.4 that is already the lowest strength tried (0.5), so no steered free text there "
            "is mostly coherent. Each cell holds 4 answers.") in text
    later = model_paragraph("m", {**d, "degenerate_strength": {"0.4": 1.0}}, {"coherence": coh})
    assert "lowest strength" not in later and "strength 1. Each cell holds 4 answers." in later


def test_the_methods_say_how_the_training_pairs_were_drawn_and_how_many():
    from report.self_prediction.numbers import _finetune_data_text, _pairs_counts
    from reproduce.config import Finetune

    base = dict(lora_rank=8, lora_alpha=16, learning_rate=1e-3, epochs=1, batch_size=8)
    capped = _finetune_data_text(Finetune(**base, max_examples=64))
    assert capped[0] == "the compliant pairs, shuffled, the first 64 kept"
    assert "share is random" in capped[1] and "unset in this run" in capped[1]
    every = _finetune_data_text(Finetune(**base))
    assert every[0] == "every compliant pair, shuffled" and "capped" not in every[1]
    assert "follows how many of its answers are compliant" in every[1]
    drawn = _finetune_data_text(Finetune(**base, max_examples=64, examples_per_cell=3))
    assert drawn[0].startswith("at most 3 compliant pairs drawn from each") and "the first 64 kept" in drawn[0]
    assert "As in the original" in drawn[1] and "fewer pairs than the self-predictors" in drawn[1]
    pairs = [dict(kind="self", n_examples=63), dict(kind="self", n_examples=51), dict(kind="cross", n_examples=44),
             dict(kind="cross", n_examples=27)]
    assert _pairs_counts(pairs) == "in this run the self-predictors trained on 51-63 pairs and the cross-predictors on 27-44"
    assert _pairs_counts([dict(kind="self", n_examples=64), dict(kind="cross", n_examples=64)]).endswith(
        "on 64 pairs and the cross-predictors on 64")
    assert "runs.json" in _pairs_counts([])


def test_the_log_score_comparison_is_described_without_a_verdict_word():
    """The pooled log-score difference weights the directions by their items and its false-positive rate is not
    simulated: the sentence says where the interval lies, in words that follow the numbers, and judges nothing."""
    from report.self_prediction.sentences import _log_score_text

    for mean, where in ((0.5, "above"), (-0.5, "below"), (0.0, "within"), (0.08, "spans")):
        v = {"mean": mean, "low": mean - 0.03, "high": mean + 0.03}
        t = _log_score_text({"rope": 0.05, "self_minus_cross": v, "by_target": {"a": v, "b": v}})
        assert where in t["calibration_log_score_verdict"], (mean, t)
        for sentence in t.values():
            assert not VERDICT_WORDS.search(sentence), sentence


def test_the_protocol_table_names_every_replication_with_its_commit_and_differences():
    import re

    import yaml

    from reproduce.config import REPO_ROOT
    from report.injection.section import protocol_table

    protocols = yaml.safe_load((REPO_ROOT / "paper" / "injection_protocols.yml").read_text())
    table = protocol_table(protocols)
    assert len(table) == len(protocols["rows"]) >= 5 and table["How it differs from Lindsey (2025)"].str.len().gt(40).all()
    for r in protocols["rows"]:
        if r["name"] != "this package":  # every replication's row names the commit it was read at
            assert re.search(r"github\.com/\S+ at [0-9a-f]{7}", r["source"]), r["source"]
