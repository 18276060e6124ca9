"""SQLAlchemy 2's inspector (psycopg 3 dialect) and pandas as a new user
tries them: list tables, columns, the primary key and indexes, has_table,
then pandas to_sql / read_sql. Also the reg* casts those tools use.
Usage: python3 sqlalchemy_inspect.py postgresql://user@host:port/db"""
import sys

import pandas as pd
from sqlalchemy import create_engine, inspect, text


def main(url: str) -> None:
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_engine(url)
    with engine.connect() as conn:
        conn.execute(text("DROP TABLE IF EXISTS insp_cpu"))
        conn.execute(text("DROP TABLE IF EXISTS insp_frame"))
        conn.commit()
        conn.execute(
            text(
                "CREATE TABLE insp_cpu (host STRING, ts TIMESTAMP TIME INDEX, "
                "usage DOUBLE, note STRING NULL, PRIMARY KEY (host))"
            )
        )
        conn.execute(text("INSERT INTO insp_cpu VALUES ('a', '2024-01-01 00:00:00', 1.5, 'x')"))
        conn.commit()
        # The reg* types tools rely on.
        oid = conn.execute(text("SELECT 'insp_cpu'::regclass::oid")).scalar()
        assert conn.execute(text("SELECT oid FROM pg_class WHERE relname = 'insp_cpu'")).scalar() == oid, oid
        assert conn.execute(text("SELECT CAST(:o AS bigint)::regclass::text"), {"o": oid}).scalar() == "insp_cpu"
        assert conn.execute(text("SELECT 'int4'::regtype::text")).scalar() == "integer"
        assert conn.execute(text("SELECT to_regtype('hstore')")).scalar() is None

    insp = inspect(engine)
    tables = insp.get_table_names()
    assert "insp_cpu" in tables, tables
    assert insp.has_table("insp_cpu")
    assert not insp.has_table("no_such_table")
    cols = insp.get_columns("insp_cpu")
    names = [c["name"] for c in cols]
    assert names == ["host", "ts", "usage", "note"], cols
    types = [str(c["type"]) for c in cols]
    assert types == ["TEXT", "TIMESTAMP", "DOUBLE PRECISION", "TEXT"], types
    assert [c["nullable"] for c in cols] == [True, False, True, True], cols
    # The primary key (tags + time index), through unnest/generate_subscripts
    # and array_agg(… ORDER BY …); the PK's index is not among get_indexes,
    # as in PostgreSQL; weir has no unique, foreign-key or check constraints.
    pkc = insp.get_pk_constraint("insp_cpu")
    assert (pkc["name"], pkc["constrained_columns"]) == ("insp_cpu_pkey", ["host", "ts"]), pkc
    assert insp.get_indexes("insp_cpu") == [], insp.get_indexes("insp_cpu")
    assert insp.get_unique_constraints("insp_cpu") == []
    assert insp.get_foreign_keys("insp_cpu") == []
    assert insp.get_check_constraints("insp_cpu") == []
    assert insp.get_table_comment("insp_cpu") == {"text": None}
    assert "public" in insp.get_schema_names()
    multi = insp.get_multi_pk_constraint()
    assert multi[(None, "insp_cpu")]["constrained_columns"] == ["host", "ts"], multi
    assert insp.get_multi_indexes()[(None, "insp_cpu")] == []
    assert [c["name"] for c in insp.get_multi_columns()[(None, "insp_cpu")]] == names
    assert insp.get_multi_unique_constraints()[(None, "insp_cpu")] == []
    assert insp.get_multi_foreign_keys()[(None, "insp_cpu")] == []
    assert insp.get_multi_check_constraints()[(None, "insp_cpu")] == []
    # The catalog rows behind them.
    with engine.connect() as conn:
        pk = conn.execute(
            text(
                "SELECT con.conname, con.conkey, i.indkey, i.indisprimary, "
                "pg_get_constraintdef(con.oid), pg_get_indexdef(i.indexrelid) "
                "FROM pg_constraint con JOIN pg_index i ON con.conindid = i.indexrelid "
                "WHERE con.conrelid = 'insp_cpu'::regclass AND con.contype = 'p'"
            )
        ).one()
        assert pk == (
            "insp_cpu_pkey",
            "{1,2}",
            "1 2",
            True,
            "PRIMARY KEY (host, ts)",
            "CREATE UNIQUE INDEX insp_cpu_pkey ON public.insp_cpu USING btree (host, ts)",
        ), pk
        size = conn.execute(text("SELECT pg_total_relation_size('insp_cpu')")).scalar()
        assert size > 0, size
    print("inspector:", tables, names, pk[0])

    frame = pd.DataFrame({"host": ["a", "b"], "v": [1.0, 2.5]})
    frame.to_sql("insp_frame", engine, index=False)
    back = pd.read_sql("SELECT host, v FROM insp_frame ORDER BY host", engine)
    assert back["v"].tolist() == [1.0, 2.5], back
    cpu = pd.read_sql("SELECT * FROM insp_cpu", engine)
    assert cpu["usage"].tolist() == [1.5], cpu
    print("pandas ok:", len(back), len(cpu))


if __name__ == "__main__":
    main(sys.argv[1])
