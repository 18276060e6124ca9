//! Shared helpers for the integration tests: start a `weir` server (or use
//! the one named by `WEIR_TEST_URL`), connect to it, and format values and
//! errors the way PostgreSQL prints them.
#![allow(dead_code)]

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::{Client, Config, NoTls};

/// `WEIR_TEST_URL=postgres://user@host:port/db` points the tests at a server
/// that is already running (for instance PostgreSQL 15, to check the tests
/// themselves); then no `weir` process is started.
pub const URL_ENV: &str = "WEIR_TEST_URL";

/// Is the target an external server (`WEIR_TEST_URL`) rather than a spawned weir?
pub fn external_url() -> Option<String> {
    std::env::var(URL_ENV).ok().filter(|s| !s.trim().is_empty())
}

/// A server under test: either a `weir` child process on a data directory,
/// or an external server named by `WEIR_TEST_URL`.
pub struct TestServer {
    config: Config,
    child: Option<Child>,
    /// Holds the data directory when the server owns it.
    _data: Option<tempfile::TempDir>,
    data_dir: Option<PathBuf>,
    /// Where the child's stdout/stderr go.
    logs: Option<tempfile::TempDir>,
    pub addr: String,
}

impl TestServer {
    /// The external server if `WEIR_TEST_URL` is set, else a fresh weir on a
    /// temporary data directory.
    pub fn start() -> anyhow::Result<TestServer> {
        if let Some(url) = external_url() {
            return TestServer::external(&url);
        }
        let data = tempfile::Builder::new().prefix("weir-test-data").tempdir()?;
        let dir = data.path().to_path_buf();
        let mut s = TestServer::spawn(&dir)?;
        s._data = Some(data);
        Ok(s)
    }

    pub fn external(url: &str) -> anyhow::Result<TestServer> {
        let config: Config = url.parse().map_err(|e| anyhow::anyhow!("bad {URL_ENV} {url:?}: {e}"))?;
        Ok(TestServer { config, child: None, _data: None, data_dir: None, logs: None, addr: url.to_string() })
    }

    pub fn is_external(&self) -> bool {
        self.child.is_none() && self.data_dir.is_none()
    }

    /// Start `weir --data-dir DIR --listen 127.0.0.1:0` and wait for its
    /// `weir listening on HOST:PORT` line.
    pub fn spawn(data_dir: &Path) -> anyhow::Result<TestServer> {
        TestServer::spawn_env(data_dir, &[])
    }

    /// [`TestServer::spawn`] with extra environment variables for the server.
    pub fn spawn_env(data_dir: &Path, env: &[(&str, &str)]) -> anyhow::Result<TestServer> {
        TestServer::spawn_with(data_dir, env, &[])
    }

