"""The two-turn trial (the design of Pearson-Vogel et al. 2026, "Latent Introspection: Models Can Detect Prior
Concept Injections", arXiv:2602.20031) and the logit lens at its answer position.

The conversation (:func:`two_turn_conversation`): the preamble and a notice in the first user turn, the model's
first reply, a question about them in a second user turn, and the answer prefilled up to the word read next.
The injection steers the first exchange only (:func:`two_turn_span`): the second turn and the answer read it
through the key-value cache. Pearson-Vogel et al. computed the first exchange with the injection into a cache
and the rest on top of it without; one pass that injects by position (:class:`reproduce.lm.steering.Steer`) is
the same computation, and a test compares the two on the embedded models.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reproduce.injection.data import InjectionData
from reproduce.lm.steering import SteeringError, last_position_readout, token_span


def two_turn_conversation(data: InjectionData) -> list[dict]:
    """The two-turn trial: the preamble and the notice, the model's first reply, the question about them in a
    second turn, and the answer prefilled up to the word read next (yes or no)."""
    p = data.prompts
    return [{"role": "user", "content": p["preamble"] + "\n\n" + p["two_turn_notice"].format()},
            {"role": "assistant", "content": p["two_turn_reply"].format()},
            {"role": "user", "content": p["two_turn_question"].format()},
            {"role": "assistant", "content": p["two_turn_prefill"].format()}]


def two_turn_span(lm, conv: list[dict]) -> tuple[int, int]:
    """Where the two-turn trial's injection goes, as Pearson-Vogel et al. placed it: on every token of the first
    two messages as the chat template writes them, from the first token (the template's opening, and its system
    text where it writes one) through the closing tokens after the first reply. The second turn and the answer are
    not steered; they read the first exchange through the key-value cache alone. For a chat template, the first
    exchange is the template's rendering of those two messages as a closed conversation; for the plain format, the
    reply's line."""
    rendered = lm.format.render(conv)
    first, reply = conv[0]["content"], conv[1]["content"]
    at = rendered.index(first)
    stop = rendered.index(reply, at + len(first)) + len(reply)
    if lm.format.kind == "chat":
        messages = ([{"role": "system", "content": lm.format.system_prompt}] if lm.format.system_prompt is not None
                    else []) + list(conv[:2])
        closed = lm.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        if rendered.startswith(closed) and len(closed) >= stop:
            stop = len(closed)
    elif rendered[stop:stop + 1] == "\n":
        stop += 1
    return 0, token_span(lm, rendered, 0, stop)[1]


def first_token(lm, text: str) -> int:
    """The id of the first token of ``text`` (with its leading space) as the tokenizer writes it alone."""
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise SteeringError(f"{lm.name}'s tokenizer writes {text!r} as no token")
    return int(ids[0])


def run_two_turn(runner) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two-turn protocol (Pearson-Vogel et al. 2026; :func:`two_turn_conversation`): the injection steers
    the first exchange only (:func:`two_turn_span`), and after the prefill the next token's " yes" against
    " no" is read from the model's own distribution: ``p_yes`` normalised over the two, ``logodds``
    log P(yes) - log P(no), ``p_outside`` the mass on neither, and ``lp_yes`` log P(yes) over the whole
    vocabulary (the probability Pearson-Vogel et al. compare). The same pass gives the logit lens at the
    answer position (:func:`reproduce.lm.steering.last_position_readout`): at every layer, the log-probability
    of the concept word's first token and the yes/no log-odds. Returns (trials, lens)."""
    specs = runner.two_turn_specs()
    conv = two_turn_conversation(runner.data)
    start, end = two_turn_span(runner.lm, conv)
    yes, no = first_token(runner.lm, " yes"), first_token(runner.lm, " no")
    concept_ids = {c: first_token(runner.lm, " " + c) for c in runner.concepts}
    words = list(runner.concepts)
    layers = list(range(runner.n_layers))
    # the control conversation is the same for every concept: one pass serves them all
    ctl = [i for i, sp in enumerate(specs) if sp["condition"] == "control"]
    runs = [i for i, sp in enumerate(specs) if sp["condition"] != "control"] + ctl[:1]
    run_specs = [specs[i] for i in runs]
    with runner._steer(run_specs, [start] * len(runs), [end] * len(runs)) as steer:
        got = last_position_readout(runner.lm, [conv] * len(runs), [yes, no, *concept_ids.values()], layers,
                                    steer=steer, batch_size=min(16, runner.profile.batch_size),
                                    progress=f"{runner.lm.name} two-turn trials")
    row_of = {i: j for j, i in enumerate(runs)} | {i: len(runs) - 1 for i in ctl}
    take = [row_of[i] for i in range(len(specs))]
    own, lens = got[0][take], got[1][take]
    trials = pd.DataFrame(specs)
    trials["logodds"] = own[:, 0] - own[:, 1]
    trials["p_yes"] = 1.0 / (1.0 + np.exp(-trials["logodds"]))
    trials["p_outside"] = np.clip(1.0 - np.exp(own[:, 0]) - np.exp(own[:, 1]), 0.0, 1.0)
    trials["lp_yes"] = own[:, 0]  # over the whole vocabulary: Pearson-Vogel et al.'s P(yes), kept beside ours
    tokens = {c: runner.lm.tokenizer.convert_ids_to_tokens(i) for c, i in concept_ids.items()}
    rows = []
    for i, sp in enumerate(specs):
        k = 2 + words.index(sp["concept"])
        rows += [dict(sp, read_layer=l, read_fraction=l / max(1, runner.n_layers - 1),
                      concept_token=tokens[sp["concept"]], lp_concept=float(lens[i, j, k]), logodds_yes=float(lens[i, j, 0] - lens[i, j, 1]))
                 for j, l in enumerate(layers)]
    return trials, pd.DataFrame(rows)
