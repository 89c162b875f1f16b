"""A hand-made two-session conversation in LoCoMo's layout, for examples, tests and demos.

It has what the writers react to: a topic that continues across sessions (marathon training and
a sore knee), a change of subject announced with "by the way" (a new puppy), an instruction
(physiotherapy advice), a preference, relative dates, an image caption, and QA items, one with
an evidence string in the malformed ``"D2:4; D1:1"`` style the public LoCoMo file contains.
"""

from __future__ import annotations

from typing import Any


def mini_locomo() -> dict[str, Any]:
    """One conversation record (``sample_id`` ``"mini-1"``) as LoCoMo's JSON has it."""
    s1 = [
        ("Ana", "Hi Ben! I started training for the city marathon last week."),
        ("Ben", "That's great, Ana! How far are you running now?"),
        ("Ana", "About 15 kilometres on Sundays, and my knee hurts a bit after long runs."),
        ("Ben", ("You should see a physiotherapist about the knee. First rest for a few days, "
                 "then stretch every morning.")),
        ("Ana", "Thanks, I will book an appointment with a physiotherapist."),
        ("Ben", "By the way, I adopted a puppy yesterday! Her name is Pixel."),
        ("Ana", "A puppy! What breed is Pixel?"),
        ("Ben", "She is a border collie and she loves chasing tennis balls."),
        ("Ana", "I love border collies, they are so clever."),
    ]
    s2 = [
        ("Ben", "Hey Ana, how is the marathon training going?"),
        ("Ana", ("Much better! The physiotherapist gave me knee exercises and my knee no longer "
                 "hurts on long runs.")),
        ("Ben", "Glad to hear it. When is the marathon race?"),
        ("Ana", "The marathon is on 16 April, I am planning to finish under four hours."),
        ("Ben", "Pixel learned to fetch the newspaper last Friday."),
        ("Ana", "Ha, clever dog! My favourite breakfast before long runs is oatmeal with bananas."),
    ]

    def turns(session: int, rows: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [
            {"speaker": who, "dia_id": f"D{session}:{i}", "text": text}
            for i, (who, text) in enumerate(rows, start=1)
        ]

    session_2 = turns(2, s2)
    session_2[4]["blip_caption"] = "a photo of a black and white dog holding a newspaper"
    return {
        "sample_id": "mini-1",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "2:00 pm on 3 March, 2023", "session_1": turns(1, s1),
            "session_2_date_time": "10:30 am on 20 March, 2023", "session_2": session_2,
        },
        "qa": [
            {"question": "When did Ben adopt Pixel?", "answer": "2 March 2023",
             "evidence": ["D1:6"], "category": 2},
            {"question": "What does Ana eat before long runs?", "answer": "oatmeal with bananas",
             "evidence": ["D2:6"], "category": 4},
            {"question": "How did Ana's knee get better?",
             "answer": "a physiotherapist gave her exercises", "evidence": ["D1:3", "D2:2"],
             "category": 1},
            {"question": "When is Ana's marathon?", "answer": "16 April 2023",
             "evidence": ["D2:4; D1:1"], "category": 2},
            {"question": "What is Ben's favourite film?", "answer": "not mentioned",
             "evidence": [], "category": 5},
        ],
    }
