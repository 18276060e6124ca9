"""SQLAlchemy 2 (psycopg 3 dialect) and pandas: engine connect, Core and ORM
session add / commit / rollback, pandas read_sql and to_sql.
Usage: python3 sqlalchemy_txn.py postgresql://user@host:port/db"""
import sys

import pandas as pd
from sqlalchemy import Integer, String, create_engine, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "sa_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)


def main(url: str) -> None:
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    # The hstore lookup on connect needs to_regtype(), which weir lacks
    # (catalog functions belong to the drivers-and-tools issue).
    engine = create_engine(url, use_native_hstore=False)
    with engine.connect() as conn:
        conn.execute(text("DROP TABLE IF EXISTS sa_items"))
        conn.execute(text("DROP TABLE IF EXISTS sa_frame"))
        conn.execute(text("CREATE TABLE sa_items (id INTEGER, name TEXT)"))
        conn.commit()

    # Core: begin() commits on success, rolls back on an exception.
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sa_items VALUES (1, 'core')"))
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO sa_items VALUES (2, 'core lost')"))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sa_items")).scalar() == 1
        conn.execute(text("INSERT INTO sa_items VALUES (3, 'not committed')"))
        conn.rollback()
        assert conn.execute(text("SELECT count(*) FROM sa_items")).scalar() == 1
        # begin_nested() is a savepoint.
        with conn.begin_nested():
            conn.execute(text("INSERT INTO sa_items VALUES (4, 'nested')"))
        nested = conn.begin_nested()
        conn.execute(text("INSERT INTO sa_items VALUES (5, 'nested lost')"))
        nested.rollback()
        conn.commit()
        ids = [r[0] for r in conn.execute(text("SELECT id FROM sa_items ORDER BY id"))]
        assert ids == [1, 4], ids

    # ORM session add / commit / rollback.
    with Session(engine) as s:
        s.add(Item(id=6, name="orm"))
        s.commit()
        s.add(Item(id=7, name="orm lost"))
        s.flush()
        assert s.scalar(select(Item).where(Item.id == 7)) is not None
        s.rollback()
        names = sorted(i.name for i in s.scalars(select(Item)))
        assert names == ["core", "nested", "orm"], names

    # pandas: read_sql and to_sql.
    df = pd.read_sql("SELECT id, name FROM sa_items ORDER BY id", engine)
    assert list(df["id"]) == [1, 4, 6], df
    frame = pd.DataFrame({"x": [1, 2, 3], "label": ["a", "b", "c"]})
    frame.to_sql("sa_frame", engine, index=False)
    back = pd.read_sql(text("SELECT x, label FROM sa_frame ORDER BY x"), engine)
    assert list(back["label"]) == ["a", "b", "c"], back
    frame.to_sql("sa_frame", engine, index=False, if_exists="append")
    assert int(pd.read_sql("SELECT count(*) AS n FROM sa_frame", engine)["n"][0]) == 6
    engine.dispose()
    print("sqlalchemy and pandas ok")


if __name__ == "__main__":
    main(sys.argv[1])
