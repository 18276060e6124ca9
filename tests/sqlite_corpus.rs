//! The SQLite sqllogictest corpus against a server over the PostgreSQL
//! protocol, record by record: a failing record is counted and the file goes
//! on. Run it with `scripts/slt_corpus.sh [files...]` (not part of `cargo test`).
//!
//! - Corpus: `WEIR_SLT_CORPUS_DIR`, default `../shared/sqllogictest/sqlite/`
//!   beside the repository. Arguments name files in it (or paths); none = all.
//! - Server: `WEIR_TEST_URL` or a weir started on a temporary data directory.
//! - Label `postgresql`: `skipif postgresql` / `onlyif postgresql` apply,
//!   conditional `halt`s are honoured.
//! - Values are formatted as the original sqllogictest program does, by the
//!   record's column letters: `I` integer, `R` `%.3f`, `T` text, `NULL`,
//!   `(empty)`. Queries use the extended protocol (types known).
//! - `hash-threshold`: sqllogictest-rs 0.29 applies it itself after the sort
//!   mode (`N values hashing to <md5 of each value + "\n">`), like SQLite's
//!   program; expected values are compared one per line.
//! - `WEIR_CORPUS_TIMEOUT` seconds per query (default 10); a lost connection
//!   is re-opened for the next record. `WEIR_CORPUS_JOBS` files at once
//!   (default 2). Failures go to `WEIR_CORPUS_LOG` (default
//!   `target/tmp/sqlite_corpus_failures.log`).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Conn, TestServer, Value};
use futures::StreamExt;
use sqllogictest::{AsyncDB, ColumnType, Condition, DBOutput, DefaultColumnType, QueryExpect, Record};
use tokio_postgres::types::Type;
use tokio_postgres::Config;

const LABEL: &str = "postgresql";

use common::DbError;

/// The column letters of the record being run, shared with the driver.
type Letters = Arc<Mutex<Vec<char>>>;

struct CorpusDb {
    conn: Conn,
    letters: Letters,
}

/// SQLite's text → number conversion reads the longest numeric prefix.
fn numeric_prefix(s: &str) -> f64 {
    let s = s.trim_start();
    let mut end = 0;
    let b = s.as_bytes();
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut seen_e = false;
    while end < b.len() {
        let c = b[end];
        let ok = match c {
            b'0'..=b'9' => {
                seen_digit = true;
                true
            }
            b'+' | b'-' => end == 0 || matches!(b[end - 1], b'e' | b'E'),
            b'.' if !seen_dot && !seen_e => {
                seen_dot = true;
                true
            }
            b'e' | b'E' if seen_digit && !seen_e => {
                seen_e = true;
                true
            }
            _ => false,
        };
        if !ok {
            break;
        }
        end += 1;
    }
    let mut t = &s[..end];
    while !t.is_empty() && t.parse::<f64>().is_err() {
        t = &t[..t.len() - 1];
    }
    t.parse().unwrap_or(0.0)
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
        Value::Numeric(s) | Value::Text(s) | Value::Other(s) => numeric_prefix(s),
        Value::Null => 0.0,
    }
}

/// One value as the original sqllogictest program prints it for `letter`.
fn format_value(letter: char, ty: &Type, v: &Value) -> String {
    if *v == Value::Null {
        return "NULL".into();
    }
    match letter {
        'I' => match v {
            Value::Int(i) => i.to_string(),
            Value::Bool(b) => (*b as i64).to_string(),
            Value::Numeric(s) if s.parse::<i64>().is_ok() => s.clone(),
            other => (as_f64(other) as i64).to_string(),
        },
        'R' => format!("{:.3}", as_f64(v)),
        _ => {
            let s = match v {
                Value::Bool(b) => (*b as i64).to_string(),
                other => common::pg_text(ty, other).unwrap_or_default(),
            };
            if s.is_empty() {
                "(empty)".into()
            } else {
                s.chars().map(|c| if (' '..='~').contains(&c) { c } else { '@' }).collect()
            }
        }
    }
}

#[async_trait::async_trait]
impl AsyncDB for CorpusDb {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        common::Reconnecting::run_retrying(self, sql).await
    }

    async fn shutdown(&mut self) {}

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }

    fn error_sql_state(e: &DbError) -> Option<String> {
        e.sqlstate.clone()
    }
}

#[async_trait::async_trait]
impl common::Reconnecting for CorpusDb {
    fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    async fn run_once(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let letters = self.letters.lock().unwrap().clone();
        let limit = self.conn.timeout;
        let client = self.conn.client().await?;
        let token = client.cancel_token();
        let fut = async {
            let stmt = client.prepare(sql).await?;
            if stmt.columns().is_empty() {
                let n = client.execute(&stmt, &[]).await?;
                return Ok(DBOutput::StatementComplete(n));
            }
            let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
            let rows = client.query(&stmt, &[]).await?;
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                let mut vals = Vec::with_capacity(types.len());
                for (i, ty) in types.iter().enumerate() {
                    let raw: common::RawValue = row.try_get(i)?;
                    let v = common::decode(ty, raw.0).map_err(DbError::new)?;
                    vals.push(format_value(letters.get(i).copied().unwrap_or('T'), ty, &v));
                }
                out.push(vals);
            }
            Ok(DBOutput::Rows { types: vec![DefaultColumnType::Any; types.len()], rows: out })
        };
        match common::run_with_timeout(limit, token, fut).await {
            Some(r) => r,
            None => {
                self.conn.drop_client();
                Err(DbError::new(format!("timeout: no answer in {limit:?}")))
            }
        }
    }
}

