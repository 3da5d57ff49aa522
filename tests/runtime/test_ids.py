"""UUIDv7 ids: version and variant bits, creation order within the process, the text form, and
no id shared with a forked child (the random bits are buffered; a child drops its parent's)."""

from __future__ import annotations

import os
import uuid

from loom.runtime.values.ids import new_id, new_id_text


def test_ids_are_v7_unique_and_in_creation_order() -> None:
    ids = [new_id() for _ in range(20_000)]  # crosses several refills of the random buffer
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {(i.version, i.variant) for i in ids} == {(7, uuid.RFC_4122)}


def test_the_text_form_is_the_canonical_one() -> None:
    texts = [new_id_text() for _ in range(1_000)]
    assert all(str(uuid.UUID(t)) == t and uuid.UUID(t).version == 7 for t in texts)
    assert texts == sorted(texts)


def test_a_forked_child_draws_other_random_bits() -> None:
    new_id()  # the parent has bytes left in its buffer
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        os.write(write, "".join(str(new_id()) for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parent = "".join(str(new_id()) for _ in range(50))
    child_tails = {child[i + 24 : i + 36] for i in range(0, len(child), 36)}
    parent_tails = {parent[i + 24 : i + 36] for i in range(0, len(parent), 36)}
    assert len(child_tails) == 50 and not child_tails & parent_tails
