// pgjdbc against weir: DDL, a parameterized insert, a select of every type,
// an error with its SQLSTATE, COPY, transactions (autocommit off, rollback,
// commit, savepoints), and the DatabaseMetaData calls database
// tools (DBeaver, DataGrip, Metabase) make to list tables and columns.
// Usage: java -cp postgresql.jar JdbcSmoke.java jdbc:postgresql://host:port/db?sslmode=require user [password]
import java.io.StringReader;
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

public class JdbcSmoke {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static long count(Statement s, String where) throws SQLException {
        try (ResultSet r = s.executeQuery("SELECT count(*) FROM jdbc_cpu WHERE " + where)) {
            r.next();
            return r.getLong(1);
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        if (args.length > 2 && !args[2].isEmpty()) props.setProperty("password", args[2]);
        try (Connection c = DriverManager.getConnection(args[0], props)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jdbc_cpu");
                s.execute("CREATE TABLE jdbc_cpu (host STRING, ts TIMESTAMP TIME INDEX, usage DOUBLE, "
                        + "n BIGINT, i INT, f REAL, ok BOOLEAN, PRIMARY KEY (host))");
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jdbc_cpu VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                p.setString(1, "a");
                p.setTimestamp(2, Timestamp.valueOf("2024-01-01 00:00:00"));
                p.setDouble(3, 1.5);
                p.setLong(4, 1L << 40);
                p.setInt(5, -7);
                p.setFloat(6, 0.25f);
                p.setBoolean(7, true);
                check(p.executeUpdate() == 1, "insert count");
            }
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT host, ts, usage, n, i, f, ok, DATE '2024-02-03', INTERVAL '1 day', "
                         + "'x'::varchar, 2::smallint FROM jdbc_cpu")) {
                check(r.next(), "one row");
                check(r.getString(1).equals("a"), "text");
                check(r.getTimestamp(2).equals(Timestamp.valueOf("2024-01-01 00:00:00")), "timestamp " + r.getTimestamp(2));
                check(r.getDouble(3) == 1.5, "double");
                check(r.getLong(4) == 1L << 40, "bigint");
                check(r.getInt(5) == -7, "int");
                check(r.getFloat(6) == 0.25f, "real");
                check(r.getBoolean(7), "bool");
                check(r.getDate(8).toString().equals("2024-02-03"), "date");
                check(r.getString(9).equals("1 day"), "interval " + r.getString(9));
                check(r.getString(10).equals("x"), "varchar");
                check(r.getShort(11) == 2, "smallint");
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT * FROM no_such_table");
                throw new AssertionError("expected an error");
            } catch (SQLException e) {
                check("42P01".equals(e.getSQLState()), "sqlstate " + e.getSQLState());
            }
            CopyManager cm = c.unwrap(PGConnection.class).getCopyAPI();
            long n = cm.copyIn("COPY jdbc_cpu (host, ts, usage) FROM STDIN WITH (FORMAT csv)",
                    new StringReader("b,2024-01-01 00:00:01,2.5\nc,2024-01-01 00:00:02,3.5\n"));
            check(n == 2, "copy count " + n);

