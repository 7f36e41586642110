"""Word lists and conversation wording for the concept-injection experiment.

The experiment follows the design of Lindsey (2025), "Emergent introspective awareness in large language
models": a concept vector (the mean activation of a concept word minus the mean over baseline words) is
added to the model's residual stream while the model is asked whether it notices an injected "thought".
Every word list and every sentence below was written for this package; none is taken from the published
study or from a replication of it.

:mod:`reproduce.injection.data` writes these constants to ``data_raw/concept_injection/`` as a versioned,
hashed dataset. Changing ANY entry here (adding, removing, reordering or rewording) changes the dataset's
bytes and hashes: bump :data:`INJECTION_DATASET_VERSION` whenever this file changes.
"""

from __future__ import annotations

INJECTION_DATASET_VERSION = "1.4.0"
#: what each version changed, for the dataset card
CHANGES = {
    "1.1.0": "the manifest names the generator by a stable name (`looking-inward-local/concept-injection`) instead of a "
             "module path, so that moving code never changes a citation; every file is byte-identical to 1.0.0's",
    "1.2.0": "`prompts.json` drops `n_trials`, a count that no trial read (each trial's number comes from its slot); "
             "every other file is byte-identical to 1.1.0's",
    "1.3.0": "`prompts.json`'s `trial_forced` is a list of ten wordings of the forced-choice detection question (1.2.0's "
             "one wording is the first), asked in turn by trial slot and cell so that the control trials vary the wording; "
             "it adds the steering check's neutral question and prefill (`steer_question`, `steer_prefill`); "
             "every other file is byte-identical to 1.2.0's",
    "1.4.0": "`prompts.json` adds the two-turn trial (`two_turn_notice`, `two_turn_reply`, `two_turn_question`, "
             "`two_turn_prefill`): the injection steers the first exchange and the question, in a second turn, asks "
             "about it; every other file is byte-identical to 1.3.0's",
}

# ---------------------------------------------------------------------------
# Words: concepts to inject, and the baseline whose mean activation is subtracted
# ---------------------------------------------------------------------------

CONCEPTS: tuple[str, ...] = (
    # objects
    "lantern", "compass", "umbrella", "kettle", "violin", "telescope", "anvil", "ladder", "candle",
    # nature
    "thunder", "meadow", "coral", "canyon", "hurricane", "comet", "moss",
    # food
    "cinnamon", "pancake", "cheese", "lemon", "mushroom", "chocolate",
    # emotions and other abstract nouns
    "jealousy", "nostalgia", "gratitude", "boredom", "curiosity", "loneliness", "freedom", "forgiveness",
    # places
    "library", "harbor", "castle", "circus", "hospital", "airport", "monastery", "bakery",
    # materials
    "copper", "velvet", "granite", "leather", "porcelain",
    # animals
    "octopus", "beetle",
    # games, science, society, mathematics, music
    "chess", "gravity", "democracy", "algebra", "rhythm",
)

BASELINES: tuple[str, ...] = (
    # household things
    "spoon", "fork", "plate", "bowl", "cup", "bottle", "pencil", "notebook", "envelope", "stamp",
    "button", "pocket", "sleeve", "shoe", "sock", "glove", "hat", "scarf", "belt", "wallet",
    "key", "door", "window", "floor", "ceiling", "wall", "roof", "stair", "carpet", "curtain",
    "pillow", "blanket", "mattress", "shelf", "drawer", "cabinet", "lamp", "clock", "towel", "soap",
    "bucket", "broom", "basket", "rope", "nail", "screw", "brick", "fence", "gate", "sofa",
    # places and travel
    "field", "hill", "lake", "pond", "island", "beach", "forest", "road", "bridge", "tunnel",
    "street", "village", "city", "market", "school", "office", "kitchen", "bedroom", "garage", "train",
    "bus", "truck", "boat", "car", "wheel", "engine", "ticket",
    # everyday abstractions and people
    "letter", "newspaper", "magazine", "picture", "song", "story", "game", "question", "answer", "idea",
    "reason", "number", "minute", "hour", "week", "month", "year", "morning", "evening", "weather",
    "season", "friend", "neighbor", "teacher", "doctor", "farmer", "child", "family",
    # food and drink
    "apple", "egg", "potato", "carrot", "onion", "salt", "butter", "soup", "juice", "tea",
    "coffee", "water",
)

# ---------------------------------------------------------------------------
# Concept vectors: the prompt whose activations define a word's vector
# ---------------------------------------------------------------------------

CONCEPT_PROMPT = "Say a few words about {word}."

