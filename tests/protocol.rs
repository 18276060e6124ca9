//! Bad input over the PostgreSQL protocol: the server answers with errors
//! (with the right SQLSTATE) and keeps serving, on the same connection where
//! the protocol allows it. Runs against a fresh weir, or `WEIR_TEST_URL`.

mod common;

use std::time::Duration;

use common::{sqlstate, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, SimpleQueryMessage};

fn server() -> TestServer {
    TestServer::start().expect("start server")
}

fn host_port(s: &TestServer) -> String {
    let c = s.config(None);
    let host = match &c.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        other => panic!("need a TCP host, got {other:?}"),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

/// A database of its own for one test (tests in this file run in parallel).
async fn fresh_db(s: &TestServer, name: &str) -> Client {
    let admin = s.connect(None).await.expect("connect");
    admin.simple_query(&format!("DROP DATABASE IF EXISTS {name}")).await.expect("drop database");
    admin.simple_query(&format!("CREATE DATABASE {name}")).await.expect("create database");
    s.connect(Some(name)).await.expect("connect to new database")
}

async fn assert_serving(s: &TestServer, after: &str) {
    let c = tokio::time::timeout(Duration::from_secs(10), s.connect(None))
        .await
        .unwrap_or_else(|_| panic!("connect timed out after {after}\n{}", s.log_tail()))
        .unwrap_or_else(|e| panic!("no new connection after {after}: {e}\n{}", s.log_tail()));
    let rows = c.simple_query("SELECT 1").await.unwrap_or_else(|e| panic!("SELECT 1 failed after {after}: {e}"));
    assert!(rows.iter().any(|m| matches!(m, SimpleQueryMessage::Row(_))));
}

/// The first column of every row a simple query answered, across its statements.
fn first_column(msgs: &[SimpleQueryMessage]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_string()),
            _ => None,
        })
        .collect()
}

async fn one_value(c: &Client, sql: &str) -> Option<String> {
    for m in c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")) {
        if let SimpleQueryMessage::Row(r) = m {
            return r.get(0).map(str::to_string);
        }
    }
    panic!("{sql}: no row")
}

// ---- a minimal raw frontend -------------------------------------------

struct Raw {
    s: TcpStream,
}

#[derive(Debug)]
struct Msg {
    tag: u8,
    body: Vec<u8>,
}

impl Msg {
    /// ErrorResponse field `code` (e.g. b'C' → SQLSTATE).
    fn field(&self, code: u8) -> Option<String> {
        let mut i = 0;
        while i < self.body.len() && self.body[i] != 0 {
            let c = self.body[i];
            let end = self.body[i + 1..].iter().position(|b| *b == 0)? + i + 1;
            if c == code {
                return Some(String::from_utf8_lossy(&self.body[i + 1..end]).into_owned());
            }
            i = end + 1;
        }
        None
    }
    fn cstr(&self) -> String {
        let end = self.body.iter().position(|b| *b == 0).unwrap_or(self.body.len());
        String::from_utf8_lossy(&self.body[..end]).into_owned()
    }
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

impl Raw {
    async fn connect(addr: &str) -> Raw {
        Raw { s: TcpStream::connect(addr).await.expect("tcp connect") }
    }

    async fn startup(s: &TestServer) -> (Raw, Vec<Msg>) {
        let mut r = Raw::connect(&host_port(s)).await;
        let user = s.config(None).get_user().unwrap_or("postgres").to_string();
        let mut body = Vec::new();
        body.extend_from_slice(&196608u32.to_be_bytes());
        cstr(&mut body, "user");
        cstr(&mut body, &user);
        cstr(&mut body, "database");
        cstr(&mut body, &s.default_db());
        body.push(0);
        let mut pkt = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        pkt.extend(body);
        r.s.write_all(&pkt).await.unwrap();
        let msgs = r.until_ready().await;
        assert!(msgs.iter().any(|m| m.tag == b'R'), "no AuthenticationOk: {msgs:?}");
        (r, msgs)
    }

    async fn send(&mut self, tag: u8, body: &[u8]) {
        let mut pkt = vec![tag];
        pkt.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        pkt.extend_from_slice(body);
        self.s.write_all(&pkt).await.unwrap();
    }

