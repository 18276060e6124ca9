//! The PostgreSQL protocol front door (pgwire): startup, simple and
//! extended query, result encoding with PostgreSQL's OIDs and formats.
//!
//! May import `sql` and below; nothing imports `server`.

mod encode;
pub mod hba;
pub mod metrics;
mod socket;

use std::fmt::Debug;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use futures::{stream, Sink, SinkExt};
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, ServerParameterProvider, StartupHandler,
};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, PgWireServerHandlers, Type, METADATA_DATABASE, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::net::TcpListener;

use crate::error::WeirError;
use crate::sql::{Engine, Prepared, QueryResult, Session, TxState};
use crate::types::zone::DtCtx;
use crate::types::SqlType;

fn pg_error(e: &WeirError) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".to_string(), e.sqlstate().to_string(), e.message.clone());
    info.detail = e.detail.clone();
    info.hint = e.hint.clone();
    info.position = e.position.map(|p| p.to_string());
    info
}

fn user_error(e: &WeirError) -> PgWireError {
    PgWireError::UserError(Box::new(pg_error(e)))
}

fn pg_type(ty: SqlType) -> Type {
    Type::from_oid(ty.pg_oid()).unwrap_or(Type::TEXT)
}

fn sql_type_of(t: &Type) -> Option<SqlType> {
    match t.oid() {
        oid => crate::sql::wire::scalar_of_oid(oid).or_else(|| Some(SqlType::Array(crate::types::Elem::from_array_oid(oid)?))),
    }
}

/// Running sessions by backend pid, for CancelRequest: (secret, flag).
type CancelRegistry =
    Arc<Mutex<std::collections::HashMap<i32, (pgwire::messages::startup::SecretKey, Arc<std::sync::atomic::AtomicBool>)>>>;

/// One connection: its session and the pgwire handlers around it.
pub struct Connection {
    cancels: CancelRegistry,
    pid: i32,
    engine: Arc<Engine>,
    session: Arc<Mutex<Option<Session>>>,
    parser: Arc<WeirQueryParser>,
    idle: Arc<IdleWatch>,
    hba: Arc<hba::Hba>,
    auth: Arc<Mutex<Auth>>,
    /// The TLS facts of the socket, known after the handshake (pg_stat_ssl).
    ssl: Arc<Mutex<Option<crate::exec::activity::SslInfo>>>,
    /// The socket's local address (inet_server_addr).
    local: Option<std::net::SocketAddr>,
}

/// Where a connection's authentication exchange stands.
#[derive(Default)]
enum Auth {
    #[default]
    None,
    /// SCRAM: the client-first message is awaited, then the client-final one.
    /// `valid`: the role exists and has a password (else the
    /// exchange is played to its end and fails, as PostgreSQL's mock auth).
    ScramFirst {
        secret: Option<crate::catalog::roles::ScramVerifier>,
        valid: bool,
    },
    ScramFinal {
        waiting: Box<pgwire::api::auth::sasl::scram::ScramServerAuthWaitingForClientFinal>,
        valid: bool,
    },
    /// A cleartext password is awaited (method `password`).
    Cleartext {
        secret: Option<crate::catalog::roles::ScramVerifier>,
    },
}

fn fatal(code: &str, msg: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("FATAL".into(), code.into(), msg)))
}

/// When an idle session in a transaction block times out
/// (`idle_in_transaction_session_timeout`).
#[derive(Default)]
struct IdleWatch {
    /// (deadline while idle in a block, connection closed)
    state: Mutex<(Option<std::time::Instant>, bool)>,
    wake: tokio::sync::Notify,
}

