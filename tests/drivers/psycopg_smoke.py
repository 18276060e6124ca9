"""psycopg 3 smoke test: python3 psycopg_smoke.py postgresql://user@host:port/db"""
import datetime
import sys

import psycopg


def main(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("SELECT version(), current_database()")
        version, db = cur.fetchone()
        assert isinstance(version, str) and version, version
        cur.execute("DROP TABLE IF EXISTS py_psycopg")
        cur.execute(
            "CREATE TABLE py_psycopg (host TEXT, ts TIMESTAMP, n INTEGER, big BIGINT, "
            "x DOUBLE PRECISION, ok BOOLEAN)"
        )
        ts0 = datetime.datetime(2024, 1, 1, 0, 0, 0)
        rows = [
            ("a", ts0 + datetime.timedelta(seconds=i), i, 10**12 + i, i / 4, i % 2 == 0)
            for i in range(10)
        ]
        cur.executemany("INSERT INTO py_psycopg VALUES (%s, %s, %s, %s, %s, %s)", rows)
        cur.execute("INSERT INTO py_psycopg VALUES (%s, %s, %s, %s, %s, %s)",
                    ("b", ts0, None, None, None, None))
        cur.execute("SELECT count(*) FROM py_psycopg")
        assert cur.fetchone()[0] == 11
        cur.execute(
            "SELECT host, ts, n, big, x, ok FROM py_psycopg WHERE n >= %s ORDER BY n", (8,)
        )
        got = cur.fetchall()
        assert got == rows[8:], got
        assert isinstance(got[0][1], datetime.datetime) and isinstance(got[0][4], float)
        # Binary results too.
        bcur = conn.cursor(binary=True)
        bcur.execute("SELECT n, x, host, ok FROM py_psycopg WHERE host = %s AND n = %s", ("a", 3))
        assert bcur.fetchall() == [(3, 0.75, "a", False)]
        # The same query often enough to be prepared server-side.
        for i in range(8):
            cur.execute("SELECT n FROM py_psycopg WHERE n = %s", (i,))
            assert cur.fetchone() == (i,)
        # An error, then the connection is reused.
        try:
            cur.execute("SELECT * FROM py_no_such_table")
        except psycopg.errors.UndefinedTable:
            pass
        else:
            raise AssertionError("expected UndefinedTable")
        try:
            cur.execute("SELECT 1/0")
        except psycopg.errors.DivisionByZero:
            pass
        else:
            raise AssertionError("expected DivisionByZero")
        cur.execute("SELECT %s::int + 1", (41,))
        assert cur.fetchone() == (42,)
        # Arrays: Python lists go out as arrays (binary and text) and come
        # back as lists; ANY over a bound list.
        cur.execute("SELECT ARRAY[1,2,NULL], '{a,\"b c\"}'::text[], %s::bigint[], %s = ANY(%s)", ([5, None], 3, [1, 3]))
        assert cur.fetchone() == ([1, 2, None], ["a", "b c"], [5, None], True)
        bcur.execute("SELECT array_agg(host ORDER BY n DESC), ARRAY[1.5::float8], %s::text[] FROM py_psycopg", (["x", "y z"],))
        # DESC puts NULLs first: host b (n NULL), then the ten a rows.
        assert bcur.fetchone() == (["b"] + ["a"] * 10, [1.5], ["x", "y z"])
        cur.execute("SELECT n FROM py_psycopg WHERE n = ANY(%s) ORDER BY n", ([1, 2, 42],))
        assert cur.fetchall() == [(1,), (2,)]
        # COPY: text out, binary out read row by row with the column types,
        # binary in (psycopg's write_row).
        with cur.copy("COPY (SELECT host, n FROM py_psycopg WHERE n < 2 ORDER BY n) TO STDOUT") as cp:
            assert b"".join(bytes(b) for b in cp) == b"a\t0\na\t1\n"
        with cur.copy("COPY (SELECT host, ts, n, big, x, ok FROM py_psycopg ORDER BY host, n) TO STDOUT (FORMAT binary)") as cp:
            cp.set_types(["text", "timestamp", "int4", "int8", "float8", "bool"])
            got = list(iter(cp.read_row, None))
        assert got == rows + [("b", ts0, None, None, None, None)], got
        with cur.copy("COPY py_psycopg (host, ts, n, big, x, ok) FROM STDIN (FORMAT binary)") as cp:
            cp.set_types(["text", "timestamp", "int4", "int8", "float8", "bool"])
            cp.write_row(("c", ts0, 7, 2**40, 0.5, True))
        cur.execute("SELECT host, n, big, x, ok FROM py_psycopg WHERE host = 'c'")
        assert cur.fetchall() == [("c", 7, 2**40, 0.5, True)]
        info = psycopg.types.TypeInfo.fetch(conn, "int4")
        assert (info.oid, info.array_oid) == (23, 1007), info
        cur.execute("DROP TABLE py_psycopg")
    # A transaction block as psycopg does it without autocommit.
    with psycopg.connect(url) as conn:
        conn.execute("SELECT 1").fetchone()
        conn.commit()
    print("psycopg ok", psycopg.__version__, db)


if __name__ == "__main__":
    main(sys.argv[1])