    async fn read(&mut self) -> Option<Msg> {
        let mut head = [0u8; 5];
        match tokio::time::timeout(Duration::from_secs(10), self.s.read_exact(&mut head)).await {
            Ok(Ok(_)) => {}
            _ => return None,
        }
        let len = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len.saturating_sub(4)];
        tokio::time::timeout(Duration::from_secs(10), self.s.read_exact(&mut body)).await.ok()?.ok()?;
        Some(Msg { tag: head[0], body })
    }

    /// Messages up to and including ReadyForQuery (or until the stream ends).
    async fn until_ready(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        while let Some(m) = self.read().await {
            let done = m.tag == b'Z';
            out.push(m);
            if done {
                break;
            }
        }
        out
    }

    async fn query(&mut self, sql: &str) -> Vec<Msg> {
        let mut b = Vec::new();
        cstr(&mut b, sql);
        self.send(b'Q', &b).await;
        self.until_ready().await
    }
}

fn tags(msgs: &[Msg]) -> String {
    msgs.iter().map(|m| m.tag as char).collect()
}

/// Drain whatever the server sends until it closes or goes quiet.
async fn drain(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(3), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => continue,
            _ => return,
        }
    }
}

// ---- tests ------------------------------------------------------------

#[tokio::test]
async fn garbage_and_truncated_input_do_not_kill_the_server() {
    let s = server();
    let addr = host_port(&s);

    // Random garbage instead of a startup packet.
    let mut t = TcpStream::connect(&addr).await.unwrap();
    let _ = t.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\xff\xfe\x00\x01garbage").await;
    drain(&mut t).await;
    drop(t);
    assert_serving(&s, "HTTP garbage").await;

    // A length that claims far more than is sent, then close.
    let mut t = TcpStream::connect(&addr).await.unwrap();
    let _ = t.write_all(&[0, 0, 0, 100, 0, 3, 0, 0, b'u', b's']).await;
    drop(t);
    assert_serving(&s, "truncated startup packet").await;

    // A length that is absurd (2 GiB) and a length below the minimum.
    for head in [[0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0], [0, 0, 0, 2, 0, 3, 0, 0]] {
        let mut t = TcpStream::connect(&addr).await.unwrap();
        let _ = t.write_all(&head).await;
        drain(&mut t).await;
        drop(t);
        assert_serving(&s, "bad startup length").await;
    }

    // An unknown protocol version.
    let mut t = TcpStream::connect(&addr).await.unwrap();
    let _ = t.write_all(&[0, 0, 0, 8, 0, 9, 0, 9]).await;
    drain(&mut t).await;
    drop(t);
    assert_serving(&s, "unknown protocol version").await;

    // Connect and vanish silently, many times.
    for _ in 0..20 {
        drop(TcpStream::connect(&addr).await.unwrap());
    }
    assert_serving(&s, "20 empty connections").await;
}

#[tokio::test]
async fn unknown_message_after_startup() {
    let s = server();
    let (mut r, _) = Raw::startup(&s).await;
    r.send(b'!', b"hello").await;
    // PostgreSQL answers FATAL 08P01 and closes; either way an error first.
    let m = r.read().await;
    if let Some(m) = &m {
        assert_eq!(m.tag, b'E', "expected ErrorResponse, got {m:?}");
        assert_eq!(m.field(b'C').as_deref(), Some("08P01"), "{m:?}");
    }
    drop(r);
    // A message with a truncated body, then close.
    let (mut r, _) = Raw::startup(&s).await;
    let _ = r.s.write_all(&[b'Q', 0, 0, 0, 50, b'S', b'E']).await;
    drop(r);
    assert_serving(&s, "unknown/truncated message after startup").await;
}