/// Ends a connection left idle in a transaction block past its timeout:
/// FATAL 25P03, as PostgreSQL, then the socket is shut down (pgwire's loop
/// ends and the session, with its open block, is dropped).
async fn watch_idle(idle: Arc<IdleWatch>, sock: std::net::TcpStream) {
    loop {
        let (deadline, closed) = *idle.state.lock();
        if closed {
            return;
        }
        match deadline {
            None => idle.wake.notified().await,
            Some(d) if std::time::Instant::now() < d => {
                tokio::select! {
                    _ = tokio::time::sleep_until(d.into()) => {}
                    _ = idle.wake.notified() => {}
                }
            }
            Some(_) => {
                use std::io::Write;
                let mut body = Vec::new();
                for (k, v) in
                    [(b'S', "FATAL"), (b'V', "FATAL"), (b'C', "25P03"), (b'M', "terminating connection due to idle-in-transaction timeout")]
                {
                    body.push(k);
                    body.extend_from_slice(v.as_bytes());
                    body.push(0);
                }
                body.push(0);
                let mut msg = vec![b'E'];
                msg.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
                msg.extend_from_slice(&body);
                let _ = (&sock).write_all(&msg);
                let _ = sock.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
}

pub struct WeirQueryParser {
    session: Arc<Mutex<Option<Session>>>,
}

struct Params {
    superuser: bool,
}

impl ServerParameterProvider for Params {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<std::collections::HashMap<String, String>> {
        let mut m = std::collections::HashMap::new();
        for (k, v) in [
            ("server_version", "15.0"),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("TimeZone", "UTC"),
            ("IntervalStyle", "postgres"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("in_hot_standby", "off"),
            ("default_transaction_read_only", "off"),
            ("search_path", "\"$user\", public"),
        ] {
            m.insert(k.to_string(), v.to_string());
        }
        m.insert("is_superuser".into(), if self.superuser { "on" } else { "off" }.into());
        m.insert("application_name".into(), client.metadata().get("application_name").cloned().unwrap_or_default());
        m.insert("session_authorization".into(), client.metadata().get(METADATA_USER).cloned().unwrap_or_default());
        Some(m)
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_else(|| "weir".into());
                let db = client.metadata().get(METADATA_DATABASE).cloned().unwrap_or_else(|| user.clone());
                let ip = client.socket_addr().ip();
                let ssl = client.is_secure();
                let cat = &self.engine.catalog;
                let enc = if ssl { "SSL encryption" } else { "no encryption" };
                let Some(rule) = self.hba.find(cat, Some(ip), ssl, &db, &user) else {
                    return Err(fatal(
                        "28000",
                        format!("no pg_hba.conf entry for host \"{ip}\", user \"{user}\", database \"{db}\", {enc}"),
                    ));
                };
                let role = cat.role(&user);
                let secret = role.as_ref().and_then(|r| r.password.as_deref()).and_then(crate::catalog::roles::ScramVerifier::parse);
                let valid = role.is_some() && secret.is_some();
                use hba::Method;
                match rule.method {
                    Method::Reject => {
                        return Err(fatal(
                            "28000",
                            format!("pg_hba.conf rejects connection for host \"{ip}\", user \"{user}\", database \"{db}\", {enc}"),
                        ))
                    }
                    Method::Trust => return self.finish_startup(client, &user, &db).await,
                    // PostgreSQL answers md5 with SCRAM when the stored
                    // password is a SCRAM verifier, and ours all are.
                    Method::ScramSha256 | Method::Md5 => {
                        *self.auth.lock() = Auth::ScramFirst { secret, valid };
                        client.set_state(pgwire::api::PgWireConnectionState::AuthenticationInProgress);
                        client
                            .send(PgWireBackendMessage::Authentication(pgwire::messages::startup::Authentication::SASL(vec![
                                "SCRAM-SHA-256".into(),
                            ])))
                            .await?;
                    }
                    Method::Password => {
                        *self.auth.lock() = Auth::Cleartext { secret: if valid { secret } else { None } };
                        client.set_state(pgwire::api::PgWireConnectionState::AuthenticationInProgress);
                        client
                            .send(PgWireBackendMessage::Authentication(pgwire::messages::startup::Authentication::CleartextPassword))
                            .await?;
                    }
                }
                Ok(())
            }
            PgWireFrontendMessage::PasswordMessageFamily(msg) => {
                let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_else(|| "weir".into());
                let db = client.metadata().get(METADATA_DATABASE).cloned().unwrap_or_else(|| user.clone());
                let failed = || fatal("28P01", format!("password authentication failed for user \"{user}\""));
                let state = std::mem::take(&mut *self.auth.lock());
                match state {
                    Auth::None => Err(fatal("08P01", "unexpected password message".into())),
                    Auth::Cleartext { secret } => {
                        let pw = msg.into_password()?;
                        match secret {
                            Some(v) if v.matches(&pw.password) => self.finish_startup(client, &user, &db).await,
                            _ => Err(failed()),
                        }
                    }
                    Auth::ScramFirst { secret, valid } => {
                        use pgwire::api::auth::sasl::scram::{ScramSecret, ScramServerAuth};
                        let init = msg.into_sasl_initial_response()?;
                        if init.auth_method != "SCRAM-SHA-256" {
                            return Err(fatal("28000", "client selected an invalid SASL authentication mechanism".into()));
                        }
                        let v = match secret {
                            Some(v) => v,
                            None => crate::catalog::roles::ScramVerifier::generate("").map_err(|e| user_error(&e))?,
                        };
                        let scram_secret = ScramSecret::Verifier {
                            salt: v.salt.clone(),
                            iterations: v.iterations as usize,
                            stored_key: v.stored_key.clone(),
                            server_key: v.server_key.clone(),
                        };
                        let data = init.data.unwrap_or_default();
                        let (first, waiting) = ScramServerAuth::new()
                            .on_client_first_message_with_secret(&data, scram_secret)
                            .map_err(|_| fatal("08P01", "malformed SCRAM message".into()))?;
                        *self.auth.lock() = Auth::ScramFinal { waiting: Box::new(waiting), valid };
                        client
                            .send(PgWireBackendMessage::Authentication(pgwire::messages::startup::Authentication::SASLContinue(
                                first.into_bytes().into(),
                            )))
                            .await?;
                        Ok(())
                    }
                    Auth::ScramFinal { waiting, valid } => {
                        let resp = msg.into_sasl_response()?;
                        match waiting.on_client_final_message(&resp.data) {
                            Ok(final_msg) if valid => {
                                client
                                    .send(PgWireBackendMessage::Authentication(pgwire::messages::startup::Authentication::SASLFinal(
                                        final_msg.into_bytes().into(),
                                    )))
                                    .await?;
                                self.finish_startup(client, &user, &db).await
                            }
                            _ => Err(failed()),
                        }
                    }
                }
            }
            _ => Ok(()),
        }
    }
}

impl Connection {
    /// After authentication: the role may log in, the database exists;
    /// then the session starts.
    async fn finish_startup<C>(&self, client: &mut C, user: &str, db: &str) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self.engine.catalog.role(user) {
            None => return Err(fatal("28000", format!("role \"{user}\" does not exist"))),
            Some(r) if !r.login => return Err(fatal("28000", format!("role \"{user}\" is not permitted to log in"))),
            Some(_) => {}
        }
        if !self.engine.catalog.database_exists(db) {
            return Err(fatal("3D000", format!("database \"{db}\" does not exist")));
        }
        if let Err(e) = crate::sql::privilege::connect_allowed(&self.engine.catalog, user, db) {
            let mut info = pg_error(&e);
            info.severity = "FATAL".into();
            return Err(PgWireError::UserError(Box::new(info)));
        }
        let mut sess = Session::new(self.engine.clone(), db, user);
        // Rows go out as they are computed (see `streamed`).
        sess.stream_results = true;
        // Backend key data for cancel requests: our pid counter and a
        // secret from the clock and address (not cryptographic).
        let secret =
            pgwire::messages::startup::SecretKey::I32((crate::exec::functions::now_micros() as i32) ^ (self.pid.wrapping_mul(0x5bd1_e995)));
        client.set_pid_and_secret_key(self.pid, secret.clone());
        self.cancels.lock().insert(self.pid, (secret, sess.cancel.clone()));
        if let Some(app) = client.metadata().get("application_name") {
            sess.settings.insert("application_name".into(), app.clone());
        }
        // Settings a client may send in the start-up packet (as pg_regress
        // and drivers do); a value PostgreSQL would refuse is ignored here.
        let mut startup: Vec<(String, String)> = Vec::new();
        for name in ["timezone", "datestyle", "intervalstyle", "extra_float_digits", "search_path", "bytea_output", "client_min_messages"] {
            let v = client.metadata().iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
            if let Some(v) = v {
                startup.push((name.to_string(), v));
            }
        }
        if let Some(opts) = client.metadata().get("options") {
            startup.extend(startup_options(opts));
        }
        for (name, v) in startup {
            let _ = sess.set_startup_setting(&name.to_ascii_lowercase(), &v);
        }
        sess.register(self.pid);
        let local = self.local;
        self.engine.activity.update(self.pid, |r| r.server_addr = local);
        let ssl = self.ssl.lock().clone();
        self.engine.activity.update(self.pid, |r| r.ssl = ssl);
        *self.session.lock() = Some(sess);
        finish_authentication(client, &Params { superuser: self.engine.catalog.is_superuser(user) }).await?;
        Ok(())
    }
}

/// The `-c name=value` (and `--name=value`) settings of the start-up
/// packet's `options`, split on whitespace that no backslash escapes.
fn startup_options(opts: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = opts.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        let kv = if w == "-c" {
            it.next()
        } else if let Some(rest) = w.strip_prefix("--").or_else(|| w.strip_prefix("-c")) {
            Some(rest.to_string())
        } else {
            None
        };
        if let Some((k, v)) = kv.as_deref().and_then(|kv| kv.split_once('=')) {
            out.push((k.replace('-', "_"), v.to_string()));
        }
    }
    out
}

