"""Small text utilities shared by the offline writer decisions: tokens, sentences, cues, dates.

Everything here is deterministic and dependency-free. The cue lists are English and aimed at
chat-style dialogue such as LoCoMo; they stand in for the judgement an LLM makes in the papers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from datetime import date, timedelta

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]|\d+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z0-9\[])")
_IMAGE_NOTE = re.compile(r"\s*\[shares an image:[^\]]*\]")

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "even", "ever", "every", "few", "for", "from", "further", "get", "gets", "getting", "got", "gonna", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here", "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "just", "let's", "like", "lot", "lots", "me", "more", "most", "much", "must", "mustn't", "my", "myself", "no", "nor", "not", "now", "of", "off", "oh", "ok", "okay", "on", "once", "one", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "really", "same", "she", "she'd", "she'll", "she's", "should", "shouldn't", "so", "some", "such", "sure", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd", "they'll", "they're", "they've", "thing", "things", "this", "those", "though", "through", "to", "too", "totally", "under", "until", "up", "us", "very", "was", "wasn't", "way", "we", "we'd", "we'll", "we're", "we've", "well", "were", "weren't", "what", "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why", "why's", "will", "with", "won't", "would", "wouldn't", "yeah", "yes", "yet", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves", "hey", "hi", "hello", "wow", "great", "awesome", "cool", "thanks", "thank", "amazing", "glad", "love", "good", "know", "think", "feel", "see", "mean", "going", "go", "went", "make", "made", "things", "stuff", "always", "never", "something", "anything", "everything", "time", "times", "really", "totally", "definitely", "absolutely", "maybe", "kinda", "pretty", "still", "right", "tell", "told", "say", "said", "lol", "haha"]
)

#: Time words: they anchor events but say nothing about what a memory is about.
TIME_WORDS = frozenset(
    ["yesterday", "today", "tonight", "tomorrow", "last", "next", "week", "weeks", "weekend", "month", "months", "year", "years", "ago", "day", "days", "morning", "afternoon", "evening", "night", "recently", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"]
)

#: Phrases by which a speaker announces a change of subject.
SHIFT_MARKERS = re.compile(
    r"\b(by the way|btw|anyway|anyways|speaking of|on another note|guess what|"
    r"changing the subject|what about you|how about you|what's new|anything new|"
    r"what have you been up to|been up to|long time no)\b",
    re.IGNORECASE,
)

#: Time-bound happenings: actions, plans, developments (episodic memory, Membox events).
EVENT_CUES = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last (?:night|week|weekend|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|next (?:week|weekend|month|year)|"
    r"this (?:morning|afternoon|evening|week|weekend|month|year)|\d+ (?:days?|weeks?|months?|years?) ago|"
    r"recently|just|finally|started|start|finished|went|visited|joined|signed up|took|took part|"
    r"attended|bought|won|lost|adopted|moved|met|made|painted|ran|played|gave|received|"
    r"traveled|travelled|planning|plan|going to|gonna|will be|decided|applied|graduated|hosted|"
    r"organized|organised|volunteered|launched|released|learned|learnt|tried|celebrated|"
    r"had a|had an|been to|came back|returned)\b",
    re.IGNORECASE,
)

#: Stable facts and preferences about a person (semantic memory).
FACT_CUES = re.compile(
    r"\b(i (?:love|like|enjoy|prefer|hate|adore|am|'m|have|'ve|work|live|grew up|believe|"
    r"value|care about|am passionate|'m passionate|collect|own|study|teach)|my (?:favorite|"
    r"favourite|name|job|family|kids?|husband|wife|partner|son|daughter|dog|cat|pets?|mom|dad|"
    r"mother|father|brother|sister|home|hometown|passion|dream|goal|hobby|hobbies)|"
    r"favorite|favourite|passionate about|allergic|i'm a|i am a|i've been .* for|"
    r"years? old|since i was)\b",
    re.IGNORECASE,
)

#: Instructions, methods and workflows (procedural memory).
PROCEDURE_CUES = re.compile(
    r"\b(how to|step|steps|first,? (?:you|i)|then you|you should|you need to|you have to|"
    r"make sure|remember to|don't forget|try to|the trick|the key is|tip|tips|recipe|"
    r"instructions|routine|technique|method|process|practice|practise|what helps|"
    r"helps me|what works|i usually|i always|every (?:morning|day|night|week))\b",
    re.IGNORECASE,
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters, inner apostrophes and hyphens, or digits)."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that carry content: not stopwords, at least three characters or a number."""
    return [w for w in words(text) if w not in STOPWORDS and (len(w) >= 3 or w.isdigit())]


