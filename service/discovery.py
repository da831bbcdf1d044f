"""New tables live: the mirrors of `topics:` entries kept in step with the broker's topics.

A Debezium connector adds a topic when it starts capturing a table. Every
few seconds `zync run` lists the broker's topics; when one matches a mirror
entry's `topics:` expression and has no mirror yet, it compiles the project
as `zync etl compile` does, so the new mirror's model and properties are
written to models/mirrors/ (where dbt, `dbt docs` and `git status` see them)
and the raw table joins the sources. The run then parses the project again,
ingests the topic from its start and builds the mirror from that history,
without touching the other tables. A topic that disappears is reported once;
its generated files, raw table and mirror stay (compiler/mirrors.py:
previous_pattern_topics).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from compiler.build import transform_files
from compiler.mirrors import MirrorFile, is_mirror_file, load_mirrors, previous_pattern_topics
from compiler.project import compile_project
from zync.config import Target

DISCOVER_EVERY_S = 5.0


@dataclass
class Discovered:
    new: list[str] = field(default_factory=list)  # topics that got a mirror
    gone: list[str] = field(default_factory=list)  # topics with a mirror that the broker no longer has
    written: list[Path] = field(default_factory=list)  # the generated files the compile changed


class TopicDiscovery:
    def __init__(self, target: Target, root: Path, list_topics: Callable[[], set[str]],
                 every_s: float = DISCOVER_EVERY_S):
        self.target = target
        self.root = root
        self.list_topics = list_topics
        self.every_s = every_s
        self._next_look = 0.0
        self._files: dict[Path, tuple[tuple[int, int], MirrorFile | None]] = {}
        self._reported_gone: set[str] = set()

    def _mirror_files(self) -> list[MirrorFile]:
        """The project's mirror files, parsed again only when one changed."""
        found = []
        for path in transform_files(self.root):
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            cached = self._files.get(path)
            if cached is None or cached[0] != stamp:
                cached = self._files[path] = (stamp, load_mirrors(path) if is_mirror_file(path) else None)
            if cached[1] is not None:
                found.append(cached[1])
        return found

    @property
    def has_patterns(self) -> bool:
        return any(f.patterns for f in self._mirror_files())

    def check(self, now: bool = False) -> Discovered | None:
        """Compile the project if a topic newly matches a pattern entry; what changed, or None.

        Looks at most every `every_s` seconds (unless `now`); a ZyncError (a
        broker out of reach, a compile error such as two topics wanting one
        name) leaves the project as it was.
        """
        if not now and time.monotonic() < self._next_look:
            return None
        self._next_look = time.monotonic() + self.every_s
        files = self._mirror_files()
        patterns = [p for f in files for p in f.patterns]
        if not patterns:
            return None
        topics = self.list_topics()
        explicit = {m.topic for f in files for m in f.mirrors}
        previous = previous_pattern_topics(self.root)
        matching = {t for t in topics - explicit if any(p.topics.fullmatch(t) for p in patterns)}
        found = Discovered(new=sorted(matching - previous))
        self._reported_gone &= previous - topics  # one that came back is reported again if it goes again
        found.gone = sorted(previous - topics - self._reported_gone)
        self._reported_gone |= set(found.gone)
        if found.new:
            found.written = compile_project(self.target, self.root).written
        return found if found.new or found.gone else None
