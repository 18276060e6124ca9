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
