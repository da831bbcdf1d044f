"""What a `zync run` cycle asks again and what it keeps: a table not there, the project's files, the
topics earlier compiles mirrored (service/versions.py, service/project.py, compiler/mirrors.py)."""

from __future__ import annotations

import textwrap

import service.versions as versions_module
from compiler.mirrors import previous_pattern_topics
from service.project import DbtProject, fingerprint
from service.versions import ABSENT_RECHECK_S, TableVersions


class CountingCatalog:
    """A catalog with no table, counting how often a database's tables are listed (the only call a
    missing table makes)."""

    def __init__(self):
        self.listed: list[str] = []

    def table_names(self, spark, database: str) -> frozenset[str]:
        self.listed.append(database)
        return frozenset({"other"})


class NoTableSession:
    pass


def test_missing_tables_are_asked_for_in_one_listing_again_after_a_while_or_once_this_process_may_have_made_one(
        monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(versions_module.time, "monotonic", lambda: clock[0])
    catalog = CountingCatalog()
    monkeypatch.setattr(versions_module, "catalog_table_names", catalog.table_names)
    versions = TableVersions(NoTableSession())

    for table in range(50):  # a whole database's mirror bases, not built yet, each asked twice a cycle
        assert versions.version(f"zync.t{table}__base") is None
        assert versions.location(f"zync.t{table}__base") is None
    assert catalog.listed == ["zync"]  # one catalog call, however many tables and stages ask
    assert versions.version("staging.a") is None
    assert catalog.listed == ["zync", "staging"]

    versions.made(["staging.b"])  # a table of another database: zync's list stands
    assert versions.version("zync.a__base") is None
    assert catalog.listed == ["zync", "staging"]

    versions.made(["zync.a__base"])  # e.g. a first batch ingested into it
    assert versions.version("zync.a__base") is None
    assert catalog.listed == ["zync", "staging", "zync"]

    versions.made()  # e.g. a dbt run taken in: any table may be there now
    versions.version("zync.a__base")
    versions.version("staging.a")
    assert catalog.listed == ["zync", "staging", "zync", "zync", "staging"]

    clock[0] += ABSENT_RECHECK_S - 0.1  # another process's table is seen within the recheck interval
    versions.version("zync.a__base")
    assert len(catalog.listed) == 5
    clock[0] += 0.2
    versions.version("zync.a__base")
    assert catalog.listed[-1] == "zync" and len(catalog.listed) == 6


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


def test_a_commit_just_made_is_read_once_by_the_growth_count_and_the_metrics(tmp_path, monkeypatch):
    """The commit files of a table's newest versions are read once, however many stages ask (each read
    is two requests to an object store); a table made again under the same location reads afresh."""
    log = tmp_path / "_delta_log"
    log.mkdir()
    add = '{"add":{"path":"p%d.parquet","dataChange":true,"stats":"{\\"numRecords\\":%d}"}}'
    for version in range(3):
        (log / f"{version:020d}.json").write_text('{"commitInfo":{}}\n' + add % (version, version + 1) + "\n")
    read: list[str] = []
    original = versions_module.commit_texts

    def counting(spark, location, start, end):
        for version, texts in original(spark, location, start, end):
            read.append(f"{version}")
            yield version, texts

    monkeypatch.setattr(versions_module, "commit_texts", counting)
    versions = TableVersions(NoTableSession())
    versions._locations["zync.pool"] = str(tmp_path)
    since, until = versions_module.TableVersion("id-1", 0), versions_module.TableVersion("id-1", 2)

    assert versions.rows_added("zync.pool", since, until) == 2 + 3
    assert [len(texts) for texts in versions.commits("zync.pool", since, until)] == [2, 2]
    assert versions.commits("zync.pool", versions_module.TableVersion("id-1", 1), until)[0][1] == add % (2, 3)
    assert read == ["1", "2"]

    (log / f"{2:020d}.json").write_text('{"commitInfo":{}}\n' + add % (9, 7) + "\n")
    again = versions_module.TableVersion("id-2", 2)
    assert versions.commits("zync.pool", versions_module.TableVersion("id-2", 1), again)[0][1] == add % (9, 7)
    assert read == ["1", "2", "2"]
