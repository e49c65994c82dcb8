"""Persistence: SQLAlchemy 2 async engine and sessions, ORM models, Alembic migrations.

SQLite (aiosqlite) is the embedded default, PostgreSQL (asyncpg) the scaled one; every model and
query here works on both.
"""
