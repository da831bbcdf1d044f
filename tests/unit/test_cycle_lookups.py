"""What a `zync run` cycle asks again and what it keeps: a table not there, the project's files, the
topics earlier compiles mirrored (service/versions.py, service/project.py, compiler/mirrors.py)."""

from __future__ import annotations

import textwrap

import service.versions as versions_module
from compiler.mirrors import previous_pattern_topics
from service.project import DbtProject, fingerprint
from service.versions import ABSENT_RECHECK_S, TableVersions


class CountingCatalog:
    """A catalog with no table, counting how often it is asked (the only call a missing table makes)."""

    def __init__(self):
        self.asked: list[str] = []

    def tableExists(self, name: str) -> bool:  # noqa: N802 - PySpark's name
        self.asked.append(name)
        return False


class NoTableSession:
    def __init__(self):
        self.catalog = CountingCatalog()


def test_a_missing_table_is_asked_for_again_after_a_while_or_once_this_process_may_have_made_it(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(versions_module.time, "monotonic", lambda: clock[0])
    spark = NoTableSession()
    versions = TableVersions(spark)

    assert versions.version("zync.a__base") is None
    assert versions.version("zync.a__base") is None
    assert versions.location("zync.a__base") is None
    assert spark.catalog.asked == ["zync.a__base"]  # one catalog call, however many stages ask

    versions.made(["zync.b"])  # another table: this one stays known as missing
    assert versions.version("zync.a__base") is None
    assert len(spark.catalog.asked) == 1

    versions.made(["zync.a__base"])  # e.g. a first batch ingested into it
    assert versions.version("zync.a__base") is None
    assert len(spark.catalog.asked) == 2

    versions.made()  # e.g. a dbt run taken in: every missing table may be there now
    versions.version("zync.a__base")
    assert len(spark.catalog.asked) == 3

    clock[0] += ABSENT_RECHECK_S - 0.1  # another process's table is seen within the recheck interval
    versions.version("zync.a__base")
    assert len(spark.catalog.asked) == 3
    clock[0] += 0.2
    versions.version("zync.a__base")
    assert len(spark.catalog.asked) == 4


def test_a_parsed_projects_files_are_looked_at_every_few_seconds_and_at_once_after_a_compile(tmp_path, monkeypatch):
    import service.project as project_module

    clock = [50.0]
    monkeypatch.setattr(project_module.time, "monotonic", lambda: clock[0])
    (tmp_path / "models").mkdir()
    model = tmp_path / "models" / "a.sql"
    model.write_text("select 1")
    project = DbtProject(tmp_path, "local")
    assert project.stale()  # never parsed

    project._parsed_from = fingerprint(tmp_path)  # what parse() keeps, without dbt
    assert not project.stale()
    model.write_text("select 22")
    assert not project.stale()  # within the interval: not looked at
    clock[0] += project_module.LOOK_EVERY_S
    assert project.stale()

    project._parsed_from = fingerprint(tmp_path)
    clock[0] += project_module.LOOK_EVERY_S
    assert not project.stale()
    (tmp_path / "models" / "b.sql").write_text("select 2")
    assert not project.stale()
    project.look_now()  # the run's discovery just compiled new mirrors
    assert project.stale()


def properties(topic: str) -> str:
    return textwrap.dedent(f"""\
        version: 2
        models:
          - name: m_{topic.replace('.', '_')}
            meta:
              zync_mirror_pattern: "pg[.]public[.].*"
              zync_mirror_topic: {topic}
        """)


def test_the_topics_earlier_compiles_mirrored_follow_each_properties_file_as_it_changes(tmp_path):
    folder = tmp_path / "models" / "mirrors"
    folder.mkdir(parents=True)
    first = folder / "a.yml"
    first.write_text(properties("pg.public.a"))
    assert previous_pattern_topics(tmp_path) == {"pg.public.a"}
    assert previous_pattern_topics(tmp_path) == {"pg.public.a"}

    first.write_text(properties("pg.public.renamed_a"))  # a different size: read again
    (folder / "b.yml").write_text(properties("pg.public.b"))
    assert previous_pattern_topics(tmp_path) == {"pg.public.renamed_a", "pg.public.b"}

    first.unlink()
    assert previous_pattern_topics(tmp_path) == {"pg.public.b"}
