"""Serve an app factory with uvicorn as `loom run` serves a built model: the app made with the
collector paused and then frozen (`loom.cli.serve.made_to_serve`), so the service's lifespan
freezes what its own start makes too (`runtime/service/app.py`). bench/_serving.py's `Server`
starts Loom's apps through it (`as_loom_run`), the hand-written references with plain `python -m
uvicorn`; the uvicorn options are the same.

    python -m bench._as_loom_run module:factory --app-dir DIR --host H --port P --log-level L
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._as_loom_run")
    parser.add_argument("factory", help="module:function making the app")
    parser.add_argument("--app-dir", default=".")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    sys.path.insert(0, args.app_dir)

    from loom.cli.serve import made_to_serve

    module, _, name = args.factory.partition(":")
    app: Any = made_to_serve(lambda: getattr(importlib.import_module(module), name)())
    import uvicorn  # imported by `made_to_serve` already

    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)


if __name__ == "__main__":
    main()