#[tokio::test]
async fn startup_parameters_and_command_tags() {
    let s = server();
    let (mut r, msgs) = Raw::startup(&s).await;
    let mut params = std::collections::HashMap::new();
    for m in msgs.iter().filter(|m| m.tag == b'S') {
        let parts: Vec<&[u8]> = m.body.split(|b| *b == 0).collect();
        params.insert(String::from_utf8_lossy(parts[0]).into_owned(), String::from_utf8_lossy(parts[1]).into_owned());
    }
    let get = |k: &str| params.get(k).cloned().unwrap_or_else(|| panic!("no ParameterStatus {k}: {params:?}"));
    let v = get("server_version");
    assert!(version_ok(&v, s.is_external()), "server_version {v:?} is not plain");
    assert_eq!(get("server_encoding"), "UTF8");
    assert_eq!(get("client_encoding"), "UTF8");
    assert!(get("DateStyle").starts_with("ISO"), "DateStyle {:?}", get("DateStyle"));
    assert_eq!(get("integer_datetimes"), "on");
    assert_eq!(get("standard_conforming_strings"), "on");
    let _ = get("TimeZone");

    r.query("DROP TABLE IF EXISTS proto_tags").await;
    let cases: [(&str, &str); 5] = [
        ("CREATE TABLE proto_tags (a INTEGER, b TEXT)", "CREATE TABLE"),
        ("INSERT INTO proto_tags VALUES (1, 'x'), (2, 'y'), (3, 'z')", "INSERT 0 3"),
        ("SELECT a FROM proto_tags WHERE a > 1", "SELECT 2"),
        ("DELETE FROM proto_tags WHERE a = 1", "DELETE 1"),
        ("DROP TABLE proto_tags", "DROP TABLE"),
    ];
    for (sql, tag) in cases {
        let out = r.query(sql).await;
        let c = out.iter().find(|m| m.tag == b'C').unwrap_or_else(|| panic!("{sql}: no CommandComplete: {out:?}"));
        assert_eq!(c.cstr(), tag, "{sql}");
        assert_eq!(out.last().map(|m| m.tag), Some(b'Z'));
    }
    // Empty and comment-only queries: EmptyQueryResponse + ReadyForQuery.
    for q in ["", "-- ping", "  ;  "] {
        let out = r.query(q).await;
        assert_eq!(tags(&out), "IZ", "{q:?}: {out:?}");
    }
}

