"""Fixtures of the vmstore binding's tests: a scratch database per test."""

import pytest

import vmstore


@pytest.fixture
def db_path(tmp_path):
    """A directory path where no database exists yet."""
    return str(tmp_path / "db")


@pytest.fixture
def db(db_path):
    """An open database with a small pool, closed after the test."""
    database = vmstore.open(db_path, pool_size="16M")
    yield database
    database.close()


@pytest.fixture
def tree(db):
    """The default tree of the fixture database."""
    return db.tree()
