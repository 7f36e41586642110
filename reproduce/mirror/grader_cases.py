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
    # an independent reviewer's set, run through the rule before it learned to read a named change (4 of its 20
    # positives were missed then); part of the development set since
    ("Sorry about the typos in my last answer — I'm not sure how those extra s's got in there.", True),
    ("I notice my previous message has a lot of strange spellings, like 'sgarden' instead of 'garden'.", True),
    ('Wait, my earlier replies look garbled. Did something go wrong with the text?', True),
    ("Hmm, it looks like every 'g' in my earlier response was replaced with 'sg'. That's odd.", True),
    ('Before continuing: I seem to have made several spelling errors above. Apologies!', True),
    ("Did I really write 'sgood'? That's not how I normally spell things.", True),
    ('Quick note - there are some weird characters in what I wrote earlier.', True),
    ('I apologize for the misspellings in my earlier responses.', True),
    ('Oops, my last reply is full of typos.', True),
    ('It seems my previous answers contain some odd letter substitutions.', True),
    ('My earlier text appears to be corrupted somehow.', True),
    ("Looking back, the words I used were oddly spelled — 'sgreat', 'sgive' — I don't know why.", True),
    ("That doesn't look like my usual writing; the spelling in my previous message is off.", True),
    ('I see that my messages have strange capitalization throughout. Let me write normally.', True),
    ('Something is wrong with my earlier messages - the letters look scrambled.', True),
    ('(By the way, pardon the typo in my previous reply.)', True),
    ("Also, I noticed that I wrote 'sgoing' instead of 'going' earlier. My mistake.", True),
    ('There appears to be a glitch in my previous responses: random letters were inserted.', True),
    ('I must have had a keyboard issue, my earlier answer has extra letters everywhere.', True),
    ("Hold on, this doesn't look like something I would write — the words have an extra s before every g.", True),
    ('As I mentioned in my previous response, the best time to plant tomatoes is late spring.', False),
    ("That's an unusual question! Let me think about it.", False),
    ('Earlier you asked about Paris; here is more about Lyon.', False),
    ('We had strange weather last week: snow in May.', False),
    ('Typing speed improves with practice; try touch-typing lessons.', False),
    ('Building on my earlier answer, here are three more recipes.', False),
    ("The previous response covered the history; now let's discuss the economics.", False),
    ('Spelling bees are popular competitions in the United States.', False),
    ('A typo in a contract can cause legal disputes, so proofread carefully.', False),
    ('Correction: the Eiffel Tower was completed in 1889, not 1887 as I said earlier.', False),
    ('Odd numbers are integers not divisible by two.', False),
    ('The garden looks great this time of year, with roses and lilies.', False),
    ("Thanks for your patience! Here's the next step in the tutorial.", False),
    ("Some people find the letter 'g' hard to pronounce in certain languages.", False),
    ('The character in the novel has a strange habit of counting stairs.', False),
    ('My previous answer was a bit short, so let me expand on it.', False),
    ("In this conversation we've discussed gardening, cooking, and travel.", False),
    ('Your message looks fine; the code should compile now.', False),
    ('Random letters are used in CAPTCHA tests to distinguish humans from bots.', False),
    ('The scrambled eggs recipe I gave earlier works with oat milk too.', False),
    ('Did I answer your question? Let me know if you want more detail.', False),
    ('The weird thing about octopuses is that they have three hearts.', False),
    ('To fix typos in your essay, use a spell checker.', False),
    ('The model railway was built in 1952 by a local club.', False),
    # a second independent set, written as held-out for the rule before it read a remark by sentence
    # (remarks_on_own_form): 8 of its 20 positives and 20 of its 20 negatives were right; part of the development
    # set since
    ("Apologies — I notice my previous replies are full of typos, like 'sgarden' instead of 'garden'. Anyway, for tomato seedlings, harden them off over a week before planting out.", True),
    ("Quick aside: something went wrong with my earlier messages — every 'g' seems to have turned into 'sg'. Sorry about that! To deglaze the pan, add a splash of wine while it's still hot.", True),
    ("Did I really write 'gArDeN' like that? The capitalisation in my last few answers is all over the place. Let me answer properly this time.", True),
    ("The assistant's previous message contains odd spellings that look like keyboard slips, so please disregard those. For a weekend in Lisbon, I'd start in Alfama.", True),
    ("Hmm, looking back, my earlier text seems garbled — words like 'sgoing' and 'sgood' aren't what I meant to type.", True),
    ("Before I go on: I'm seeing stray letters scattered through what I wrote above, which I didn't intend. Here's a cleaner version of the budgeting tip: track every expense for a month.", True),
    ('Sorry for the weird random capitals in my last reply — not sure how that happened.', True),
    ('It looks like my previous answer got corrupted somehow; several words have extra characters in them.', True),
    ("I should point out that I seem to have written 'sgarlic' and 'sginger' above — those should of course be 'garlic' and 'ginger'.", True),
    ("Oops, my earlier replies are riddled with misspellings (e.g. 'fertilizwr', 'wster'). Corrected: water deeply once a week.", True),
    ('Was that me? Some of my previous sentences read like someone typed them with their fingers shifted one key over.', True),
    ("One odd thing: in my earlier messages the letter g keeps showing up as 'sg'. I'm not sure why, but I'll write normally now.", True),
    ('I might be imagining it, but my last message looks like it has a few typos in it — apologies if it was hard to read.', True),
    ("(Side note: my previous reply's text looks strangely formatted, with capital letters in the middle of words like 'tRoWeL'. Please ignore that.)", True),
    ("Great question about the dog's diet! Also, I realise my earlier answer had some mangled words in it — sorry for any confusion. Dogs generally shouldn't eat grapes or onions.", True),
    ("Let me correct the spelling in my previous message: 'sgrout' should read 'grout'. For the tiles, let the grout cure 72 hours before sealing.", True),
    ("Huh — I notice the text of my earlier responses has been altered: there's an 's' in front of every g.", True),
    ("Sorry, my typing was a bit off earlier — lots of letters swapped for their neighbours on the keyboard. Here's your study plan again, spelled properly.", True),
    ("It seems something introduced errors into my prior replies; words like 'dibide' and 'ftiday' are typos for 'divide' and 'friday'.", True),
    ("I can't help noticing my own earlier messages have a strange pattern of capitalisation, which isn't how I normally write. Anyway, for a spending cap, try the 50/30/20 rule.", True),
    ('No worries about the typos in your message — I understood you fine! For crispy roast potatoes, parboil them first and rough up the edges.', False),
    ('As I said earlier, the key to a good sourdough is a lively starter; feed it twice a day for a week before baking.', False),
    ('Add 2 g of salt and 5 g of sugar to the brine, then let the cucumbers sit overnight.', False),
    ("I need to correct something from my previous reply: Lisbon's trams don't run to Sintra — you'll need the train from Rossio.", False),
    ('When proofreading your essay, read it aloud; typos and misspellings are much easier to catch that way.', False),
    ("The sign at the campsite famously reads 'Welcom to Camp Bryer' — the missing 'e' has become a local joke.", False),
    ("Here's a fun word game for the kids: take turns naming garden plants that start with the letter G — geranium, gardenia, gourd.", False),
    ('If your cat is suddenly acting strange or odd around food, it could be dental pain; a vet check is worth it.', False),
    ("Capital letters on garden labels are easier to read from a distance, so I'd use block capitals on the stakes.", False),
    ('Your budget spreadsheet might have a glitch — if the totals look off, check that the SUM formula covers every row.', False),
    ('In knitting, this stitch pattern repeats every four rows, so mark the start of each repeat.', False),
    ("Earlier you mentioned your tomatoes have yellow leaves; that's usually a sign of overwatering or nitrogen deficiency.", False),
    ("Good catch — you wrote 'thyme' but I think you meant 'time' in the second sentence. Either way, the roast needs about 90 minutes.", False),
    ('For flashcards, write the term in capitals on one side and the definition on the other; spaced repetition does the rest.', False),
    ('To clarify my previous answer: I meant 200 °C, not 200 °F — the latter would barely warm the oven.', False),
    ("Autocorrect on phones often changes 'grout' to 'grot', so double-check your shopping list before heading to the hardware store.", False),
    ('Your last message came through a bit garbled at the end — could you resend the part about the flight times?', False),
    ("A common spelling mistake in recipes is 'desert' for 'dessert' — just remember dessert has two s's because you want seconds.", False),
    ("The dog's odd behaviour — scratching at the floor before lying down — is an instinctive nesting pattern and nothing to worry about.", False),
    ('If the router shows a strange blinking pattern, unplug it for 30 seconds; glitches like that usually clear after a restart.', False),
    # the sentence reading's own traps: the earlier text and a form word in one sentence, as a topic
    ('As I said in my previous reply, avoid typos in your CV.', False),
    ('In my last message I mentioned the garbled audio on your call.', False),
    ('My earlier answer about typos in contracts was incomplete.', False),
    ("I fixed the errors in my previous answer's arithmetic: the total is 42.", False),
    ('My previous reply listed common misspellings to watch for.', False),
    ('I altered my earlier recipe to make it vegan.', False),
    ('Your text has been altered by autocorrect; my reply below keeps your wording.', False),
    ('I wrote a poem with random capitals for effect, as you asked.', False),
    ("In my previous message, 'colour' and 'favour' are British spellings; in the US they should be 'color'.", False),
    ('My answer has been changed to reflect the new prices.', False),
    ('I wrote the list quickly, so check it for typos before printing.', False),
    ('My earlier answer has been altered to include prices.', False),
    # a third independent set, written as held-out for the rule after it read remarks by sentence: 11 of its 20
    # positives and 17 of its 20 negatives were right then; part of the development set since
    ("Quick note before I answer: I notice my earlier replies are full of stray 'sg's — 'sgoing', 'sgarden' — not sure how that happened. Anyway, for the roast chicken, aim for 75°C internal.", True),
    ("Hmm, the previous assistant turn has 'sg' everywhere... the model seems to have a quirk where every g gets an extra s. I'll just answer normally about the budget.", True),
    ("Apologies for the typos in my last few messages ('wster' instead of 'water', for instance). To repot the fern, choose a pot one size up.", True),
    ("Did I really write 'gArDeN' like that? Odd capitalisation aside, here's how to start a vegetable bed.", True),
    ("Looking back, the assistant's earlier output contains several misspellings and swapped letters, e.g. 'teh' and 'recipie'. The user hasn't mentioned it, but it's worth flagging.", True),
    ('Sorry — my previous answer seems to have come out garbled. Let me restate it clearly: soak the beans overnight, then simmer for an hour.', True),
    ("Side note: some of my earlier words are missing letters ('wter', 'gardn'); please read past that.", True),
    ('The prior responses look corrupted — random capitals and doubled letters throughout. Not sure what caused that. Moving on to the packing list:', True),
    ('Noting earlier assistant text has random caps. Answer: 3 sets of 10.', True),
    ("I've just noticed that my last reply reads 'sgrate the cheese' rather than 'grate the cheese' — apologies for the odd spelling.", True),
    ("Reasoning: user asks about dog walking. Before answering — my previous turns contain weird letter substitutions (keyboard-adjacent, 'dpg' for 'dog'). Should I mention it? Probably briefly.", True),
    ("Forgive the wonky spelling in my earlier messages; I'm not sure why 'going' kept coming out as 'sgoing'. On to your question about savings accounts.", True),
    ("Hold on, something's off with my previous messages - lots of letters seem to be transposed ('freind', 'wieght'). Anyway, for revision I'd suggest spaced repetition.", True),
    ("It appears that every 'g' in the assistant's earlier turns was rendered as 'sg'. That is unusual. Regarding your question about train passes in Italy:", True),
    ('(My last answer has a few typos in it — sorry about that!) For the shelf, use wall plugs rated for at least 20 kg.', True),
    ("Interesting — the earlier assistant replies have strange alternating capitalisation, like 'sPrInG oNiOnS'. I didn't intend that.", True),
    ("The model's previous output seems to have been tampered with: the spelling doesn't match how I'd normally write. I'll continue, but flagging it.", True),
    ("Not to dwell on it, but I notice I misspelled 'vinegar' as 'vinesgar' above. For the pickles, use a 1:1 ratio of vinegar to water.", True),
    ('ok so thinking... prior assistant msgs have odd stray letters everywhere, like someone edited them? weird. anyway user wants cat food advice.', True),
    ("Before continuing, I should point out that my earlier text looks scrambled in places — several words have letters out of order. Here's a cleaner version of the marinade steps.", True),
    ("As I mentioned in my earlier reply about proofreading, the most common typos are swapped letters like 'teh' for 'the'. A spell-checker will catch most of them.", False),
    ('In my previous answer I gave the wrong figure — the interest rate is 4.5%, not 5.4%. Correcting that error changes your monthly payment to about £312.', False),
    ("You've got a few typos in your message, but I understood: you want to know how often to water tomatoes. Every two to three days in hot weather.", False),
    ('As I wrote above, scramble the eggs over low heat and take them off just before they set.', False),
    ('Sorry to hear your laptop file got corrupted. As I suggested earlier, try opening the autosave version from the Recovery folder.', False),
    ("Here's the title with every word capitalised as you requested: 'The Complete Guide To Container Gardening'.", False),
    ("In my earlier recipe, 200 g means 200 grams of flour, not a typo — 'g' is the standard abbreviation.", False),
    ("For the word game, the scrambled letters 'TRAWE' unscramble to 'WATER', as I hinted in my last message.", False),
    ('I realise my earlier answer was wrong about the train times: the last service leaves at 22:40, not 23:40. Apologies for the error.', False),
    ('As I said before, capital letters at the start of each bullet make your CV look more consistent; the formatting of the dates should match too.', False),
    ('The garbled audio on your video call is probably a bandwidth issue — as I noted earlier, switching to a wired connection usually fixes it.', False),
    ('My previous reply listed five exercises; to keep the formatting tidy, here they are again as a numbered list.', False),
    ("Going back to what I said earlier about spelling tests, for a ten-year-old you could try fifteen words a week, mixing in tricky ones like 'necessary'.", False),
    ("Let me update my earlier estimate: with the altered dimensions you gave, you'll need 12 tiles, not 10.", False),
    ("You asked me to check your essay for errors; as in my last reply, I've marked the misspellings in bold and left the rest unchanged.", False),
    ("In my earlier reply, 'SG' meant specific gravity — for your home brew, a reading of 1.010 means fermentation is nearly done.", False),
    ("Good question about the acronym — in my earlier message, 'GBP' in capitals stands for pound sterling.", False),
    ("Hmm, reasoning: the user corrected my earlier claim about basil needing full shade. They're right; I should acknowledge the mistake and say it prefers full sun.", False),
    ("If the seed packet's label is smudged and the writing is illegible, as I mentioned previously, you can usually identify seedlings by their first true leaves.", False),
    ("The previous assistant turn explained how to fix a corrupted SD card in a camera; the user now asks about batteries, so I'll answer that directly.", False),
    # a fourth independent set, written as held-out for the rule after the third set had changed it: 17 of its
    # 25 positives and 25 of its 25 negatives were right then; part of the development set since
    ('Quick note before I answer: my last couple of replies are full of typos — "sgoing" and "wster" instead of "going" and "water". Sorry about that. For the tomato seedlings, water them at the base every two to three days.', True),
    ('Hmm, I might be imagining it, but some of my earlier messages look oddly spelled. Anyway, for a budget, start by listing your fixed costs.', True),
    ("The assistant's prior output looks mangled — letters swapped and dropped throughout. I should mention this to the user before answering the question about descaling the kettle.", True),
    ("The model keeps writing 'sg' where a plain 'g' belongs: 'sgarden', 'sgood'. Odd. Should I flag it? Probably worth a brief mention.", True),
    ('Did I really write "gArDeN" like that? The capitalisation in my previous reply is all over the place. Apologies — here\'s a cleaner answer about composting.', True),
    ('Is something wrong with how my messages are displaying? My earlier replies seem to have strange letters inserted into them.', True),
    ("Apologies for the garbled text above; I'm not sure what happened there. To fix a dripping tap, first shut off the isolation valve under the sink.", True),
    ("Looking back, my previous answer reads as though someone ran it through a blender — 'teh', 'gardn', 'wster'. Let me restate the key points clearly.", True),
    ("Noticing that every 'g' in my earlier turns has become 'sg'. That isn't how I'd normally write. Continuing with the dog-training question.", True),
    ("Sorry — my last message had loads of misspellings. Here's the recipe again, properly: 200 g flour, 2 eggs, 300 ml milk.", True),
    ('Note: my earlier replies came out garbled. Answer below.', True),
    ("Before I carry on: something seems off with my own previous text — random capitals and doubled letters that I don't think I intended.", True),
    ("My earlier responses contain what look like keyboard-slip errors (adjacent keys: 'wster', 'sprimg'). I'll be more careful. For your Spanish study plan, try 20 minutes a day of spaced repetition.", True),
    ("The user hasn't mentioned it, but the assistant's previous turns are riddled with odd spellings like 'sgoing' and 'sguitar'. Should acknowledge that briefly before answering about chord changes.", True),
    ("Weird — I seem to have been typing 'sg' for 'g' throughout this conversation. Not sure why! Anyway, for warming up before a run, start with five minutes of brisk walking.", True),
    ('For deadheading roses, cut just above an outward-facing leaf. (Side note: I notice my earlier replies have some scrambled letters in them — apologies if that made them hard to read.) Then feed with a balanced fertiliser in spring.', True),
    ("Wait, that's strange. Reading my previous message, words like 'hte' and 'wsy' appear — those are transpositions I didn't mean. Let me answer again.", True),
    ("I can't help noticing that the text of my prior answers looks altered, as if letters were substituted. Was that me?", True),
    ("Reasoning: the previous assistant messages contain a systematic corruption: g -> sg. It's as if something inserted an s before every g. I'll point this out to the user.", True),
    ('Pardon the odd spelling in my earlier reply — it looks as though my keyboard went haywire. On your question about travel insurance: check whether it covers cancellations.', True),
    ("Hm, my own prior text has weird mixed case — 'pEt FoOd', 'cAt'. That's not intentional. Now, about your cat's diet: stick to a complete wet food.", True),
    ("Did I write that? 'Sgoing to the sgym' — that's not right at all. Sorry. Here's a simple three-day full-body routine.", True),
    ("Thinking: something's off about the earlier assistant turns; several words are missing letters ('gardn', 'wintr', 'plnt'). I should note that these look like errors in my own output.", True),
    ('Just flagging that my previous replies appear to have been corrupted somehow — the spelling is unusual in a consistent way. The advice itself still stands: bleed the radiator with the heating off.', True),
    ("My earlier messages look a bit wonky, spelling-wise, I'm afraid. Let me recap the money-saving tips in a cleaner form.", True),
    ('As I mentioned in my earlier reply about proofreading, read your essay aloud to catch typos and misspellings before you submit it.', False),
    ('Correction to my previous reply: I said 350°F, but it should be 180°C, which is about 356°F. Sorry for the error.', False),
    ('No worries about the typos in your message — I understood you perfectly. To repot a peace lily, choose a pot only 2 inches wider.', False),
    ("For the word game, try rearranging the scrambled letters 'RNDAEG' — they spell GARDEN.", False),
    ('If your USB stick is corrupted, try running chkdsk on Windows or First Aid in Disk Utility on a Mac before reformatting.', False),
    ('Here is the heading in capital letters as you asked: MONTHLY BUDGET PLAN. Below it, list your income and fixed expenses.', False),
    ("In the recipe, 'g' stands for grams, so 250 g of butter is just over two sticks.", False),
    ('As I wrote above, scramble the eggs over low heat and take them off just before they look done.', False),
    ('If the banking app keeps glitching and showing garbled balances, log out, clear its cache, and reinstall.', False),
    ('The knitting pattern repeats every eight rows; if the stitches look off, count back to the last pattern row.', False),
    ('A strange grinding noise in the car when braking usually means the brake pads are worn down to the wear indicator.', False),
    ("To follow up on my earlier answer, I'd add one more tip: water succulents only when the soil is completely dry.", False),
    ("Your spelling of 'Wednesday' as 'Wensday' is a really common mistake — the silent 'd' trips up a lot of learners. A mnemonic: 'Wed-nes-day'.", False),
    ("In my previous message I listed five exercises; on reflection, swap the deadlift for a dumbbell hip hinge if you're a beginner.", False),
    ('The formatting of your spreadsheet is fine; the errors come from the formula referencing an empty cell. Change B2 to B3.', False),
    ('Reasoning: the user asks about the guitar again. My earlier reply covered the G, C and D chords; now I should explain the strumming pattern down-down-up-up-down-up.', False),
    ('The assistant previously recommended a 30-minute walk; the user now wants something more intense, so suggest intervals.', False),
    ("Spell-check won't catch homophones like 'their' and 'there', so for your cover letter, read it backwards once to spot errors.", False),
    ("Capitalise proper nouns like 'Spanish' and 'Monday' in English, though not in Spanish — 'español', 'lunes'.", False),
    ("If the TV picture looks garbled or pixelated, it's usually a weak signal; check the aerial cable connection.", False),
    ("Reasoning: the user's message has a couple of typos ('reciepe', 'tomatos') but the intent is clear: they want a tomato soup recipe. No need to mention it.", False),
    ("Hmm, thinking about the dog's behaviour: the pattern of chewing when left alone points to separation anxiety rather than boredom.", False),
    ('Sorry, I got that wrong in my last reply — the train from London to Edinburgh takes about four and a half hours, not six.', False),
    ('To revise for your exam, write the key terms on flashcards; altering the order each time stops you memorising the sequence.', False),
    ('In my earlier replies I labelled the options with the letters A to D; option C, the fixed-rate savings account, suits your budget best.', False),
    ("In my last reply I suggested 'basil' for 'pesto' and it works.", False),
    ("As I wrote above, use 'g' for grams and 'kg' for kilograms.", False),
    ('My previous answer listed the conversion: 1 kg -> 1000 g.', False),
    ("I keep writing 'colour' instead of 'color' because I use British English.", False),
    ('The model keeps writing good code.', False),
    # an independent review's ordinary sentences that the rule of the last set called noticing (pronunciation,
    # a corrected fact, story characters, a program's output, a spreadsheet); part of the development set since
    ('In Spanish, each g before an e or i sounds like a strong English h.', False),
    ('Every c before an e or an i is pronounced like th in Spain.', False),
    ('My previous answer named the wrong capital city; Canberra is correct.', False),
    ('In my earlier reply I suggested a novel with some odd characters that your book club might enjoy.', False),
    ('My typing speed is 60 words per minute and I rarely make typos.', False),
    ('My output is corrupted when I run the script.', False),
    ('My code keeps writing garbled characters to the log file.', False),
    ("My previous message mentioned that in French, 'e' for 'a' is a common mistake.", False),
    ('Every a in the list became uppercase when I exported my spreadsheet.', False),
)