    /// [`TestServer::spawn`] with extra environment variables and arguments.
    pub fn spawn_with(data_dir: &Path, env: &[(&str, &str)], args: &[&str]) -> anyhow::Result<TestServer> {
        let logs = tempfile::Builder::new().prefix("weir-test-logs").tempdir()?;
        let out_path = logs.path().join("stdout.log");
        let err_path = logs.path().join("stderr.log");
        // WEIR_TEST_BIN runs another build (or a stand-in) with the same contract.
        let bin = std::env::var("WEIR_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_weir").to_string());
        let child = Command::new(bin)
            .envs(env.iter().copied())
            .args(args)
            // The harness connects as weir_test: the first start makes it the superuser.
            .arg("--superuser")
            .arg("weir_test")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(File::create(&out_path)?)
            .stderr(File::create(&err_path)?)
            .spawn()?;
        let mut server = TestServer {
            config: Config::new(),
            child: Some(child),
            _data: None,
            data_dir: Some(data_dir.to_path_buf()),
            logs: Some(logs),
            addr: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut out = String::new();
            File::open(&out_path)?.read_to_string(&mut out)?;
            if let Some(addr) = out.lines().find_map(|l| l.trim().strip_prefix("weir listening on ")) {
                let addr = addr.trim().to_string();
                let (host, port) = addr.rsplit_once(':').ok_or_else(|| anyhow::anyhow!("bad listen line {addr:?}"))?;
                let mut config = Config::new();
                config.host(host).port(port.parse()?).user("weir_test").dbname("public").connect_timeout(Duration::from_secs(10));
                server.config = config;
                server.addr = addr;
                return Ok(server);
            }
            if let Some(status) = server.child.as_mut().unwrap().try_wait()? {
                anyhow::bail!("weir exited with {status} before listening\n{}", server.log_tail());
            }
            if Instant::now() > deadline {
                anyhow::bail!("weir printed no 'weir listening on' line in 60 s\n{}", server.log_tail());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Connection settings for `db`, or for the server's default database.
    pub fn config(&self, db: Option<&str>) -> Config {
        let mut c = self.config.clone();
        if let Some(db) = db {
            c.dbname(db);
        }
        if c.get_connect_timeout().is_none() {
            c.connect_timeout(Duration::from_secs(10));
        }
        c
    }

    /// The default database's name (`public` for weir).
    pub fn default_db(&self) -> String {
        self.config
            .get_dbname()
            .map(str::to_string)
            .or_else(|| self.config.get_user().map(str::to_string))
            .unwrap_or_else(|| "public".into())
    }

    pub async fn connect(&self, db: Option<&str>) -> Result<Client, tokio_postgres::Error> {
        connect(&self.config(db)).await
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// SIGTERM, then wait for the process to exit (SIGKILL after `grace`).
    /// Returns whether it exited on its own.
    pub fn stop(&mut self, grace: Duration) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let deadline = Instant::now() + grace;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return true,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    }

    /// `kill -9`: no chance to flush or clean up.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Has the child exited (crashed)?
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// The whole of one of the server's logs (`stdout.log`, `stderr.log`).
    #[allow(dead_code)]
    pub fn log_file(&self, name: &str) -> String {
        self.logs.as_ref().map(|l| std::fs::read_to_string(l.path().join(name)).unwrap_or_default()).unwrap_or_default()
    }

    /// The last lines the server printed, for failure messages.
    pub fn log_tail(&self) -> String {
        let Some(logs) = &self.logs else {
            return String::new();
        };
        let mut s = String::new();
        for name in ["stdout.log", "stderr.log"] {
            let text = std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(40);
            s.push_str(&format!("--- weir {name} (last {} lines)\n", lines.len() - from));
            for l in &lines[from..] {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop(Duration::from_secs(10));
        }
    }
}

/// Connect and drive the connection on the current tokio runtime.
pub async fn connect(config: &Config) -> Result<Client, tokio_postgres::Error> {
    let (client, conn) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// `db error: ERROR: <message> (SQLSTATE 42P01)` for server errors, so both a
/// message regex and `.*42P01` match; the plain error text otherwise.
pub fn format_error(e: &tokio_postgres::Error) -> (String, Option<String>) {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code().to_string();
        (format!("db error: {}: {} (SQLSTATE {})", db.severity(), db.message(), code), Some(code))
    } else {
        let mut s = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(inner) = src {
            let t = inner.to_string();
            if !s.contains(&t) {
                s.push_str(": ");
                s.push_str(&t);
            }
            src = inner.source();
        }
        (s, e.code().map(|c| c.code().to_string()))
    }
}

/// An error for the sqllogictest drivers: the text sqllogictest matches, the
/// SQLSTATE, and whether the connection is gone.
#[derive(Debug)]
pub struct DbError {
    pub msg: String,
    pub sqlstate: Option<String>,
    /// The connection was already closed: the request was never sent.
    pub closed: bool,
    /// FATAL: the server ends the connection.
    pub fatal: bool,
}

impl DbError {
    pub fn new(msg: impl Into<String>) -> DbError {
        DbError { msg: msg.into(), sqlstate: None, closed: false, fatal: false }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for DbError {}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> Self {
        let (msg, sqlstate) = format_error(&e);
        let fatal = e.as_db_error().is_some_and(|d| matches!(d.severity(), "FATAL" | "PANIC"));
        DbError { msg, sqlstate, closed: e.is_closed(), fatal }
    }
}

/// The SQLSTATE and message of a failing statement.
pub async fn fails(c: &Client, sql: &str) -> (String, String) {
    match c.simple_query(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => {
            let d = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
            (d.code().code().to_string(), d.message().to_string())
        }
    }
}

/// The SQLSTATE of a failed call, or a panic-friendly description.
pub fn sqlstate(r: Result<impl std::fmt::Debug, tokio_postgres::Error>) -> String {
    match r {
        Ok(v) => format!("no error (got {v:?})"),
        Err(e) => match e.code() {
            Some(c) => c.code().to_string(),
            None => format!("no SQLSTATE: {}", format_error(&e).0),
        },
    }
}

/// A column value as the raw bytes the server sent (binary format), for
/// any type: the test formats them itself.
pub struct RawValue<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for RawValue<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(Some(raw)))
    }
    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(None))
    }
    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// A typed value decoded from the binary format.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// numeric, kept as its PostgreSQL text.
    Numeric(String),
    Text(String),
    /// Anything else, already in PostgreSQL's text form.
    Other(String),
}

