//! Object privileges through the front door: GRANT / REVOKE on tables,
//! views and databases, to roles, through INHERIT memberships and to
//! PUBLIC; enforcement on SELECT, DML, TRUNCATE, COPY, DDL, ADMIN, flows
//! and CONNECT at startup; ACL columns and has_*_privilege; all of it
//! after a restart. PostgreSQL's 42501 and its messages.

mod common;

use std::time::Duration;

use common::{fails, TestServer};
use futures::SinkExt;
use tokio_postgres::Client;

async fn as_user(s: &TestServer, user: &str) -> Client {
    let mut c = s.config(None);
    c.user(user);
    common::connect(&c).await.unwrap_or_else(|e| panic!("{user} connects: {e}"))
}

async fn ok(c: &Client, sql: &str) {
    c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

async fn one(c: &Client, sql: &str) -> String {
    let rows = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    for m in rows {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            return r.get(0).unwrap_or("NULL").to_string();
        }
    }
    panic!("{sql}: no row")
}

async fn copy_in(c: &Client, sql: &str, data: &str) -> Result<u64, tokio_postgres::Error> {
    let st = c.prepare(sql).await?;
    let sink = c.copy_in(&st).await?;
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(data.to_string())).await?;
    let n = sink.finish().await;
    drop(st);
    n
}

fn denied(table: &str) -> (String, String) {
    ("42501".into(), format!("permission denied for table {table}"))
}