impl Connection {
    fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R {
        self.with_session_on(true, f)
    }

    /// `blocking`: `f` may take long or wait (a statement), so it runs in
    /// `block_in_place`; false for in-memory bookkeeping, for which handing
    /// the worker to another thread costs more than the work.
    fn with_session_on<R>(&self, blocking: bool, f: impl FnOnce(&mut Session) -> R) -> R {
        let mut guard = self.session.lock();
        self.idle.state.lock().0 = None;
        let s = guard.as_mut().expect("session after startup");
        let r = if blocking { tokio::task::block_in_place(|| f(s)) } else { f(s) };
        let deadline = s.idle_in_transaction_timeout().map(|t| std::time::Instant::now() + t);
        self.idle.state.lock().0 = deadline;
        if deadline.is_some() {
            self.idle.wake.notify_one();
        }
        r
    }

    /// pgwire only moves a failed block ('E') to idle, never back to 'T';
    /// ROLLBACK TO SAVEPOINT does that. So a statement of a failed block
    /// starts from 'T': its error response makes it 'E' again, a ROLLBACK TO
    /// leaves it 'T', a COMMIT or ROLLBACK makes it idle.
    fn prime_status<C: ClientInfo>(&self, client: &mut C) {
        let failed = self.session.lock().as_ref().is_some_and(|s| s.tx == TxState::Failed);
        if failed {
            client.set_transaction_status(pgwire::messages::response::TransactionStatus::Transaction);
        }
    }

