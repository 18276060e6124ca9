//! Python drivers against the server: psycopg 3 and asyncpg
//! (`tests/drivers/*.py`). `.ci/run` installs them; under `CI=true` a missing
//! package fails the test, locally it is skipped with a notice. The Python
//! interpreter is `$WEIR_PYTHON`, else `python3`.

mod common;

use std::path::Path;
use std::process::Command;

use common::TestServer;

fn python() -> String {
    std::env::var("WEIR_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Can the interpreter import `module`? Otherwise fail under CI, skip locally.
fn have(module: &str) -> bool {
    let ok = Command::new(python()).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success());
    if !ok {
        let msg = format!("python module {module} is missing for {} (pip install 'psycopg[binary]' asyncpg sqlalchemy pandas)", python());
        assert!(!in_ci(), "{msg}");
        eprintln!("SKIPPED: {msg}");
    }
    ok
}

fn url(s: &TestServer) -> String {
    if let Some(u) = common::external_url() {
        return u;
    }
    format!("postgresql://weir_test@{}/public", s.addr)
}

fn run_script(module: &str, script: &str) {
    if !have(module) {
        return;
    }
    let s = TestServer::start().expect("start server");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers").join(script);
    let out = Command::new(python()).arg(&path).arg(url(&s)).output().expect("run python");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} failed:\n{text}\n{}", s.log_tail());
    print!("{text}");
}

#[test]
fn psycopg3_smoke() {
    run_script("psycopg", "psycopg_smoke.py");
}

#[test]
fn asyncpg_smoke() {
    run_script("asyncpg", "asyncpg_smoke.py");
}

#[test]
fn psycopg3_transactions() {
    run_script("psycopg", "psycopg_txn.py");
}

#[test]
fn sqlalchemy_and_pandas_transactions() {
    if !have("sqlalchemy") || !have("pandas") {
        return;
    }
    run_script("psycopg", "sqlalchemy_txn.py");
}

#[test]
fn sqlalchemy_inspector_and_pandas() {
    if !have("sqlalchemy") || !have("pandas") {
        return;
    }
    run_script("psycopg", "sqlalchemy_inspect.py");
}

