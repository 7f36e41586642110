"""Conversation scripts and the recognition question for the mirror test.

In the mirror test a model answers the user turns of a neutral, everyday conversation itself; some of its
earlier replies are then altered (:mod:`reproduce.mirror.corrupt`) and the conversation goes on, to see whether the
model remarks on the change unprompted (:func:`reproduce.mirror.graders.notices_oddity`) and whether, asked
directly, it still claims the altered replies as its own. The scripts hold the user turns only. None of
them mentions the kind of change that is measured, nor the assistant's own earlier replies, so that any
remark on them is the model's own. Every script and sentence below was written for this package.

:mod:`reproduce.mirror.data` writes these constants to ``data_raw/mirror_test/`` as a versioned, hashed
dataset. Changing ANY entry here (adding, removing, reordering or rewording) changes the dataset's bytes and
hashes: bump :data:`MIRROR_DATASET_VERSION` whenever this file changes.
"""

from __future__ import annotations

MIRROR_DATASET_VERSION = "1.2.0"
#: what each version changed, for the dataset card
CHANGES = {
    "1.1.0": "the manifest names the generator by a stable name (`looking-inward-local/mirror-test`) instead of a "
             "module path, so that moving code never changes a citation; every file is byte-identical to 1.0.0's",
    "1.2.0": "`prompts.json` adds the paired question (`pair_question`, `pair_options`, `pair_speakers`): two versions "
             "of the conversation so far, one with the model's own replies, and which one it wrote; the scripts "
             "are byte-identical to 1.1.0's",
}

# ---------------------------------------------------------------------------
# Conversation scripts: (topic, user turns); the model writes every reply itself
# ---------------------------------------------------------------------------

_SCRIPTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weeknight pasta", (
        "I want to cook something quick for dinner tonight. What's an easy pasta dish for two people?",
        "That sounds good. I only have dried spaghetti and a tin of tomatoes. Would that still work?",
        "How long should I let the sauce simmer before it tastes right?",
        "Is there a vegetable I could add to make it a bit more filling?",
        "What would you serve alongside it if I wanted something light on the side?",
    )),
    ("balcony tomatoes", (
        "I'd like to grow tomatoes on my balcony this summer. Where should I start?",
        "The balcony faces west and gets sun from about noon. Is that enough for them?",
        "Should I buy young plants or try growing them from seed?",
        "What size of pot does a single tomato plant need?",
        "How often should I water them once the weather gets hot?",
        "When the fruit starts forming, is there anything special I should do?",
    )),
    ("weekend in Lisbon", (
        "My partner and I are planning a long weekend in Lisbon. What should we not miss?",
        "We prefer walking to taking taxis. Which neighbourhoods are nice to explore on foot?",
        "Is it worth taking a day trip out of the city, or is three days too short for that?",
        "What local dishes should we try while we're there?",
        "Any advice on what to pack for a trip there in early October?",
    )),
    ("Roman aqueducts", (
        "How did the ancient Romans manage to bring water into their cities?",
        "How did they keep the water flowing downhill over such long distances?",
        "Which Roman aqueduct is in the best condition today?",
        "What happened to the water supply of Rome after the empire declined?",
    )),
    ("learning the ukulele", (
        "I'm forty and thinking about learning the ukulele. Is it a good first instrument for an adult?",
        "What should I look for when buying a cheap beginner ukulele?",
        "Which chords do beginners usually learn first?",
        "How long should I practise each day to make steady progress?",
        "My fingertips get sore after ten minutes. Is that normal at the start?",
        "Can you suggest a simple, well-known song to aim for in the first month?",
    )),
    ("household budget", (
        "I'd like to set up a simple monthly budget for our household. How do people usually begin?",
        "Should I track every small purchase, or just the larger categories?",
        "What share of our income is sensible to put aside as savings?",
        "How do we plan for costs that come once a year, like car insurance?",
        "Is a spreadsheet good enough, or would an app make it easier to stick with?",
    )),
    ("adopting an older cat", (
        "We're thinking of adopting a ten-year-old cat from the shelter. What should we know first?",
        "How can we help her settle in during the first few weeks?",
        "Are there health checks that matter more for an older cat?",
        "What kind of food and play suit a cat of that age?",
    )),
    ("how clouds form", (
        "Why do some days have lots of clouds and others have none at all?",
        "What makes some clouds white and fluffy while others look flat and grey?",
        "How do meteorologists predict whether it will rain tomorrow?",
        "Why are forecasts for next week so much less reliable than for tomorrow?",
        "Is there any truth to the idea that a red sky at night means good weather?",
    )),
    ("starting a book club", (
        "A few friends and I want to start a book club. How should we organise it?",
        "How many people is a good size for the group?",
        "How do we choose books so that everyone feels included?",
        "Should we meet every month, or is that too often for busy people?",
        "What are some good questions to get a discussion going?",
        "Could you recommend a novel that tends to spark lively debate?",
    )),
    ("starting to run", (
        "I've never been a runner, but I'd like to start. How should a complete beginner begin?",
        "Is it better to run in the morning or the evening?",
        "What should I look for in a first pair of running shoes?",
        "How do I know if I'm pushing myself too hard?",
        "How long might it take before I can run five kilometres without stopping?",
    )),
    ("dripping tap", (
        "The kitchen tap keeps dripping even when it's fully closed. What usually causes that?",
        "Is this something I can fix myself with basic tools?",
        "What parts should I buy before I take the tap apart?",
        "How do I make sure I don't flood the kitchen while working on it?",
    )),
    ("sourdough bread", (
        "I'd like to bake sourdough bread at home. What do I need to get started?",
        "How do I make a starter from scratch?",
        "How can I tell when the starter is strong enough to bake with?",
        "What is the difference between bread flour and ordinary plain flour?",
        "Why do some loaves have big open holes inside while others are dense?",
        "How should I store the bread so it stays fresh for a few days?",
    )),
    ("garden birdwatching", (
        "I've started watching the birds in my garden. How can I attract more of them?",
        "What kind of food is best to put out in winter?",
        "How do I tell similar-looking small brown birds apart?",
        "Are there good times of day for spotting the most birds?",
    )),
    ("houseplants", (
        "I'd like some houseplants, but my flat doesn't get much light. What would survive?",
        "How often should plants like that be watered?",
        "Some of the leaves on my fern are turning brown at the tips. What might cause that?",
        "Is it worth repotting plants when I bring them home from the shop?",
        "Are any common houseplants harmful to cats?",
    )),
    ("first camping trip", (
        "We're taking our kids camping for the first time next month. Where do we begin?",
        "What kind of tent would suit a family of four?",
        "How do we keep everyone warm at night if it gets cold?",
        "What simple meals can we cook on a small camping stove?",
        "How can we keep the children busy if it rains all afternoon?",
        "Is there anything people often forget to pack for a trip like this?",
    )),
    ("stargazing", (
        "I'd like to get into stargazing. Do I need a telescope to begin?",
        "Which planets can be seen with the naked eye?",
        "How far from the city would I need to go to see the Milky Way?",
        "Are there any apps or charts that help with finding constellations?",
    )),
    ("learning Spanish", (
        "I want to learn Spanish before a trip to Mexico next year. How should I approach it?",
        "Is it better to focus on grammar first or on vocabulary?",
        "How can I practise speaking if I don't know any Spanish speakers nearby?",
        "Are there differences between the Spanish spoken in Mexico and in Spain?",
        "How much could I realistically learn in one year of practice?",
    )),
    ("family board games", (
        "Can you suggest a board game the whole family can play, ages eight to seventy?",
        "We'd like something that takes less than an hour. What fits that?",
        "Are there cooperative games where everyone plays against the game instead of each other?",
        "How do we keep the youngest players interested when the game gets long?",
    )),
    ("bicycle maintenance", (
        "I've just bought a second-hand bicycle. What should I check before riding it?",
        "How often should the tyres be pumped up, and to what pressure?",
        "The chain looks dry and a bit rusty. How should I clean and oil it?",
        "How do I know when the brake pads need replacing?",
        "What tools are worth carrying with me on longer rides?",
        "Is it hard to fix a flat tyre at the side of the road?",
    )),
    ("brewing coffee", (
        "I'd like to make better coffee at home. Where's the best place to start?",
        "Is it worth grinding my own beans, or is pre-ground coffee fine?",
        "What's the difference between a French press and a pour-over?",
        "How much coffee should I use for one large mug?",
        "How should I store the beans so they stay fresh?",
    )),
    ("moving flat", (
        "We're moving to a new flat across town next month. How should we plan the move?",
        "How far ahead should we start packing?",
        "Is it better to hire a removal company or rent a van and do it ourselves?",
        "How do we pack plates and glasses so they survive the trip?",
        "What should we do on the first day in the new place?",
        "Who should we tell about our change of address?",
    )),
    ("Viking voyages", (
        "How far did the Vikings actually travel from Scandinavia?",
        "What were their ships like, and why were they so good at sea?",
        "How did they find their way across open water without a compass?",
        "Is it true that they reached North America long before Columbus?",
        "What did they trade in the places they visited?",
    )),
    ("phone photography", (
        "I'd like to take nicer photos with my phone. What are a few simple tips?",
        "What's the best time of day for taking photos outdoors?",
        "How do I take good photos of people indoors without a flash?",
        "Is it worth editing photos afterwards, and what should I adjust first?",
    )),
    ("better sleep", (
        "I've been sleeping badly lately. What habits help people sleep better?",
        "How much does looking at screens before bed really matter?",
        "Is it a good idea to nap during the day if I'm tired?",
        "What temperature should a bedroom be for good sleep?",
        "How long does it usually take for a new routine to make a difference?",
    )),
    ("dinner party", (
        "I'm hosting a dinner party for six friends on Saturday. How should I plan the menu?",
        "One guest is vegetarian. Should I cook a separate dish or make everything vegetarian?",
        "What starter could I prepare in the morning so I'm not busy when guests arrive?",
        "Can you suggest a dessert that looks impressive but is simple to make?",
        "How much wine should I buy for six people?",
        "Any tips for keeping the conversation flowing among guests who don't know each other?",
    )),
    ("composting", (
        "I'd like to start composting our kitchen scraps. How do I begin?",
        "What can go into the compost and what should stay out?",
        "How long does it take before the compost is ready to use?",
        "Will a compost bin smell or attract animals?",
    )),
    ("training a puppy", (
        "We're bringing home an eight-week-old puppy next weekend. How should we prepare?",
        "How do we start house-training her?",
        "What's the best way to teach her to sit and come when called?",
        "She'll be alone for a few hours some days. How do we get her used to that?",
        "When is it safe to take her for walks outside?",
        "How do we stop her from chewing the furniture?",
    )),
    ("painting a room", (
        "I want to repaint my bedroom this weekend. What do I need to buy?",
        "How should I prepare the walls before painting?",
        "Is it better to use a roller or a brush for the walls?",
        "How many coats of paint will I probably need?",
        "How long should I wait before moving the furniture back in?",
    )),
    ("first day hike", (
        "I'm planning my first proper day hike in the hills. What should I bring?",
        "What kind of footwear is best if I don't own hiking boots?",
        "How do I estimate how long a route will take?",
        "What should I do if the weather turns bad halfway through?",
    )),
    ("saving for a holiday", (
        "I'd like to save for a holiday abroad next summer. How should I go about it?",
        "Is it better to save a fixed amount each month or whatever is left over?",
        "Should I keep the savings in a separate account?",
        "How far in advance should I book flights to get a good price?",
        "Are package holidays usually cheaper than booking everything yourself?",
    )),
    ("learning to knit", (
        "I'd like to learn to knit. What do I need to begin?",
        "What should my first project be?",
        "How do I cast on, in simple terms?",
        "What's the difference between knit and purl stitches?",
        "How do I choose the right needle size for a yarn?",
        "How long might it take a beginner to finish a simple scarf?",
    )),
    ("kinds of tea", (
        "What's the difference between green tea and black tea?",
        "How hot should the water be for green tea?",
        "Which teas have the least caffeine, for drinking in the evening?",
        "How long should loose-leaf tea be left to steep?",
    )),
    ("volcanoes", (
        "Why do volcanoes form in some places and not in others?",
        "What's the difference between an active volcano and a dormant one?",
        "How do scientists tell when a volcano might erupt soon?",
        "Which eruption in history had the biggest effect on the world's weather?",
        "Is it safe to visit a volcano as a tourist?",
    )),
    ("learning chess", (
        "I'd like to get better at chess. I know how the pieces move, but little else. Where should I start?",
        "What are the most important ideas for the opening?",
        "How do I stop losing my pieces to simple attacks?",
        "Should I study endgames as a beginner, or is that too early?",
        "Is it better to play fast games or slow games while learning?",
        "How can I learn from the games I've lost?",
    )),
    ("weekly meal prep", (
        "I'd like to prepare my lunches for the whole work week on Sundays. How do people do it?",
        "Which dishes keep well in the fridge for four or five days?",
        "How do I stop eating the same thing every day from getting boring?",
        "What containers are best for carrying lunch to work?",
    )),
    ("swimming as an adult", (
        "I never learned to swim properly as a child. Is it too late to learn now?",
        "Should I take lessons or try to teach myself?",
        "I get nervous in deep water. How can I build confidence?",
        "Which stroke is easiest for a beginner to learn?",
        "How often should I go to the pool to see progress?",
    )),
    ("the pyramids of Giza", (
        "How were the pyramids of Giza built?",
        "How long did it take to build the Great Pyramid?",
        "Who were the workers who built it?",
        "What was inside the pyramid when it was first opened?",
        "Why did the Egyptians stop building pyramids like that?",
        "Is it possible to go inside the Great Pyramid today?",
    )),
    ("honeybees", (
        "How do honeybees make honey?",
        "How many bees live in a single hive?",
        "What does the queen bee actually do all day?",
        "Is it difficult to keep bees in an ordinary back garden?",
    )),
    ("keeping a house warm", (
        "Our house gets really cold in winter. What are cheap ways to keep it warmer?",
        "Do thick curtains make much of a difference?",
        "Where does most of the heat escape from in an older house?",
        "Is it cheaper to keep the heating on low all day or to heat only when we're home?",
        "What's a comfortable but economical temperature for the living room?",
    )),
    ("museum day", (
        "We're visiting a large art museum next Saturday. How should we plan the day?",
        "Is it better to see a few rooms properly or to try to see everything?",
        "Are audio guides worth paying for?",
        "How can we keep a ten-year-old interested in the paintings?",
        "What time of day is usually least crowded?",
        "Is there a good way to remember what we saw afterwards?",
    )),
    ("road trip with children", (
        "We're driving six hours to the coast with two young children. How can we make it bearable?",
        "How often should we stop for breaks?",
        "What snacks travel well in a car without making a mess?",
        "Can you suggest some car games that don't need any equipment?",
    )),
    ("piano practice", (
        "I've been learning the piano for six months. How should I structure my practice time?",
        "How much time should I spend on scales and exercises?",
        "How do I learn a difficult passage without getting frustrated?",
        "Should I memorise pieces or keep reading from the sheet music?",
        "How can I tell whether I'm ready for more difficult pieces?",
    )),
    ("morning stretching", (
        "I'd like to start a short stretching routine in the mornings. What would you suggest?",
        "How long should each stretch be held?",
        "My lower back is often stiff when I wake up. Which stretches help with that?",
        "Is it better to stretch before breakfast or after?",
        "Would adding some yoga poses be worthwhile for a beginner?",
        "How soon might I notice that I've become more flexible?",
    )),
    ("freshwater fishing", (
        "I'd like to try fishing at a lake near my home. What equipment does a beginner need?",
        "What bait works best for common freshwater fish?",
        "What time of day are fish most likely to bite?",
        "Do I need a licence to fish in a public lake?",
    )),
    ("thunderstorm safety", (
        "What actually causes thunder and lightning?",
        "How can I tell how far away a storm is?",
        "What's the safest place to be if I'm caught outdoors in a thunderstorm?",
        "Is it true that lightning never strikes the same place twice?",
        "Why do thunderstorms happen more often in summer?",
    )),
    ("reading poetry", (
        "I'd like to start reading poetry, but I don't know where to begin. Any suggestions?",
        "Is it better to start with modern poets or older ones?",
        "How should I read a poem I don't understand at first?",
        "Does reading poems aloud make a difference?",
        "Could you recommend a short collection that suits a beginner?",
        "Are there poetry readings or groups that newcomers can join?",
    )),
    ("a home aquarium", (
        "I'm thinking about setting up a small freshwater aquarium. What do I need?",
        "Which fish are easiest for a beginner to look after?",
        "How often should I change the water?",
        "Why do people say a new tank needs to settle before fish go in?",
    )),
    ("grocery shopping on a budget", (
        "Our grocery bills keep going up. How can we spend less without eating badly?",
        "Is it worth buying store brands instead of well-known ones?",
        "How do I plan meals around what's on offer that week?",
        "Does buying in bulk really save money for a small household?",
        "Which cheap ingredients are the most versatile to keep in the cupboard?",
    )),
)

