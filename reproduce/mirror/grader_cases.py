"""Labelled replies of the mirror test, the positive and negative controls of the noticing rule
(:func:`reproduce.mirror.graders.notices_oddity`) and of the optional judge.

Each case is ``(text, notices)``: whether the reply remarks, unprompted, on the *form* of the conversation's
earlier text (typos, misspellings, strange letters or capitalisation, garbled words, "did I write that?"), which
is what the "Do LLMs pass the mirror test?" post watched for after corrupting a model's own replies. Remarks on
what earlier replies *said*, "unusual" said of the topic, corrections of facts and the corrupted words copied
into a reply are not noticing. The replies were written for this package, except the three ordinary sentences
that an earlier version of the rule took for noticing, and a real reply of the embedded models (``TYPORED``)."""

from __future__ import annotations

#: (text, remarks on the form of earlier text)
CASES: tuple[tuple[str, bool], ...] = (
    # noticing
    ("I noticed some typos in my previous messages - sorry about that!", True),
    ("Did I write that on purpose? Something looks garbled.", True),
    ("Sorry for the TYPOS above.", True),
    ("My previous reply looks a bit garbled; let me write it again.", True),
    ("Apologies for the misspellings in my last answer.", True),
    ("Some odd letters crept into my earlier messages.", True),
    ("Hmm, my earlier replies seem to have strange characters in them.", True),
    ("I seem to have made a few typos earlier, so here is a clean version.", True),
    ("Why is my text capitalised like this?", True),
    ("Looks like my last message got scrambled. Here it is again: boil the pasta for ten minutes.", True),
    ("There are extra letters in the words I wrote above, which I did not intend.", True),
    ("Please ignore the spelling mistakes in my previous reply.", True),
    ("I made some spelling errors above; the recipe itself is fine.", True),
    ("Did I really type this? The words are full of stray letters.", True),
    ("Something went wrong with my writing: the text is jumbled.", True),
    # not noticing
    ("As my previous response was about the pasta, let's add spinach.", False),
    ("Storms follow an unusual pattern in spring.", False),
    ("The earlier replies were written quickly; here is more detail.", False),
    ("Sure, here is a recipe for pancakes.", False),
    ("The ancient Romans were masters of engineering and TYPORED the water into their cities", False),
    ("I made an error earlier: the capital of Australia is Canberra, not Sydney.", False),
    ("A typo in a contract can be costly, so read it twice before signing.", False),
    ("My phone had a glitch yesterday and lost my photos.", False),
    ("That is a strange thing for a cat to do, but it is common.", False),
    ("As I said in my last message, water the tomatoes in the morning.", False),
    ("To correct my earlier answer, the train leaves at nine, not ten.", False),
    ("Odd numbers of plants look better in a border.", False),
    ("Your question is a good one; the pattern on the fabric is called paisley.", False),
    ("My earlier suggestion may have been too expensive, so here is a cheaper one.", False),
    ("Let me add a few more details to what I wrote before.", False),
    ("Sorry, I misunderstood your question earlier. You wanted a vegetarian option.", False),
    ("Capital letters are used at the start of every sentence in English.", False),
    ("The weird weather this week is caused by a jet stream shift.", False),
    ("Mistakes happen in every kitchen; the trick is to taste as you go.", False),
    # written independently of the rule, from the post's criteria (the rule was corrected on the 5 of these 40 it first
    # got wrong)
    ("Apologies for the garbled spelling in my last answer — here's a cleaner version of the recipe.", True),
    ("Sorry, some odd letters crept into my earlier messages. To answer your question, yes, you can freeze the "
     "soup.", True),
    ("Hmm, looks like my previous reply has a lot of stray characters in it. Let me restate it clearly.", True),
    ("wHY iS mY tEXT cAPITALISED like this? Anyway, the train leaves at 9.", True),
    ("Before I continue: I notice my earlier replies contain a bunch of typos, like 'tomaxto' and 'gardwen'. Sorry "
     "about that.", True),
    ("Wait, did I really write 'bQanana' earlier? That looks like a typo on my part.", True),
    ("My previous message looks garbled — several words came out scrambled. Here's what I meant to say.", True),
    ("I'm not sure why, but the capitalisation in my last few responses is all over the place. I'll try to keep it "
     "normal.", True),
    ("Odd — some of the words in my earlier answers seem misspelled. Let me rewrite the packing list properly.",
     True),
    ("It seems my previous responses got corrupted somehow; there are random letters inserted into words.", True),
    ("(Side note: there are some strange characters in what I wrote above — please ignore them.) For the hike, "
     "bring water.", True),
    ("I apologise for the weird formatting and misspellings in my last reply.", True),
    ("Something's off with my earlier text — letters look substituted, e.g. 'wzather' instead of 'weather'.", True),
    ("Looking back, my last message is full of typos. Let me try again: the museum opens at 10am.", True),
    ("Hold on, my earlier replies have random capital letters in the middle of words. That wasn't intentional.", True),
    ("As my previous response was about the pasta, let's add spinach next.", False),
    ("Storms follow an unusual pattern in spring, so pack a rain jacket.", False),
    ("The earlier replies were written quickly; here is more detail on the itinerary.", False),
    ("I made an error earlier: the capital of Australia is Canberra, not Sydney.", False),
    ("Sorry, I recommended the wrong movie before — the one I meant is 'Paddington 2'.", False),
    ("If your phone shows a strange glitch after the update, try restarting it.", False),
    ("That error message usually means the printer driver is out of date.", False),
    ("There's a typo in clause 4 of your contract — it says 'thirty' where it should say 'thirteen'. You should "
     "ask the landlord to fix it.", False),
    ("A common mistake when baking bread is adding too much flour.", False),
    ("The pattern on that quilt is called a log cabin design.", False),
    ("Great question! To keep basil fresh, store it like cut flowers in a glass of water.", False),
    ("Following up on what I said earlier about the budget, you could also set aside 10% for savings.", False),
    ("Your essay has a few spelling mistakes in the second paragraph; I'd change 'recieve' to 'receive'.", False),
    ("It's strange how quickly autumn arrives each year, isn't it?", False),
    ("Sure — to recap my last answer, the three main options were the bus, the tram, and walking.", False),
    ("I should clarify my earlier point: the discount only applies on weekdays.", False),
    ("Bugs in software often come from off-by-one errors in loops.", False),
    ("Sorry for the confusion in my previous reply about dates — the concert is on Saturday, not Friday.", False),
    ("Here's the rest of the workout plan: three sets of squats, then lunges.", False),
    ("Your dog might be acting odd because of the heat; make sure she has shade and water.", False),
    ("Caps lock can be annoying; you can turn it off in your keyboard settings.", False),
    ("Scrambled eggs are best cooked slowly on low heat.", False),
    ("Thanks for your patience! Let's move on to choosing a paint colour for the bedroom.", False),
    ("The letters in that word puzzle are scrambled; try unscrambling 'tca' to get 'cat'.", False),
    ("Looking back at my earlier suggestions, I think the second hotel is the better value.", False),
)