def word_count(text: str) -> int:
    """The context cost unit: whitespace-separated words."""
    return len(text.split())


def sentences(text: str) -> list[str]:
    """Split text into sentences (punctuation followed by a capital, digit or quote)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def strip_image_note(text: str) -> str:
    return _IMAGE_NOTE.sub("", text).strip()


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def top_keywords(texts: Iterable[str], k: int = 8) -> list[str]:
    """The ``k`` most frequent content words; ties go to longer, then alphabetically first words.

    Capitalised words (names, places) count double: they are the anchors people ask about.
    """
    counts: Counter[str] = Counter()
    for text in texts:
        for raw in _WORD.findall(strip_image_note(text)):
            w = raw.lower().replace("’", "'")
            if w in STOPWORDS or w in TIME_WORDS or (len(w) < 3 and not w.isdigit()):
                continue
            counts[w] += 2 if raw[0].isupper() and raw.lower() != "i" else 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))
    return [w for w, _ in ranked[:k]]


def shorten(text: str, max_words: int) -> str:
    """The first ``max_words`` words of ``text`` (an ellipsis marks a cut)."""
    parts = text.split()
    return " ".join(parts[:max_words]) + (" ..." if len(parts) > max_words else "")


_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six) (day|week|month|year)s? ago\b", re.IGNORECASE)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _month_shift(day: date, months: int) -> str:
    index = day.year * 12 + day.month - 1 + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def resolve_time_anchor(text: str, said_on: str | None) -> str | None:
    """Resolve the first relative time expression of ``text`` against the day it was said.

    Parameters
    ----------
    text:
        An utterance.
    said_on:
        ISO date (``YYYY-MM-DD``, longer ISO strings are cut) of the utterance.

    Returns
    -------
    str or None
        ``YYYY-MM-DD`` for a day (``yesterday``, ``last Friday``, ``3 days ago``),
        ``week of YYYY-MM-DD`` for a week, ``YYYY-MM`` for a month, ``YYYY`` for a year, or
        ``said_on`` itself when nothing relative is found. ``None`` when ``said_on`` is unknown.
    """
    if not said_on:
        return None
    try:
        day = date.fromisoformat(said_on[:10])
    except ValueError:
        return None
    low = text.lower()
    if re.search(r"\b(yesterday|last night)\b", low):
        return (day - timedelta(days=1)).isoformat()
    if re.search(r"\btomorrow\b", low):
        return (day + timedelta(days=1)).isoformat()
    m = _AGO.search(low)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1)]
        unit = m.group(2)
        if unit == "day":
            return (day - timedelta(days=n)).isoformat()
        if unit == "week":
            return f"week of {(day - timedelta(weeks=n)).isoformat()}"
        if unit == "month":
            return _month_shift(day, -n)
        return f"{day.year - n:04d}"
    m = re.search(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", low)
    if m:
        back = (day.weekday() - _WEEKDAYS.index(m.group(1))) % 7 or 7
        return (day - timedelta(days=back)).isoformat()
    if re.search(r"\blast weekend\b", low):
        back = (day.weekday() - 5) % 7 or 7
        return f"weekend of {(day - timedelta(days=back)).isoformat()}"
    if re.search(r"\blast week\b", low):
        return f"week of {(day - timedelta(weeks=1)).isoformat()}"
    if re.search(r"\bnext week\b", low):
        return f"week of {(day + timedelta(weeks=1)).isoformat()}"
    if re.search(r"\blast month\b", low):
        return _month_shift(day, -1)
    if re.search(r"\bnext month\b", low):
        return _month_shift(day, 1)
    if re.search(r"\blast year\b", low):
        return f"{day.year - 1:04d}"
    if re.search(r"\bnext year\b", low):
        return f"{day.year + 1:04d}"
    return day.isoformat()
