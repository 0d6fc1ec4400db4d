"""The schema's named upgrade steps: numbered in order, each run once, a fresh database at the last."""

from __future__ import annotations

from pathlib import Path

from locallens.storage import migrations
from locallens.storage.sqlite import Store


def test_steps_are_numbered_one_by_one_with_unique_names() -> None:
    versions = [step.version for step in migrations.MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))
    assert len({step.name for step in migrations.MIGRATIONS}) == len(versions)
    assert migrations.SCHEMA_VERSION == versions[-1]


def test_pending_lists_the_later_steps_in_order() -> None:
    assert migrations.pending(0) == list(migrations.MIGRATIONS)
    assert migrations.pending(migrations.SCHEMA_VERSION) == []
    assert [s.version for s in migrations.pending(1)] == list(range(2, migrations.SCHEMA_VERSION + 1))


def test_a_fresh_database_runs_every_step_and_a_reopen_runs_none(tmp_path: Path, monkeypatch) -> None:
    ran: list[str] = []
    steps = tuple(
        migrations.Migration(s.version, s.name, lambda conn, s=s: (ran.append(s.name), s.apply(conn))[1])
        for s in migrations.MIGRATIONS
    )
    monkeypatch.setattr(migrations, "MIGRATIONS", steps)
    db = tmp_path / "index.db"
    with Store(db) as store:
        assert store.execute("PRAGMA user_version")[0][0] == migrations.SCHEMA_VERSION
    assert ran == [s.name for s in steps]
    ran.clear()
    with Store(db):
        pass
    assert ran == []
