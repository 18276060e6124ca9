// node-postgres (npm `pg`) against weir: DDL, a parameterized insert, a
// select of every type, an error's SQLSTATE, and the catalog lookups tools
// make (reg* casts, pg_type with its arrays, the primary key).
// Usage: node node_pg_smoke.js 'postgresql://user:pw@host:port/db?sslmode=require&sslrootcert=ca.crt'
// (NODE_PATH finds `pg`)
const { Client } = require("pg");
const assert = require("assert");

async function main(url) {
  // libpq's meaning of sslmode (require + sslrootcert = verify-ca), not pg's
  // newer "require means verify-full".
  const tls = url.includes("sslmode=");
  if (tls && !url.includes("uselibpqcompat")) url += "&uselibpqcompat=true";
  const c = new Client({ connectionString: url });
  await c.connect();
  if (tls) assert.strictEqual(c.connection.stream.encrypted, true, "the connection is not encrypted");
  await c.query("DROP TABLE IF EXISTS node_cpu");
  await c.query(
    "CREATE TABLE node_cpu (host STRING, ts TIMESTAMP TIME INDEX, usage DOUBLE, n BIGINT, i INT, ok BOOLEAN, PRIMARY KEY (host))"
  );
  const ins = await c.query("INSERT INTO node_cpu VALUES ($1, $2, $3, $4, $5, $6)", [
    "a", "2024-01-01 00:00:00", 1.5, "1099511627776", -7, true,
  ]);
  assert.strictEqual(ins.rowCount, 1);
  const r = await c.query(
    "SELECT host, ts::text AS ts, usage, n, i, ok, 2::smallint AS s, 0.25::real AS f, DATE '2024-02-03' AS d, INTERVAL '1 day' AS iv FROM node_cpu"
  );
  const row = r.rows[0];
  assert.deepStrictEqual(
    [row.host, row.ts, row.usage, row.n, row.i, row.ok, row.s, row.f],
    ["a", "2024-01-01 00:00:00", 1.5, "1099511627776", -7, true, 2, 0.25]
  );
  assert.ok(row.d instanceof Date);
  assert.strictEqual(row.iv.days, 1);
  await assert.rejects(c.query("SELECT * FROM no_such_table"), (e) => e.code === "42P01");
  // Type lookups as tools make them: element and array types.
  const t = await c.query(
    "SELECT t.typname, e.typname AS elem FROM pg_type t JOIN pg_type e ON t.typelem = e.oid WHERE t.oid = $1",
    [1007]
  );
  assert.deepStrictEqual(t.rows, [{ typname: "_int4", elem: "int4" }]);
  const reg = await c.query("SELECT 'node_cpu'::regclass::text AS rel, to_regtype('float8')::text AS ty");
  assert.deepStrictEqual(reg.rows[0], { rel: "node_cpu", ty: "double precision" });
  const pk = await c.query(
    "SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i WHERE i.indrelid = 'node_cpu'::regclass AND i.indisprimary"
  );
  assert.strictEqual(pk.rows[0].def, "CREATE UNIQUE INDEX node_cpu_pkey ON public.node_cpu USING btree (host, ts)");
  // Arrays: node-postgres parses int4[] / text[] results into JS arrays and
  // sends JS arrays as array literals.
  const arr = await c.query(
    "SELECT ARRAY[1,2,NULL]::int[] AS a, '{x,\"y z\"}'::text[] AS t, $1::int[] AS p, 2 = ANY($1::int[]) AS hit",
    [[1, 2]]
  );
  assert.deepStrictEqual(arr.rows[0], { a: [1, 2, null], t: ["x", "y z"], p: [1, 2], hit: true });
  await c.end();
  console.log("node-postgres ok");
}

main(process.argv[2]).catch((e) => {
  console.error(e);
  process.exit(1);
});