    /// Run a statement *and encode its results* inside one panic guard: a
    /// panic anywhere in between is an error response (XX000), never a
    /// dropped connection. The session's lock does not poison.
    fn with_session_guarded<R>(&self, f: impl FnOnce(&mut Session) -> PgWireResult<R>) -> PgWireResult<R> {
        self.with_session(|s| match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(s))) {
            Ok(r) => r,
            Err(p) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|m| m.to_string())).unwrap_or_default();
                s.fail();
                Err(user_error(&crate::err!(Internal, "internal error: {msg}")))
            }
        })
    }
}

/// A panic's message as an internal error.
fn panic_error(p: Box<dyn std::any::Any + Send>) -> PgWireError {
    let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|m| m.to_string())).unwrap_or_default();
    user_error(&crate::err!(Internal, "internal error: {msg}"))
}

/// What one call of a [`streamed`] result's step produced.
enum Step<T> {
    /// These items, and more may follow.
    More(Vec<T>),
    /// These items end the result.
    Last(Vec<T>),
}

/// A result computed while the client reads it: `step` produces the items
/// of the next batch and whether more may follow (`Step::Last` ends the
/// stream without another call, so a result that fits one step costs one
/// `block_in_place`). It runs on the connection's task between socket
/// writes (pgwire feeds each item to the socket, which flushes as its
/// buffer fills), so the first rows leave before the last are computed and
/// memory holds one step's items. A failure or panic is the last item: the
/// client gets an ErrorResponse after the rows before it, as from
/// PostgreSQL.
fn streamed<T: Send + 'static>(
    mut step: impl FnMut() -> PgWireResult<Step<T>> + Send + 'static,
) -> impl futures::Stream<Item = PgWireResult<T>> + Send + 'static {
    let mut pending = Vec::new().into_iter();
    let mut done = false;
    stream::iter(std::iter::from_fn(move || loop {
        if let Some(item) = pending.next() {
            return Some(Ok(item));
        }
        if done {
            return None;
        }
        let r = tokio::task::block_in_place(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut step)));
        match r {
            Ok(Ok(Step::More(items))) => pending = items.into_iter(),
            Ok(Ok(Step::Last(items))) => {
                done = true;
                pending = items.into_iter();
            }
            Ok(Err(e)) => {
                done = true;
                return Some(Err(e));
            }
            Err(p) => {
                done = true;
                return Some(Err(panic_error(p)));
            }
        }
    }))
}

/// Turn a statement result into a pgwire response.
fn response(r: QueryResult, formats: &Format, tx_before: TxState, tx_after: TxState, dt: DtCtx) -> PgWireResult<Response> {
    crate::types::zone::with_dt_ctx(dt, || response_in(r, formats, tx_before, tx_after, dt))
}

