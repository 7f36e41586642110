"""Sentences the manuscript quotes, generated from the numbers (report/numbers.py)."""


def test_the_manuscript_says_how_self_training_changed_the_targets_predictability():
    from report.numbers import _target_shift

    numbers = {"mode_baseline_untrained_a_on_a": 65.7, "mode_baseline_trained_a_on_a": 91.7,
               "mode_baseline_untrained_b_on_b": 75.5, "mode_baseline_trained_b_on_b": 53.2,
               "mode_baseline_untrained_a_on_b": 75.5, "mode_baseline_trained_a_on_b": 53.2}  # cross rows: not used
    assert _target_shift(numbers) == ("the mode baseline of a model's own behaviour moved from 65.7% to 91.7% "
                                      "for a and from 75.5% to 53.2% for b")
    assert _target_shift({}) == "n/a"


def test_the_manuscript_names_the_held_out_tasks_experiment_1_could_not_score():
    from report.numbers import _tasks_sentence

    held_out = ["animals", "years", "myopic_reward", "categories"]
    assert _tasks_sentence(["animals", "categories", "years"], held_out) == (
        "On myopic_reward, no self-trained model gave an answer in the requested form, so no trained prediction "
        "there could be scored: experiment 1's trained comparison covers 3 of the 4 held-out tasks.")
    assert _tasks_sentence(["animals"], held_out).startswith("On years, myopic_reward and categories, ")
    assert _tasks_sentence(held_out, held_out) == "Every held-out task has scored trained predictions."
    assert _tasks_sentence(None, held_out) == ""


def test_the_manuscript_says_how_many_concepts_and_scripts_a_run_used():
    from report.numbers import _subset_phrase

    assert _subset_phrase(24, 50) == "the first 24 of the 50"
    assert _subset_phrase(None, 48) == "the 48"
    assert _subset_phrase(["fire", "ocean", "bread"], 50) == "3 chosen of the 50"
    assert _subset_phrase(4, None) == "the first 4"
    assert _subset_phrase(None, 50, skipped=True) == _subset_phrase(12, 50, skipped=True) == "the 50"
    assert _subset_phrase(None, None) == "the"