            // Transactions as JDBC applications use them: autocommit off,
            // rollback() undoes, commit() keeps, a savepoint rolls back part.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO jdbc_cpu (host, ts, usage) VALUES ('tx1', '2024-01-01 00:01:00', 1)");
                c.rollback();
                check(count(s, "host = 'tx1'") == 0, "rollback() undoes the insert");
                s.executeUpdate("INSERT INTO jdbc_cpu (host, ts, usage) VALUES ('tx2', '2024-01-01 00:01:00', 2)");
                Savepoint sp = c.setSavepoint("sp1");
                s.executeUpdate("INSERT INTO jdbc_cpu (host, ts, usage) VALUES ('tx3', '2024-01-01 00:01:00', 3)");
                c.rollback(sp);
                c.commit();
                check(count(s, "host = 'tx2'") == 1, "commit() keeps the insert before the savepoint");
                check(count(s, "host = 'tx3'") == 0, "rollback(savepoint) undoes the insert after it");
                try {
                    s.executeQuery("SELECT * FROM no_such_table");
                    throw new AssertionError("expected an error");
                } catch (SQLException e) {
                    check("42P01".equals(e.getSQLState()), "sqlstate in a block " + e.getSQLState());
                }
                c.rollback();
                check(count(s, "host = 'tx2'") == 1, "the block is usable after rollback()");
                c.commit();
            }
            c.setAutoCommit(true);

            DatabaseMetaData md = c.getMetaData();
            List<String> tables = new ArrayList<>();
            try (ResultSet r = md.getTables(null, null, "%", new String[] {"TABLE"})) {
                while (r.next()) tables.add(r.getString("TABLE_NAME"));
            }
            check(tables.contains("jdbc_cpu"), "getTables " + tables);
            List<String> cols = new ArrayList<>();
            try (ResultSet r = md.getColumns(null, null, "jdbc_cpu", "%")) {
                while (r.next()) cols.add(r.getString("COLUMN_NAME") + ":" + r.getString("TYPE_NAME") + ":" + r.getInt("NULLABLE"));
            }
            check(cols.equals(List.of("host:text:1", "ts:timestamp:0", "usage:float8:1", "n:int8:1", "i:int4:1",
                    "f:float4:1", "ok:bool:1")), "getColumns " + cols);
            // getPrimaryKeys: pgjdbc's query expands pg_index.indkey with
            // information_schema._pg_expandarray in the select list (a
            // ProjectSet) and reads (result.KEYS).x of the derived table.
            // PostgreSQL 15 answers the same rows for this table.
            List<String> pk = new ArrayList<>();
            try (ResultSet r = md.getPrimaryKeys(null, null, "jdbc_cpu")) {
                while (r.next()) pk.add(r.getString("TABLE_SCHEM") + "." + r.getString("TABLE_NAME") + ":" + r.getString("COLUMN_NAME")
                        + ":" + r.getInt("KEY_SEQ") + ":" + r.getString("PK_NAME"));
            }
            check(pk.equals(List.of("public.jdbc_cpu:host:1:jdbc_cpu_pkey", "public.jdbc_cpu:ts:2:jdbc_cpu_pkey")), "getPrimaryKeys " + pk);
            // getIndexInfo: the same expansion, pg_get_indexdef(index, k, false)
            // for each column and indoption[k - 1] & 1 for its order.
            List<String> idx = new ArrayList<>();
            try (ResultSet r = md.getIndexInfo(null, null, "jdbc_cpu", false, false)) {
                while (r.next()) idx.add(r.getString("INDEX_NAME") + ":" + r.getBoolean("NON_UNIQUE") + ":" + r.getShort("TYPE")
                        + ":" + r.getShort("ORDINAL_POSITION") + ":" + r.getString("COLUMN_NAME") + ":" + r.getString("ASC_OR_DESC"));
            }
            check(idx.equals(List.of("jdbc_cpu_pkey:false:3:1:host:A", "jdbc_cpu_pkey:false:3:2:ts:A")), "getIndexInfo " + idx);
            // Foreign keys: weir has none; the queries (generate_series(1, 32) pos(n)
            // in FROM, conkey[pos.n]) run and answer no rows.
            try (ResultSet r = md.getImportedKeys(null, null, "jdbc_cpu")) {
                check(!r.next(), "getImportedKeys has rows");
            }
            try (ResultSet r = md.getExportedKeys(null, null, "jdbc_cpu")) {
                check(!r.next(), "getExportedKeys has rows");
            }
            List<String> catalogs = new ArrayList<>();
            try (ResultSet r = md.getCatalogs()) {
                while (r.next()) catalogs.add(r.getString("TABLE_CAT"));
            }
            check(catalogs.contains("public"), "getCatalogs " + catalogs);
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT c.conname, i.indkey, pg_get_indexdef(i.indexrelid) FROM pg_constraint c "
                         + "JOIN pg_index i ON c.conindid = i.indexrelid WHERE c.conrelid = 'jdbc_cpu'::regclass AND c.contype = 'p'")) {
                check(r.next(), "pk row");
                check(r.getString(1).equals("jdbc_cpu_pkey") && r.getString(2).equals("1 2"), "pk " + r.getString(1) + " " + r.getString(2));
                check(r.getString(3).equals("CREATE UNIQUE INDEX jdbc_cpu_pkey ON public.jdbc_cpu USING btree (host, ts)"), r.getString(3));
            }
            List<String> schemas = new ArrayList<>();
            try (ResultSet r = md.getSchemas()) {
                while (r.next()) schemas.add(r.getString("TABLE_SCHEM"));
            }
            check(schemas.contains("public"), "getSchemas " + schemas);
            Set<String> types = new HashSet<>();
            try (ResultSet r = md.getTypeInfo()) {
                while (r.next()) types.add(r.getString("TYPE_NAME"));
            }
            check(types.containsAll(List.of("int4", "int8", "text", "timestamp", "float8", "bool")), "getTypeInfo " + types);
            System.out.println("jdbc ok: " + tables.size() + " tables, columns " + cols);
        }
    }
}