/// `response` with the session's date/time context in force (rows encoded
/// now use it; a stream's closure sets it again for each batch).
fn response_in(r: QueryResult, formats: &Format, tx_before: TxState, tx_after: TxState, dt: DtCtx) -> PgWireResult<Response> {
    Ok(match r {
        QueryResult::Empty => Response::EmptyQuery,
        QueryResult::CopyIn { columns, binary } => {
            Response::CopyIn(pgwire::api::results::CopyResponse::new(binary as i8, columns, stream::empty()))
        }
        QueryResult::CopyOut { columns, lines } => {
            let data = lines.into_iter().map(|mut l| {
                l.push('\n');
                Ok(pgwire::messages::copy::CopyData::new(bytes::Bytes::from(l)))
            });
            Response::CopyOut(pgwire::api::results::CopyResponse::new(0, columns, stream::iter(data.collect::<Vec<_>>())))
        }
        QueryResult::CopyOutStream { columns, mut lines } => {
            let data = streamed(move || {
                let Some(lines) = lines.next_lines().map_err(|e| user_error(&e))? else { return Ok(Step::Last(Vec::new())) };
                Ok(Step::More(
                    lines
                        .into_iter()
                        .map(|mut l| {
                            l.push('\n');
                            pgwire::messages::copy::CopyData::new(bytes::Bytes::from(l))
                        })
                        .collect(),
                ))
            });
            Response::CopyOut(pgwire::api::results::CopyResponse::new(0, columns, data))
        }
        QueryResult::CopyOutBinary { mut batches } => {
            let types: Vec<SqlType> = batches.columns.iter().map(|c| c.ty).collect();
            let fields: Vec<FieldInfo> =
                batches.columns.iter().map(|c| FieldInfo::new(c.name.clone(), None, None, pg_type(c.ty), FieldFormat::Binary)).collect();
            let columns = fields.len();
            // The header travels with the first record (or the trailer), as
            // PostgreSQL sends it: tokio-postgres reads them from one message.
            let mut header = Some(encode::copy_binary_header());
            let data = streamed(move || {
                let Some(b) = batches.next_batch().map_err(|e| user_error(&e))? else {
                    let end = encode::copy_binary_record(header.take(), None);
                    return Ok(Step::Last(vec![pgwire::messages::copy::CopyData::new(end)]));
                };
                let rows = encode::encode_batch(&types, &b, &fields).map_err(PgWireError::ApiError)?;
                Ok(Step::More(
                    rows.into_iter()
                        .map(|r| pgwire::messages::copy::CopyData::new(encode::copy_binary_record(header.take(), Some(r))))
                        .collect(),
                ))
            });
            // Made as text, then marked binary: `CopyResponse::new(1, …)`
            // appends a trailer of its own in a message apart, so no rows
            // would send the header alone.
            let mut resp = pgwire::api::results::CopyResponse::new(0, columns, data);
            resp.format = 1;
            Response::CopyOut(resp)
        }
        QueryResult::Stream { columns, mut rows } => {
            if crate::failpoint::armed_now("encode_panic") && columns.iter().any(|c| c.name == "encode_panic") {
                panic!("failpoint encode_panic");
            }
            let fields = Arc::new(field_infos(&columns, formats));
            let row_fields = fields.clone();
            let types: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
            // A step gathers at least `BATCH_ROWS` rows: a selective filter
            // leaves a few rows per batch, and each step costs a
            // `block_in_place` and a pass through pgwire's stream. An error
            // after some rows is kept for the next step, so those rows go
            // out first.
            let mut failed = None;
            let data = streamed(move || {
                if let Some(e) = failed.take() {
                    return Err(e);
                }
                let mut out = Vec::new();
                while out.len() < crate::exec::BATCH_ROWS {
                    let next = rows.next_batch().map_err(|e| user_error(&e)).and_then(|b| {
                        b.map(|b| crate::types::zone::with_dt_ctx(dt, || encode::encode_batch(&types, &b, &row_fields)))
                            .transpose()
                            .map_err(PgWireError::ApiError)
                    });
                    match next {
                        Ok(Some(encoded)) => out.extend(encoded),
                        Ok(None) => return Ok(Step::Last(out)),
                        Err(e) if out.is_empty() => return Err(e),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                Ok(Step::More(out))
            });
            Response::Query(QueryResponse::new(fields, data))
        }
        QueryResult::Command(tag) => {
            let t = tag_of(&tag);
            if tx_before == TxState::Idle && tx_after != TxState::Idle {
                Response::TransactionStart(t)
            } else if tx_before != TxState::Idle && tx_after == TxState::Idle {
                Response::TransactionEnd(t)
            } else {
                Response::Execution(t)
            }
        }
        QueryResult::Returning { columns, batches, tag } => {
            let fields = Arc::new(field_infos(&columns, formats));
            let rows = encode_rows(&columns, &batches, &fields)?;
            // pgwire appends the row count: `INSERT 0 n`, `UPDATE n`, `DELETE n`.
            let mut r = QueryResponse::new(fields, stream::iter(rows));
            r.set_command_tag(&tag);
            Response::Query(r)
        }
        QueryResult::Rows { columns, batches } => {
            if crate::failpoint::armed_now("encode_panic") && columns.iter().any(|c| c.name == "encode_panic") {
                panic!("failpoint encode_panic");
            }
            let fields = Arc::new(field_infos(&columns, formats));
            let rows = encode_rows(&columns, &batches, &fields)?;
            Response::Query(QueryResponse::new(fields, stream::iter(rows)))
        }
    })
}

/// Every row of `batches` encoded for the wire.
fn encode_rows(
    columns: &[crate::exec::plan::PlanColumn],
    batches: &[arrow::array::RecordBatch],
    fields: &Arc<Vec<FieldInfo>>,
) -> PgWireResult<Vec<PgWireResult<pgwire::messages::data::DataRow>>> {
    let types: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
    let mut rows = Vec::new();
    for b in batches {
        rows.extend(encode::encode_batch(&types, b, fields).map_err(PgWireError::ApiError)?.into_iter().map(Ok));
    }
    Ok(rows)
}

fn field_infos(columns: &[crate::exec::plan::PlanColumn], formats: &Format) -> Vec<FieldInfo> {
    columns.iter().enumerate().map(|(i, c)| FieldInfo::new(c.name.clone(), None, None, pg_type(c.ty), formats.format_for(i))).collect()
}

/// A command tag from its text: `INSERT 0 3` keeps the oid form.
fn tag_of(tag: &str) -> Tag {
    let parts: Vec<&str> = tag.split(' ').collect();
    match parts.as_slice() {
        ["INSERT", oid, n] => Tag::new("INSERT").with_oid(oid.parse().unwrap_or(0)).with_rows(n.parse().unwrap_or(0)),
        [cmd, n] if n.chars().all(|c| c.is_ascii_digit()) && matches!(*cmd, "DELETE" | "UPDATE" | "SELECT" | "COPY" | "MOVE" | "FETCH") => {
            Tag::new(cmd).with_rows(n.parse().unwrap_or(0))
        }
        _ => Tag::new(tag),
    }
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn on_query<C>(&self, client: &mut C, query: pgwire::messages::simplequery::Query) -> PgWireResult<()>
    where
        C: ClientInfo + pgwire::api::ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.prime_status(client);
        let r = self._on_query(client, query).await;
        // pg_notify calls of a streamed result ran while it was sent.
        self.with_session_on(false, crate::sql::listen::flush_late);
        r
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let query = query.to_string();
        let mut notices = Vec::new();
        let r = self.with_session_guarded(|s| {
            let r = Self::simple_results(s, &query);
            notices = s.take_notices();
            r
        });
        // Notices raised while the statements ran (PL/pgSQL's RAISE) go
        // before their results, as PostgreSQL sends them.
        for (severity, message) in notices {
            let info = ErrorInfo::new(severity, "00000".to_string(), message);
            client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
        }
        r
    }
}

impl Connection {
    /// The simple protocol's responses to a query string.
    fn simple_results(s: &mut Session, query: &str) -> PgWireResult<Vec<Response>> {
        {
            let before = s.tx;
            let (results, err) = s.execute_sql(query);
            let mut out = Vec::new();
            let mut tx = before;
            let n = results.len();
            for (i, r) in results.into_iter().enumerate() {
                // Transaction state changes are seen per statement: the
                // session's own after the last one, else from the tag (a
                // ROLLBACK TO in the middle looks like a ROLLBACK; the next
                // statement of the block starts it again).
                let after = match &r {
                    _ if i + 1 == n && err.is_none() => s.tx,
                    QueryResult::Command(t) if t == "BEGIN" => TxState::InBlock,
                    QueryResult::Command(t) if t == "COMMIT" || t == "ROLLBACK" => TxState::Idle,
                    _ if tx == TxState::Idle && s.tx != TxState::Idle => s.tx,
                    _ => tx,
                };
                out.push(response(r, &Format::UnifiedText, tx, after, DtCtx::from_settings(&s.settings))?);
                tx = after;
            }
            if let Some(e) = err {
                out.push(Response::Error(Box::new(pg_error(&e))));
            }
            Ok(out)
        }
    }
}

#[async_trait]
impl QueryParser for WeirQueryParser {
    type Statement = Prepared;

    async fn parse_sql<C>(&self, _client: &C, sql: &str, types: &[Option<Type>]) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let client_types: Vec<Option<SqlType>> = types.iter().map(|t| t.as_ref().and_then(sql_type_of)).collect();
        let mut guard = self.session.lock();
        let s = guard.as_mut().expect("session after startup");
        let r = tokio::task::block_in_place(|| s.prepare(sql, &client_types));
        match r {
            Ok(p) => Ok(Some(p)),
            Err(e) => Err(user_error(&e)),
        }
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.iter().map(|t| pg_type(*t)).collect())
    }

    fn get_result_schema(&self, stmt: &Prepared, column_format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        Ok(stmt
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                FieldInfo::new(
                    c.name.clone(),
                    None,
                    None,
                    pg_type(c.ty),
                    column_format.map(|f| f.format_for(i)).unwrap_or(FieldFormat::Text),
                )
            })
            .collect())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = WeirQueryParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    async fn on_execute<C>(&self, client: &mut C, message: pgwire::messages::extendedquery::Execute) -> PgWireResult<()>
    where
        C: ClientInfo + pgwire::api::ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.prime_status(client);
        let r = self.execute_streaming(client, message).await;
        self.with_session_on(false, crate::sql::listen::flush_late);
        r
    }

    async fn do_query<C>(&self, _client: &mut C, portal: &Portal<Prepared>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + pgwire::api::ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = &portal.statement.statement;
        let mut values = Vec::with_capacity(portal.parameters.len());
        for (i, raw) in portal.parameters.iter().enumerate() {
            let ty = portal
                .statement
                .parameter_types
                .get(i)
                .cloned()
                .flatten()
                .and_then(|t| sql_type_of(&t))
                .or_else(|| prepared.param_types.get(i).copied())
                .unwrap_or(SqlType::Text);
            let binary = matches!(portal.parameter_format.format_for(i), FieldFormat::Binary);
            let v = encode::decode_param(raw.as_deref(), ty, binary).map_err(|mut e| {
                // PostgreSQL names the parameter in the message of 22P03.
                if e.kind == crate::error::ErrorKind::InvalidBinaryRepresentation {
                    e.message = format!("{} in bind parameter {}", e.message, i + 1);
                }
                user_error(&e)
            })?;
            values.push(v);
        }
        let formats = portal.result_column_format.clone();
        let mut notices = Vec::new();
        let r = self.with_session_guarded(|s| {
            let before = s.tx;
            let r = match s.execute_prepared(prepared, values) {
                Ok(r) => {
                    let after = s.tx;
                    response(r, &formats, before, after, DtCtx::from_settings(&s.settings))
                }
                Err(e) => Err(user_error(&e)),
            };
            notices = s.take_notices();
            r
        });
        for (severity, message) in notices {
            let info = ErrorInfo::new(severity, "00000".to_string(), message);
            _client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
        }
        r
    }
}