/// SQLite's files list one value per line; accept that layout, or one row
/// per line as sqllogictest-rs writes it.
fn corpus_validator(normalizer: sqllogictest::Normalizer, actual: &[Vec<String>], expected: &[String]) -> bool {
    let expected: Vec<String> = expected.iter().map(normalizer).collect();
    let flat: Vec<String> = actual.iter().flatten().map(normalizer).collect();
    flat == expected || sqllogictest::default_validator(normalizer, actual, &expected)
}

fn skipped(conditions: &[Condition]) -> bool {
    conditions.iter().any(|c| match c {
        Condition::OnlyIf { label } => label != LABEL,
        Condition::SkipIf { label } => label == LABEL,
    })
}

fn condition_line(line: &str) -> Option<Condition> {
    let mut t = line.split_whitespace();
    let kind = t.next()?;
    let label = t.next()?.to_string();
    match kind {
        "onlyif" => Some(Condition::OnlyIf { label }),
        "skipif" => Some(Condition::SkipIf { label }),
        _ => None,
    }
}

/// Make the SQLite layout parseable by sqllogictest-rs and apply `halt`:
/// trailing `# comments` on condition lines go; a `halt` whose conditions
/// hold for PostgreSQL ends the file there, otherwise it (and its
/// conditions) become comments. Line numbers are kept.
fn preprocess(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Vec<usize> = Vec::new(); // indices of condition lines just before
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(cond) = condition_line(trimmed) {
            let (kind, label) = match &cond {
                Condition::OnlyIf { label } => ("onlyif", label),
                Condition::SkipIf { label } => ("skipif", label),
            };
            pending.push(out.len());
            out.push(format!("{kind} {label}"));
            continue;
        }
        if trimmed == "halt" {
            let conds: Vec<Condition> = pending.iter().filter_map(|&i| condition_line(&out[i])).collect();
            if !skipped(&conds) {
                out.truncate(pending.first().copied().unwrap_or(out.len()));
                break;
            }
            for &i in &pending {
                out[i] = format!("# (not for {LABEL}) {}", out[i]);
            }
            out.push(format!("# (not for {LABEL}) halt"));
            pending.clear();
            continue;
        }
        pending.clear();
        out.push(line.to_string());
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[derive(Default, Clone)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
}

type Runner = sqllogictest::Runner<CorpusDb, Box<dyn FnMut() -> futures::future::BoxFuture<'static, Result<CorpusDb, DbError>> + Send>>;

fn make_runner(config: &Config, letters: &Letters, timeout: Duration) -> Runner {
    let config = config.clone();
    let letters = letters.clone();
    let make: Box<dyn FnMut() -> futures::future::BoxFuture<'static, Result<CorpusDb, DbError>> + Send> = Box::new(move || {
        let config = config.clone();
        let letters = letters.clone();
        Box::pin(async move { Ok(CorpusDb { conn: Conn::new(config, timeout).await?, letters }) })
    });
    let mut r = sqllogictest::Runner::new(make);
    r.add_label(LABEL);
    r.with_validator(corpus_validator);
    r
}

async fn admin_exec(admin: &tokio::sync::Mutex<Conn>, sql: &str) -> Result<(), String> {
    let mut a = admin.lock().await;
    let client = a.client().await.map_err(|e| common::format_error(&e).0)?;
    client.simple_query(sql).await.map(|_| ()).map_err(|e| format!("{sql}: {}", common::format_error(&e).0))
}