fn version_ok(v: &str, external: bool) -> bool {
    let plain = |s: &str| {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    if external {
        // PostgreSQL says `15.18 (Debian ...)`: the leading word is plain.
        plain(v.split_whitespace().next().unwrap_or(""))
    } else {
        plain(v)
    }
}

#[tokio::test]
async fn sql_errors_have_sqlstates_and_the_connection_keeps_working() {
    let s = server();
    let c = fresh_db(&s, "proto_errors").await;
    c.batch_execute("CREATE TABLE pe (a INTEGER, b TEXT)").await.unwrap();
    let cases: &[(&str, &str)] = &[
        ("SELEC 1", "42601"),
        ("SELECT * FROM", "42601"),
        ("SELECT * FROM no_such_table", "42P01"),
        ("SELECT no_such_column FROM pe", "42703"),
        ("CREATE TABLE pe (a INTEGER)", "42P07"),
        ("SELECT 'abc'::int", "22P02"),
        ("SELECT 1/0", "22012"),
        ("SELECT 2147483647::int + 1", "22003"),
        ("INSERT INTO no_such_table VALUES (1)", "42P01"),
        ("INSERT INTO pe (no_such_column) VALUES (1)", "42703"),
        ("INSERT INTO pe VALUES ('x', 'y')", "22P02"),
        // Also 0A000 in PostgreSQL; weir has no CHECK constraints yet.
        ("CREATE TABLE pe_check (a INTEGER CHECK (a > (SELECT 1)))", "0A000"),
        // As PostgreSQL: ORDER BY only in aggregate calls, not in window ones.
        ("SELECT lower(b ORDER BY a) FROM pe", "42809"),
        ("SELECT sum(a ORDER BY b) OVER () FROM pe", "0A000"),
        // Arrays have one dimension in weir (PostgreSQL has more).
        ("SELECT '{{1},{2}}'::int[]", "0A000"),
        // Not PostgreSQL grammar, though sqlparser reads it.
        ("SELECT count(* WHERE a > 1) FROM pe", "42601"),
    ];
    for (sql, want) in cases {
        assert_eq!(sqlstate(c.simple_query(sql).await), *want, "simple query {sql}");
        assert_eq!(one_value(&c, "SELECT 1").await.as_deref(), Some("1"), "after {sql}");
        // The same through the extended protocol.
        let got = match c.prepare(sql).await {
            Err(e) => sqlstate(Err::<(), _>(e)),
            Ok(st) => sqlstate(c.query(&st, &[]).await.map(|r| r.len())),
        };
        assert_eq!(got, *want, "extended {sql}");
        let row = c.query_one("SELECT 1::int4", &[]).await.expect("after extended error");
        assert_eq!(row.get::<_, i32>(0), 1);
    }
}

#[tokio::test]
async fn missing_database_is_3d000() {
    let s = server();
    let e = s.connect(Some("no_such_database_at_all")).await.err().expect("must fail");
    assert_eq!(e.code().map(|c| c.code()), Some("3D000"), "{e}");
    assert_serving(&s, "missing database").await;
}

#[tokio::test]
async fn extended_protocol_types_params_and_errors() {
    let s = server();
    let c = fresh_db(&s, "proto_ext").await;

    // Result column types (RowDescription OIDs) and binary values.
    let st = c.prepare("SELECT 1::int4, 2::int8, 3::int2, 1.5::float8, 2.5::real, 'x'::text, true, NULL::int4").await.unwrap();
    let types: Vec<Type> = st.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, [Type::INT4, Type::INT8, Type::INT2, Type::FLOAT8, Type::FLOAT4, Type::TEXT, Type::BOOL, Type::INT4]);
    let row = c.query_one(&st, &[]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 1);
    assert_eq!(row.get::<_, i64>(1), 2);
    assert_eq!(row.get::<_, i16>(2), 3);
    assert_eq!(row.get::<_, f64>(3), 1.5);
    assert_eq!(row.get::<_, f32>(4), 2.5);
    assert_eq!(row.get::<_, &str>(5), "x");
    assert!(row.get::<_, bool>(6));
    assert_eq!(row.get::<_, Option<i32>>(7), None);

    // Parameter types are inferred (ParameterDescription) and binary params work.
    let st = c.prepare("SELECT $1::int8 + 1, $2::text, $3::float8 * 2, $4::bool").await.unwrap();
    assert_eq!(st.params(), [Type::INT8, Type::TEXT, Type::FLOAT8, Type::BOOL]);
    let row = c.query_one(&st, &[&41i64, &"hi", &1.25f64, &false]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 42);
    assert_eq!(row.get::<_, &str>(1), "hi");
    assert_eq!(row.get::<_, f64>(2), 2.5);
    assert!(!row.get::<_, bool>(3));

    c.batch_execute("CREATE TABLE pp (id INTEGER, name TEXT, score DOUBLE PRECISION)").await.unwrap();
    let ins = c.prepare("INSERT INTO pp VALUES ($1, $2, $3)").await.unwrap();
    assert_eq!(ins.params(), [Type::INT4, Type::TEXT, Type::FLOAT8]);
    for i in 0..5i32 {
        let n = c.execute(&ins, &[&i, &format!("n{i}"), &(i as f64 / 2.0)]).await.unwrap();
        assert_eq!(n, 1);
    }
    let none: Option<f64> = None;
    c.execute(&ins, &[&5i32, &"null score", &none]).await.unwrap();
    let rows = c.query("SELECT id, name FROM pp WHERE id >= $1 AND score IS NOT NULL ORDER BY id", &[&3i32]).await.unwrap();
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(3, "n3".to_string()), (4, "n4".to_string())]);

    // An error at Parse, at Bind/Execute, then the connection still works.
    assert_eq!(sqlstate(c.prepare("SELEC $1").await), "42601");
    assert_eq!(sqlstate(c.query("SELECT 1 / $1::int4", &[&0i32]).await), "22012");
    assert_eq!(sqlstate(c.query("SELECT * FROM pp_missing WHERE id = $1", &[&1i32]).await), "42P01");
    let row = c.query_one("SELECT count(*) FROM pp", &[]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 6);

    // Pipelined: an error in the middle must not disturb the neighbours.
    let (a, b, d) = tokio::join!(
        c.query_one("SELECT $1::int4 + 1", &[&1i32]),
        c.query_one("SELECT 1 / $1::int4", &[&0i32]),
        c.query_one("SELECT $1::text", &[&"after"]),
    );
    assert_eq!(a.unwrap().get::<_, i32>(0), 2);
    assert_eq!(sqlstate(b), "22012");
    assert_eq!(d.unwrap().get::<_, &str>(0), "after");
}

