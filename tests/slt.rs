//! Runs every `sql-tests/**/*.slt` against a real server over the
//! PostgreSQL protocol with the `sqllogictest` crate.
//!
//! - Default: starts `weir` on a temporary data directory. With
//!   `WEIR_TEST_URL=postgres://postgres@127.0.0.1:55432/postgres` it uses
//!   that server instead (e.g. PostgreSQL 15, to check the expected output).
//! - Each file gets its own database `slt_<path>`; files run in parallel
//!   (`WEIR_SLT_JOBS`, default 3).
//! - Files under `sql-tests/pgwire/` run twice: simple query protocol
//!   (engine label `postgres`) and extended protocol with binary results
//!   (label `postgres-extended`).
//! - Files under `sql-tests/stream/` (TDengine streams: snodes are per
//!   process) each get a weir of their own, so every file starts with no
//!   snode and no stream, whatever runs beside it.
//! - Filter: `cargo test --test slt -- query/join` or `WEIR_SLT_FILTER=...`
//!   (substring of the path under sql-tests/).
//! - `WEIR_SLT_COMPLETE=1` rewrites the expected output of the selected files
//!   from the server's answers (review the diff!).
//! - Errors look like `db error: ERROR: <message> (SQLSTATE 42P01)`, so
//!   `statement error .*42P01`, `statement error relation .* does not exist`
//!   and `statement error (42P01)` all work.
//! - Extended mode only: a SQL line `-- params: 1 | abc | NULL` binds `$1..`
//!   as text-format parameters typed by the server; in simple mode they are
//!   substituted as quoted literals.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Conn, TestServer};
use futures::StreamExt;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tokio_postgres::types::Type;
use tokio_postgres::{Config, SimpleQueryMessage};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Simple,
    Extended,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Simple => "simple",
            Mode::Extended => "extended",
        }
    }
}

use common::DbError;

fn err(msg: impl Into<String>) -> DbError {
    DbError::new(msg)
}

struct SltDb {
    conn: Conn,
    mode: Mode,
}

/// `-- params: a | b | NULL` lines in the SQL.
fn params_of(sql: &str) -> Option<Vec<Option<String>>> {
    let line = sql.lines().find_map(|l| l.trim().strip_prefix("-- params:"))?;
    Some(line.split('|').map(|p| p.trim()).map(|p| if p == "NULL" { None } else { Some(p.to_string()) }).collect())
}

/// Simple mode: `$n` → quoted literal (highest n first so `$1` ≠ `$10`).
fn substitute(sql: &str, params: &[Option<String>]) -> String {
    let mut s = sql.to_string();
    for (i, p) in params.iter().enumerate().rev() {
        let lit = match p {
            None => "NULL".to_string(),
            Some(v) => format!("'{}'", v.replace('\'', "''")),
        };
        s = s.replace(&format!("${}", i + 1), &lit);
    }
    s
}

fn text_value(v: Option<&str>) -> String {
    match v {
        None => "NULL".into(),
        Some("") => "(empty)".into(),
        Some(s) => s.to_string(),
    }
}

fn column_type(ty: &Type) -> DefaultColumnType {
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => DefaultColumnType::Integer,
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => DefaultColumnType::FloatingPoint,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

#[async_trait::async_trait]
impl common::Reconnecting for SltDb {
    fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    async fn run_once(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let mode = self.mode;
        let limit = self.conn.timeout;
        let client = self.conn.client().await?;
        let token = client.cancel_token();
        let fut = async {
            match mode {
                Mode::Simple => SltDb::run_simple(client, sql).await,
                Mode::Extended => SltDb::run_extended(client, sql).await,
            }
        };
        match common::run_with_timeout(limit, token, fut).await {
            Some(r) => r,
            None => {
                self.conn.drop_client();
                Err(err(format!("timeout: no answer in {limit:?}")))
            }
        }
    }
}

impl SltDb {
    async fn run_simple(client: &tokio_postgres::Client, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let sql = match params_of(sql) {
            Some(p) => substitute(sql, &p),
            None => sql.to_string(),
        };
        let msgs = client.simple_query(&sql).await?;
        // Rows of the first statement that returned a row description.
        let mut ncols: Option<usize> = None;
        let mut done = false;
        let mut rows = Vec::new();
        let mut last_count = 0;
        for m in msgs {
            match m {
                SimpleQueryMessage::RowDescription(cols) => {
                    if ncols.is_none() {
                        ncols = Some(cols.len());
                    }
                }
                SimpleQueryMessage::Row(r) if !done => {
                    rows.push((0..r.len()).map(|i| text_value(r.get(i))).collect());
                }
                SimpleQueryMessage::CommandComplete(n) => {
                    if ncols.is_some() {
                        done = true;
                    }
                    last_count = n;
                }
                _ => {}
            }
        }
        Ok(match ncols {
            Some(n) => DBOutput::Rows { types: vec![DefaultColumnType::Any; n], rows },
            None => DBOutput::StatementComplete(last_count),
        })
    }

    async fn run_extended(client: &tokio_postgres::Client, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let params: Vec<common::TextParam> = params_of(sql).unwrap_or_default().into_iter().map(common::TextParam).collect();
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
        let stmt = client.prepare(sql).await?;
        if stmt.columns().is_empty() {
            let n = client.execute(&stmt, &refs).await?;
            return Ok(DBOutput::StatementComplete(n));
        }
        let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
        let rows = client.query(&stmt, &refs).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut vals = Vec::with_capacity(types.len());
            for (i, ty) in types.iter().enumerate() {
                let raw: common::RawValue = row.try_get(i)?;
                let v = common::decode(ty, raw.0).map_err(err)?;
                vals.push(text_value(common::pg_text(ty, &v).as_deref()));
            }
            out.push(vals);
        }
        Ok(DBOutput::Rows { types: types.iter().map(column_type).collect(), rows: out })
    }
}

