//! Connection-level authentication: roles, pg_hba rules and methods
//! (trust, reject, scram-sha-256, md5, password), PostgreSQL's 28000 /
//! 28P01 answers, verifiers only in pg_authid and only for superusers, no
//! password in the server's log.

mod common;

use std::time::Duration;

use common::TestServer;
use tokio_postgres::Config;

const SUPER_PW: &str = "Sup3r-secret-pw";

/// A weir with this hba file; the harness's superuser `weir_test` gets
/// password SUPER_PW.
fn start(hba: &str) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let hba_path = dir.path().join("pg_hba.conf");
    std::fs::write(&hba_path, hba).unwrap();
    let data = dir.path().join("data");
    let s = TestServer::spawn_with(&data, &[("WEIR_SUPERUSER_PASSWORD", SUPER_PW)], &["--hba-file", hba_path.to_str().unwrap()]).unwrap();
    (s, dir)
}

fn cfg(s: &TestServer, user: &str, password: Option<&str>) -> Config {
    let mut c = s.config(None);
    c.user(user);
    if let Some(p) = password {
        c.password(p);
    }
    c.connect_timeout(Duration::from_secs(10));
    c
}

async fn try_connect(c: &Config) -> Result<tokio_postgres::Client, (String, String)> {
    match common::connect(c).await {
        Ok(cl) => Ok(cl),
        Err(e) => {
            let db = e.as_db_error().map(|d| (d.code().code().to_string(), d.message().to_string()));
            Err(db.unwrap_or_else(|| ("none".into(), e.to_string())))
        }
    }
}