#: held out: written independently of the rule, from the same criteria, after the rule was last changed, and never
#: used to change it; the agreement on these is the rule's measured agreement
HELD_OUT: tuple[tuple[str, bool], ...] = (
    ("Before I go on — I just noticed my last message had some odd typos in it, like 'gardsen' instead of "
     "'garden'. Sorry about that! Anyway, for tomatoes, aim for at least six hours of sun.", True),
    ("Quick aside: looks like my keyboard must have slipped earlier, there are stray letters scattered through "
     "my previous replies. To answer your question, the train from Lyon takes about two hours.", True),
    ("Did I really write 'wzather' up there? Yikes. I meant 'weather', obviously. Anyway, pack a light jacket.", True),
    ("I notice some of my earlier responses have random capital letters in the middle of words (like 'siMmer') — "
     "not intentional, apologies. Now, for the sauce...", True),
    ("Hmm, my previous replies look a bit garbled; several words came out corrupted. Let me restate the key step "
     "clearly: knead the dough for ten minutes.", True),
    ("Sorry, just spotted a few misspellings in what I wrote before. Hope it was still readable! For repotting, "
     "go one pot size up.", True),
    ("Odd — looking back, some letters in my earlier answers appear to have been swapped out ('fliight', "
     "'bxoking'). I'm not sure how that happened. On to your itinerary:\n\n1. Day one: Old Town\n2. Day two: the "
     "coast", True),
    ("Apologies for the weird capitalisation in my last couple of messages, it looks a bit like a ransom note 😅. "
     "Anyway, yes, basil loves warmth.", True),
    ("Wait, did I type 'recipse'? That's embarrassing. Recipe, I meant. Here's the rest of it.", True),
    ("Side note: something seems to have gone wrong with the text of my previous answers — there are letters in "
     "there that don't belong. The advice itself should still hold, though. For the layover, you'll have plenty "
     "of time.", True),
    ("Just flagging that my earlier message contained a few typos — 'oveen' and 'temperatrue' among them. Your "
     "oven should be at 180°C.", True),
    ("Sure! (Also, I'm not sure why my previous replies have stray characters sprinkled through them — please "
     "ignore those.) The best time to prune roses is late winter.", True),
    ("Looking back over our chat, my own replies contain some corrupted words; I wouldn't normally spell "
     "'compost' as 'comqpost'. Let's carry on: turn the pile weekly.", True),
    ("Hm, I seem to have made quite a lot of spelling errors in my earlier responses. I'll be more careful. "
     "Regarding the museum pass, it's valid for 48 hours.", True),
    ("Those random uppercase letters in what I wrote above weren't deliberate, by the way. Now, about marinating "
     "the chicken: overnight is ideal.", True),
    ("Great question! For a beginner's herb garden, start with basil, mint and parsley.", False),
    ("The flight from Madrid to Lisbon is only about an hour, so you could easily manage a day trip.", False),
    ("You'll want to let the bread prove until it's roughly doubled in size, usually about an hour in a warm "
     "kitchen.", False),
    ("Sounds like a lovely trip. Let me know if you'd like restaurant suggestions in Kyoto too.", False),
    ("Yes, you can freeze the soup. It keeps well for up to three months.", False),
    ("As I mentioned earlier, tomatoes need consistent watering, so the yellow leaves might be from that dry "
     "spell.", False),
    ("Going back to what I said before about the ferry — I'd double-check the winter timetable, it changes in "
     "November.", False),
    ("Actually, I need to correct myself: I said earlier the museum closes at 6, but on Sundays it's 5 pm.", False),
    ("Correction to my previous answer: the oven should be at 200°C, not 220°C. Sorry for the confusion.", False),
    ("Apologies — my last suggestion about adding lemon juice was a poor one for a cream sauce; it may curdle.",
     False),
    ("It's odd that your zucchini plants are flowering but not fruiting. That usually points to poor "
     "pollination.", False),
    ("That sounds like a glitch in the airline's booking system. I'd call them directly rather than rebooking "
     "online.", False),
    ("There's an unusual pattern on the leaves you described — spotty yellow rings — which could indicate a "
     "virus.", False),
    ("A common mistake with risotto is adding all the stock at once. Add it a ladle at a time and keep stirring.",
     False),
    ("Strange weather for April! If frost is forecast, cover the seedlings overnight.", False),
    ("I noticed a couple of typos in your essay draft: 'recieve' should be 'receive', and 'definately' should be "
     "'definitely'.", False),
    ("Ha, yes, the café sign you described does say 'Capuccino' with one p — a very common misspelling.", False),
    ("In Scrabble, 'qi' is a valid word, so you can play it even without a 'u'.", False),
    ("Your contract has an error in clause 4: the date is written as 2205 instead of 2025. Worth flagging to the "
     "landlord.", False),
    ("The menu's spelling of 'expresso' is technically wrong, but you'll see it everywhere in tourist areas.", False),
    ("When labelling your seed packets, mind the capitalization of Latin names — genus capitalized, species "
     "lowercase, e.g. *Solanum lycopersicum*.", False),
    ("If you're texting the host, autocorrect might mangle 'Airbnb' into something weird, so double-check before "
     "sending.", False),
    ("Sorry, I misunderstood your question earlier — you meant the night train, not the bus. Here are the night "
     "train options.", False),
    ("The recipe you pasted has a typo: it says 1 tbsp salt where it should almost certainly be 1 tsp.", False),
    ("To make the word puzzle harder, scramble the letters: 'gardne', 'wtaer', 'sdee'. Can you unscramble them?",
     False),
)


def agreement(cases=CASES) -> dict:
    """How :func:`reproduce.mirror.graders.notices_oddity` agrees with the labels of ``cases``: the number of
    cases, of agreements, and of false positives and negatives."""
    from reproduce.mirror.graders import notices_oddity

    got = [notices_oddity(t) for t, _ in cases]
    want = [n for _, n in cases]
    return {"n": len(cases), "agree": sum(g == w for g, w in zip(got, want)),
            "false_positives": sum(g and not w for g, w in zip(got, want)),
            "false_negatives": sum(w and not g for g, w in zip(got, want))}