#[async_trait::async_trait]
impl AsyncDB for SltDb {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        common::Reconnecting::run_retrying(self, sql).await
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        match self.mode {
            Mode::Simple => "postgres",
            Mode::Extended => "postgres-extended",
        }
    }

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }

    fn error_sql_state(e: &DbError) -> Option<String> {
        e.sqlstate.clone()
    }
}

fn find_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            find_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "slt") {
            out.push(p);
        }
    }
}

/// `query/select.slt` + mode → `slt_query_select[_ext]`, at most 63 bytes.
fn db_name(rel: &str, mode: Mode, both: bool) -> String {
    let stem = rel.strip_suffix(".slt").unwrap_or(rel);
    let mut name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    name.truncate(50);
    let suffix = if both && mode == Mode::Extended { "_ext" } else { "" };
    format!("slt_{name}{suffix}")
}

/// `--complete` keeps the type letters a file already has (same count),
/// and fills them in from the column types where it has none.
#[allow(clippy::ptr_arg)]
fn keep_written_types(actual: &Vec<DefaultColumnType>, expected: &Vec<DefaultColumnType>) -> bool {
    !expected.is_empty() && expected.len() == actual.len()
}

struct Job {
    path: PathBuf,
    rel: String,
    mode: Mode,
    db: String,
}

async fn admin_exec(admin: &tokio::sync::Mutex<Conn>, sql: &str) -> anyhow::Result<()> {
    let mut a = admin.lock().await;
    let client = a.client().await?;
    client.simple_query(sql).await.map_err(|e| anyhow::anyhow!("{sql}: {}", common::format_error(&e).0))?;
    Ok(())
}

async fn run_job(job: &Job, base: &Config, admin: &tokio::sync::Mutex<Conn>, complete: bool, labels: &[String]) -> Result<(), String> {
    admin_exec(admin, &format!("DROP DATABASE IF EXISTS {}", job.db)).await.map_err(|e| e.to_string())?;
    admin_exec(admin, &format!("CREATE DATABASE {}", job.db)).await.map_err(|e| e.to_string())?;
    let mut config = base.clone();
    config.dbname(&job.db);
    let mode = job.mode;
    let mut runner = sqllogictest::Runner::new(move || {
        let config = config.clone();
        async move { Ok::<_, DbError>(SltDb { conn: Conn::new(config, QUERY_TIMEOUT).await?, mode }) }
    });
    for l in labels {
        runner.add_label(l);
    }
    runner.set_var("__DATABASE__".into(), job.db.clone());
    let result = if complete {
        runner
            .update_test_file(&job.path, " ", sqllogictest::default_validator, sqllogictest::default_normalizer, keep_written_types)
            .await
            .map_err(|e| e.to_string())
    } else {
        let file = job.path.clone();
        match tokio::time::timeout(Duration::from_secs(600), runner.run_file_async(&file)).await {
            Ok(r) => r.map_err(|e| e.display(false).to_string()),
            Err(_) => Err("file did not finish in 600 s".into()),
        }
    };
    runner.shutdown_async().await;
    drop(runner);
    if result.is_ok() {
        // Best effort: keep failing files' databases around for a look.
        let _ = admin_exec(admin, &format!("DROP DATABASE IF EXISTS {}", job.db)).await;
    }
    result
}