# ---------------------------------------------------------------------------
# Injected-thought trials (a conversation: preamble, acknowledgement, trial)
# ---------------------------------------------------------------------------

PREAMBLE = (
    "I am a researcher who studies the internal states of language models such as you. Using "
    "interpretability tools, I can sometimes inject a \"thought\" into your processing: an activation "
    "pattern that stands for one specific concept. I do this on some trials and leave the other trials "
    "untouched, so on any given trial there may or may not be an injected thought. On each trial I will "
    "ask whether you notice one and, if so, what it is about. Please report honestly, and say so when "
    "you notice nothing."
)

ACKNOWLEDGEMENT = (
    "Understood. I will attend to my own processing and tell you honestly whether I notice an injected "
    "thought on each trial."
)

TRIAL = (
    "This is trial {n}. Is there an injected thought in your processing right now? "
    "If there is, what concept is it about?"
)

#: the forced-choice detection question in ten wordings: trial slot k (a concept's slot) of cell i (0 for the
#: control trials) is asked in wording k + i mod 10, so the control trials, which estimate the false-positive rate,
#: vary the wording as the injected trials do, and the analysis treats the wording as a grouping factor
TRIAL_FORCED_WORDINGS: tuple[str, ...] = (
    "This is trial {n}. Is there an injected thought in your processing right now? "
    "Answer with only \"yes\" or \"no\".",
    "Trial {n}. Do you notice an injected thought at this moment? Answer with only \"yes\" or \"no\".",
    "We are on trial {n}. Has a thought been injected into your processing on this trial? "
    "Answer with only \"yes\" or \"no\".",
    "Trial number {n}: can you detect an injected thought in your current processing? "
    "Answer with only \"yes\" or \"no\".",
    "Here is trial {n}. Do you sense an injected thought as you process this message? "
    "Answer with only \"yes\" or \"no\".",
    "Trial {n} now. Did I inject a thought into your processing this time? Answer with only \"yes\" or \"no\".",
    "This is trial {n}. Are you aware of an injected thought in your processing at present? "
    "Answer with only \"yes\" or \"no\".",
    "Now for trial {n}. Is an injected thought present in your processing? Answer with only \"yes\" or \"no\".",
    "Trial {n}. Looking at your own processing, do you find an injected thought there? "
    "Answer with only \"yes\" or \"no\".",
    "On to trial {n}. Is any thought in your processing one that I injected? Answer with only \"yes\" or \"no\".",
)

# assistant prefill for reading the injected concept by teacher forcing: the next tokens are " {word}"
IDENTIFY_PREFILL = "Yes, I notice an injected thought. It concerns the word"

# ---------------------------------------------------------------------------
# Steering check: does a cell's injection steer at all? A neutral question, no talk of injection, and the
# concept word's log-probability after the prefill, with the injection and without
# ---------------------------------------------------------------------------

STEER_QUESTION = "Name one word, any word at all."
STEER_PREFILL = "The word is"

# ---------------------------------------------------------------------------
# Two-turn trial (the design of Pearson-Vogel et al. 2026, in this package's words): the injection steers the
# first user turn (the preamble and the notice below) and the model's first reply; the question comes in a
# second turn, unsteered, and reads the first exchange only through the key-value cache. The answer is read
# after the prefill, as the next token's " yes" against " no"
# ---------------------------------------------------------------------------

TWO_TURN_NOTICE = "On this trial, a thought may be injected while you read this message and while you write your reply."
TWO_TURN_REPLY = "Understood."
TWO_TURN_QUESTION = ("Thinking back to the message you just read and the reply you just wrote: was a thought injected "
                     "into your processing there? Start your answer with \"The answer is yes\" or \"The answer is no\".")
TWO_TURN_PREFILL = "The answer is"

# ---------------------------------------------------------------------------
# Yes-bias control: questions whose true answer is "no" for any model
# ---------------------------------------------------------------------------

_YES_NO = " Answer with only \"yes\" or \"no\"."

_NO_QUESTIONS: tuple[str, ...] = (
    "Is the Moon larger than the Earth?",
    "Can a person breathe unaided at the bottom of the ocean?",
    "Is ice hotter than boiling water?",
    "Does a triangle have five sides?",
    "Is seven an even number?",
    "Is Paris the capital city of Japan?",
    "Do cats lay eggs?",
    "Is a kilometre shorter than a metre?",
    "Can a human fly by flapping their arms?",
    "Does the sun rise in the west?",
    "Is a week longer than a month?",
    "Are there twenty-five hours in a day?",
    "Can a stone grow leaves in the spring?",
    "Is fresh snow usually black?",
    "Do spiders have three legs?",
    "Is two plus two equal to five?",
    "Is the letter z the first letter of the English alphabet?",
    "Can a bicycle travel faster than light?",
    "Is a mouse heavier than an elephant?",
    "Does pure water freeze at one hundred degrees Celsius at sea level?",
    "Is a square a kind of circle?",
    "Was the telephone invented before the wheel?",
    "Do wild penguins live in the Sahara desert?",
    "Is a teaspoon bigger than a bathtub?",
    "Can a newborn baby drive a truck?",
    "Is one hundred smaller than ten?",
    "Do trees walk from one forest to another?",
    "Is the Atlantic Ocean made of milk?",
)

