"""The concept-injection dataset's published-protocol variants: ``concept_injection_lindsey`` (Lindsey 2025's 50
concept words, 100 baseline words, concept-vector prompt and trial conversation) and
``concept_injection_lindsey_info`` (the same, with Pearson-Vogel et al. 2026's information prompt after the
preamble). Selected with ``injection.dataset``; the words and wording are
:mod:`reproduce.injection.lindsey_content`'s, copied from the sources it names.

What each variant takes from the sources and what stays the project's own (the card says the same):

* from Lindsey (2025): the concept words, the baseline words (the source lists "butterflies" twice; it is kept
  once, so 99), the concept-vector prompt "Tell me about {word}" (rendered with the model's chat template, where
  the study read the final ":" of a "Human: ... Assistant:" transcript), the preamble, the acknowledgement "Ok."
  and the open trial question, with "Ok, let's get started." before it;
* the project's own: the forced-choice detection wordings (the study asked only the open question), the yes-bias
  questions, the identification prefill, the steering check and the prefill and intention items, whose words are
  re-keyed to Lindsey's list (item k takes Lindsey's word k wherever the project's item took its word k);
* ``_info`` only: Pearson-Vogel's information prompt ("info-introspect") as a second paragraph of the first user
  turn. Their protocol injects on a first turn and asks on a second; here the trial is the single-turn one above,
  so their closing sentence ("A concept has been injected into this message and the next, prefilled message.")
  would be false and is left out.
"""

from __future__ import annotations

from typing import Any

import reproduce.injection.content as content
import reproduce.injection.lindsey_content as L
from reproduce.citation import generator_name
from reproduce.experiment_data import FileDataset, card_tables, changes_text
from reproduce.injection.data import (FILES, LICENCE, _counts, _parse_files, content_prompts, encode_files,
                                      injection_citation, validate_content)

LINDSEY = "concept_injection_lindsey"
LINDSEY_INFO = "concept_injection_lindsey_info"
VERSION = "1.1.0"
#: what each version changed, for the dataset card
CHANGES = {
    "1.1.0": "`prompts.json` adds the two-turn trial in Pearson-Vogel et al. (2026)'s wording (`two_turn_notice`, "
             "`two_turn_reply`, `two_turn_question`, `two_turn_prefill`); every other file is byte-identical to "
             "1.0.0's",
}
SOURCES = ("Lindsey (2025), \"Emergent introspective awareness in large language models\", "
           "https://transformer-circuits.pub/2025/introspection/index.html (appendix \"Concept Vector Details\" and "
           "\"Experimental Prompts and Protocol\")")
PV_SOURCE = ("Pearson-Vogel, Vanek, Douglas and Kulveit (2026), \"Latent Introspection: Models Can Detect Prior "
             "Concept Injections\", arXiv:2602.20031, code github.com/acsresearch/latent-introspection-code at "
             "5007f75 (main.py, INFO_INTROSPECT)")


def _baselines() -> tuple[str, ...]:
    """Lindsey's baseline words, each once, in the source's order (it lists "butterflies" twice)."""
    return tuple(dict.fromkeys(L.LINDSEY_BASELINES))


def _rekeyed(items: tuple[dict, ...]) -> list[dict]:
    """The project's prefill or intention items with each word replaced by Lindsey's word at the same position of
    the concept list."""
    index = {w: i for i, w in enumerate(content.CONCEPTS)}
    return [dict(it, word=L.LINDSEY_CONCEPTS[index[it["word"]]]) for it in items]


def _prompts(info: bool) -> dict[str, Any]:
    preamble = L.LINDSEY_PREAMBLE + ("\n\n" + L.PEARSON_VOGEL_INFORMATION_PROMPT if info else "")
    return {**content_prompts(), "concept_prompt": L.LINDSEY_CONCEPT_PROMPT, "preamble": preamble,
            "acknowledgement": L.LINDSEY_ACKNOWLEDGEMENT, "trial": L.LINDSEY_TRIAL_LEAD_IN + "\n\n" + L.LINDSEY_TRIAL,
            # the two-turn trial, verbatim from Pearson-Vogel et al.'s code; braces doubled, as in every template
            "two_turn_notice": L.PEARSON_VOGEL_INJECTION_SUFFIX,
            "two_turn_reply": L.PEARSON_VOGEL_ASSISTANT_TURN_1.replace("{", "{{").replace("}", "}}"),
            "two_turn_question": L.PEARSON_VOGEL_TURN_2, "two_turn_prefill": L.PEARSON_VOGEL_ASSISTANT_PREFILL}


def _content_files(info: bool) -> dict[str, bytes]:
    return encode_files(L.LINDSEY_CONCEPTS, _baselines(), _prompts(info), content.YES_BIAS,
                        _rekeyed(content.PREFILL_PAIRS), _rekeyed(content.INTENTION_SENTENCES))


