//! Drivers and tools against the server: psycopg 3, asyncpg, SQLAlchemy and
//! pandas (`tests/drivers/*.py`), pgjdbc, node-postgres, pgx (Go),
//! tokio-postgres and psql. `.ci/run` installs them; under `CI=true` a missing
//! driver fails the test, locally it is skipped with a notice. The Python
//! interpreter is `$WEIR_PYTHON`, else `python3`.
//!
//! Every driver connects as a real client would: the server requires TLS and
//! a SCRAM-SHA-256 password (`hostssl … scram-sha-256`, plain connections
//! rejected), with a CA and server certificate made by openssl at test time;
//! the URL carries the password and `sslmode=require` with the CA as
//! `sslrootcert`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

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

/// The superuser's password on the drivers' server.
const PASSWORD: &str = "drv-Secret_pw 1";
/// The same, percent-encoded for URLs.
const PASSWORD_URL: &str = "drv-Secret_pw%201";

/// A weir that requires TLS and SCRAM (or the external `WEIR_TEST_URL` server).
struct Secure {
    server: TestServer,
    /// The CA certificate that signed the server's (None for an external server).
    ca: Option<PathBuf>,
    _certs: Option<common::TlsCerts>,
    _data: Option<tempfile::TempDir>,
}

impl std::ops::Deref for Secure {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl Secure {
    fn start() -> Secure {
        if common::external_url().is_some() {
            return Secure { server: TestServer::start().expect("external server"), ca: None, _certs: None, _data: None };
        }
        let certs = common::TlsCerts::make().expect("openssl could not make the test certificates");
        let data = tempfile::Builder::new().prefix("weir-test-data").tempdir().unwrap();
        // TLS and a password for everyone; a plain connection is refused.
        let hba = "hostssl all all 127.0.0.1/32 scram-sha-256\nhostnossl all all 127.0.0.1/32 reject\n";
        let server = certs.spawn(data.path(), &[("WEIR_SUPERUSER_PASSWORD", PASSWORD)], hba).expect("start server");
        Secure { server, ca: Some(certs.ca()), _certs: Some(certs), _data: Some(data) }
    }

    /// A libpq-style URL with the password, sslmode=require and the CA.
    fn url(&self) -> String {
        if let Some(u) = common::external_url() {
            return u;
        }
        let ca = self.ca.as_ref().unwrap().display();
        format!("postgresql://weir_test:{PASSWORD_URL}@{}/public?sslmode=require&sslrootcert={ca}", self.addr)
    }
}

fn run_script(module: &str, script: &str) {
    if !have(module) {
        return;
    }
    let s = Secure::start();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers").join(script);
    let out = Command::new(python()).arg(&path).arg(s.url()).output().expect("run python");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} failed:\n{text}\n{}", s.log_tail());
    print!("{text}");
}

#[test]
fn psycopg3_smoke() {
    run_script("psycopg", "psycopg_smoke.py");
}

#[test]
fn psycopg3_listen_notify() {
    run_script("psycopg", "psycopg_notify.py");
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
    let s = Secure::start();
    let (url, user, password) = match common::external_url() {
        Some(u) => {
            let rest = u.split_once("://").map(|x| x.1).unwrap_or(&u);
            let (user, host) = rest.split_once('@').unwrap_or(("postgres", rest));
            (format!("jdbc:postgresql://{host}"), user.to_string(), String::new())
        }
        None => {
            let ca = s.ca.as_ref().unwrap().display();
            (format!("jdbc:postgresql://{}/public?sslmode=require&sslrootcert={ca}", s.addr), "weir_test".to_string(), PASSWORD.to_string())
        }
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/JdbcSmoke.java");
    let out = Command::new("java").arg("-cp").arg(&jar).arg(&path).arg(&url).arg(&user).arg(&password).output().expect("run java");
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
    let s = Secure::start();
    let c = if s.is_external() { s.connect(None).await? } else { tls_connect(&s).await? };
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
    // pg_class.oid is an oid (u32), as in PostgreSQL.
    let oid: u32 = c.query_one("SELECT oid FROM pg_class WHERE relname = 'tp_cpu'", &[]).await?.get(0);
    let oid = i64::from(oid);
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
    let s = Secure::start();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/node_pg_smoke.js");
    let out = Command::new("node").arg(&path).arg(s.url()).output().expect("run node");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node_pg_smoke.js failed:\n{text}\n{}", s.log_tail());
    print!("{text}");
}

/// psql's `\d t` lists the table's primary key (tags + time index) from
/// pg_index / pg_constraint / pg_get_indexdef; `\d+`, `\di`, `\dv` work;
/// CREATE INDEX indexes show in `\d` and `\di`; `\dT` runs; `\du` and `\dp`.
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
    let s = Secure::start();
    let out = Command::new("psql")
        .arg(s.url())
        .args(["-X", "-v", "ON_ERROR_STOP=1"])
        .args(["-c", "CREATE TABLE psql_t (host STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY (host))", "-c", "\\d psql_t"])
        .args(["-c", "CREATE VIEW psql_v AS SELECT host FROM psql_t", "-c", "\\d+ psql_t", "-c", "\\di", "-c", "\\dv", "-c", "\\d+ psql_v"])
        .args(["-c", "CREATE INDEX psql_t_v_idx ON psql_t (v)", "-c", "CREATE UNIQUE INDEX psql_t_hv ON psql_t (host, v)"])
        .args(["-c", "\\d psql_t", "-c", "\\di", "-c", "\\dT"])
        .args([
            "-c",
            "CREATE ROLE psql_r LOGIN CREATEDB",
            "-c",
            "GRANT SELECT, INSERT ON psql_t TO psql_r",
            "-c",
            "\\du",
            "-c",
            "\\dp psql_t",
        ])
        .output()
        .expect("run psql");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "psql failed:\n{text}\n{}", s.log_tail());
    assert!(text.contains("\"psql_t_pkey\" PRIMARY KEY, btree (host, ts)"), "{text}");
    // \d+ (storage column, reloptions through a correlated unnest in FROM), \di, \dv.
    assert!(text.contains(" host   | text                        |           |          |         | extended |"), "{text}");
    assert!(text.contains(" public | psql_t_pkey | index | weir_test | psql_t"), "{text}");
    assert!(text.contains(" public | psql_v | view | weir_test"), "{text}");
    assert!(text.contains("View definition:"), "{text}");
    // CREATE INDEX indexes: in \d (from pg_index and pg_get_indexdef) and \di.
    assert!(text.contains("\"psql_t_v_idx\" btree (v)"), "{text}");
    assert!(text.contains("\"psql_t_hv\" UNIQUE, btree (host, v)"), "{text}");
    assert!(text.contains(" public | psql_t_v_idx | index | weir_test | psql_t"), "{text}");
    // \dT: no user types, but the query (pg_type_is_visible, format_type) runs.
    assert!(text.contains("List of data types"), "{text}");
    // \du lists roles with their attributes; \dp a table's ACL.
    assert!(text.contains("List of roles") && text.lines().any(|l| l.starts_with(" psql_r ") && l.contains("| Create DB")), "{text}");
    assert!(text.contains("Access privileges") && text.contains("psql_r=ar/weir_test"), "{text}");
}