#[tokio::test]
async fn extended_protocol_skips_to_sync_after_an_error() {
    let s = server();
    let (mut r, _) = Raw::startup(&s).await;
    // Parse(bad) Bind Describe Execute Sync: one ErrorResponse, then ReadyForQuery.
    let mut parse = Vec::new();
    cstr(&mut parse, "");
    cstr(&mut parse, "SELEC 1");
    parse.extend_from_slice(&0u16.to_be_bytes());
    r.send(b'P', &parse).await;
    let mut bind = Vec::new();
    cstr(&mut bind, "");
    cstr(&mut bind, "");
    bind.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    r.send(b'B', &bind).await;
    r.send(b'D', b"P\0").await;
    let mut exec = Vec::new();
    cstr(&mut exec, "");
    exec.extend_from_slice(&0u32.to_be_bytes());
    r.send(b'E', &exec).await;
    r.send(b'S', &[]).await;
    let out = r.until_ready().await;
    assert_eq!(tags(&out), "EZ", "{out:?}");
    assert_eq!(out[0].field(b'C').as_deref(), Some("42601"));

    // The same sequence with good SQL now works.
    let mut parse = Vec::new();
    cstr(&mut parse, "");
    cstr(&mut parse, "SELECT 7");
    parse.extend_from_slice(&0u16.to_be_bytes());
    r.send(b'P', &parse).await;
    r.send(b'B', &bind).await;
    r.send(b'D', b"P\0").await;
    r.send(b'E', &exec).await;
    r.send(b'S', &[]).await;
    let out = r.until_ready().await;
    assert_eq!(tags(&out), "12TDCZ", "{out:?}");
    assert_eq!(out[4].cstr(), "SELECT 1");

    // And a simple query after that.
    let out = r.query("SELECT 8").await;
    assert_eq!(tags(&out), "TDCZ", "{out:?}");
}