async fn setup(su: &Client) {
    ok(
        su,
        "CREATE TABLE t (host STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY(host));
         INSERT INTO t VALUES ('a', '2024-01-01 00:00:00', 1.0);
         CREATE USER alice; CREATE USER bob; CREATE USER dave;
         CREATE ROLE readers; GRANT readers TO bob;
         CREATE USER carol NOINHERIT; GRANT readers TO carol;",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn table_privileges() {
    let data = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(data.path()).unwrap();
    let su = s.connect(None).await.unwrap();
    setup(&su).await;
    let alice = as_user(&s, "alice").await;

    // Nothing by default; granted; revoked.
    assert_eq!(fails(&alice, "SELECT * FROM t").await, denied("t"));
    assert_eq!(fails(&alice, "SELECT 1 WHERE EXISTS (SELECT 1 FROM t)").await, denied("t"), "subqueries are checked");
    ok(&su, "GRANT SELECT ON t TO alice").await;
    assert_eq!(one(&alice, "SELECT count(*) FROM t").await, "1");
    assert_eq!(fails(&alice, "INSERT INTO t VALUES ('b', '2024-01-01 00:00:01', 2.0)").await, denied("t"));
    ok(&su, "GRANT INSERT ON TABLE t TO alice").await;
    ok(&alice, "INSERT INTO t VALUES ('b', '2024-01-01 00:00:01', 2.0)").await;
    assert_eq!(fails(&alice, "UPDATE t SET v = 3 WHERE host = 'b'").await, denied("t"));
    assert_eq!(fails(&alice, "DELETE FROM t WHERE host = 'b'").await, denied("t"));
    assert_eq!(fails(&alice, "TRUNCATE t").await, denied("t"));
    ok(&su, "GRANT UPDATE, DELETE ON t TO alice").await;
    ok(&alice, "UPDATE t SET v = 3 WHERE host = 'b'").await;
    ok(&alice, "DELETE FROM t WHERE host = 'b'").await;
    // INSERT … SELECT reads its source with SELECT.
    ok(&su, "CREATE TABLE secret (host STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY(host))").await;
    assert_eq!(fails(&alice, "INSERT INTO t SELECT * FROM secret").await, denied("secret"));
    ok(&su, "REVOKE SELECT ON t FROM alice").await;
    assert_eq!(fails(&alice, "SELECT * FROM t").await, denied("t"));
    // UPDATE with a WHERE reads the table: SELECT is needed too.
    assert_eq!(fails(&alice, "UPDATE t SET v = 4 WHERE host = 'a'").await, denied("t"));
    assert_eq!(one(&su, "SELECT relacl FROM pg_class WHERE relname = 't'").await, "{weir_test=arwdDxt/weir_test,alice=awd/weir_test}");

    // Inherited through a role; not for NOINHERIT members; PUBLIC.
    let bob = as_user(&s, "bob").await;
    let carol = as_user(&s, "carol").await;
    let dave = as_user(&s, "dave").await;
    ok(&su, "GRANT SELECT ON t TO readers").await;
    assert_eq!(one(&bob, "SELECT count(*) FROM t").await, "1");
    assert_eq!(fails(&carol, "SELECT * FROM t").await, denied("t"));
    assert_eq!(one(&bob, "SELECT has_table_privilege('t', 'SELECT')").await, "t");
    assert_eq!(one(&carol, "SELECT has_table_privilege('t', 'SELECT')").await, "f");
    assert_eq!(one(&carol, "SELECT pg_has_role('readers', 'MEMBER')::text || pg_has_role('readers', 'USAGE')::text").await, "truefalse");
    assert_eq!(fails(&dave, "SELECT * FROM t").await, denied("t"));
    assert_eq!(one(&dave, "SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").await, "0");
    ok(&su, "GRANT SELECT ON t TO PUBLIC").await;
    assert_eq!(one(&dave, "SELECT count(*) FROM t").await, "1");
    assert_eq!(one(&dave, "SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").await, "1");
    ok(&su, "REVOKE SELECT ON t FROM PUBLIC").await;
    assert_eq!(fails(&dave, "SELECT * FROM t").await, denied("t"));

    // A view is read as the user, its tables as the view's owner.
    ok(&su, "CREATE VIEW tv AS SELECT host, v FROM t").await;
    assert_eq!(fails(&dave, "SELECT * FROM tv").await, ("42501".into(), "permission denied for view tv".into()));
    ok(&su, "GRANT SELECT ON tv TO dave").await;
    assert_eq!(one(&dave, "SELECT count(*) FROM tv").await, "1");

    // A system table.
    assert_eq!(fails(&dave, "SELECT * FROM pg_authid").await, ("42501".into(), "permission denied for table pg_authid".into()));

    // ADMIN: the owner only.
    assert_eq!(fails(&alice, "ADMIN flush_table('t')").await, ("42501".into(), "must be owner of table t".into()));
    ok(&su, "ADMIN flush_table('t')").await;

    // DDL: CREATE on the database; the creator owns the table; DROP needs
    // ownership; ALTER TABLE … OWNER TO.
    assert_eq!(
        fails(&alice, "CREATE TABLE mine (ts TIMESTAMP TIME INDEX, x INT)").await,
        ("42501".into(), "permission denied for schema public".into())
    );
    ok(&su, "GRANT CREATE ON DATABASE public TO alice").await;
    ok(&alice, "CREATE TABLE mine (ts TIMESTAMP TIME INDEX, x INT)").await;
    ok(&alice, "INSERT INTO mine VALUES ('2024-01-01', 1)").await;
    assert_eq!(one(&alice, "SELECT count(*) FROM mine").await, "1");
    assert_eq!(fails(&bob, "SELECT * FROM mine").await, denied("mine"));
    assert_eq!(one(&su, "SELECT r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE c.relname = 'mine'").await, "alice");
    assert_eq!(fails(&alice, "DROP TABLE t").await, ("42501".into(), "must be owner of table t".into()));
    ok(&alice, "GRANT SELECT ON mine TO bob WITH GRANT OPTION").await;
    assert_eq!(one(&bob, "SELECT count(*) FROM mine").await, "1");
    ok(&bob, "GRANT SELECT ON mine TO dave").await;
    assert_eq!(one(&dave, "SELECT count(*) FROM mine").await, "1");
    assert_eq!(one(&su, "SELECT relacl FROM pg_class WHERE relname = 'mine'").await, "{alice=arwdDxt/alice,bob=r*/alice,dave=r/bob}");
    // Without the grant option nothing is granted (PostgreSQL warns);
    // without any privilege it is an error.
    ok(&dave, "GRANT SELECT ON mine TO carol").await;
    assert_eq!(fails(&carol, "GRANT SELECT ON mine TO dave").await, denied("mine"));
    assert_eq!(one(&su, "SELECT relacl FROM pg_class WHERE relname = 'mine'").await, "{alice=arwdDxt/alice,bob=r*/alice,dave=r/bob}");
    assert_eq!(fails(&alice, "ALTER TABLE mine OWNER TO bob").await, ("42501".into(), "must be member of role \"bob\"".into()));
    ok(&su, "ALTER TABLE mine OWNER TO bob").await;
    assert_eq!(fails(&alice, "DROP TABLE mine").await, ("42501".into(), "must be owner of table mine".into()));
    ok(&bob, "DROP TABLE mine").await;

    // Flows: SELECT on the sources, CREATE for a new sink; the owner drops it.
    ok(&su, "GRANT CREATE ON DATABASE public TO dave").await;
    let flow = "CREATE FLOW f SINK TO f_out AS SELECT host, max(v) AS m, date_bin(INTERVAL '1 minute', ts, '2024-01-01 00:00:00') AS w FROM t GROUP BY host, w";
    assert_eq!(fails(&dave, flow).await, denied("t"));
    ok(&su, "GRANT SELECT ON t TO dave").await;
    ok(&dave, flow).await;
    ok(&dave, "ADMIN flush_flow('f')").await;
    assert_eq!(one(&dave, "SELECT count(*) FROM f_out").await, "1");
    assert_eq!(fails(&alice, "DROP FLOW f").await, ("42501".into(), "must be owner of flow f".into()));
    ok(&dave, "DROP FLOW f").await;

    // COPY FROM needs INSERT, COPY TO needs SELECT.
    assert_eq!(fails(&alice, "COPY t TO STDOUT").await, denied("t"));
    assert_eq!(fails(&alice, "COPY (SELECT host FROM t) TO STDOUT").await, denied("t"));
    ok(&su, "REVOKE INSERT ON t FROM alice").await;
    let e = copy_in(&alice, "COPY t FROM STDIN", "c\t2024-01-01 00:00:02\t5\n").await.err().expect("COPY FROM without INSERT");
    assert_eq!(e.as_db_error().map(|d| d.message()), Some("permission denied for table t"), "{e:?}");
    ok(&su, "GRANT INSERT ON t TO alice").await;
    let alice = as_user(&s, "alice").await;
    assert_eq!(copy_in(&alice, "COPY t FROM STDIN", "c\t2024-01-01 00:00:02\t5\n").await.unwrap(), 1);

    // CONNECT at startup: PUBLIC's default, revoked, granted back to one.
    ok(&su, "REVOKE CONNECT ON DATABASE public FROM PUBLIC").await;
    let mut cfg = s.config(None);
    cfg.user("carol");
    let e = common::connect(&cfg).await.err().expect("carol may not connect");
    let d = e.as_db_error().unwrap();
    assert_eq!(
        (d.code().code(), d.message(), d.detail()),
        ("42501", "permission denied for database public", Some("User does not have CONNECT privilege."))
    );
    ok(&su, "GRANT CONNECT ON DATABASE public TO carol").await;
    common::connect(&cfg).await.unwrap();
    assert_eq!(
        one(&su, "SELECT datacl FROM pg_database WHERE datname = 'public'").await,
        "{=T/weir_test,weir_test=CTc/weir_test,alice=C/weir_test,dave=C/weir_test,carol=c/weir_test}"
    );
    assert_eq!(one(&su, "SELECT has_database_privilege('dave', 'public', 'CONNECT')").await, "f");
    assert_eq!(one(&su, "SELECT has_database_privilege('carol', 'public', 'CONNECT, CREATE')").await, "t");

    // Everything survives a restart.
    drop((alice, bob, carol, dave, su));
    let mut s = s;
    assert!(s.stop(Duration::from_secs(10)));
    let s = TestServer::spawn(data.path()).unwrap();
    let su = s.connect(None).await.unwrap();
    assert_eq!(
        one(&su, "SELECT relacl FROM pg_class WHERE relname = 't'").await,
        "{weir_test=arwdDxt/weir_test,alice=awd/weir_test,readers=r/weir_test,dave=r/weir_test}"
    );
    ok(&su, "GRANT CONNECT ON DATABASE public TO readers").await;
    let bob = as_user(&s, "bob").await;
    assert_eq!(one(&bob, "SELECT count(*) FROM t").await, "2");
    let mut cfg = s.config(None);
    cfg.user("alice");
    assert_eq!(common::connect(&cfg).await.err().unwrap().as_db_error().unwrap().code().code(), "42501");

    // A role with privileges cannot be dropped; a renamed one keeps them.
    assert_eq!(
        fails(&su, "DROP ROLE alice").await,
        ("2BP01".into(), "role \"alice\" cannot be dropped because some objects depend on it".into())
    );
    ok(&su, "ALTER ROLE readers RENAME TO viewers").await;
    assert_eq!(one(&bob, "SELECT count(*) FROM t").await, "2");
    assert_eq!(one(&su, "SELECT has_table_privilege('viewers', 't', 'SELECT')").await, "t");
}