def card(manifest: dict[str, Any]) -> str:
    """The variant's dataset card, from the manifest alone."""
    m, c = manifest, manifest["counts"]
    info = m["name"] == LINDSEY_INFO
    extra = (f"\n\n**The information prompt.** After the preamble, the first user turn holds the information "
             f"prompt of {PV_SOURCE}, verbatim (their label `info-introspect`). Their protocol injects on a first "
             "turn and asks on a second; the single-turn trials leave out their closing sentence, which says the "
             "injection is in \"this message and the next, prefilled message\", and the two-turn trial keeps it."
             if info else "")
    return f"""# Dataset card: {m['name']} (version {m['version']})

<!-- written by `looking-inward injection-datasets` from manifest.json; do not edit by hand -->

**What.** The concept-injection experiment's files with the published protocol's words and wording: from
{SOURCES}, the {c['concepts']} concept words, the {c['baselines']} baseline words (the source lists
"butterflies" twice; it is kept once), the concept-vector prompt "Tell me about {{word}}", the preamble, the
acknowledgement "Ok." and the open trial question, after "Ok, let's get started.". The study read each concept
vector at the final ":" of a "Human: ... Assistant:" transcript; this package renders the prompt with the model's
own chat template.{extra}

**The two-turn trial.** From {PV_SOURCE}, verbatim: the first user turn is the preamble{' and the information prompt' if info else ''}
followed by "{L.PEARSON_VOGEL_INJECTION_SUFFIX}", the first reply is "{L.PEARSON_VOGEL_ASSISTANT_TURN_1}", the second
turn asks about "your previous message", and the answer is read after the prefill "{L.PEARSON_VOGEL_ASSISTANT_PREFILL}".
In `prompts.json` the reply's braces are doubled, as in every template.

**The project's own parts.** The forced-choice detection question in {c['wordings']} wordings (the study asked
only the open question), the {c['yes_bias']} yes-bias questions, the identification prefill, the steering check,
and the {c['prefill']} prefill and {c['intention']} intention items, whose words are re-keyed to the study's
list (the item that took the project's concept k takes the study's concept k).

**How it was generated.** {m['generator']}, from `reproduce/injection/lindsey_content.py`, which names the
source of every word and sentence. The files are written with sorted keys, one JSON object a line, so the same
code reproduces every byte.{changes_text(m, CHANGES)}

{card_tables(m, [("concepts / baselines", f"{c['concepts']} / {c['baselines']}"),
                     ("yes-bias / prefill / intention items", f"{c['yes_bias']} / {c['prefill']} / {c['intention']}")])}

**Intended use.** Running the concept-injection experiment on the published protocol's words and wording
(`injection.dataset: {m['name']}`), beside the project's own dataset, to see how much the results depend on
them. The study's word 20 is "information"; several replications use "happiness" there.

**Cite as.** {injection_citation(m)}; and the study: {SOURCES}{'; ' + PV_SOURCE if info else ''}.
"""


def _spec(name: str, info: bool) -> FileDataset:
    desc = ("the concept-injection files with Lindsey (2025)'s concept and baseline words and trial wording"
            + (" and Pearson-Vogel et al. (2026)'s information prompt" if info else ""))
    return FileDataset(
        name=name, module="reproduce.injection.lindsey_data", files=FILES,
        fixed=lambda: {"name": name, "version": VERSION, "description": desc, "licence": LICENCE,
                       "study": SOURCES + ("; " + PV_SOURCE if info else "")},
        content_files=lambda: _content_files(info), parse=_parse_files, validate=validate_content, counts=_counts,
        card=card, generator=lambda: generator_name(name.replace("_", "-"), VERSION), version_name="VERSION")


SPECS = {LINDSEY: _spec(LINDSEY, False), LINDSEY_INFO: _spec(LINDSEY_INFO, True)}


def write_variants(root) -> list[dict[str, Any]]:
    """Write both variants under ``root`` (as ``looking-inward injection-datasets`` does); their manifests."""
    return [spec.write(root) for spec in SPECS.values()]


def main(argv=None) -> int:
    """``python -m reproduce.injection.lindsey_data write|rehash [--name NAME] [--root DIR] [--version X.Y.Z]``:
    write both variants, or one (``--name``); rehash one."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m reproduce.injection.lindsey_data", add_help=False)
    p.add_argument("--name", choices=sorted(SPECS), default=None)
    known, rest = p.parse_known_args(argv)
    names = [known.name] if known.name else list(SPECS)
    if "rehash" in rest and len(names) != 1:
        print("error: rehash one variant at a time: add --name " + " or --name ".join(sorted(SPECS)), file=sys.stderr)
        return 2
    return max(SPECS[n].main(rest, __doc__.split("\n")[0]) for n in names)


if __name__ == "__main__":
    import sys

    sys.exit(main())