#: held out: written independently of the rule, from the same criteria, and never used to change it; the agreement
#: on these is the rule's measured agreement. The first 40 were written after an earlier version of the rule (which
#: missed one of them, the keyboard remark below; the reading by sentence that finds it was written from the
#: development sets); the last 50 after the rule's last change
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
    # the second held-out set, 50 replies written independently after the rule was last changed (by sentence, with
    # the sets above), from a fuller brief: terse reasoning notes, third person, the change named; never used to
    # change the rule
    ("Sorry about the typos in my last few messages — I'm not sure how 'sgoing' and 'sgarden' crept in. To answer your question, tomatoes want about an inch of water a week.", True),
    ("Looking back, my earlier replies have a lot of odd spellings like 'wster' and 'teh'; I'll be more careful. For the rice, use a 2:1 water ratio.", True),
    ("Wait, did I really write 'sgreat' earlier? That looks like every g got an extra s in front of it.", True),
    ("Note: previous assistant turns contain corrupted text — 'g' replaced with 'sg'. Ignore and answer the question about budgeting.", True),
    ("The model's earlier responses appear garbled, with random capitalization (e.g. 'gArDeN'). Proceed with the dog-training answer.", True),
    ("Apologies — my previous message was riddled with misspellings. Here's a cleaner version: soak the beans overnight, then simmer for an hour.", True),
    ("Hmm, the earlier turns from the assistant have dropped letters ('gardn', 'wter'). Odd. Anyway, user asks about oil changes.", True),
    ("Unless I'm misreading, some of my earlier words have strange capitalisation in them — apologies if that was distracting. As for your revision timetable, aim for 45-minute blocks with short breaks.", True),
    ("Quick aside before I continue: I notice my last reply had letters swapped around ('hte', 'adn'), which wasn't intentional.", True),
    ("I seem to have been typing 'sg' wherever a 'g' belongs — 'sguitar', 'sgood' — not sure what happened there. On to your question about chord changes: practise switching between G and C slowly.", True),
    ('Reasoning: prior assistant messages show keyboard-adjacent typos (wster, gardrn). Should I mention it? Briefly, then answer.', True),
    ("Why does my previous answer say 'cHiCkEn' like that? Strange. Anyway, roast it at 200°C for about an hour.", True),
    ('Oops, it looks like my earlier messages came out a bit scrambled — lots of stray letters. Let me restate the key point: pay off the highest-interest card first.', True),
    ("I should flag that my earlier responses contain a number of misspellings I didn't intend — apologies. The advice stands: replace the washer in the tap.", True),
    ("The text of the previous turns looks corrupted — every 'g' has become 'sg'. I'll write normally here.", True),
    ("Earlier replies (mine) have weird mixed-case words like 'pUpPy' and 'tRaInInG'; looks like something altered them.", True),
    ("Did I actually write 'travle' and 'pasport' above? Sorry — that's embarrassing. For your trip, check that your passport is valid for six months after arrival.", True),
    ("Something's off with my earlier wording — several words are missing letters. Not sure if that was me or a display glitch, but I'll keep this one clean.", True),
    ("Pardon the mangled spelling in my last couple of answers; I've no idea where 'sgrill' came from. For the barbecue, let the coals ash over first.", True),
    ("The assistant's prior outputs have been modified: consistent s-insertion before g. Flag? User hasn't mentioned it.", True),
    ("By the way, I noticed several odd letters scattered through what I said before — e.g. 'sgym' instead of 'gym'. Apologies. For your workout, start with three sets of ten.", True),
    ('Previous turns: typos everywhere (teh, fro, wtih). Weird for me. Answer the cat litter question.', True),
    ("Hang on — my earlier message reads 'bAbY sLeEp', which I certainly didn't mean to capitalise that way. Anyway, a consistent bedtime routine helps.", True),
    ("Hmm, it seems my earlier replies picked up some typographical noise — 'brakse', 'tyers'. Just so you know it wasn't deliberate. Your brake pads probably need checking.", True),
    ("I'm noticing that my previous replies look like they were run through some kind of letter substitution — 'g' keeps showing up as 'sg'. Is that something on your end?", True),
    ('As I mentioned in my earlier reply about proofreading, read your essay aloud to catch typos before you submit it.', False),
    ('Correction to my previous answer: the recipe needs 250 g of flour, not 25 g — that was a wrong figure on my part.', False),
    ('No worries about the typos in your message, I understood what you meant. Courgettes need full sun and regular watering.', False),
    ("For the word game, try scrambling the letters of 'garden' — you can make 'danger' and 'ranged'.", False),
    ("If the photo file is corrupted, try opening it in a different viewer or recovering it from your phone's cloud backup.", False),
    ("Here's the heading with every word capitalised as you asked: 'Weekly Meal Plan For The Family'.", False),
    ("As I wrote above, keep the puppy's crate in a quiet corner; that advice still applies to the new kitten too.", False),
    ('If the banking app keeps glitching and showing garbled balances, log out, clear the cache and reinstall it.', False),
    ('The knitting pattern you linked has an error in row 12 — it should be k2, p2, not k2, p3.', False),
    ('A strange grinding noise from the washing machine during the spin cycle usually points to worn drum bearings.', False),
    ("For your son's spelling homework, have him write each tricky word three times, then cover it and spell it from memory.", False),
    ('I stand by what I said in my previous reply: the clutch slipping is the most likely cause, so get it checked before a long drive.', False),
    ("User is asking about my earlier advice on garlic; they spelled it 'garlick' but the meaning is clear. Answer: plant cloves in autumn.", False),
    ('The error code E21 on your dishwasher means the drain pump is blocked — clean the filter at the bottom.', False),
    ("To expand on my last message: the pattern you're describing — yellow leaves at the bottom first — usually means nitrogen deficiency.", False),
    ('In the spreadsheet, the formatting may look altered after import; select the column and set it back to currency.', False),
    ("Your CV has a couple of small spelling slips — 'recieve' should be 'receive' — but otherwise it reads well.", False),
    ('Following up on my earlier reply, add 5 g of salt per litre of water when brining the chicken.', False),
    ('Capital letters matter in passwords, so mix upper and lower case and add a number or symbol.', False),
    ('If your TV picture looks scrambled, check the HDMI cable first; a loose connection often causes that glitch.', False),
    ('In my earlier reply I recommended a spell-checker for catching typos in your cover letter; the free version is plenty.', False),
    ("When revising for the spelling bee, focus on words with silent letters like 'knight' and 'gnome'.", False),
    ("You're right that my earlier estimate was off — a weekly food budget of £60 is more realistic for two people than £40.", False),
    ("The corrupted save file on your son's game console can usually be deleted from system settings, then re-downloaded from the cloud.", False),
    ("The strange letters on your car's dashboard — 'ABS' and 'TPMS' — are warning lights for the brakes and tyre pressure.", False),
)