/// pgx (Go, Debian's golang-github-jackc-pgx-v4-dev in GOPATH mode): connect
/// with a password over TLS, DDL, a parameterized insert, a select of every
/// type, errors' SQLSTATEs, COPY FROM STDIN, a rolled-back transaction.
#[test]
fn pgx_smoke() {
    let gopath = std::env::var("WEIR_GOPATH").unwrap_or_else(|_| "/usr/share/gocode".into());
    let go_ok = Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
    if !go_ok || !Path::new(&gopath).join("src/github.com/jackc/pgx/v4").exists() {
        let msg = format!("go or pgx v4 ({gopath}) is missing (apt-get install golang-go golang-github-jackc-pgx-v4-dev)");
        assert!(!in_ci(), "{msg}");
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let s = Secure::start();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/pgx_smoke.go");
    // Go's build cache beside the test binaries, so later runs only link.
    let cache =
        std::env::var("GOCACHE").unwrap_or_else(|_| Path::new(env!("CARGO_TARGET_TMPDIR")).join("gocache").to_string_lossy().into_owned());
    let out = Command::new("go")
        .arg("run")
        .arg(&path)
        .arg(s.url())
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .env("GOCACHE", cache)
        .env("GOFLAGS", "")
        .output()
        .expect("run go");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pgx_smoke.go failed:\n{text}\n{}", s.log_tail());
    assert!(text.contains("pgx ok"), "{text}");
    print!("{text}");
}

/// tokio-postgres over TLS: a small `MakeTlsConnect` on tokio-rustls (already
/// built for pgwire) that trusts the test CA, with the superuser's password.
async fn tls_connect(s: &Secure) -> anyhow::Result<tokio_postgres::Client> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(s.ca.as_ref().unwrap())? {
        roots.add(c?)?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut cfg = s.config(None);
    cfg.password(PASSWORD).ssl_mode(tokio_postgres::config::SslMode::Require);
    // A plain connection is refused by the hostnossl rule.
    let plain = cfg.clone().ssl_mode(tokio_postgres::config::SslMode::Disable).connect(tokio_postgres::NoTls).await;
    assert_eq!(common::sqlstate(plain.map(|_| ())), "28000");
    let (client, conn) = cfg.connect(RustlsConnect(Arc::new(config))).await?;
    tokio::spawn(conn);
    Ok(client)
}

struct RustlsConnect(Arc<rustls::ClientConfig>);

struct RustlsConnectOne(Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>);

struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> tokio_postgres::tls::MakeTlsConnect<S> for RustlsConnect {
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnectOne;
    type Error = rustls::Error;
    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnectOne, rustls::Error> {
        let name =
            rustls::pki_types::ServerName::try_from(domain.to_string()).map_err(|_| rustls::Error::General("bad server name".into()))?;
        Ok(RustlsConnectOne(self.0.clone(), name))
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> tokio_postgres::tls::TlsConnect<S> for RustlsConnectOne {
    type Stream = RustlsStream<S>;
    type Error = std::io::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<RustlsStream<S>>> + Send>>;
    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.0);
        Box::pin(async move { Ok(RustlsStream(connector.connect(self.1, stream).await?)) })
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        tokio_postgres::tls::ChannelBinding::none()
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio::io::AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
