"""psycopg 3 LISTEN / NOTIFY: a listener's `notifies()` generator gets what
another connection sends (after its commit only, in order, with the
sender's pid), its own notifications too, and nothing after UNLISTEN.
Usage: python3 psycopg_notify.py postgresql://user@host:port/db"""
import sys

import psycopg


def drain(conn, n, timeout=10.0):
    got = []
    for note in conn.notifies(timeout=timeout, stop_after=n):
        got.append((note.channel, note.payload, note.pid))
    return got


def main(url: str) -> None:
    listener = psycopg.connect(url, autocommit=True)
    sender = psycopg.connect(url)  # autocommit off: a transaction per block
    listener.execute("LISTEN py_chan")
    spid = sender.info.backend_pid

    sender.execute("NOTIFY py_chan, 'one'")
    sender.execute("SELECT pg_notify('py_chan', %s)", ("two",))
    assert drain(listener, 1, timeout=0.5) == [], "nothing before commit"
    sender.commit()
    assert drain(listener, 2) == [("py_chan", "one", spid), ("py_chan", "two", spid)]

    sender.execute("NOTIFY py_chan, 'rolled back'")
    sender.rollback()
    assert drain(listener, 1, timeout=0.5) == []

    listener.execute("NOTIFY py_chan, 'self'")
    assert drain(listener, 1) == [("py_chan", "self", listener.info.backend_pid)]

    listener.execute("UNLISTEN py_chan")
    sender.execute("NOTIFY py_chan, 'unheard'")
    sender.commit()
    assert drain(listener, 1, timeout=0.5) == []

    try:
        sender.execute("SELECT pg_notify('py_chan', repeat('x', 8000))")
        raise AssertionError("a payload of 8000 bytes must fail")
    except psycopg.errors.InvalidParameterValue as e:
        assert "payload string too long" in str(e), e
    sender.rollback()
    sender.close()
    listener.close()
    print("psycopg LISTEN/NOTIFY ok")


if __name__ == "__main__":
    main(sys.argv[1])