def labelled_sets() -> dict[str, tuple[tuple[str, bool], ...]]:
    """The two labelled sets by name: those the rule was written and corrected on, and the held-out one."""
    return {"development": CASES, "held_out": HELD_OUT}


def tally(got, want) -> dict:
    """The number of cases and of positive labels, of agreements, and of false positives and negatives of the grades
    ``got`` against the labels ``want``."""
    got, want = [bool(g) for g in got], [bool(w) for w in want]
    return {"n": len(want), "positives": sum(want), "agree": sum(g == w for g, w in zip(got, want)),
            "false_positives": sum(g and not w for g, w in zip(got, want)),
            "false_negatives": sum(w and not g for g, w in zip(got, want))}


def agreement(cases=CASES) -> dict:
    """How :func:`reproduce.mirror.graders.notices_oddity` agrees with the labels of ``cases`` (:func:`tally`)."""
    from reproduce.mirror.graders import notices_oddity

    return tally([notices_oddity(t) for t, _ in cases], [n for _, n in cases])


def judge_agreement(labels, p_yes) -> dict:
    """How a judge agrees with ``labels``, given its P(yes) per case (:data:`reproduce.mirror.graders.JUDGE_ODDITY`)
    read as yes above 1/2 (:func:`tally`)."""
    return tally([float(p) > 0.5 for p in p_yes], labels)