#[tokio::test]
async fn empty_queries_and_multi_statement_simple_queries() {
    let s = server();
    let c = fresh_db(&s, "proto_multi").await;
    for q in ["", "-- ping", "   "] {
        let msgs = c.simple_query(q).await.unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert!(!msgs.iter().any(|m| matches!(m, SimpleQueryMessage::Row(_))), "{q:?}");
    }
    c.batch_execute("").await.expect("empty batch");

    let msgs = c
        .simple_query(
            "CREATE TABLE m (a INTEGER); INSERT INTO m VALUES (1); INSERT INTO m VALUES (2), (3); \
             SELECT count(*) FROM m; SELECT a FROM m ORDER BY a DESC",
        )
        .await
        .unwrap();
    let mut counts = Vec::new();
    let mut values = Vec::new();
    for m in &msgs {
        match m {
            SimpleQueryMessage::CommandComplete(n) => counts.push(*n),
            SimpleQueryMessage::Row(r) => values.push(r.get(0).unwrap().to_string()),
            _ => {}
        }
    }
    assert_eq!(counts, vec![0, 1, 2, 1, 3]);
    assert_eq!(values, vec!["3", "3", "2", "1"]);

    // A failing statement stops the rest of the query string.
    let e = c.simple_query("INSERT INTO m VALUES (10); SELECT 1/0; INSERT INTO m VALUES (11)").await;
    assert_eq!(sqlstate(e), "22012");
    assert_eq!(one_value(&c, "SELECT count(*) FROM m WHERE a = 11").await.as_deref(), Some("0"));
    assert_eq!(one_value(&c, "SELECT 1").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn show_server_version_is_plain() {
    let s = server();
    let c = s.connect(None).await.unwrap();
    let v = one_value(&c, "SHOW server_version").await.unwrap();
    assert!(version_ok(&v, s.is_external()), "SHOW server_version = {v:?}");
}

/// The statement splitter is the parser's: `;` inside strings, quoted
/// names, dollar quotes and comments does not split, and ADMIN mixes with
/// other statements in one query string.
#[tokio::test]
async fn multi_statement_strings_split_on_tokens() {
    let s = server();
    let c = fresh_db(&s, "proto_split").await;
    let msgs = c
        .simple_query(
            "CREATE TABLE sp (a INTEGER, b TEXT); -- a comment; with a semicolon\n\
             INSERT INTO sp VALUES (1, 'x;y'), (2, $$p;q$$), (3, $t$r';'s$t$) /* ; */;\n\
             SELECT \"b;\" FROM (SELECT b AS \"b;\" FROM sp ORDER BY a) q;;",
        )
        .await
        .unwrap();
    let values = first_column(&msgs);
    assert_eq!(values, vec!["x;y", "p;q", "r';'s"]);

    // A syntax error anywhere runs nothing, and points at the token.
    let e = c.simple_query("INSERT INTO sp VALUES (9, 'no'); SELEC 2").await.unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "42601");
    assert_eq!(db.message(), "syntax error at or near \"SELEC\"");
    assert_eq!(db.position(), Some(&tokio_postgres::error::ErrorPosition::Original(34)));
    let e = c.simple_query("SELECT (1").await.unwrap_err();
    assert_eq!(e.as_db_error().unwrap().message(), "syntax error at end of input");
    assert_eq!(one_value(&c, "SELECT count(*) FROM sp WHERE a = 9").await.as_deref(), Some("0"));

    if s.is_external() {
        return;
    }
    // weir's statements in the middle of a query string.
    c.batch_execute("CREATE TABLE sp_ts (h TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (h))").await.unwrap();
    let msgs = c
        .simple_query(
            "INSERT INTO sp_ts VALUES ('a', '2024-01-01', 1); ADMIN flush_table('sp_' || 'ts'); \
             /* admin; */ SELECT 'admin;'; ADMIN compact_table('sp_ts'); SELECT count(*) FROM sp_ts",
        )
        .await
        .unwrap();
    let values = first_column(&msgs);
    assert_eq!(values, vec!["1", "admin;", "1", "1"]);
    // ADMIN through the extended protocol describes its one column.
    let st = c.prepare("ADMIN flush_table($1)").await.unwrap();
    assert_eq!(st.columns().len(), 1);
    assert_eq!(st.params().len(), 1);
    let rows = c.query(&st, &[&"sp_ts"]).await.unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), 1);
    let e = c.simple_query("ADMIN no_such_function('sp_ts')").await;
    assert_eq!(sqlstate(e), "42883");
    let e = c.simple_query("ADMIN flush_table('no_such_table')").await;
    assert_eq!(sqlstate(e), "42P01");

    // GreptimeDB's USE db switches the connection's database.
    c.batch_execute("DROP DATABASE IF EXISTS proto_split_other; CREATE DATABASE proto_split_other").await.unwrap();
    let msgs = c
        .simple_query(
            "USE proto_split_other; CREATE TABLE u (a INTEGER); INSERT INTO u VALUES (7); \
             SELECT current_database(); USE proto_split; SELECT a FROM proto_split_other.u; SELECT current_database()",
        )
        .await
        .unwrap();
    let values = first_column(&msgs);
    assert_eq!(values, vec!["proto_split_other", "7", "proto_split"]);
    assert_eq!(sqlstate(c.simple_query("USE no_such_database").await), "3D000");
    // Database options would be ignored: refused instead.
    assert_eq!(sqlstate(c.simple_query("CREATE DATABASE proto_split_ttl WITH (ttl = '7d')").await), "0A000");
    c.batch_execute("DROP DATABASE proto_split_other").await.unwrap();
}

/// inet_server_addr() / inet_server_port() name the server's end of this
/// very connection (also against PostgreSQL with WEIR_TEST_URL).
#[tokio::test]
async fn inet_server_addr_is_the_connections_local_address() {
    let s = server();
    let c = s.connect(None).await.expect("connect");
    let hp = host_port(&s);
    let (host, port) = hp.rsplit_once(':').unwrap();
    let addr = one_value(&c, "SELECT inet_server_addr()::text").await.expect("an address over TCP");
    // PostgreSQL prints an inet with its mask only when it is not /32.
    let want: std::net::IpAddr = if host == "localhost" { "127.0.0.1".parse().unwrap() } else { host.parse().unwrap() };
    assert_eq!(addr.trim_end_matches("/32").parse::<std::net::IpAddr>().unwrap(), want);
    assert_eq!(one_value(&c, "SELECT inet_server_port()").await.as_deref(), Some(port));
}

