"""The words of MEMAUDIT-Small: attributes with their value pools and sentence templates,
entity names, session settings, small-talk topics, lures and filler phrases.

Kept apart from the generator (:mod:`.small`) so that the vocabulary can be read and extended
in one place. The generator draws from these tuples by index, so their order is part of the
packages' identity: adding, removing or reordering an entry changes generated packages and
requires a new ``GENERATOR_VERSION``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attribute:
    """An attribute with its value pool and the sentences that state, change or restate it."""

    name: str
    values: tuple[str, ...]
    state: str
    update: str
    mention: str
    question: str
    hedge: str = ""


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("city", ("Lisbon", "Porto", "Berlin", "Oslo", "Madrid", "Kyoto", "Denver", "Dublin"),
              "{E} lives in {v} now.", "{E} moved from {old} to {v}.",
              "{E} still likes living in {v}.", "Where does {E} live?",
              "{E} may move soon, no city chosen."),
    Attribute("employer", ("Acme", "Globex", "Initech", "Hooli", "Umbrella", "Tyrell", "Wonka"),
              "{E} works at {v}.", "{E} left {old} and joined {v}.",
              "{E} had a long week at {v}.", "Where does {E} work?",
              "{E} is interviewing but has no offer."),
    Attribute("diet", ("vegetarian", "vegan", "pescatarian", "keto", "omnivore", "paleo",
                       "flexitarian"),
              "{E} eats {v} these days.", "{E} went from {old} to {v}.",
              "{E} cooked a {v} dinner again.", "What diet does {E} follow?",
              "{E} is rethinking their diet, undecided."),
    Attribute("pet", ("cat", "dog", "parrot", "rabbit", "hamster", "turtle", "ferret"),
              "{E} has a {v} at home.", "{E} rehomed the {old} and got a {v}.",
              "{E} posted photos of the {v}.", "What pet does {E} have?",
              "{E} wants a pet, has not chosen."),
    Attribute("hobby", ("climbing", "chess", "pottery", "running", "guitar", "painting", "sailing"),
              "{E} has taken up {v} lately.", "{E} dropped {old} for {v}.",
              "{E} spent Sunday on {v} again.", "What is {E}'s hobby?",
              "{E} wants a new hobby, still unsure."),
    Attribute("car", ("Volvo", "Tesla", "Fiat", "Honda", "Subaru", "Mini", "Skoda"),
              "{E} drives a {v}.", "{E} sold the {old} and bought a {v}.",
              "{E} drove the {v} to the coast.", "What car does {E} drive?",
              "{E} is shopping for a car, undecided."),
    Attribute("role", ("manager", "designer", "engineer", "analyst", "teacher", "nurse", "chef"),
              "{E} works as a {v}.", "{E} switched jobs from {old} to {v}.",
              "{E} enjoys being a {v}.", "What is {E}'s job?",
              "{E} might change careers, unclear how."),
    Attribute("gym", ("FitHub", "IronWorks", "PulseGym", "CoreLab", "Apex", "Zenith", "Motion"),
              "{E} trains at {v}.", "{E} cancelled {old} and joined {v}.",
              "{E} met a friend at {v}.", "Which gym does {E} use?",
              "{E} is comparing gyms, none picked."),
    Attribute("phone", ("Pixel", "iPhone", "Galaxy", "Fairphone", "Xperia", "Nokia", "Moto"),
              "{E} uses a {v} phone.", "{E} swapped the {old} for a {v}.",
              "{E} dropped the {v} again.", "What phone does {E} use?",
              "{E} needs a new phone, undecided."),
    Attribute("language", ("Spanish", "Japanese", "German", "Arabic", "Italian", "Korean", "Dutch"),
              "{E} is learning {v}.", "{E} paused {old} to learn {v}.",
              "{E} practised {v} on the train.", "Which language is {E} learning?",
              "{E} wants to learn a language, unsure which."),
)

# Attributes whose value sensibly differs by scope (scope_shift).
SCOPED_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("drink", ("espresso", "tea", "water", "cola", "juice", "latte", "cocoa"),
              "{E} drinks {v}.", "{E} swapped {old} for {v}.", "{E} ordered {v} again.",
              "What does {E} drink?"),
    Attribute("music", ("jazz", "techno", "folk", "classical", "silence", "podcasts", "ambient"),
              "{E} listens to {v}.", "{E} replaced {old} with {v}.", "{E} had {v} on again.",
              "What does {E} listen to?"),
    Attribute("seat", ("aisle", "window", "front", "back", "corner", "middle", "standing"),
              "{E} prefers the {v} seat.", "{E} moved from {old} to {v} seats.",
              "{E} grabbed the {v} seat again.", "Which seat does {E} prefer?"),
    Attribute("transport", ("bike", "bus", "train", "car", "tram", "scooter", "foot"),
              "{E} gets around by {v}.", "{E} gave up the {old} for the {v}.",
              "{E} took the {v} again.", "How does {E} get around?"),
)

SCOPES = ("home", "work", "travel", "weekends")
SCOPE_PHRASES = {"home": "at home", "work": "at work", "travel": "when travelling",
                  "weekends": "on weekends"}

NAMES = (
    "Ana", "Bo", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena", "Milo",
    "Nia", "Omar", "Pia", "Quin", "Rosa", "Sami", "Tess", "Uma", "Vik", "Wren", "Xia", "Yusuf",
    "Zoe",
)

SETTINGS = ("at a cafe", "on a call", "at the office", "on a walk", "at dinner", "on a train",
             "at the park", "in the car")
TOPICS = ("the weather", "a film", "lunch", "traffic", "a podcast", "the weekend", "football",
           "a new bakery", "the news", "a concert")
CHATTER = (
    "Chatting {setting} about {topic}.",
    "Chatted {setting} about {topic}.",
    "Talked {setting} about {topic}.",
)
LURES = (("wifi", "reset"), ("printer", "jammed"), ("lunch", "pizza"), ("weather", "sunny"),
          ("parking", "full"), ("coffee", "cold"), ("meeting", "moved"), ("badge", "lost"),
          ("lift", "broken"), ("heating", "off"))
PADDING = ("you know", "as I said", "by the way", "honestly", "anyway", "so yes")