impl Connection {
    /// pgwire's Execute, except that an Execute without a row limit sends
    /// the rows as they are computed: pgwire's portal would first collect
    /// the whole result. A row limit (portal suspension) keeps pgwire's
    /// portal, which holds at most that many rows.
    async fn execute_streaming<C>(&self, client: &mut C, message: pgwire::messages::extendedquery::Execute) -> PgWireResult<()>
    where
        C: ClientInfo + pgwire::api::ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use pgwire::api::portal::PortalExecutionState;
        use pgwire::api::store::{Entry, PortalStore};
        use pgwire::messages::response::EmptyQueryResponse;
        let max_rows = message.max_rows as usize;
        let name = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(p)) => Some(p),
            _ => None,
        };
        let Some(portal) = portal.filter(|_| max_rows == 0) else { return self._on_execute(client, message).await };
        if !matches!(*portal.state().lock().await, PortalExecutionState::Initial) {
            return self._on_execute(client, message).await;
        }
        if !matches!(client.state(), pgwire::api::PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let mut status = client.transaction_status();
        client.set_state(pgwire::api::PgWireConnectionState::QueryInProgress);
        let resp = ExtendedQueryHandler::do_query(self, client, portal.as_ref(), max_rows).await?;
        match resp {
            Response::Query(results) => {
                let fields = results.row_schema();
                pgwire::api::query::send_query_response(client, results, false).await?;
                // Done: a later Execute of this portal sends no rows.
                portal.start(QueryResponse::new(fields, stream::empty())).await;
            }
            Response::EmptyQuery => client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?,
            Response::Execution(tag) => pgwire::api::query::send_execution_response(client, tag).await?,
            Response::TransactionStart(tag) => {
                pgwire::api::query::send_execution_response(client, tag).await?;
                status = status.to_in_transaction_state();
            }
            Response::TransactionEnd(tag) => {
                pgwire::api::query::send_execution_response(client, tag).await?;
                status = status.to_idle_state();
                client.portal_store().rm_portal(pgwire::api::DEFAULT_NAME);
            }
            Response::Error(e) => {
                client.send(PgWireBackendMessage::ErrorResponse((*e).into())).await?;
                status = status.to_error_state();
            }
            Response::CopyIn(r) => {
                client.set_state(pgwire::api::PgWireConnectionState::CopyInProgress(true));
                pgwire::api::copy::send_copy_in_response(client, r).await?;
            }
            Response::CopyOut(r) => pgwire::api::copy::send_copy_out_response(client, r).await?,
            Response::CopyBoth(r) => {
                client.set_state(pgwire::api::PgWireConnectionState::CopyInProgress(true));
                pgwire::api::copy::send_copy_both_response(client, r).await?;
            }
        }
        if !matches!(client.state(), pgwire::api::PgWireConnectionState::CopyInProgress(_)) {
            client.set_state(pgwire::api::PgWireConnectionState::ReadyForQuery);
            client.set_transaction_status(status);
        }
        Ok(())
    }
}

