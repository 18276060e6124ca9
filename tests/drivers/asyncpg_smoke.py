"""asyncpg smoke test: python3 asyncpg_smoke.py postgresql://user@host:port/db"""
import asyncio
import datetime
import sys

import asyncpg


async def main(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        version = await conn.fetchval("SELECT version()")
        assert isinstance(version, str) and version
        await conn.execute("DROP TABLE IF EXISTS py_asyncpg")
        await conn.execute(
            "CREATE TABLE py_asyncpg (host TEXT, ts TIMESTAMP, n INTEGER, big BIGINT, "
            "x DOUBLE PRECISION, ok BOOLEAN)"
        )
        ts0 = datetime.datetime(2024, 1, 1, 0, 0, 0)
        rows = [
            ("a", ts0 + datetime.timedelta(seconds=i), i, 10**12 + i, i / 4, i % 2 == 0)
            for i in range(10)
        ]
        await conn.executemany("INSERT INTO py_asyncpg VALUES ($1, $2, $3, $4, $5, $6)", rows)
        status = await conn.execute(
            "INSERT INTO py_asyncpg VALUES ($1, $2, $3, $4, $5, $6)", "b", ts0, None, None, None, None
        )
        assert status == "INSERT 0 1", status
        assert await conn.fetchval("SELECT count(*) FROM py_asyncpg") == 11
        got = await conn.fetch(
            "SELECT host, ts, n, big, x, ok FROM py_asyncpg WHERE n >= $1 ORDER BY n", 8
        )
        assert [tuple(r) for r in got] == rows[8:], got
        row = await conn.fetchrow("SELECT n, x FROM py_asyncpg WHERE host = $1 AND n = $2", "a", 3)
        assert row["n"] == 3 and row["x"] == 0.75
        assert await conn.fetchval("SELECT $1::text", "hi") == "hi"
        # An error, then the connection is reused.
        try:
            await conn.fetch("SELECT * FROM py_no_such_table")
        except asyncpg.exceptions.UndefinedTableError:
            pass
        else:
            raise AssertionError("expected UndefinedTableError")
        try:
            await conn.fetchval("SELECT 1/$1::int", 0)
        except asyncpg.exceptions.DivisionByZeroError:
            pass
        else:
            raise AssertionError("expected DivisionByZeroError")
        assert await conn.fetchval("SELECT $1::int + 1", 41) == 42
        # Arrays: asyncpg looks their types up with its WITH RECURSIVE
        # introspection query (oid[] parameter), then round-trips them binary.
        await conn.execute("DROP TABLE IF EXISTS py_asyncpg_arr")
        await conn.execute(
            "CREATE TABLE py_asyncpg_arr (k INTEGER, a INTEGER[], b BIGINT[], t TEXT[], f DOUBLE PRECISION[])"
        )
        await conn.execute(
            "INSERT INTO py_asyncpg_arr VALUES ($1, $2, $3, $4, $5)",
            1, [1, None, 3], [10**12], ["x", "y z", None, ""], [1.5, -2.0],
        )
        r = await conn.fetchrow("SELECT a, b, t, f FROM py_asyncpg_arr WHERE k = 1")
        assert tuple(r) == ([1, None, 3], [10**12], ["x", "y z", None, ""], [1.5, -2.0]), r
        assert await conn.fetchval("SELECT $1::int8[] || 4::int8", [1, 2]) == [1, 2, 4]
        assert await conn.fetchval("SELECT k FROM py_asyncpg_arr WHERE 3 = ANY($1::int[])", [3]) == 1
        assert await conn.fetchval("SELECT ARRAY['a', 'b']") == ["a", "b"]
        assert await conn.fetchval("SELECT '{}'::int[]") == []
        await conn.execute("DROP TABLE py_asyncpg_arr")
        await conn.execute("DROP TABLE py_asyncpg")
    finally:
        await conn.close()
    print("asyncpg ok", asyncpg.__version__)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
