"""`loom run`, unchanged, with the outbox relay's lease shortened to CHAOS_LEASE_SECONDS.

A replica killed with SIGKILL between claiming outbox rows and marking them leaves them leased;
any relay may claim them again only once the lease ends (60 s by default). `loom run` has no option
for the lease, and the suite cannot wait a minute per kill, so this entry point sets the relay's
default lease and then runs the real command line: the same build, the same app, the same uvicorn.

    python -m tests.chaos.launch run model.loom --database-url URL --port P
"""

from __future__ import annotations

import os
from datetime import timedelta

from loom.cli import main
from loom.runtime._relay import Relay

if __name__ == "__main__":
    seconds = float(os.environ.get("CHAOS_LEASE_SECONDS", "60"))
    defaults = Relay.__init__.__kwdefaults__
    assert defaults is not None and "lease" in defaults, (
        "Relay(lease=...) is gone: update launch.py"
    )
    defaults["lease"] = timedelta(seconds=seconds)
    main()