#[async_trait]
impl pgwire::api::copy::CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: pgwire::messages::copy::CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.with_session(|s| s.copy_data(&copy_data.data)).map_err(|e| user_error(&e))
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: pgwire::messages::copy::CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let n = self.with_session(|s| s.copy_done()).map_err(|e| user_error(&e))?;
        client.send(PgWireBackendMessage::CommandComplete(Tag::new("COPY").with_rows(n).into())).await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: pgwire::messages::copy::CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.with_session(|s| s.copy_fail());
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".into(),
            "57014".into(),
            format!("COPY from stdin failed: {}", fail.message),
        )))
    }
}

#[async_trait]
impl pgwire::api::cancel::CancelHandler for Connection {
    async fn on_cancel_request(&self, req: pgwire::messages::cancel::CancelRequest) {
        use pgwire::messages::startup::SecretKey;
        // The decoder hands 4-byte keys over as bytes: compare as bytes.
        let bytes = |k: &SecretKey| match k {
            SecretKey::I32(v) => v.to_be_bytes().to_vec(),
            SecretKey::Bytes(b) => b.to_vec(),
        };
        let found = self.cancels.lock().get(&req.pid).cloned();
        tracing::debug!(pid = req.pid, known = found.is_some(), "cancel request");
        if let Some((secret, flag)) = found {
            if bytes(&secret) == bytes(&req.secret_key) {
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

impl PgWireServerHandlers for Connection {
    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::new(self.clone_handle())
    }
    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        Arc::new(self.clone_handle())
    }
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::new(self.clone_handle())
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::new(self.clone_handle())
    }
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::new(self.clone_handle())
    }
}