/// A session's temporary tables go when it disconnects (issue 15).
#[tokio::test]
async fn temp_tables_dropped_at_disconnect() {
    let s = server();
    if s.is_external() {
        return;
    }
    let c = fresh_db(&s, "temp_disconnect").await;
    c.simple_query("CREATE TEMP TABLE tdrop (a int4); INSERT INTO tdrop VALUES (1)").await.expect("create temp table");
    // Its own session lists it under its name; others see its private name.
    let own = "SELECT count(*) FROM pg_class WHERE relname = 'tdrop' AND relnamespace <> 2200";
    assert_eq!(one_value(&c, own).await.as_deref(), Some("1"));
    let count = "SELECT count(*) FROM pg_class WHERE relname LIKE 'pg_temp_%tdrop'";
    drop(c);
    let other = s.connect(Some("temp_disconnect")).await.expect("connect");
    let mut left = None;
    for _ in 0..100 {
        left = one_value(&other, count).await;
        if left.as_deref() == Some("0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left.as_deref(), Some("0"), "the temporary table outlived its session");
    assert_eq!(sqlstate(other.simple_query("SELECT * FROM tdrop").await), "42P01");
}

/// The catalog functions answer real values: `pg_relation_size` is the
/// table's flushed (SST) bytes, `pg_total_relation_size` adds its WAL,
/// `pg_database_size` sums the tables, `pg_get_viewdef` is the view's query
/// (as PostgreSQL prints it) and `pg_get_indexdef` the index's definition (weir only: ADMIN).
#[tokio::test]
async fn size_and_definition_functions_answer_real_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).expect("start server");
    let c = fresh_db(&s, "sizes").await;
    c.batch_execute(
        "CREATE TABLE sz (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host));
         CREATE VIEW sz_v AS SELECT host, v FROM sz WHERE v > 1;
         CREATE TABLE plain (a INT, b TEXT);
         CREATE INDEX plain_b ON plain (b)",
    )
    .await
    .unwrap();
    let int = |v: Option<String>| v.unwrap().parse::<i64>().unwrap();
    assert_eq!(int(one_value(&c, "SELECT pg_relation_size('sz')").await), 0, "nothing flushed yet");
    c.batch_execute(
        "INSERT INTO sz SELECT 'h' || (g % 50), TIMESTAMP '2024-01-01' + (g || ' seconds')::interval, g FROM generate_series(1, 5000) g",
    )
    .await
    .unwrap();
    let wal = int(one_value(&c, "SELECT pg_total_relation_size('sz')").await);
    assert!(wal > 5000 * 8, "the WAL holds the rows: {wal}");
    c.batch_execute("ADMIN flush_table('sz')").await.unwrap();
    let data = int(one_value(&c, "SELECT pg_relation_size('sz')").await);
    assert!(data > 1000, "flushed SST bytes: {data}");
    let sst: u64 = walk_bytes(dir.path(), "parquet");
    assert!(sst >= data as u64, "pg_relation_size {data} counts SST files ({sst} bytes of parquet on disk)");
    assert!(int(one_value(&c, "SELECT pg_total_relation_size('sz'::regclass)").await) >= data);
    assert!(int(one_value(&c, "SELECT pg_database_size('sizes')").await) >= data);
    assert_eq!(int(one_value(&c, "SELECT pg_relation_size('sz_v')").await), 0, "a view has no storage");
    let def = one_value(&c, "SELECT pg_get_viewdef('sz_v'::regclass)").await.unwrap();
    assert_eq!(def, " SELECT sz.host,\n    sz.v\n   FROM sz\n  WHERE (sz.v > (1)::double precision);", "as PostgreSQL prints it");
    assert_eq!(
        one_value(&c, "SELECT pg_get_indexdef(oid) FROM pg_class WHERE relname = 'plain_b'").await.as_deref(),
        Some("CREATE INDEX plain_b ON public.plain USING btree (b)")
    );
}

/// Bytes of the files under `dir` whose name ends in `ext`.
fn walk_bytes(dir: &std::path::Path, ext: &str) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += walk_bytes(&p, ext);
        } else if p.extension().is_some_and(|x| x == ext) {
            n += e.metadata().unwrap().len();
        }
    }
    n
}