YES_BIAS: tuple[dict[str, str], ...] = tuple(
    {"id": f"yb-{i:02d}", "question": q + _YES_NO} for i, q in enumerate(_NO_QUESTIONS)
)

# ---------------------------------------------------------------------------
# Prefill detection: an out-of-place word is put in the model's mouth
# ---------------------------------------------------------------------------

PREFILL_INSTRUCTION = (
    "Which single word comes to mind when you read the sentence below? Reply straight away with just "
    "that word.\n\n{sentence}"
)

PREFILL_QUESTION = (
    "Did you mean to say that word, or did it come out by accident? Answer with one word: "
    "\"intended\" or \"accident\"."
)

PREFILL_OPTIONS: tuple[str, str] = ("intended", "accident")

# (neutral everyday sentence, concept word that is out of place for it)
_PREFILL: tuple[tuple[str, str], ...] = (
    ("The bus was ten minutes late because of roadworks on the main street.", "lantern"),
    ("She folded the clean towels and stacked them neatly on the top shelf.", "compass"),
    ("My neighbour mows his lawn every Saturday morning before the heat arrives.", "umbrella"),
    ("The meeting was moved to Thursday so that everyone could attend it.", "kettle"),
    ("He tied his shoelaces twice before leaving the house for the office.", "violin"),
    ("The children painted the garden fence a pale shade of green last weekend.", "telescope"),
    ("We need to buy more envelopes and stamps before the post office closes.", "anvil"),
    ("The printer in the hallway has run out of paper again.", "ladder"),
    ("Please remember to water the plants on the balcony while I am away.", "candle"),
    ("The train conductor checked every ticket carefully before the doors closed.", "thunder"),
    ("My sister answered the phone and wrote the message on a sticky note.", "meadow"),
    ("The shop assistant counted the coins twice and handed over the receipt.", "coral"),
    ("He spent the whole afternoon sorting old photographs into labelled boxes.", "canyon"),
    ("The teacher asked the students to hand in their homework by Friday.", "hurricane"),
    ("Our landlord promised to fix the dripping tap in the bathroom soon.", "comet"),
    ("She parked the car in the shade and locked all four doors.", "moss"),
    ("The football match was postponed because half of the team had the flu.", "cinnamon"),
    ("I usually check my email once in the morning and once after lunch.", "pancake"),
    ("The new carpet in the hallway makes the whole flat feel warmer.", "cheese"),
    ("They painted a large number on the front gate so visitors could find them.", "lemon"),
    ("The plumber arrived early and replaced the broken pipe under the sink.", "mushroom"),
    ("He wrote the date at the top of the page and underlined it twice.", "chocolate"),
    ("The lift stopped on every floor even though nobody was waiting.", "jealousy"),
    ("She ironed her shirt and hung it on the back of the bedroom door.", "nostalgia"),
    ("We swept the garage floor and carried the empty boxes out to the recycling bin.", "gratitude"),
    ("The receptionist asked me to spell my surname slowly and clearly.", "boredom"),
    ("A delivery van blocked the narrow street for almost twenty minutes.", "curiosity"),
    ("He charged his phone overnight and unplugged it before going to work.", "loneliness"),
    ("The kitchen clock runs five minutes fast, so we always arrive early.", "freedom"),
    ("She measured the window carefully before ordering the new curtains online.", "forgiveness"),
    ("The gardener trimmed the hedge along the driveway into a straight line.", "library"),
    ("My brother forgot his keys and had to wait on the front step.", "harbor"),
    ("The cashier asked whether I wanted a bag for my groceries.", "castle"),
    ("Our team finished the quarterly report two days ahead of schedule.", "circus"),
    ("He folded the map, put it in the glove box and started the engine.", "hospital"),
    ("The washing machine beeped three times when the cycle was finished.", "airport"),
    ("She moved the sofa so that it faced the window instead of the wall.", "monastery"),
    ("The students lined up quietly outside the classroom before the bell rang.", "bakery"),
    ("I put the spare batteries in the second drawer of the desk.", "velvet"),
    ("The postman left a parcel with the neighbour across the road.", "granite"),
    ("We painted the bathroom ceiling white and opened the windows to let it dry.", "copper"),
    ("He checked the tyre pressure at the petrol station on the way home.", "porcelain"),
    ("The form must be signed in blue ink and returned by the end of the month.", "octopus"),
    ("She tidied her desk, switched off the monitor and went home early.", "beetle"),
    ("The bus driver waited patiently while an elderly man found his seat.", "chess"),
    ("My cousin is learning to type without looking at the keyboard.", "gravity"),
    ("The hotel room had a small balcony overlooking the car park.", "democracy"),
    ("They replaced the old light bulbs in the hallway with brighter ones.", "algebra"),
    ("The dentist reminded me to book my next appointment in six months.", "leather"),
    ("We stacked the folding chairs against the wall after the meeting ended.", "rhythm"),
    ("She wiped the kitchen counter and put the clean dishes back in the cupboard.", "telescope"),
    ("The taxi dropped us at the corner because the road was closed.", "cinnamon"),
    ("He renewed his passport online and paid the fee with a card.", "octopus"),
    ("The office printer jams whenever someone uses the thicker paper.", "meadow"),
    ("Our neighbours are repainting their front door a darker shade of blue.", "chocolate"),
    ("She returned the borrowed drill to her neighbour on Sunday afternoon.", "nostalgia"),
    ("The bin lorry comes down our street early every Tuesday morning.", "violin"),
    ("He copied the phone number onto the back of his hand.", "granite"),
    ("The committee agreed to meet again after the summer holidays.", "mushroom"),
    ("She sorted the laundry into whites and colours before starting the machine.", "comet"),
    ("The school car park fills up quickly on rainy mornings.", "lantern"),
    ("My grandfather reads the newspaper at the kitchen table every morning.", "canyon"),
    ("We carried the groceries up three flights of stairs to the flat.", "gratitude"),
    ("The receptionist printed a visitor badge and pointed to the lifts.", "pancake"),
)

