"""The model revision: a short digest of the model's source text, stamped on every event a
service of that model writes (docs/architecture.md#model-revisions).

It must be the same for the same model wherever it is built (another checkout, another machine,
a replica's build cache), so it reads only what the model says: each file's base name and text,
in name order. The folder a file sits in, the order the files were given in, a byte-order mark
and Windows line endings do not change it; any other edit to a file's text does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import PurePath

REVISION_LENGTH = 12  # hex digits: short enough for a log line, long enough never to collide


def model_revision(sources: Mapping[str, str]) -> str:
    """The revision of the model made of `sources` (file name -> text)."""
    files = sorted(
        (PurePath(name).name, text.removeprefix("\ufeff").replace("\r\n", "\n"))
        for name, text in sources.items()
    )
    digest = hashlib.sha256()
    for name, text in files:
        data = text.encode()
        # lengths first: no two different sets of files hash the same bytes
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()[:REVISION_LENGTH]