impl Connection {
    fn clone_handle(&self) -> Connection {
        Connection {
            cancels: self.cancels.clone(),
            pid: self.pid,
            engine: self.engine.clone(),
            session: self.session.clone(),
            parser: self.parser.clone(),
            idle: self.idle.clone(),
            hba: self.hba.clone(),
            auth: self.auth.clone(),
            ssl: self.ssl.clone(),
            local: self.local,
        }
    }
}

/// The TLS acceptor from `ssl_cert_file` / `ssl_key_file` (rustls with
/// ring), or none when both are empty.
fn tls_acceptor(config: &crate::config::Config) -> std::io::Result<Option<pgwire::tokio::TlsAcceptor>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = (&config.ssl_cert_file, &config.ssl_key_file);
    if cert.is_empty() && key.is_empty() {
        return Ok(None);
    }
    if cert.is_empty() || key.is_empty() {
        return Err(std::io::Error::other("ssl_cert_file and ssl_key_file must be given together"));
    }
    let bad =
        |what: &str, path: &str, e: &dyn std::fmt::Display| std::io::Error::other(format!("could not load {what} file \"{path}\": {e}"));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("server certificate", cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad("server certificate", cert, &e))?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("private key", key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| bad("server certificate", cert, &e))?;
    cfg.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(pgwire::tokio::TlsAcceptor::from(Arc::new(cfg))))
}

/// Accept connections until `shutdown` resolves.
pub async fn serve(engine: Arc<Engine>, listener: TcpListener, shutdown: impl std::future::Future<Output = ()>) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    let cancels: CancelRegistry = Arc::new(Mutex::new(std::collections::HashMap::new()));
    let mut next_pid: i32 = 1000;
    let tls = tls_acceptor(&engine.config)?;
    let hba = Arc::new(if engine.config.hba_file.is_empty() {
        hba::Hba::default_rules()
    } else {
        hba::Hba::load(&engine.config.hba_file).map_err(|e| std::io::Error::other(e.message))?
    });
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        continue;
                    }
                };
                let session = Arc::new(Mutex::new(None));
                next_pid = if next_pid == i32::MAX { 1000 } else { next_pid + 1 };
                let pid = next_pid;
                let idle = Arc::new(IdleWatch::default());
                let conn = Arc::new(Connection { cancels: cancels.clone(), pid, engine: engine.clone(), session: session.clone(), parser: Arc::new(WeirQueryParser { session }), idle: idle.clone(), hba: hba.clone(), auth: Default::default(), ssl: Default::default(), local: socket.local_addr().ok() });
                let registry = cancels.clone();
                let tls = tls.clone();
                // LISTEN / NOTIFY: the connection's mailbox, sent from its
                // socket loop when the session is idle.
                let mailbox = engine.notify.mailbox(pid);
                let hub = engine.notify.clone();
                // A second handle on the socket, for the idle-in-transaction
                // watchdog to end the connection.
                let dup = {
                    use std::os::fd::AsFd;
                    socket.as_fd().try_clone_to_owned().map(std::net::TcpStream::from)
                };
                match dup {
                    Ok(dup) => {
                        tokio::spawn(watch_idle(idle.clone(), dup));
                    }
                    Err(e) => tracing::warn!("no idle-in-transaction watchdog for {peer}: {e}"),
                }
                tokio::spawn(async move {
                    let facts = conn.clone();
                    let on_tls = move |ssl| *facts.ssl.lock() = ssl;
                    if let Err(e) = socket::process_socket(socket, tls, conn, on_tls, mailbox).await {
                        tracing::debug!("connection from {peer} ended: {e}");
                    }
                    hub.remove(pid);
                    registry.lock().remove(&pid);
                    idle.state.lock().1 = true;
                    idle.wake.notify_one();
                });
            }
        }
    }
}