async fn setup_roles(s: &TestServer) {
    let c = try_connect(&cfg(s, "weir_test", Some(SUPER_PW))).await.expect("superuser connects with its password");
    c.batch_execute(
        "CREATE USER alice PASSWORD 'alice-pw';
         CREATE ROLE bob LOGIN PASSWORD 'bob-pw';
         CREATE ROLE nologin_role PASSWORD 'x-pw';
         CREATE ROLE readers;
         CREATE USER carol PASSWORD 'carol-pw';
         GRANT readers TO carol;
         CREATE USER dave PASSWORD 'dave-pw';",
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn methods_and_rules() {
    let (s, _dir) = start(
        "# first match wins
host all dave 127.0.0.1/32 reject
host all +readers 127.0.0.1/32 password
host all bob 127.0.0.1/32 md5
host all alice 127.0.0.1/32 scram-sha-256
host all weir_test 127.0.0.1/32 scram-sha-256
host all nologin_role 127.0.0.1/32 trust
host all ghost 127.0.0.1/32 trust
host all ghost2 127.0.0.1/32 scram-sha-256
",
    );
    setup_roles(&s).await;
    // SCRAM: good and bad password, and no password at all.
    let c = try_connect(&cfg(&s, "alice", Some("alice-pw"))).await.unwrap();
    let who: String = c.query_one("SELECT current_user", &[]).await.unwrap().get(0);
    assert_eq!(who, "alice");
    let e = try_connect(&cfg(&s, "alice", Some("wrong"))).await.err().unwrap();
    assert_eq!(e, ("28P01".into(), "password authentication failed for user \"alice\"".into()));
    assert!(try_connect(&cfg(&s, "alice", None)).await.is_err());
    // md5 rule: answered with SCRAM (the stored password is a verifier).
    try_connect(&cfg(&s, "bob", Some("bob-pw"))).await.unwrap();
    let e = try_connect(&cfg(&s, "bob", Some("alice-pw"))).await.err().unwrap();
    assert_eq!(e.0, "28P01");
    // password (cleartext) rule for members of +readers.
    try_connect(&cfg(&s, "carol", Some("carol-pw"))).await.unwrap();
    let e = try_connect(&cfg(&s, "carol", Some("nope"))).await.err().unwrap();
    assert_eq!(e, ("28P01".into(), "password authentication failed for user \"carol\"".into()));
    // reject, and no rule at all.
    let e = try_connect(&cfg(&s, "dave", Some("dave-pw"))).await.err().unwrap();
    assert_eq!(
        e,
        ("28000".into(), "pg_hba.conf rejects connection for host \"127.0.0.1\", user \"dave\", database \"public\", no encryption".into())
    );
    let e = try_connect(&cfg(&s, "nobody", Some("x"))).await.err().unwrap();
    assert_eq!(
        e,
        ("28000".into(), "no pg_hba.conf entry for host \"127.0.0.1\", user \"nobody\", database \"public\", no encryption".into())
    );
    // A role that may not log in; a user that is no role (trust and SCRAM).
    let e = try_connect(&cfg(&s, "nologin_role", None)).await.err().unwrap();
    assert_eq!(e, ("28000".into(), "role \"nologin_role\" is not permitted to log in".into()));
    let e = try_connect(&cfg(&s, "ghost", None)).await.err().unwrap();
    assert_eq!(e, ("28000".into(), "role \"ghost\" does not exist".into()));
    let e = try_connect(&cfg(&s, "ghost2", Some("x"))).await.err().unwrap();
    assert_eq!(e.0, "28P01");

    // Verifiers: pg_authid for superusers, in PostgreSQL's format; masked
    // in pg_roles; pg_authid refused to others.
    let su = try_connect(&cfg(&s, "weir_test", Some(SUPER_PW))).await.unwrap();
    let v: String = su.query_one("SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'", &[]).await.unwrap().get(0);
    assert!(v.starts_with("SCRAM-SHA-256$4096:"), "{v}");
    assert!(!v.contains("alice-pw"));
    let alice = try_connect(&cfg(&s, "alice", Some("alice-pw"))).await.unwrap();
    let e = alice.query("SELECT rolpassword FROM pg_authid", &[]).await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42501");
    let masked: String = alice.query_one("SELECT rolpassword FROM pg_roles WHERE rolname = 'alice'", &[]).await.unwrap().get(0);
    assert_eq!(masked, "********");
    let n: i64 = alice
        .query_one(
            "SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid JOIN pg_roles u ON u.oid = m.member \
             WHERE r.rolname = 'readers' AND u.rolname = 'carol'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);

    // Role administration needs a superuser (or CREATEROLE).
    let e = alice.batch_execute("CREATE ROLE eve").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42501");
    let e = alice.batch_execute("ALTER ROLE bob PASSWORD 'x'").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42501");
    // Anyone may change their own password; the old one stops working.
    alice.batch_execute("ALTER ROLE alice PASSWORD 'alice-pw2'").await.unwrap();
    // Neither the system tables nor error messages show a password: alice's
    // last statement in pg_stat_activity is masked, and an error about a
    // statement with a password does not repeat it.
    let activity: Vec<String> =
        su.query("SELECT coalesce(query, '') FROM pg_stat_activity", &[]).await.unwrap().iter().map(|r| r.get::<_, String>(0)).collect();
    assert!(activity.iter().any(|q| q.contains("ALTER ROLE alice") && q.contains("'********'")), "{activity:?}");
    let e = su.batch_execute("CREATE ROLE alice PASSWORD 'dup-secret-pw'").await.unwrap_err();
    let shown = format!("{e:?}");
    assert!(shown.contains("42710") || e.code().is_some_and(|c| c.code() == "42710"), "{shown}");
    assert!(!shown.contains("dup-secret-pw"), "an error shows a password: {shown}");
    let e = su.batch_execute("ALTER ROLE nobody_here PASSWORD 'ghost-secret-pw'").await.unwrap_err();
    assert!(!format!("{e:?}").contains("ghost-secret-pw"), "{e:?}");
    for sql in ["SELECT coalesce(rolpassword, '') FROM pg_roles", "SELECT coalesce(passwd, '') FROM pg_user"] {
        for r in su.query(sql, &[]).await.unwrap() {
            let v: String = r.get(0);
            assert!(!v.starts_with("SCRAM-SHA-256") && !v.contains("alice-pw"), "{sql}: {v}");
        }
    }
    assert_eq!(try_connect(&cfg(&s, "alice", Some("alice-pw"))).await.err().unwrap().0, "28P01");
    try_connect(&cfg(&s, "alice", Some("alice-pw2"))).await.unwrap();
    // ALTER ROLE NOLOGIN, DROP ROLE.
    su.batch_execute("ALTER ROLE bob NOLOGIN").await.unwrap();
    assert_eq!(try_connect(&cfg(&s, "bob", Some("bob-pw"))).await.err().unwrap().0, "28000");
    su.batch_execute("DROP ROLE bob; DROP ROLE IF EXISTS bob").await.unwrap();
    let e = su.batch_execute("DROP ROLE bob").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42704");
    let e = su.batch_execute("CREATE ROLE alice").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42710");
    drop((alice, su));

    // No password in the server's log or in error messages.
    let log = s.log_tail();
    for pw in [SUPER_PW, "alice-pw", "bob-pw", "carol-pw", "wrong", "alice-pw2", "dup-secret-pw", "ghost-secret-pw"] {
        assert!(!log.contains(pw), "log shows a password:\n{log}");
    }
}

/// Without an hba file: trust on loopback (the README's commands).
#[tokio::test(flavor = "multi_thread")]
async fn default_is_loopback_trust() {
    let s = TestServer::start().unwrap();
    if s.is_external() {
        return;
    }
    let c = s.connect(None).await.unwrap();
    let r: bool = c.query_one("SELECT rolsuper FROM pg_roles WHERE rolname = current_user", &[]).await.unwrap().get(0);
    assert!(r);
    let e = try_connect(&cfg(&s, "not_a_role", None)).await.err().unwrap();
    assert_eq!(e, ("28000".into(), "role \"not_a_role\" does not exist".into()));
}

/// psql with these connection settings; (success, stdout + stderr).
fn psql(addr: &str, user: &str, password: &str, extra: &str, sql: &str) -> Option<(bool, String)> {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let out = std::process::Command::new("psql")
        .arg(format!("host={host} port={port} user={user} dbname=public connect_timeout=10 {extra}"))
        .args(["-XAtc", sql])
        .env("PGPASSWORD", password)
        .output()
        .ok()?;
    Some((out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))))
}

/// TLS: sslmode=require and verify-full with psql, hostssl rules require it,
/// hostnossl rules match only plain connections, and a server without
/// certificates refuses sslmode=require.
#[test]
fn tls_required_and_offered() {
    let dir = tempfile::tempdir().unwrap();
    let certs = common::TlsCerts::make();
    let Some(certs) = certs.filter(|_| std::process::Command::new("psql").arg("--version").output().is_ok()) else {
        eprintln!("openssl or psql missing: skipped");
        return;
    };
    let (cert, ca) = (certs.cert(), certs.ca());
    let hba = "hostssl all weir_test 127.0.0.1/32 scram-sha-256\nhostnossl all all 127.0.0.1/32 reject\n";
    let s = certs.spawn(&dir.path().join("data"), &[("WEIR_SUPERUSER_PASSWORD", SUPER_PW)], hba).unwrap();
    let (ok, out) = psql(&s.addr, "weir_test", SUPER_PW, "sslmode=require", "SELECT 1").unwrap();
    assert!(ok && out.trim() == "1", "{out}");
    let verify = format!("sslmode=verify-full sslrootcert={}", ca.display());
    let (ok, out) = psql(&s.addr, "weir_test", SUPER_PW, &verify, "SELECT 41 + 1").unwrap();
    assert!(ok && out.trim() == "42", "{out}");
    // pg_stat_ssl: this session's TLS facts, joined with pg_stat_activity.
    let q = "SELECT s.ssl, s.version, s.cipher, s.bits, a.usename = current_user, ssl_is_used() \
             FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid WHERE s.pid = pg_backend_pid()";
    let (ok, out) = psql(&s.addr, "weir_test", SUPER_PW, &verify, q).unwrap();
    assert!(ok && out.trim() == "t|TLSv1.3|TLS_AES_256_GCM_SHA384|256|t|t", "{out}");
    // Wrong password over TLS.
    let (ok, out) = psql(&s.addr, "weir_test", "nope", &verify, "SELECT 1").unwrap();
    assert!(!ok && out.contains("password authentication failed for user \"weir_test\""), "{out}");
    // Plain connections meet the hostnossl reject rule.
    let (ok, out) = psql(&s.addr, "weir_test", SUPER_PW, "sslmode=disable", "SELECT 1").unwrap();
    assert!(
        !ok && out
            .contains("pg_hba.conf rejects connection for host \"127.0.0.1\", user \"weir_test\", database \"public\", no encryption"),
        "{out}"
    );
    // verify-full against another CA fails.
    let (ok, _) = psql(&s.addr, "weir_test", SUPER_PW, &format!("sslmode=verify-full sslrootcert={}", cert.display()), "SELECT 1").unwrap();
    assert!(!ok);
    drop(s);

    // No certificates: TLS is not offered.
    let plain = TestServer::spawn(&dir.path().join("data2")).unwrap();
    let (ok, out) = psql(&plain.addr, "weir_test", "", "sslmode=require", "SELECT 1").unwrap();
    assert!(!ok && out.contains("does not support SSL"), "{out}");
    let (ok, out) = psql(&plain.addr, "weir_test", "", "sslmode=prefer", "SELECT 1").unwrap();
    assert!(ok && out.trim() == "1", "{out}");
    let q = "SELECT ssl::text || coalesce(version, 'none') || ssl_is_used()::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()";
    let (ok, out) = psql(&plain.addr, "weir_test", "", "sslmode=prefer", q).unwrap();
    assert!(ok && out.trim() == "falsenonefalse", "{out}");
}

/// No password or verifier (or a piece of one: salt, StoredKey, ServerKey)
/// appears in the server's whole log at its most verbose level (WEIR_LOG=
/// trace), in any system table a non-superuser can read, in any error
/// message, or in pg_stat_activity; pg_authid is for superusers only.
/// Covers CREATE / ALTER ROLE … PASSWORD (accepted and refused), a
/// statement with a password that does not parse, and failed logins with
/// the scram-sha-256 and password (cleartext) methods.
#[tokio::test(flavor = "multi_thread")]
async fn no_password_or_verifier_leaks() {
    let dir = tempfile::tempdir().unwrap();
    let hba_path = dir.path().join("pg_hba.conf");
    std::fs::write(&hba_path, "host all plain_user 127.0.0.1/32 password\nhost all all 127.0.0.1/32 scram-sha-256\n").unwrap();
    let s = TestServer::spawn_with(
        &dir.path().join("data"),
        &[("WEIR_SUPERUSER_PASSWORD", SUPER_PW), ("WEIR_LOG", "trace")],
        &["--hba-file", hba_path.to_str().unwrap()],
    )
    .unwrap();
    let su = try_connect(&cfg(&s, "weir_test", Some(SUPER_PW))).await.unwrap();
    let secrets = ["leak-pw-one", "leak-pw-two", "leak-pw-dup", "leak-pw-parse", "leak-pw-ghost", "leak-pw-wrong", "leak-pw-plain"];
    su.batch_execute("CREATE USER leaky PASSWORD 'leak-pw-one'; CREATE USER plain_user PASSWORD 'leak-pw-plain'").await.unwrap();
    su.batch_execute("ALTER USER leaky WITH PASSWORD 'leak-pw-two'").await.unwrap();
    let mut errors = Vec::new();
    for sql in [
        "CREATE USER leaky PASSWORD 'leak-pw-dup'",
        "CREATE USER broken PASSWORD 'leak-pw-parse' NOT_AN_OPTION",
        "ALTER ROLE ghost PASSWORD 'leak-pw-ghost'",
    ] {
        let e = su.batch_execute(sql).await.expect_err(sql);
        let db = e.as_db_error().expect("a server error");
        errors.push(format!("{} {:?} {:?} {:?}", db.message(), db.detail(), db.hint(), db.position()));
    }
    // Failed logins: a wrong SCRAM password, a wrong cleartext one.
    errors.push(try_connect(&cfg(&s, "leaky", Some("leak-pw-wrong"))).await.err().unwrap().1);
    errors.push(try_connect(&cfg(&s, "plain_user", Some("leak-pw-wrong"))).await.err().unwrap().1);
    let leaky = try_connect(&cfg(&s, "leaky", Some("leak-pw-two"))).await.unwrap();
    try_connect(&cfg(&s, "plain_user", Some("leak-pw-plain"))).await.unwrap();

    // The verifiers, as a superuser sees them in pg_authid.
    let verifiers: Vec<String> = su
        .query("SELECT rolpassword FROM pg_authid WHERE rolname IN ('leaky', 'plain_user', 'weir_test')", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(verifiers.len(), 3);
    let mut needles: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
    needles.push(SUPER_PW.into());
    for v in &verifiers {
        assert!(v.starts_with("SCRAM-SHA-256$4096:"), "{v}");
        // The verifier and each base64 piece of it (salt, keys).
        needles.push(v.clone());
        needles.extend(v.split(['$', ':']).filter(|p| p.len() >= 16).map(str::to_string));
    }
    let leaked = |what: &str, text: &str| {
        for n in &needles {
            assert!(!text.contains(n.as_str()), "{what} shows {n}:\n{text}");
        }
    };
    for e in &errors {
        leaked("an error", e);
    }
    // A non-superuser: pg_authid is refused; every other role and user view
    // and the activity view hide passwords.
    let e = leaky.query("SELECT rolpassword FROM pg_authid", &[]).await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42501");
    for c in [&leaky, &su] {
        for sql in [
            "SELECT coalesce(rolpassword, '') FROM pg_roles",
            "SELECT coalesce(passwd, '') FROM pg_user",
            "SELECT coalesce(query, '') FROM pg_stat_activity",
            "SELECT coalesce(rolname, '') FROM pg_roles",
        ] {
            let rows: Vec<String> = c.query(sql, &[]).await.unwrap().iter().map(|r| r.get::<_, String>(0)).collect();
            leaked(sql, &rows.join("\n"));
        }
    }
    drop((leaky, su));
    // The whole log, not its tail.
    let mut log = String::new();
    for name in ["stdout.log", "stderr.log"] {
        log.push_str(&s.log_file(name));
    }
    assert!(log.lines().count() > 5, "a trace-level log: {log}");
    leaked("the log", &log);
}

/// The first start takes the superuser's password from the file named by
/// `superuser_password_file` (its trailing newline dropped), ahead of the
/// environment variable; only the verifier is stored.
#[tokio::test(flavor = "multi_thread")]
async fn superuser_password_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let pw_file = dir.path().join("su.pw");
    std::fs::write(&pw_file, "From-a-file-pw\n").unwrap();
    let conf = dir.path().join("weir.toml");
    std::fs::write(&conf, format!("superuser_password_file = {:?}\n", pw_file.display().to_string())).unwrap();
    let hba = dir.path().join("pg_hba.conf");
    std::fs::write(&hba, "host all all 127.0.0.1/32 scram-sha-256\n").unwrap();
    let s = TestServer::spawn_with(
        &dir.path().join("data"),
        &[("WEIR_SUPERUSER_PASSWORD", "env-pw-ignored")],
        &["--config", conf.to_str().unwrap(), "--hba-file", hba.to_str().unwrap()],
    )
    .unwrap();
    assert_eq!(try_connect(&cfg(&s, "weir_test", Some("env-pw-ignored"))).await.err().unwrap().0, "28P01");
    let c = try_connect(&cfg(&s, "weir_test", Some("From-a-file-pw"))).await.unwrap();
    let v: String = c.query_one("SELECT rolpassword FROM pg_authid WHERE rolname = 'weir_test'", &[]).await.unwrap().get(0);
    assert!(v.starts_with("SCRAM-SHA-256$4096:") && !v.contains("From-a-file"), "{v}");
}