/// pgjdbc (Debian's libpostgresql-jdbc-java) with java's single-file launcher.
#[test]
fn pgjdbc_smoke_and_metadata() {
    let jar = std::env::var("WEIR_PGJDBC_JAR").unwrap_or_else(|_| "/usr/share/java/postgresql.jar".into());
    let java_ok = Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    if !java_ok || !Path::new(&jar).exists() {
        let msg = format!("java or pgjdbc ({jar}) is missing (apt-get install default-jdk-headless libpostgresql-jdbc-java)");
        assert!(!in_ci(), "{msg}");
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let s = TestServer::start().expect("start server");
    let (url, user) = match common::external_url() {
        Some(u) => {
            let rest = u.split_once("://").map(|x| x.1).unwrap_or(&u);
            let (user, host) = rest.split_once('@').unwrap_or(("postgres", rest));
            (format!("jdbc:postgresql://{host}"), user.to_string())
        }
        None => (format!("jdbc:postgresql://{}/public", s.addr), "weir_test".to_string()),
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/JdbcSmoke.java");
    let out = Command::new("java").arg("-cp").arg(&jar).arg(&path).arg(&url).arg(&user).output().expect("run java");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "JdbcSmoke failed:\n{text}\n{}", s.log_tail());
    print!("{text}");
}

/// tokio-postgres (Rust): DDL, a parameterized insert in binary format, a
/// select of every type, an error's SQLSTATE, COPY FROM STDIN, and the reg*
/// casts and primary-key catalog rows tools read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_smoke() -> anyhow::Result<()> {
    use futures::SinkExt;
    let s = TestServer::start()?;
    let c = s.connect(None).await?;
    c.batch_execute("DROP TABLE IF EXISTS tp_cpu").await?;
    c.batch_execute(
        "CREATE TABLE tp_cpu (host STRING, ts TIMESTAMP TIME INDEX, usage DOUBLE, n BIGINT, i INT, ok BOOLEAN, PRIMARY KEY (host))",
    )
    .await?;
    let ts = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_067_200);
    let n = c.execute("INSERT INTO tp_cpu VALUES ($1, $2, $3, $4, $5, $6)", &[&"a", &ts, &1.5f64, &(1i64 << 40), &-7i32, &true]).await?;
    assert_eq!(n, 1);
    let row = c.query_one("SELECT host, ts, usage, n, i, ok, 2::smallint, 0.25::real, 'x'::varchar FROM tp_cpu", &[]).await?;
    assert_eq!(row.get::<_, String>(0), "a");
    assert_eq!(row.get::<_, std::time::SystemTime>(1), ts);
    assert_eq!(row.get::<_, f64>(2), 1.5);
    assert_eq!(row.get::<_, i64>(3), 1 << 40);
    assert_eq!(row.get::<_, i32>(4), -7);
    assert!(row.get::<_, bool>(5));
    assert_eq!(row.get::<_, i16>(6), 2);
    assert_eq!(row.get::<_, f32>(7), 0.25);
    assert_eq!(row.get::<_, String>(8), "x");
    assert_eq!(common::sqlstate(c.query("SELECT * FROM no_such_table", &[]).await), "42P01");
    assert_eq!(common::sqlstate(c.query("SELECT 'no_such_table'::regclass", &[]).await), "42P01");
    let sink = c.copy_in("COPY tp_cpu (host, ts, usage) FROM STDIN WITH (FORMAT csv)").await?;
    let mut sink = std::pin::pin!(sink);
    sink.send(bytes::Bytes::from_static(b"b,2024-01-01 00:00:01,2.5\n")).await?;
    assert_eq!(sink.as_mut().finish().await?, 1);
    // reg* casts: the OID in comparisons, the name when printed.
    let oid: i64 = c.query_one("SELECT oid FROM pg_class WHERE relname = 'tp_cpu'", &[]).await?.get(0);
    let row = c
        .query_one(
            "SELECT 'tp_cpu'::regclass::text, $1::bigint::regclass::text, 'int4'::regtype::text, 'public'::regnamespace::text",
            &[&oid],
        )
        .await?;
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, String>(1), row.get::<_, String>(2), row.get::<_, String>(3)),
        ("tp_cpu".into(), "tp_cpu".into(), "integer".into(), "public".into())
    );
    let row = c
        .query_one("SELECT con.conname, pg_get_constraintdef(con.oid) FROM pg_constraint con WHERE con.conrelid = 'tp_cpu'::regclass", &[])
        .await?;
    assert_eq!((row.get::<_, String>(0), row.get::<_, String>(1)), ("tp_cpu_pkey".into(), "PRIMARY KEY (host, ts)".into()));
    Ok(())
}

/// node-postgres (npm `pg`, found through `NODE_PATH`; `.ci/run` installs it).
#[test]
fn node_postgres_smoke() {
    let have_pg = Command::new("node").args(["-e", "require('pg')"]).output().is_ok_and(|o| o.status.success());
    if !have_pg {
        let msg = "node or its `pg` package is missing (npm install pg; set NODE_PATH to its node_modules)";
        assert!(!in_ci(), "{msg}");
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let s = TestServer::start().expect("start server");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/node_pg_smoke.js");
    let out = Command::new("node").arg(&path).arg(url(&s)).output().expect("run node");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node_pg_smoke.js failed:\n{text}\n{}", s.log_tail());
    print!("{text}");
}

/// psql's `\d t` lists the table's primary key (tags + time index) from
/// pg_index / pg_constraint / pg_get_indexdef.
#[test]
fn psql_describe_shows_primary_key() {
    if !Command::new("psql").arg("--version").output().is_ok_and(|o| o.status.success()) {
        assert!(!in_ci(), "psql is missing");
        eprintln!("SKIPPED: psql is missing");
        return;
    }
    if common::external_url().is_some() {
        return; // TIME INDEX is weir's grammar
    }
    let s = TestServer::start().expect("start server");
    let out = Command::new("psql")
        .arg(url(&s))
        .args(["-X", "-v", "ON_ERROR_STOP=1"])
        .args(["-c", "CREATE TABLE psql_t (host STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY (host))", "-c", "\\d psql_t"])
        .output()
        .expect("run psql");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "psql failed:\n{text}\n{}", s.log_tail());
    assert!(text.contains("\"psql_t_pkey\" PRIMARY KEY, btree (host, ts)"), "{text}");
}
