"""psycopg 3 with autocommit off (its default): commit, rollback, an
exception inside `with conn.transaction()`, nested savepoints, COPY in a
block. Usage: python3 psycopg_txn.py postgresql://user@host:port/db"""
import sys

import psycopg


def count(conn, where="TRUE"):
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM py_txn WHERE {where}")
        return cur.fetchone()[0]


def main(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS py_txn")
        conn.execute("CREATE TABLE py_txn (id INTEGER, name TEXT)")

    with psycopg.connect(url) as conn:  # autocommit off
        assert not conn.autocommit
        cur = conn.cursor()
        cur.execute("INSERT INTO py_txn VALUES (%s, %s)", (1, "kept"))
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.commit()
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

        cur.execute("INSERT INTO py_txn VALUES (%s, %s)", (2, "rolled back"))
        assert count(conn) == 2  # the block reads its own row
        conn.rollback()
        assert count(conn) == 1
        conn.rollback()

        # An error aborts the block until rollback.
        cur.execute("INSERT INTO py_txn VALUES (3, 'lost')")
        try:
            cur.execute("SELECT 1 / 0")
            raise AssertionError("division by zero did not fail")
        except psycopg.errors.DivisionByZero:
            pass
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        try:
            cur.execute("SELECT 1")
            raise AssertionError("a failed block accepted a statement")
        except psycopg.errors.InFailedSqlTransaction:
            pass
        conn.rollback()
        assert count(conn, "id = 3") == 0
        conn.rollback()

    # with conn.transaction(): exceptions roll back, nested blocks are
    # savepoints, and the outer block survives an inner failure.
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            with conn.transaction():
                conn.execute("INSERT INTO py_txn VALUES (10, 'never')")
                raise RuntimeError("boom")
        except RuntimeError:
            pass
        assert count(conn, "id = 10") == 0

        with conn.transaction():
            conn.execute("INSERT INTO py_txn VALUES (11, 'outer')")
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO py_txn VALUES (12, 'inner')")
                    conn.execute("SELECT 1 / 0")
            except psycopg.errors.DivisionByZero:
                pass
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            with conn.transaction():
                conn.execute("INSERT INTO py_txn VALUES (13, 'inner ok')")
        assert count(conn, "id = 11") == 1
        assert count(conn, "id = 12") == 0
        assert count(conn, "id = 13") == 1

        # COPY inside a block joins it.
        try:
            with conn.transaction():
                with conn.cursor().copy("COPY py_txn (id, name) FROM STDIN") as cp:
                    cp.write_row((20, "copied"))
                    cp.write_row((21, "copied"))
                assert count(conn, "id >= 20") == 2
                raise RuntimeError("undo the copy")
        except RuntimeError:
            pass
        assert count(conn, "id >= 20") == 0
        with conn.transaction():
            with conn.cursor().copy("COPY py_txn (id, name) FROM STDIN") as cp:
                cp.write_row((22, "copied"))
        assert count(conn, "id >= 20") == 1
    print("psycopg transactions ok")


if __name__ == "__main__":
    main(sys.argv[1])