fn be<const N: usize>(raw: &[u8], at: usize) -> Result<[u8; N], String> {
    raw.get(at..at + N).and_then(|s| s.try_into().ok()).ok_or_else(|| format!("short binary value ({} bytes)", raw.len()))
}

/// Decode a binary-format value of type `ty`.
pub fn decode(ty: &Type, raw: Option<&[u8]>) -> Result<Value, String> {
    let Some(raw) = raw else {
        return Ok(Value::Null);
    };
    let v = match *ty {
        Type::BOOL => Value::Bool(raw.first().copied().unwrap_or(0) != 0),
        Type::INT2 => Value::Int(i16::from_be_bytes(be(raw, 0)?) as i64),
        Type::INT4 => Value::Int(i32::from_be_bytes(be(raw, 0)?) as i64),
        Type::INT8 => Value::Int(i64::from_be_bytes(be(raw, 0)?)),
        Type::OID | Type::REGCLASS | Type::REGPROC | Type::REGTYPE | Type::XID => Value::Int(u32::from_be_bytes(be(raw, 0)?) as i64),
        Type::FLOAT4 => Value::Float(f32::from_be_bytes(be(raw, 0)?) as f64),
        Type::FLOAT8 => Value::Float(f64::from_be_bytes(be(raw, 0)?)),
        Type::NUMERIC => Value::Numeric(numeric_text(raw)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON | Type::XML => {
            Value::Text(String::from_utf8_lossy(raw).into_owned())
        }
        Type::CHAR => Value::Text(String::from_utf8_lossy(raw).into_owned()),
        Type::TIMESTAMP => Value::Other(timestamp_text(i64::from_be_bytes(be(raw, 0)?))),
        Type::TIMESTAMPTZ => {
            // Printed as in a session with TimeZone=UTC.
            let us = i64::from_be_bytes(be(raw, 0)?);
            let mut s = timestamp_text(us);
            if us != i64::MAX && us != i64::MIN {
                s.push_str("+00");
            }
            Value::Other(s)
        }
        Type::DATE => Value::Other(date_text(i32::from_be_bytes(be(raw, 0)?))),
        Type::TIME => Value::Other(time_text(i64::from_be_bytes(be(raw, 0)?))),
        Type::INTERVAL => {
            Value::Other(interval_text(i64::from_be_bytes(be(raw, 0)?), i32::from_be_bytes(be(raw, 8)?), i32::from_be_bytes(be(raw, 12)?)))
        }
        Type::BYTEA => {
            let mut s = String::from("\\x");
            for b in raw {
                s.push_str(&format!("{b:02x}"));
            }
            Value::Other(s)
        }
        Type::UUID => {
            let h: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            if h.len() != 32 {
                return Err("bad uuid".into());
            }
            Value::Other(format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
        }
        _ => match ty.kind() {
            tokio_postgres::types::Kind::Array(elem) => Value::Other(array_text(elem, raw)?),
            _ => return Err(format!("no decoder for type {} (oid {})", ty.name(), ty.oid())),
        },
    };
    Ok(v)
}

/// A one-dimensional binary array (array_send) in array_out's text form.
fn array_text(elem: &Type, raw: &[u8]) -> Result<String, String> {
    let i32_at = |at: usize| -> Result<i32, String> { Ok(i32::from_be_bytes(be(raw, at)?)) };
    let ndim = i32_at(0)?;
    let sent = i32_at(8)? as u32;
    if sent != elem.oid() {
        return Err(format!("array of {} holds element oid {sent}", elem.name()));
    }
    if ndim == 0 {
        return Ok("{}".into());
    }
    if ndim != 1 {
        return Err(format!("{ndim}-dimensional array"));
    }
    let n = i32_at(12)?;
    let mut at = 20;
    let mut items = Vec::new();
    for _ in 0..n {
        let len = i32_at(at)?;
        at += 4;
        if len < 0 {
            items.push("NULL".to_string());
            continue;
        }
        let bytes = raw.get(at..at + len as usize).ok_or("short array element")?;
        at += len as usize;
        let s = pg_text(elem, &decode(elem, Some(bytes))?).unwrap_or_default();
        let quote = s.is_empty()
            || s.eq_ignore_ascii_case("NULL")
            || s.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_ascii_whitespace());
        items.push(if quote { format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")) } else { s });
    }
    if at != raw.len() {
        return Err("trailing bytes after array".into());
    }
    Ok(format!("{{{}}}", items.join(",")))
}

/// A value as PostgreSQL prints it in text format (`t`/`f`, shortest floats…).
pub fn pg_text(ty: &Type, v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => {
            if *ty == Type::FLOAT4 {
                pg_float4(*f as f32)
            } else {
                pg_float8(*f)
            }
        }
        Value::Numeric(s) | Value::Text(s) | Value::Other(s) => s.clone(),
    })
}

/// float8out with extra_float_digits >= 1 (PostgreSQL 12+ default): the
/// shortest exact digits; exponent form when exp < -4 or exp >= 15.
pub fn pg_float8(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    shortest(&format!("{f:e}"), 15)
}

/// float4out: the same with the fixed-point range exp < 6.
pub fn pg_float4(f: f32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    shortest(&format!("{f:e}"), 6)
}

/// Re-lay Rust's shortest `{:e}` output (`-1.25e-5`) in PostgreSQL's style.
fn shortest(e: &str, max_exp: i32) -> String {
    let (neg, e) = match e.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, e),
    };
    let (mant, exp) = e.split_once('e').unwrap_or((e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if digits == "0" {
        out.push('0');
        return out;
    }
    if (-4..max_exp).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat('0').take(int_len - digits.len()));
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat('0').take((-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

/// The binary numeric format to its text (`get_str_from_var`).
pub fn numeric_text(raw: &[u8]) -> Result<String, String> {
    let ndigits = i16::from_be_bytes(be(raw, 0)?) as usize;
    let weight = i16::from_be_bytes(be(raw, 2)?) as i32;
    let sign = u16::from_be_bytes(be(raw, 4)?);
    let dscale = u16::from_be_bytes(be(raw, 6)?) as i32;
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let mut digits = Vec::with_capacity(ndigits);
    for i in 0..ndigits {
        digits.push(i16::from_be_bytes(be(raw, 8 + 2 * i)?) as i32);
    }
    let digit = |i: i32| -> i32 {
        if i < 0 || i as usize >= digits.len() {
            0
        } else {
            digits[i as usize]
        }
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                s.push_str(&digit(i).to_string());
            } else {
                s.push_str(&format!("{:04}", digit(i)));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut i = weight + 1;
        while (frac.len() as i32) < dscale {
            frac.push_str(&format!("{:04}", digit(i)));
            i += 1;
        }
        frac.truncate(dscale as usize);
        s.push_str(&frac);
    }
    Ok(s)
}

/// Days since 1970-01-01 → (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days between 1970-01-01 and 2000-01-01 (PostgreSQL's epoch).
const PG_EPOCH_DAYS: i64 = 10_957;
const US_PER_DAY: i64 = 86_400_000_000;

fn ymd_text(days_since_1970: i64) -> String {
    let (y, m, d) = civil_from_days(days_since_1970);
    if y <= 0 {
        format!("{:04}-{:02}-{:02} BC", 1 - y, m, d)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

fn hms_text(us_of_day: i64) -> String {
    let secs = us_of_day / 1_000_000;
    let frac = us_of_day % 1_000_000;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

/// Microseconds since 2000-01-01 → `2024-01-01 00:00:00[.123]`.
pub fn timestamp_text(us: i64) -> String {
    if us == i64::MAX {
        return "infinity".into();
    }
    if us == i64::MIN {
        return "-infinity".into();
    }
    let days = us.div_euclid(US_PER_DAY);
    let rest = us.rem_euclid(US_PER_DAY);
    let date = ymd_text(days + PG_EPOCH_DAYS);
    match date.strip_suffix(" BC") {
        Some(d) => format!("{d} {} BC", hms_text(rest)),
        None => format!("{date} {}", hms_text(rest)),
    }
}

pub fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        d => ymd_text(d as i64 + PG_EPOCH_DAYS),
    }
}

pub fn time_text(us: i64) -> String {
    hms_text(us)
}

/// IntervalStyle `postgres`: `1 year 2 mons 3 days 04:05:06`.
pub fn interval_text(us: i64, days: i32, months: i32) -> String {
    // PostgreSQL's EncodeInterval (IntervalStyle postgres): a field after a
    // negative one gets an explicit '+'.
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    for (n, unit) in [((months / 12) as i64, "year"), ((months % 12) as i64, "mon"), (days as i64, "day")] {
        if n == 0 {
            continue;
        }
        let sep = if is_zero { "" } else { " " };
        let plus = if is_before && n > 0 { "+" } else { "" };
        out.push_str(&format!("{sep}{plus}{n} {unit}{}", if n != 1 { "s" } else { "" }));
        is_before = n < 0;
        is_zero = false;
    }
    if is_zero || us != 0 {
        let sign = if us < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        out.push_str(&format!("{}{sign}{}", if is_zero { "" } else { " " }, hms_text(us.abs())));
    }
    out
}

/// A query parameter sent in text format, typed by the server (NULL when None).
#[derive(Debug, Clone)]
pub struct TextParam(pub Option<String>);

impl tokio_postgres::types::ToSql for TextParam {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            None => Ok(tokio_postgres::types::IsNull::Yes),
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(tokio_postgres::types::IsNull::No)
            }
        }
    }
    fn accepts(_ty: &Type) -> bool {
        true
    }
    fn encode_format(&self, _ty: &Type) -> tokio_postgres::types::Format {
        tokio_postgres::types::Format::Text
    }
    tokio_postgres::types::to_sql_checked!();
}

/// A connection that reconnects when it was lost and runs each request
/// under a timeout (cancelling the query and dropping the connection when
/// it expires, so a slow server cannot hang a test run).
pub struct Conn {
    pub config: Config,
    client: Option<Client>,
    pub timeout: Duration,
}

impl Conn {
    pub async fn new(config: Config, timeout: Duration) -> Result<Conn, tokio_postgres::Error> {
        let client = connect(&config).await?;
        Ok(Conn { config, client: Some(client), timeout })
    }

    /// The live client, reconnecting first when the connection was lost.
    pub async fn client(&mut self) -> Result<&Client, tokio_postgres::Error> {
        if self.client.as_ref().map_or(true, |c| c.is_closed()) {
            self.client = None;
            self.client = Some(connect(&self.config).await?);
        }
        Ok(self.client.as_ref().unwrap())
    }

    /// Forget the connection (after a timeout: it may still be busy with
    /// the old query); the next `client()` reconnects.
    pub fn drop_client(&mut self) {
        self.client = None;
    }
}

/// Run `fut` under `limit`; on expiry send a CancelRequest (best effort) and
/// return `None`: the caller should then drop that connection.
pub async fn run_with_timeout<T>(
    limit: Duration,
    token: tokio_postgres::CancelToken,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => Some(r),
        Err(_) => {
            let _ = tokio::time::timeout(Duration::from_secs(2), token.cancel_query(NoTls)).await;
            None
        }
    }
}

