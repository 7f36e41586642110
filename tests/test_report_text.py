"""Sentences the manuscript quotes, generated from the numbers (report/numbers.py)."""


def test_the_manuscript_says_how_self_training_changed_the_targets_predictability():
    from report.numbers import _target_shift

    numbers = {"mode_baseline_untrained_a_on_a": 65.7, "mode_baseline_trained_a_on_a": 91.7,
               "mode_baseline_untrained_b_on_b": 75.5, "mode_baseline_trained_b_on_b": 53.2,
               "mode_baseline_untrained_a_on_b": 75.5, "mode_baseline_trained_a_on_b": 53.2}  # cross rows: not used
    assert _target_shift(numbers) == ("the mode baseline of a model's own behaviour moved from 65.7% to 91.7% "
                                      "for a and from 75.5% to 53.2% for b")
    assert _target_shift({}) == "n/a"
