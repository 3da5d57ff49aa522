"""Extern operations: the user's Python, loaded at startup.

A model's `extern operation` has no body; the build writes a `typing.Protocol` per aggregate
(`TicketExterns`) and the user writes a module with a class of the same name. The app names the
module (`build_app(..., extern_module="pkg.mod")`, else the environment variable
`LOOM_EXTERN_MODULE`); at startup the runtime imports it, instantiates each class and checks every
method is there. Anything missing, or a module that raises on import, is an `ExternError` naming
what to write, before any request.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

ENV_VAR = "LOOM_EXTERN_MODULE"


class ExternError(RuntimeError):
    """The extern implementation is missing or incomplete (raised at startup)."""


class Externs:
    """The extern implementations an app needs (`create_app(externs=…)`), loaded when it starts.

    `loom run` loads them before it serves (`preload`), so a module that does not import, or
    lacks a method, stops it with one line on the terminal rather than a failed start-up after
    the banner; the app's start then takes those instances instead of loading them again."""

    def __init__(self, module_name: str | None, required: Mapping[str, Sequence[str]]) -> None:
        self.module_name = module_name
        self.required = required
        self._preloaded: dict[str, Any] | None = None

    def preload(self) -> None:
        """Load them now (`ExternError` when they cannot be), for the next start to take."""
        self._preloaded = load_externs(self.module_name, self.required)

    def load(self) -> dict[str, Any]:
        """The instances for a start: the preloaded ones once, else freshly loaded ones."""
        loaded, self._preloaded = self._preloaded, None
        return loaded if loaded is not None else load_externs(self.module_name, self.required)


def load_externs(module_name: str | None, required: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Instances of the user's extern classes, by class name."""
    if not required:
        return {}
    name = module_name or os.environ.get(ENV_VAR)
    needed = ", ".join(f"{cls}({', '.join(methods)})" for cls, methods in required.items())
    if not name:
        raise ExternError(
            f"this service has extern operations ({needed}) but no module implements them: pass "
            f"build_app(..., extern_module='pkg.module'), set {ENV_VAR}, or `loom run --extern`"
        )
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # whatever the module raises, the start is refused
        # an ImportError says what is missing; anything else the module raised is named by type
        why = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
        raise ExternError(
            f"cannot import the extern module {name!r} (needed for {needed}): {why}"
        ) from exc
    found: dict[str, Any] = {}
    for cls_name, methods in required.items():
        cls = getattr(module, cls_name, None)
        if cls is None:
            raise ExternError(f"extern module {name!r} has no class {cls_name} ({needed})")
        try:
            instance = cls()
        except Exception as exc:
            raise ExternError(
                f"cannot instantiate {name}.{cls_name}() (it must take no arguments): {exc}"
            ) from exc
        missing = [m for m in methods if not callable(getattr(instance, m, None))]
        if missing:
            raise ExternError(
                f"extern class {name}.{cls_name} lacks the method(s) {', '.join(missing)}"
            )
        found[cls_name] = instance
    return found
