"""Where PostgreSQL's data lives when its server runs as another user than zync (root's case):
a folder held for the state folder, linked from it, removed once the state folder no longer links to it.
These run as any user: the server's user only changes who owns the folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from stack import postgres


@pytest.fixture
def held(tmp_path, monkeypatch):
    """A state folder and the root of the held folders, both under tmp_path."""
    root = tmp_path / "home" / "zync"
    monkeypatch.setattr(postgres, "held_root", lambda: root)
    state = tmp_path / "private" / "state"
    monkeypatch.setenv("ZYNC_STATE_DIR", str(state))
    (state / "postgres").mkdir(parents=True)
    return state, root


def test_the_held_folder_is_derived_from_the_resolved_state_path(tmp_path):
    root = tmp_path / "zync"
    (tmp_path / "a").mkdir()
    one = postgres.held_folder(tmp_path / "a" / "state", root)
    assert one == postgres.held_folder(tmp_path / "a" / ".." / "a" / "state", root)
    assert one.parent == root and len(one.name) == 12 and int(one.name, 16) >= 0
    assert one != postgres.held_folder(tmp_path / "b" / "state", root)


def test_a_state_folder_links_to_its_data_and_finds_it_again(held):
    state, root = held
    data = postgres._hold(None)
    assert data == postgres.held_folder(state, root) / "data" and data.parent.stat().st_mode & 0o077 == 0
    assert os.readlink(state / "postgres" / "data") == str(data) and postgres.owned(data.parent)
    data.mkdir()
    (data / "PG_VERSION").write_text("15\n")
    assert postgres._hold(None) == data and (data / "PG_VERSION").exists()


def test_a_wiped_state_folder_starts_afresh(held):
    state, root = held
    data = postgres._hold(None)
    data.mkdir()
    (data / "PG_VERSION").write_text("15\n")
    shutil.rmtree(state)
    (state / "postgres").mkdir(parents=True)
    assert not postgres.owned(data.parent)
    assert postgres._hold(None) == data and not data.exists() and postgres.owned(data.parent)


def test_only_the_folders_no_state_folder_links_to_are_removed(held, tmp_path):
    state, root = held
    kept = postgres._hold(None).parent
    wiped = postgres.held_folder(tmp_path / "wiped", root)  # its state folder is gone
    relinked = postgres.held_folder(tmp_path / "relinked", root)  # its link leads elsewhere now
    running = postgres.held_folder(tmp_path / "running", root)  # unlinked, but a server still runs on it
    for folder, owner in ((wiped, tmp_path / "wiped"), (relinked, tmp_path / "relinked"),
                          (running, tmp_path / "running")):
        (folder / "data").mkdir(parents=True)
        (folder / postgres.STATE_RECORD).write_text(f"{owner}\n")
    (tmp_path / "relinked" / "postgres").mkdir(parents=True)
    (tmp_path / "relinked" / "postgres" / "data").symlink_to(tmp_path / "elsewhere")
    (running / "data" / "postmaster.pid").write_text(f"{os.getpid()}\n")
    assert sorted(postgres.remove_stale(root)) == sorted([wiped, relinked])
    assert kept.exists() and running.exists() and not wiped.exists() and not relinked.exists()


def test_purge_removes_the_held_folder_and_nothing_a_link_was_edited_to(held, tmp_path):
    state, root = held
    data = postgres._hold(None)
    assert postgres.remove_held_data() == data.parent and not data.parent.exists()
    assert not (state / "postgres" / "data").exists()
    other = tmp_path / "precious" / "data"
    other.mkdir(parents=True)
    (state / "postgres" / "data").symlink_to(other)
    assert postgres.remove_held_data() is None and other.exists()


@pytest.mark.parametrize("where", ["project", "above"])
def test_purge_refuses_a_state_folder_that_holds_the_project(where, monkeypatch):
    from stack import services
    from zync.config import project_dir
    from zync.errors import ZyncError

    state = project_dir() if where == "project" else project_dir().parent
    monkeypatch.setenv("ZYNC_STATE_DIR", str(state))
    with pytest.raises(ZyncError, match="refusing to delete the state folder"):
        services.purge(None)
    assert project_dir().exists()