/// Runs `job` on a weir of its own (stopped afterwards).
async fn run_own_server(job: &Job, complete: bool, labels: &[String]) -> Result<(), String> {
    let own = tokio::task::spawn_blocking(TestServer::start).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    let base = own.config(None);
    let admin = tokio::sync::Mutex::new(Conn::new(base.clone(), QUERY_TIMEOUT).await.map_err(|e| common::format_error(&e).0)?);
    let r = run_job(job, &base, &admin, complete, labels).await;
    drop(admin);
    let tail = if r.is_err() { own.log_tail() } else { String::new() };
    let _ = tokio::task::spawn_blocking(move || drop(own)).await;
    match r {
        Ok(()) => Ok(()),
        Err(e) => Err(format!("{e}\n{tail}")),
    }
}

fn main() {
    let code = match real_main() {
        Ok(failed) => {
            if failed == 0 {
                0
            } else {
                1
            }
        }
        Err(e) => {
            eprintln!("slt: {e:#}");
            println!("0 passed, 1 failed");
            1
        }
    };
    std::process::exit(code);
}

fn real_main() -> anyhow::Result<usize> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql-tests");
    let mut filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if let Ok(f) = std::env::var("WEIR_SLT_FILTER") {
        filters.extend(f.split(',').filter(|s| !s.is_empty()).map(String::from));
    }
    let complete = std::env::var("WEIR_SLT_COMPLETE").is_ok_and(|v| v == "1" || v == "true") || std::env::args().any(|a| a == "--complete");
    let jobs_n: usize = std::env::var("WEIR_SLT_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(3).clamp(1, 16);
    let labels: Vec<String> =
        std::env::var("WEIR_SLT_LABELS").unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(String::from).collect();

    let mut files = Vec::new();
    find_files(&root, &mut files);
    let mut jobs = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if !filters.is_empty() && !filters.iter().any(|f| rel.contains(f.as_str())) {
            continue;
        }
        let both = rel.starts_with("pgwire/");
        // --complete rewrites once, from the extended run (it knows column types).
        let modes: &[Mode] = if complete {
            &[Mode::Extended]
        } else if both {
            &[Mode::Simple, Mode::Extended]
        } else {
            &[Mode::Simple]
        };
        for &mode in modes {
            jobs.push(Job { db: db_name(&rel, mode, both), path: path.clone(), rel: rel.clone(), mode });
        }
    }
    if jobs.is_empty() {
        anyhow::bail!("no .slt files under {} match {filters:?}", root.display());
    }

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let server = Arc::new(TestServer::start()?);
    rt.block_on(async move {
        if server.is_external() {
            println!("slt: using server {}", server.addr);
        } else {
            println!("slt: started weir on {}", server.addr);
        }
        let base = server.config(None);
        let admin = tokio::sync::Mutex::new(
            Conn::new(base.clone(), QUERY_TIMEOUT)
                .await
                .map_err(|e| anyhow::anyhow!("connect to {}: {}", server.addr, common::format_error(&e).0))?,
        );
        let started = Instant::now();
        let results: Vec<(String, Mode, Result<(), String>, Duration)> = futures::stream::iter(jobs.iter())
            .map(|job| {
                let base = &base;
                let admin = &admin;
                let labels = &labels;
                let server = &server;
                async move {
                    let t = Instant::now();
                    let r = if job.rel.starts_with("stream/") && !server.is_external() {
                        run_own_server(job, complete, labels).await
                    } else {
                        run_job(job, base, admin, complete, labels).await
                    };
                    let el = t.elapsed();
                    match &r {
                        Ok(()) => println!("ok     {} [{}] ({:.2}s)", job.rel, job.mode.name(), el.as_secs_f64()),
                        Err(e) => println!("FAILED {} [{}] ({:.2}s)\n{}", job.rel, job.mode.name(), el.as_secs_f64(), e),
                    }
                    (job.rel.clone(), job.mode, r, el)
                }
            })
            .buffer_unordered(jobs_n)
            .collect()
            .await;
        let failed: Vec<_> = results.iter().filter(|r| r.2.is_err()).collect();
        let passed = results.len() - failed.len();
        if !failed.is_empty() {
            println!("\nfailed files:");
            for (rel, mode, _, _) in &failed {
                println!("  {rel} [{}]", mode.name());
            }
            if let Some(tail) = Some(server.log_tail()).filter(|t| !t.is_empty()) {
                println!("{tail}");
            }
        }
        if complete {
            println!("slt: rewrote expected output (review with git diff)");
        }
        println!("slt: {:.1}s", started.elapsed().as_secs_f64());
        println!("{passed} passed, {} failed", failed.len());
        Ok(failed.len())
    })
}