/// A sqllogictest database over a [`Conn`] that re-opens a closed
/// connection: `run_retrying` resends a statement once when the connection
/// was found closed before sending, and drops the client after a FATAL
/// error so the next statement reconnects.
#[async_trait::async_trait]
pub trait Reconnecting: Send {
    fn conn(&mut self) -> &mut Conn;
    async fn run_once(&mut self, sql: &str) -> Result<sqllogictest::DBOutput<sqllogictest::DefaultColumnType>, DbError>;

    async fn run_retrying(&mut self, sql: &str) -> Result<sqllogictest::DBOutput<sqllogictest::DefaultColumnType>, DbError> {
        let mut r = self.run_once(sql).await;
        if r.as_ref().is_err_and(|e| e.closed) {
            self.conn().drop_client();
            r = self.run_once(sql).await;
        }
        if r.as_ref().is_err_and(|e| e.closed || e.fatal) {
            self.conn().drop_client();
        }
        r
    }
}

/// The rows of a simple query, each as its values joined by `|` (NULL as
/// `NULL`), sorted; panics with the SQLSTATE text on an error.
pub async fn sorted_rows(c: &Client, sql: &str) -> Vec<String> {
    let msgs = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {}", format_error(&e).0));
    let mut out: Vec<String> = msgs
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect::<Vec<_>>().join("|"))
            }
            _ => None,
        })
        .collect();
    out.sort();
    out
}

