"""The command reference names every command and every flag the `zync` parser has.

The reference's synopsis is written by hand (it groups flags and says what they are for), so
this test reads the parser itself: a command or flag added to cli/main.py without a line in
docs/reference/commands.md fails here, naming what is missing.
"""
import argparse
import re
from pathlib import Path

from cli.main import parser

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference" / "commands.md"
# Stated once at the top of the page for every command, not on each synopsis.
EVERY_COMMAND = {"--help", "--target"}


def _commands(p: argparse.ArgumentParser, path: tuple[str, ...]) -> dict[tuple[str, ...], set[str]]:
    """Every leaf command's words (e.g. ('etl', 'status')) with its long flags."""
    found: dict[tuple[str, ...], set[str]] = {}
    for action in p._actions:  # argparse keeps its actions nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _commands(sub, path + (name,))
    if not found and path:
        found[path] = {o for a in p._actions for o in a.option_strings if o.startswith("--")}
    return found


def _synopses(text: str, commands) -> dict[tuple[str, ...], str]:
    """The synopsis block's entries: a line starting `zync WORDS` and the indented lines after it.

    WORDS are the longest run of the line's first words that names a command, or else its first word.
    """
    block = text.split("```\n", 2)[1]
    entries: dict[tuple[str, ...], str] = {}
    current: tuple[str, ...] | None = None
    for line in block.splitlines():
        if line.startswith("zync "):
            words = tuple(line.split()[1:3])
            current = next((words[:n] for n in (2, 1) if words[:n] in commands), words[:1])
            entries[current] = line
        elif current is not None and line.startswith(" "):
            entries[current] += "\n" + line
        else:
            current = None
    return entries


def test_every_command_and_flag_is_in_the_reference():
    text = REFERENCE.read_text()
    commands = _commands(parser(), ())
    synopses = _synopses(text, commands)
    missing = []
    for command, flags in sorted(commands.items()):
        synopsis = synopses.get(command)
        if synopsis is None:
            missing.append(f"zync {' '.join(command)} (no synopsis line)")
            continue
        missing += [f"zync {' '.join(command)} {flag}" for flag in sorted(flags - EVERY_COMMAND)
                    if not re.search(re.escape(flag) + r"(?![\w-])", synopsis)]
    assert not missing, f"missing from {REFERENCE.relative_to(ROOT)}: " + ", ".join(missing)
    for flag in EVERY_COMMAND:
        assert flag in text.split("```\n", 1)[0], f"the page's opening must say every command takes {flag}"


def test_the_reference_names_no_command_the_parser_lacks():
    commands = _commands(parser(), ())
    stale = sorted(set(_synopses(REFERENCE.read_text(), commands)) - set(commands))
    assert not stale, f"{REFERENCE.relative_to(ROOT)} documents commands `zync` does not have: {stale}"
