"""What pyproject.toml's tables cannot say: the repository's `examples/` folders ship inside the
package, as `loom/examples/<name>/`, for `loom init` to copy (`loom.cli.init.examples_folder`),
and docs/diagnostics.md as `loom/docs/diagnostics.md`, the page `loom lsp` links each diagnostic
to (`loom.lsp.convert`).
They stay where the docs, the tests and the README name them; a wheel gets a copy at build time.
An editable install copies nothing: `loom init` reads the checkout's `examples/` itself."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
EXAMPLES = ROOT / "examples"
DOCS = ("diagnostics.md",)
# an example's model, its test and its extern module; not what running it left (.loom/, *.db)
SHIPPED = ("*.loom", "*.py")


class BuildWithExamples(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for pattern in SHIPPED:
            for source in sorted(EXAMPLES.glob(f"*/{pattern}")):
                if not source.is_file() or source.name.startswith("."):  # `.loom/`: a build
                    continue
                target = Path(self.build_lib, "loom", "examples", source.relative_to(EXAMPLES))
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        for name in DOCS:
            target = Path(self.build_lib, "loom", "docs", name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / "docs" / name, target)


setup(cmdclass={"build_py": BuildWithExamples})