/// A CA and a server certificate for 127.0.0.1 / localhost (made with the
/// openssl CLI at test time), for servers that offer or require TLS.
pub struct TlsCerts {
    pub dir: tempfile::TempDir,
}

impl TlsCerts {
    /// None when openssl is missing or fails.
    pub fn make() -> Option<TlsCerts> {
        let dir = tempfile::Builder::new().prefix("weir-test-tls").tempdir().ok()?;
        let run = |args: &[&str]| {
            Command::new("openssl").args(args).current_dir(dir.path()).output().ok().filter(|o| o.status.success()).map(|_| ())
        };
        let ca = [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=weir test CA",
        ];
        run(&ca)?;
        run(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"])?;
        std::fs::write(dir.path().join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").ok()?;
        let sign = [
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ];
        run(&sign)?;
        Some(TlsCerts { dir })
    }

    /// The CA certificate that signed the server's (`sslrootcert`).
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.crt")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }

    /// Start a weir with these certificates and `hba` as its pg_hba.conf.
    pub fn spawn(&self, data_dir: &Path, env: &[(&str, &str)], hba: &str) -> anyhow::Result<TestServer> {
        let hba_file = self.dir.path().join("pg_hba.conf");
        std::fs::write(&hba_file, hba)?;
        let (h, c, k) = (hba_file.display().to_string(), self.cert().display().to_string(), self.key().display().to_string());
        TestServer::spawn_with(data_dir, env, &["--hba-file", &h, "--ssl-cert-file", &c, "--ssl-key-file", &k])
    }
}