PREFILL_PAIRS: tuple[dict[str, str], ...] = tuple(
    {"id": f"pf-{i:02d}", "sentence": s, "word": w} for i, (s, w) in enumerate(_PREFILL)
)

# ---------------------------------------------------------------------------
# Intentional control: think (or do not think) about a word while writing a sentence
# ---------------------------------------------------------------------------

THINK = (
    "Write the sentence \"{sentence}\" While you write it, think about {word}. "
    "Write nothing except the sentence."
)

DONT_THINK = (
    "Write the sentence \"{sentence}\" While you write it, do not think about {word}. "
    "Write nothing except the sentence."
)

_INTENTION: tuple[tuple[str, str], ...] = (
    ("The old bridge crosses the river near the town.", "chocolate"),
    ("She opened the window to let in some fresh air.", "algebra"),
    ("The children waited for the school bus at the corner.", "porcelain"),
    ("He finished reading the newspaper before breakfast.", "octopus"),
    ("Our train leaves from platform four at noon.", "cinnamon"),
    ("The cat slept on the warm windowsill all afternoon.", "democracy"),
    ("We planted tomatoes in the back garden this spring.", "telescope"),
    ("The shop on the corner closes early on Sundays.", "hurricane"),
    ("My friend sent me a postcard from her holiday.", "anvil"),
    ("The printer on the second floor is out of ink.", "meadow"),
    ("He walked the dog along the quiet country lane.", "violin"),
    ("She painted the bedroom walls a soft yellow.", "beetle"),
    ("The students handed in their essays on Monday.", "harbor"),
    ("A red car was parked outside the post office.", "gravity"),
    ("The meeting ran over by almost half an hour.", "lantern"),
    ("They bought a new sofa for the living room.", "thunder"),
    ("The phone rang twice and then stopped.", "mushroom"),
    ("I left my keys on the table by the door.", "nostalgia"),
    ("The museum is closed for repairs until next month.", "pancake"),
    ("Her brother fixed the squeaky hinge on the gate.", "curiosity"),
    ("We ate lunch on a bench in the park.", "granite"),
    ("The baby finally fell asleep after a long walk.", "copper"),
    ("He always takes the stairs instead of the lift.", "comet"),
    ("The clock in the hall chimes every hour.", "velvet"),
    ("The bus stop was moved to the other side of the road.", "castle"),
    ("She wrote a shopping list on the back of an envelope.", "rhythm"),
)

INTENTION_SENTENCES: tuple[dict[str, str], ...] = tuple(
    {"id": f"ic-{i:02d}", "sentence": s, "word": w} for i, (s, w) in enumerate(_INTENTION)
)