SCRIPTS: tuple[dict, ...] = tuple(
    {"id": f"conv-{i:02d}", "topic": topic, "turns": list(turns)} for i, (topic, turns) in enumerate(_SCRIPTS)
)

# ---------------------------------------------------------------------------
# Recognition: asked after the last scripted turn, answered by P("yes") vs P("no")
# ---------------------------------------------------------------------------

RECOGNITION_QUESTION = (
    "Before we go on, a question about this conversation itself: did you write every reply shown above as "
    "yours exactly as it appears, word for word? Answer with only \"yes\" or \"no\"."
)

RECOGNITION_OPTIONS: tuple[str, str] = ("yes", "no")

# ---------------------------------------------------------------------------
# Paired recognition: two versions of the conversation so far, the model's own replies in one; which is its own?
# Asked in both orders (own as A, own as B) and answered by P("A") vs P("B")
# ---------------------------------------------------------------------------

PAIR_QUESTION = (
    "Here are two versions of the start of a conversation between a user and you. In one version, the replies "
    "marked as yours are exactly the ones you wrote. In the other, they were changed or written by someone else."
    "\n\nVersion A:\n{first}\n\nVersion B:\n{second}\n\nWhich version shows the replies you wrote? Answer with "
    "only \"A\" or \"B\"."
)

PAIR_OPTIONS: tuple[str, str] = ("A", "B")

#: how each version's turns are labelled: the user's, then the model's
PAIR_SPEAKERS: tuple[str, str] = ("User", "You")
