"""The "Your own database" page, read against the code it describes (no services; the page's steps
run end to end in tests/debezium/test_own_database_tutorial.py)."""

import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

from cli.main import parser
from stack import connect

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "own-database.md"


def blocks(language: str) -> list[str]:
    """The page's fenced blocks of one language ('' for a plain one), in order."""
    return [text for lang, text in re.findall(r"^```(\w*)\n(.*?)^```", PAGE.read_text(), re.S | re.M)
            if lang == language]


def connector_blocks() -> list[dict]:
    """The page's connector settings, in order: Confluent's converter, then Apicurio's."""
    return [json.loads(block) for block in blocks("json")]


def zync_commands() -> list[list[str]]:
    return [shlex.split(line.split("#")[0])[1:] for block in blocks("") for line in block.splitlines()
            if line.startswith("zync ")]


def test_the_apicurio_connector_has_the_converter_settings_the_project_runs_with():
    confluent, apicurio = connector_blocks()
    page_registry = "https://apicurio.example.com/apis/ccompat/v7"
    # The page's registry, as a target's zync.yml names it (only its URL is read).
    expected = connect.avro_converter(SimpleNamespace(schema_registry={"url": page_registry}))
    assert {k: apicurio.get(k) for k in expected} == expected
    # The source settings are one connector's, whichever converter it uses.
    converters = re.compile(r"(key|value)\.converter")
    shared = {k: v for k, v in apicurio.items() if not converters.match(k) and not k.startswith("topic.creation")}
    assert shared == {k: v for k, v in confluent.items() if not converters.match(k)}
    assert confluent["key.converter"] == confluent["value.converter"] == "io.confluent.connect.avro.AvroConverter"


def test_every_zync_command_of_the_page_is_one_the_cli_takes():
    commands = zync_commands()
    assert ["init", "shop-mirrors", "--topics", r"shop\.public\..*"] in commands and ["run"] in commands
    for words in commands:
        parser().parse_args(words)  # exits (SystemExit) on a command or flag the CLI lacks