async fn run_file(
    path: &Path,
    base: &Config,
    admin: &tokio::sync::Mutex<Conn>,
    timeout: Duration,
    log: &Mutex<std::fs::File>,
) -> Result<Counts, String> {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let stem: String = name
        .trim_end_matches(".test")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .take(50)
        .collect();
    let db = format!("corpus_{stem}");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let records =
        sqllogictest::parse_with_name::<DefaultColumnType>(&preprocess(&text), name.as_str()).map_err(|e| format!("parse {name}: {e}"))?;

    admin_exec(admin, &format!("DROP DATABASE IF EXISTS {db}")).await?;
    admin_exec(admin, &format!("CREATE DATABASE {db}")).await?;
    let mut config = base.clone();
    config.dbname(&db);
    let letters: Letters = Arc::new(Mutex::new(Vec::new()));
    let mut runner = make_runner(&config, &letters, timeout);
    // Records that set runner state, replayed when the runner is rebuilt.
    let mut state: Vec<Record<DefaultColumnType>> = Vec::new();
    let mut counts = Counts::default();
    let outer = timeout * 2 + Duration::from_secs(15);

    for record in records {
        let conds = match &record {
            Record::Statement { conditions, .. } | Record::Query { conditions, .. } => conditions.clone(),
            Record::HashThreshold { .. } | Record::Control(_) => {
                state.push(record.clone());
                let _ = runner.run_async(record).await;
                continue;
            }
            _ => continue,
        };
        if skipped(&conds) {
            counts.skipped += 1;
            continue;
        }
        if let Record::Query { expected: QueryExpect::Results { types, .. }, .. } = &record {
            *letters.lock().unwrap() = types.iter().map(|t| t.to_char()).collect();
        }
        let loc = match &record {
            Record::Statement { loc, .. } | Record::Query { loc, .. } => loc.clone(),
            _ => unreachable!(),
        };
        match tokio::time::timeout(outer, runner.run_async(record)).await {
            Ok(Ok(_)) => counts.passed += 1,
            Ok(Err(e)) => {
                counts.failed += 1;
                let mut f = log.lock().unwrap();
                let _ = writeln!(f, "{}\n", e.display(false));
            }
            Err(_) => {
                counts.failed += 1;
                let mut f = log.lock().unwrap();
                let _ = writeln!(f, "record hung for {outer:?}, reconnecting\nat {loc}\n");
                drop(f);
                runner = make_runner(&config, &letters, timeout);
                for r in &state {
                    let _ = runner.run_async(r.clone()).await;
                }
            }
        }
    }
    runner.shutdown_async().await;
    drop(runner);
    let _ = admin_exec(admin, &format!("DROP DATABASE IF EXISTS {db}")).await;
    Ok(counts)
}

fn main() {
    match real_main() {
        Ok(()) => {}
        Err(e) => {
            eprintln!("sqlite_corpus: {e:#}");
            std::process::exit(2);
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let dir = std::env::var("WEIR_SLT_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/sqllogictest/sqlite"));
    let timeout = Duration::from_secs(std::env::var("WEIR_CORPUS_TIMEOUT").ok().and_then(|v| v.parse().ok()).unwrap_or(10));
    let jobs: usize = std::env::var("WEIR_CORPUS_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(2).max(1);
    let log_path = std::env::var("WEIR_CORPUS_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_TARGET_TMPDIR")).join("sqlite_corpus_failures.log"));

    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let mut files: Vec<PathBuf> = Vec::new();
    if args.is_empty() {
        for e in std::fs::read_dir(&dir).map_err(|e| anyhow::anyhow!("corpus dir {}: {e}", dir.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "test") {
                files.push(p);
            }
        }
        files.sort();
    } else {
        for a in args {
            let p = PathBuf::from(&a);
            let p = if p.exists() { p } else { dir.join(&a) };
            anyhow::ensure!(p.exists(), "no corpus file {a} (looked in {})", dir.display());
            files.push(p);
        }
    }

    if let Some(parent) = log_path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let log = Mutex::new(std::fs::File::create(&log_path)?);
    let server = TestServer::start()?;
    println!("corpus: {} files from {}, server {}", files.len(), dir.display(), server.addr);
    let base = server.config(None);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async {
        let admin = tokio::sync::Mutex::new(
            Conn::new(base.clone(), timeout).await.map_err(|e| anyhow::anyhow!("connect: {}", common::format_error(&e).0))?,
        );
        let start = Instant::now();
        let results: Vec<(String, Result<Counts, String>, Duration)> = futures::stream::iter(files.iter())
            .map(|f| {
                let (base, admin, log) = (&base, &admin, &log);
                async move {
                    let t = Instant::now();
                    let r = run_file(f, base, admin, timeout, log).await;
                    let name = f.file_name().unwrap().to_string_lossy().to_string();
                    match &r {
                        Ok(c) => println!(
                            "{name:40} passed {:6} failed {:6} skipped {:6} {:8.1}s",
                            c.passed,
                            c.failed,
                            c.skipped,
                            t.elapsed().as_secs_f64()
                        ),
                        Err(e) => println!("{name:40} ERROR {e}"),
                    }
                    (name, r, t.elapsed())
                }
            })
            .buffer_unordered(jobs)
            .collect()
            .await;
        let mut total = Counts::default();
        let mut errors = 0;
        for (_, r, _) in &results {
            match r {
                Ok(c) => {
                    total.passed += c.passed;
                    total.failed += c.failed;
                    total.skipped += c.skipped;
                }
                Err(_) => errors += 1,
            }
        }
        println!(
            "corpus total: passed {} failed {} skipped {} ({} files, {} could not run) in {:.1}s; failures in {}",
            total.passed,
            total.failed,
            total.skipped,
            results.len(),
            errors,
            start.elapsed().as_secs_f64(),
            log_path.display()
        );
        println!("{} passed, {} failed, {} skipped", total.passed, total.failed, total.skipped);
        anyhow::ensure!(errors == 0, "{errors} files could not run");
        Ok(())
    })
}
