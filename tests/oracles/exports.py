"""System exports as Mem0, Letta, A-Mem and the project's writers write them, shared by the importer
and command-line tests."""

from __future__ import annotations

# The history table as mem0/memory/storage.py creates it (current schema).
MEM0_HISTORY_DDL = """
CREATE TABLE history (
    id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT, event TEXT,
    created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)
"""


# Releases before 0.1.30.
MEM0_OLD_HISTORY_DDL = """
CREATE TABLE history (
    id TEXT PRIMARY KEY, memory_id TEXT, prev_value TEXT, new_value TEXT, event TEXT,
    timestamp DATETIME, is_deleted INTEGER)
"""


GET_ALL = {
    "results": [
        {"id": "9f1c", "memory": "Lives in Porto", "hash": "h1", "metadata": None,
         "created_at": "2024-03-01T10:00:00.123456-08:00", "updated_at": "2024-05-02T09:00:00-08:00",
         "user_id": "ana"},
        {"id": "77aa", "memory": "Teaches nursing at the university", "hash": "h2",
         "metadata": {"category": "work"}, "created_at": "2024-04-01T10:00:00Z", "updated_at": None,
         "user_id": "ana", "score": None},
    ],
    "relations": [],
}


HISTORY_ROWS = [
    ("r1", "9f1c", None, "Lives in Lisbon", "ADD", "2024-03-01T10:00:00-08:00", None, 0, None, None),
    ("r2", "9f1c", "Lives in Lisbon", "Lives in Porto", "UPDATE", "2024-03-01T10:00:00-08:00",
     "2024-05-02T09:00:00-08:00", 0, None, None),
    ("r3", "77aa", None, "Teaches nursing at the university", "ADD", "2024-04-01T10:00:00Z", None, 0,
     None, None),
    ("r4", "c3d0", None, "Works as a nurse at the city hospital", "ADD", "2024-03-01T11:00:00Z",
     None, 0, None, None),
    ("r5", "c3d0", "Works as a nurse at the city hospital", None, "DELETE", "2024-03-01T11:00:00Z",
     "2024-04-01T12:00:00Z", 1, None, None),
]


LETTA = {
    "blocks": [
        {"id": "block-1", "label": "human", "limit": 5000, "description": "About the user",
         "value": "Name: Ana Sousa.\n- Lives in Porto. Moved there from Lisbon in 2024.\n---\n"
                  "2. Teaches nursing at the university", "metadata": {}, "read_only": False},
        {"id": "block-2", "label": "persona", "limit": 5000, "value": "I am a helpful assistant."},
    ],
    "passages": [
        {"id": "passage-a1", "text": "Ana finished the marathon in April.",
         "created_at": "2024-04-20T08:00:00Z", "tags": ["sport"], "is_deleted": False},
        {"id": "passage-a2", "text": "Ana works at the city hospital.",
         "created_at": "2024-03-01T08:00:00Z", "updated_at": "2024-04-02T08:00:00Z",
         "tags": None, "is_deleted": True, "metadata": {"source": "chat"}},
    ],
}


NOTES = [
    {"id": "n1", "content": "Ana moved to Porto in May 2024.", "keywords": ["Ana", "Porto", "move"],
     "links": ["n2"], "retrieval_count": 2, "timestamp": "202405021530", "last_accessed": "202406010000",
     "context": "Relocation of the user", "evolution_history": [], "category": "Uncategorized",
     "tags": ["personal", "location"]},
    {"id": "n2", "content": "Ana teaches nursing.", "keywords": [], "links": [], "timestamp": "202404011000",
     "context": "General", "tags": []},
]


MEMBOX_RECORDS = [
    {"memory_id": "box-0", "text": "[2023-05-08] Topic: support group. Caroline: I went to a LGBTQ "
     "support group yesterday.", "source_turns": ["D1:3", "D1:4"], "time": "2023-05-08", "kind": "box",
     "topic": "support group", "keywords": ["support", "group"], "event_ids": ["event-0"]},
    {"memory_id": "event-0", "text": "[2023-05-07] Caroline attended an LGBTQ support group.",
     "source_turns": ["D1:3"], "time": "week of 2023-05-01", "kind": "event", "box_id": "box-0", "trace_ids": []},
]


ENGRAM_RECORDS = [
    {"memory_id": "episodic-1", "text": "[2023-05-07] group, support: Caroline: I went to a support group.",
     "source_turns": ["D1:3"], "time": "2023-05-07", "kind": "episodic", "speaker": "Caroline"},
    {"memory_id": "semantic-1", "text": "Caroline: My favourite painter is Monet.", "source_turns": ["D2:1"],
     "time": None, "kind": "semantic", "speaker": "Caroline"},
]
