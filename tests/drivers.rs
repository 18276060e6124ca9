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
