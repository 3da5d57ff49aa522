"""The models an editor has open: a folder is a model, as for `loom check` (its `*.loom` files),
compiled from the editor's buffers where a file is open (unsaved text wins over the disk) and
from the disk for the others.

Each model keeps its last compile's diagnostics, and the last index and IR model it could build:
while a file does not parse, navigation and completion answer from the last good parse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loom.lang.compiler import CompileResult, analyse_sources
from loom.lsp.index import Index, build_index
from loom.model import ir


@dataclass
class Model:
    folder: str
    result: CompileResult | None = None
    index: Index | None = None  # the last one built (from the last text that parsed)
    model: ir.Model | None = None  # the last error-free one

    @property
    def stale(self) -> bool:
        """Whether the index is of older text than the last compile's (a file does not parse)."""
        return self.index is not None and (
            self.result is None or self.index.sources != self.result.sources
        )


@dataclass
class Models:
    buffers: dict[str, str] = field(default_factory=dict)  # path -> the editor's text
    models: dict[str, Model] = field(default_factory=dict)  # folder -> its model

    def folder_of(self, path: str) -> str:
        return str(Path(path).parent)

    def files_of(self, folder: str) -> list[str]:
        on_disk = [str(p) for p in Path(folder).glob("*.loom") if p.is_file()]
        # an open `.loom` file not saved yet is part of its folder's model already
        open_here = [
            p for p in self.buffers if str(Path(p).parent) == folder and p.endswith(".loom")
        ]
        return sorted(set(on_disk) | set(open_here))

    def sources_of(self, folder: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in self.files_of(folder):
            text = self.buffers.get(path)
            if text is None:
                try:
                    text = Path(path).read_text(encoding="utf-8-sig")
                except (OSError, UnicodeDecodeError):
                    continue  # gone or unreadable since it was listed: the model is the rest
            out[path] = text
        return out

    def model(self, path: str) -> Model:
        folder = self.folder_of(path)
        model = self.models.get(folder)
        if model is None:
            model = self.models[folder] = Model(folder)
            self.compile(folder)
        return model

    def compile(self, folder: str) -> Model:
        model = self.models.setdefault(folder, Model(folder))
        result, stages = analyse_sources(self.sources_of(folder))
        model.result = result
        index = build_index(stages, result.sources)
        if index is not None:
            model.index = index
        if result.model is not None:
            model.model = result.model
        return model

    def text(self, path: str) -> str:
        text = self.buffers.get(path)
        if text is not None:
            return text
        model = self.models.get(self.folder_of(path))
        if model is not None and model.result is not None and path in model.result.sources:
            return model.result.sources[path]
        try:
            return Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return ""
