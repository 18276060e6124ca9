//! Sessions and statements: parses SQL with `crate::parser` (weir's
//! dialect), runs DDL against the catalog, DML against storage, and
//! queries through the planner and executor.
//!
//! May import `planner`, `exec`, `storage`, `catalog`, `types`, `error`;
//! never `server`.

mod aggregate;
mod alter_table;
mod check;
mod comment;
pub mod copy;
mod copy_binary;
mod ddl;
mod dml;
mod dml_with;
mod flow_ddl;
#[cfg(test)]
mod flow_truncate_race_tests;
mod function;
mod inherit;
mod insert_targets;
pub mod listen;
mod merge;
mod operator;
mod partition;
mod plpgsql;
mod policy;
mod prepare;
pub mod privilege;
pub mod roles;
mod rule;
mod schema;
mod search_path;
pub mod sequence;
mod session_vars;
pub mod stream;
pub mod tdengine;
pub mod temp;
mod trigger;
mod txn;
mod user_type;
pub mod wire;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use sqlparser::ast::{self, Statement};

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Result, WeirError};
use crate::exec::plan::PlanColumn;
use crate::exec::ExecCtx;
use crate::parser::{self, Statement as WeirStatement};
use crate::planner::{Params, Planner};
use crate::storage::{region_id, RegionDescriptor, StorageEngine};
use crate::types::SqlType;
use crate::{bail, err};

/// The database process state shared by all sessions.
pub struct Engine {
    pub catalog: Catalog,
    pub storage: StorageEngine,
    pub config: Config,
    /// Every session's current statement (pg_stat_activity).
    pub activity: crate::exec::activity::Activity,
    /// The running flows (continuous queries).
    pub flows: Arc<crate::flow::FlowManager>,
    /// TDengine's streams (engineer tdengine).
    pub streams: Arc<crate::flow::tdengine::StreamRunner>,
    /// LISTEN / NOTIFY: who listens on which channel (`listen.rs`).
    pub notify: Arc<crate::notify::Hub>,
}

impl Engine {
    /// Open the data directory: catalog, then every table's regions.
    pub fn open(config: Config) -> Result<Arc<Engine>> {
        let dir = std::path::PathBuf::from(&config.data_dir);
        std::fs::create_dir_all(&dir).map_err(|e| err!(Storage, "cannot create data directory {}: {e}", dir.display()))?;
        let catalog = Catalog::open(&dir)?;
        let storage = StorageEngine::open_tuned(&dir.join("regions"), config.storage_config(), config.storage_tuning())?;
        bootstrap_superuser(&catalog, &config)?;
        let flows = crate::flow::FlowManager::new(session_vars::defaults(), catalog.write_clock.clone(), config.stream.clone());
        let notify = Arc::new(crate::notify::Hub::default());
        let streams = crate::flow::tdengine::StreamRunner::new(notify.clone());
        let engine = Engine { catalog, storage, config, activity: Default::default(), flows, streams, notify };
        for t in engine.catalog.all_tables() {
            engine.open_table_regions(&t)?;
        }
        // Stream progress a crash took from the catalog, from the output WALs.
        crate::flow::tdengine::recover(&engine.flow_env())?;
        // Flows hold their progress against compaction before anything runs.
        engine.flows.load(&engine.flow_env());
        engine.storage.subscribe(engine.flows.clone());
        let engine = Arc::new(engine);
        engine.flows.spawn_scheduler(Arc::downgrade(&engine), Engine::flow_env);
        engine.storage.subscribe(engine.streams.clone());
        engine.streams.spawn(Arc::downgrade(&engine), Engine::flow_env);
        Ok(engine)
    }

    pub fn open_table_regions(&self, t: &crate::catalog::TableDef) -> Result<()> {
        let desc = crate::planner::region_descriptor(t);
        for n in 0..t.regions.max(1) {
            self.storage.open_region(region_id(t.id, n), desc.clone())?;
        }
        Ok(())
    }

    /// What flows read and write through.
    pub fn flow_env(&self) -> crate::flow::Env<'_> {
        crate::flow::Env { catalog: &self.catalog, storage: &self.storage }
    }

    pub fn descriptor(t: &crate::catalog::TableDef) -> RegionDescriptor {
        crate::planner::region_descriptor(t)
    }
}

/// The result of one statement.
#[derive(Debug)]
pub enum QueryResult {
    Rows {
        columns: Vec<PlanColumn>,
        batches: Vec<RecordBatch>,
    },
    /// A command tag such as `INSERT 0 3` or `CREATE TABLE`.
    Command(String),
    /// The rows of INSERT / UPDATE / DELETE ... RETURNING; `tag` is the
    /// command tag without its row count (`INSERT 0`, `UPDATE`, `DELETE`).
    Returning {
        columns: Vec<PlanColumn>,
        batches: Vec<RecordBatch>,
        tag: String,
    },
    /// COPY FROM STDIN started: the client sends data next.
    CopyIn {
        columns: usize,
        /// FORMAT binary (the CopyInResponse says so).
        binary: bool,
    },
    /// COPY TO STDOUT: one text line per row (without the newline).
    CopyOut {
        columns: usize,
        lines: Vec<String>,
    },
    /// Rows computed while the client reads them (only when the session
    /// asked for it with `stream_results`; see `stream.rs`).
    Stream {
        columns: Vec<PlanColumn>,
        rows: stream::RowStream,
    },
    /// COPY TO STDOUT computed while the client reads it: each item is the
    /// lines (without newlines) of one batch.
    CopyOutStream {
        columns: usize,
        lines: copy::CopyLines,
    },
    /// COPY TO STDOUT (FORMAT binary): the batches, which the server writes
    /// in PostgreSQL's binary COPY format.
    CopyOutBinary {
        batches: copy::CopyBatches,
    },
    Empty,
}

/// Transaction state as PostgreSQL reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxState {
    Idle,
    InBlock,
    Failed,
}

/// The first start creates the superuser named in the config, with the
/// password from `superuser_password_file` or WEIR_SUPERUSER_PASSWORD (only
/// its SCRAM verifier is kept).
fn bootstrap_superuser(catalog: &Catalog, config: &Config) -> Result<()> {
    if catalog.has_roles() {
        return Ok(());
    }
    let mut r = crate::catalog::RoleDef::new(&config.superuser);
    r.superuser = true;
    r.login = true;
    r.createdb = true;
    r.createrole = true;
    let password = if !config.superuser_password_file.is_empty() {
        let text = std::fs::read_to_string(&config.superuser_password_file)
            .map_err(|e| err!(InvalidParameterValue, "cannot read superuser_password_file {}: {e}", config.superuser_password_file))?;
        Some(text.trim_end_matches(['\r', '\n']).to_string())
    } else {
        std::env::var("WEIR_SUPERUSER_PASSWORD").ok()
    };
    if let Some(p) = password.filter(|p| !p.is_empty()) {
        r.password = Some(crate::catalog::roles::password_verifier(&p)?);
    }
    catalog.create_role(r)
}

/// One client's session.
pub struct Session {
    pub engine: Arc<Engine>,
    pub database: String,
    /// The current user (`current_user`): the role privileges are checked as.
    pub user: String,
    /// The user the client authenticated as, and the session user it set
    /// (`SET SESSION AUTHORIZATION`, superusers only); `SET ROLE` changes `user` alone.
    pub auth_user: String,
    pub session_user: String,
    pub settings: HashMap<String, String>,
    pub tx: TxState,
    pub cancel: Arc<AtomicBool>,
    /// A COPY FROM STDIN in progress.
    pub copy: Option<copy::CopyIn>,
    /// Backend pid (for cancel requests and pg_stat_activity); 0 = none.
    pub pid: i32,
    /// The open transaction block (`txn.rs`), if any.
    pub block: Option<txn::Block>,
    /// The caller (the server) can send rows as they are computed: a query
    /// outside a transaction block that is the last statement of its query
    /// string answers `QueryResult::Stream` / `CopyOutStream`.
    pub stream_results: bool,
    /// The statement running now may answer with a stream.
    stream_now: bool,
    /// `set_config` calls of statements run so far, applied before the next
    /// statement (a streamed result runs after its statement returned).
    pub set_configs: crate::exec::SetConfigs,
    /// `pg_notify` calls of the statement running (shared with its
    /// context), and what the transaction queued (`listen.rs`).
    pub notifies: crate::exec::Notifies,
    pub listen_tx: listen::TxNotify,
    /// Settings `set_config(…, true)` changed in this transaction block,
    /// with their values before it: restored when the block ends.
    pub local_settings: Vec<(String, Option<String>)>,
    /// Settings the start-up packet gave: RESET goes back to them.
    pub startup_settings: HashMap<String, String>,
    /// Temporary tables and views (`temp.rs`).
    pub temp: temp::TempRelations,
    /// WITH queries in scope of the statement running now, when it is a
    /// data-modifying WITH (`dml_with.rs`).
    with_scope: Option<dml_with::WithScope>,
    /// Where the running statement sits, for the rules it meets (`rule.rs`).
    rule_context: rule::RuleContext,
    /// Query strings parsed before (simple protocol): a repeated text is
    /// not parsed again.
    parse_cache: parser::ParseCache,
    /// The rows after the first of a bulk INSERT of literals running now
    /// (`parser::parse_literal_insert`), for its writer (`dml.rs`) to read
    /// straight into columns; whatever rewrites the statement's rows first
    /// puts them into its VALUES.
    pub(crate) literal_rows: Option<parser::LiteralRows>,
    /// nextval and its family, with this session's currval / lastval.
    sequences: Arc<sequence::SessionSequences>,
    /// SQL-level prepared statements by name (`prepare.rs`).
    sql_prepared: HashMap<String, Prepared>,
    /// Notices raised while a statement ran (PL/pgSQL's RAISE NOTICE …):
    /// (severity, message), for the server to send before the result.
    pub notices: Arc<std::sync::Mutex<Vec<(String, String)>>>,
    /// The rows an UPDATE replaced, kept while it runs when a statement
    /// trigger's OLD TABLE needs them (`trigger.rs`).
    pub(crate) transition_old: std::sync::Mutex<Option<Vec<RecordBatch>>>,
}

/// A statement parsed for the extended protocol.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    pub stmt: Option<WeirStatement>,
    pub param_types: Vec<SqlType>,
    pub columns: Vec<PlanColumn>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // A dropped connection discards its open transaction.
        txn::on_session_end(self);
        // Its temporary tables and views go with it.
        self.tx = TxState::Idle;
        temp::drop_all(self);
        if self.pid != 0 {
            self.engine.activity.remove(self.pid);
        }
    }
}

impl Session {
    pub fn new(engine: Arc<Engine>, database: &str, user: &str) -> Session {
        Session {
            sequences: Arc::new(sequence::SessionSequences::new(engine.clone())),
            engine,
            database: database.to_string(),
            user: user.to_string(),
            auth_user: user.to_string(),
            session_user: user.to_string(),
            settings: session_vars::defaults(),
            startup_settings: HashMap::new(),
            tx: TxState::Idle,
            cancel: Arc::new(AtomicBool::new(false)),
            copy: None,
            pid: 0,
            block: None,
            stream_results: false,
            stream_now: false,
            set_configs: Default::default(),
            notifies: Default::default(),
            listen_tx: Default::default(),
            local_settings: Vec::new(),
            temp: temp::TempRelations::default(),
            with_scope: None,
            rule_context: Default::default(),
            parse_cache: Default::default(),
            literal_rows: None,
            sql_prepared: HashMap::new(),
            notices: Default::default(),
            transition_old: Default::default(),
        }
    }

    /// Queue a notice for the client (severity NOTICE, WARNING, INFO …).
    pub fn notice(&self, severity: &str, message: &str) {
        if let Ok(mut n) = self.notices.lock() {
            n.push((severity.to_string(), message.to_string()));
        }
    }

    /// The notices queued since the last call.
    pub fn take_notices(&self) -> Vec<(String, String)> {
        self.notices.lock().map(|mut n| std::mem::take(&mut *n)).unwrap_or_default()
    }

    /// 57014 when a cancel request came for the statement running.
    pub fn cancel_check(&self) -> Result<()> {
        if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            bail!(QueryCanceled, "canceling statement due to user request");
        }
        Ok(())
    }

    /// Enter the session in pg_stat_activity under `pid`.
    pub fn register(&mut self, pid: i32) {
        self.pid = pid;
        let now = crate::exec::functions::now_micros();
        self.engine.activity.set(crate::exec::activity::ActivityRow {
            pid,
            user: self.user.clone(),
            database: self.database.clone(),
            application_name: self.settings.get("application_name").cloned().unwrap_or_default(),
            state: "idle".into(),
            query: String::new(),
            backend_start: now,
            query_start: None,
            ssl: None,
            server_addr: None,
            listening: Vec::new(),
        });
    }

    fn activity_start(&self, query: &str) {
        // pg_stat_activity never shows a password (roles.rs).
        let q = roles::redacted_query(query).unwrap_or_else(|| query.to_string());
        self.engine.activity.update(self.pid, |r| {
            r.state = "active".into();
            r.query = q;
            r.query_start = Some(crate::exec::functions::now_micros());
        });
    }

    fn activity_end(&self) {
        let idle = match self.tx {
            TxState::Idle => "idle",
            TxState::InBlock => "idle in transaction",
            TxState::Failed => "idle in transaction (aborted)",
        };
        self.engine.activity.update(self.pid, |r| r.state = idle.into());
    }

    /// `idle_in_transaction_session_timeout` when the session sits in a
    /// transaction block (None outside one, or when it is 0).
    pub fn idle_in_transaction_timeout(&self) -> Option<Duration> {
        if self.tx == TxState::Idle {
            return None;
        }
        let ms = self.settings.get("idle_in_transaction_session_timeout").and_then(|s| session_vars::parse_ms(s)).unwrap_or(0);
        (ms > 0).then(|| Duration::from_millis(ms))
    }

    pub fn exec_ctx(&self) -> ExecCtx {
        let timeout_ms: u64 = self.settings.get("statement_timeout").and_then(|s| session_vars::parse_ms(s)).unwrap_or(0);
        ExecCtx {
            statement_ts: txn::transaction_ts(self),
            statement_start_ts: crate::exec::functions::now_micros(),
            database: self.database.clone(),
            user: self.user.clone(),
            settings: Arc::new(self.settings.clone()),
            deadline: if timeout_ms > 0 { Some(Instant::now() + Duration::from_millis(timeout_ms)) } else { None },
            cancel: self.cancel.clone(),
            pid: self.pid,
            activity: self.engine.activity.clone(),
            memory: Arc::new(crate::exec::memory::MemoryBudget::new(self.query_memory_bytes_max())),
            view: Some(txn::read_view(self)),
            set_configs: self.set_configs.clone(),
            notifies: self.notifies.clone(),
            sequences: Some(self.sequences.clone()),
            routines: Some(Arc::new(plpgsql::Routines::new(self.engine.clone(), self.notices.clone()))),
        }
    }

    /// This session's memory budget per query: the server's, or less when
    /// the session set `weir.query_memory_bytes_max` lower.
    pub fn query_memory_bytes_max(&self) -> usize {
        let server = self.engine.config.execution.query_memory_bytes_max;
        let session = self.settings.get(session_vars::QUERY_MEMORY_SETTING).and_then(|v| v.parse::<usize>().ok());
        session.map_or(server, |s| s.min(server))
    }

    /// A setting sent in the start-up packet, checked as SET checks it.
    pub fn set_startup_setting(&mut self, name: &str, value: &str) -> Result<()> {
        session_vars::set_startup(self, name, value)
    }

    /// Run a simple-protocol query string: each statement in order, up to
    /// the first error.
    pub fn execute_sql(&mut self, sql: &str) -> (Vec<QueryResult>, Option<WeirError>) {
        self.activity_start(sql);
        let r = self.execute_sql_inner(sql);
        // A streamed result ends the statement's activity when it is read.
        if !r.0.last().is_some_and(stream::RowStream::ends_activity) {
            self.activity_end();
        }
        r
    }

    /// `standard_conforming_strings` is on: a backslash in `'…'` is an ordinary character.
    fn standard_strings(&self) -> bool {
        self.settings
            .get("standard_conforming_strings")
            .is_none_or(|v| !["off", "false", "no", "0"].iter().any(|x| v.eq_ignore_ascii_case(x)))
    }

    fn execute_sql_inner(&mut self, sql: &str) -> (Vec<QueryResult>, Option<WeirError>) {
        let standard_strings = self.standard_strings();
        // A bulk loader's INSERT of many literal rows: the statement is
        // parsed through its first row, the others stay compact
        // (`literal_rows`) until the writer reads them into columns, so no
        // AST is built (or dropped) per cell.
        if let Some((head, rows)) = parser::parse_literal_insert(sql, standard_strings) {
            self.literal_rows = Some(rows);
            self.stream_now = self.stream_results;
            let r = self.guard(|sess| sess.execute_statement(&head, Params::default()));
            self.stream_now = false;
            let unread = self.literal_rows.take().is_some();
            return match r {
                // Every path that writes an INSERT's rows reads them: a
                // success that did not is a bug, not rows silently lost.
                Ok(_) if unread => {
                    self.fail();
                    (vec![], Some(err!(Internal, "bulk INSERT rows were not written")))
                }
                Ok(r) => (vec![r], None),
                Err(e) => (vec![], Some(e)),
            };
        }
        let stmts = match self.parse_cache.parse(sql, standard_strings) {
            Ok(s) => s,
            Err(e) => {
                self.fail();
                return (vec![], Some(e));
            }
        };
        if stmts.is_empty() {
            return (vec![QueryResult::Empty], None);
        }
        let mut out = Vec::new();
        let n = stmts.len();
        for (i, s) in stmts.iter().enumerate() {
            // Only the last statement may stream: the ones after it would
            // otherwise run before its rows are computed.
            self.stream_now = self.stream_results && i + 1 == n;
            let r = self.guard(|sess| sess.execute_statement(s, Params::default()));
            self.stream_now = false;
            match r {
                Ok(r) => out.push(r),
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    /// Run a statement, catching panics as internal errors so one bad
    /// statement never takes the connection down.
    pub fn guard(&mut self, f: impl FnOnce(&mut Session) -> Result<QueryResult>) -> Result<QueryResult> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
        let r = match r {
            Ok(r) => r,
            Err(p) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                Err(err!(Internal, "internal error: {msg}"))
            }
        };
        if r.is_err() {
            self.fail();
        }
        r
    }

    /// May the statement running now answer with a stream (see
    /// `stream_results`)?
    pub fn may_stream(&self) -> bool {
        self.stream_now && self.tx == TxState::Idle && self.block.is_none()
    }

    /// A statement failed: an open transaction block is now aborted.
    pub fn fail(&mut self) {
        if self.tx == TxState::InBlock {
            self.tx = TxState::Failed;
        }
    }

    /// Parse and describe one statement for the extended protocol; a panic
    /// becomes an internal error, as in `guard`.
    pub fn prepare(&mut self, sql: &str, client_types: &[Option<SqlType>]) -> Result<Prepared> {
        let dt = crate::types::zone::DtCtx::from_settings(&self.settings);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::types::zone::with_dt_ctx(dt, || self.prepare_inner(sql, client_types))
        }));
        let r = r.unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(err!(Internal, "internal error: {msg}"))
        });
        if r.is_err() {
            self.fail();
        }
        r
    }

    fn prepare_inner(&mut self, sql: &str, client_types: &[Option<SqlType>]) -> Result<Prepared> {
        let mut stmts = parser::parse_with(sql, self.standard_strings())?;
        if stmts.len() > 1 {
            bail!(Syntax, "cannot insert multiple commands into a prepared statement");
        }
        let Some(stmt) = stmts.pop() else {
            return Ok(Prepared { sql: sql.to_string(), stmt: None, param_types: vec![], columns: vec![] });
        };
        // Described with the session's temporary names (run with them again
        // by execute_statement).
        let written = stmt.clone();
        let stmt = match temp::rewrite(self, &stmt)? {
            Some(r) if r.creates.is_none() => r.stmt,
            _ => stmt,
        };
        let mut param_types = client_types.to_vec();
        let mut columns = vec![];
        let n = parser::max_param(&stmt);
        if let WeirStatement::Admin(a) = &stmt {
            columns = vec![PlanColumn::new(a.name(), SqlType::Int8)];
        } else if matches!(
            stmt,
            WeirStatement::ShowFlows(_) | WeirStatement::ShowCreateFlow(_) | WeirStatement::Tql(_) | WeirStatement::TqlWith(_)
        ) {
            if let Ok(QueryResult::Rows { columns: c, .. }) = self.execute_statement(&stmt, Params::default()) {
                columns = c;
            }
        } else if let Some(q) = match &stmt {
            WeirStatement::Sql(Statement::Query(q)) if dml_with::applies(q) => Some(q.clone()),
            _ => None,
        } {
            // A data-modifying WITH: described by its main statement's RETURNING
            // (the rows of a SELECT over its WITH queries are not described).
            if let Some(main) = dml_with::main_dml(&q) {
                if let Ok(Some(c)) = dml::returning_columns(self, main) {
                    columns = c;
                }
            }
        } else if let WeirStatement::Sql(Statement::Query(q)) = &stmt {
            if self.tx != TxState::Failed {
                let planner = self.planner(Params { types: param_types.clone(), values: None });
                // Privileges are checked when the statement runs, as in
                // PostgreSQL, not when it is described.
                planner.check_as.replace(None);
                let plan = planner.plan_query(q, None)?;
                columns = crate::planner::output_columns(&plan);
                param_types = planner.params.borrow().types.clone();
            }
        } else if matches!(
            stmt,
            WeirStatement::Sql(
                Statement::ShowVariable { .. }
                    | Statement::ShowVariables { .. }
                    | Statement::ShowTables { .. }
                    | Statement::ShowDatabases { .. }
                    | Statement::ShowCreate { .. }
                    | Statement::ExplainTable { .. }
                    | Statement::Explain { .. }
            )
        ) {
            // Read-only: run it to learn its columns.
            if let Ok(QueryResult::Rows { columns: c, .. }) = self.execute_statement(&stmt, Params::default()) {
                columns = c;
            }
        } else if let WeirStatement::Sql(sql_stmt) = &stmt {
            dml::infer_params(self, sql_stmt, &mut param_types)?;
            if matches!(sql_stmt, Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)) && self.tx != TxState::Failed {
                // RETURNING's row description.
                if let Ok(Some(c)) = dml::returning_columns(self, sql_stmt) {
                    columns = c;
                }
            }
        }
        let n = n.max(param_types.len());
        param_types.resize(n, None);
        Ok(Prepared {
            sql: sql.to_string(),
            stmt: Some(written),
            param_types: param_types.iter().map(|t| t.unwrap_or(SqlType::Text)).collect(),
            columns,
        })
    }

    /// Execute a prepared statement with bound parameter values.
    pub fn execute_prepared(&mut self, p: &Prepared, values: Vec<crate::types::Value>) -> Result<QueryResult> {
        self.activity_start(&p.sql);
        let r = self.execute_prepared_inner(p, values);
        if !r.as_ref().is_ok_and(stream::RowStream::ends_activity) {
            self.activity_end();
        }
        r
    }

    fn execute_prepared_inner(&mut self, p: &Prepared, values: Vec<crate::types::Value>) -> Result<QueryResult> {
        let Some(stmt) = &p.stmt else {
            return Ok(QueryResult::Empty);
        };
        let params = Params { types: p.param_types.iter().map(|t| Some(*t)).collect(), values: Some(values) };
        let stmt = stmt.clone();
        self.stream_now = self.stream_results;
        let r = self.guard(|s| s.execute_statement(&stmt, params));
        self.stream_now = false;
        r
    }

    pub fn planner(&self, params: Params) -> Planner<'_> {
        // Keys were validated when set; a bad pairing fails in the Query arm.
        let keys = crate::planner::incremental::IncrementalKeys::from_settings(&self.settings).ok().flatten();
        self.planner_with(params, keys)
    }

    fn planner_with(&self, params: Params, keys: Option<crate::planner::incremental::IncrementalKeys>) -> Planner<'_> {
        let mut p = Planner::new(&self.engine.catalog, &self.engine.storage, &self.database, self.exec_ctx(), params);
        p.incremental = keys;
        // Every relation the statement reads is checked as the user.
        p.check_as = std::cell::RefCell::new(Some(self.user.clone()));
        p.temp_names = self.temp.names();
        if let Some(w) = &self.with_scope {
            p.ctes = std::cell::RefCell::new(w.ctes.clone());
            p.materialized = w.materialized.clone();
        }
        p
    }

    pub fn execute_statement(&mut self, stmt: &WeirStatement, params: Params) -> Result<QueryResult> {
        // A cancel request applies to the statement running when it came.
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        session_vars::apply_set_configs(self);
        if self.tx == TxState::Failed && !matches!(stmt, WeirStatement::Sql(Statement::Commit { .. } | Statement::Rollback { .. })) {
            bail!(InFailedTransaction, "current transaction is aborted, commands ignored until end of transaction block");
        }
        // Names of temporary tables and views map to their private names.
        let rewritten = temp::rewrite(self, stmt)?;
        let (stmt, temp_created) = match &rewritten {
            Some(r) => (&r.stmt, r.creates.clone()),
            None => (stmt, None),
        };
        // Unqualified CREATE / DROP / ALTER names go where search_path says.
        let qualified = search_path::qualify(self, stmt, temp_created.is_some());
        let stmt = qualified.as_ref().unwrap_or(stmt);
        privilege::check_statement(self, stmt)?;
        let created = privilege::new_objects(self, stmt);
        // Date/time input and output follow the session's TimeZone, DateStyle and IntervalStyle.
        let dt = crate::types::zone::DtCtx::from_settings(&self.settings);
        let now = txn::transaction_ts(self);
        let r = crate::types::zone::with_dt_ctx(dt, || crate::types::zone::with_now(now, || self.dispatch_statement(stmt, params)));
        listen::statement_end(self, r.is_ok());
        if r.is_ok() {
            privilege::record_owners(self, &created, stmt)?;
            if let Some(c) = temp_created {
                temp::record(self, c);
            }
            if matches!(stmt, WeirStatement::Sql(Statement::Drop { .. })) {
                temp::prune(self);
            }
        }
        r
    }

    fn dispatch_statement(&mut self, stmt: &WeirStatement, params: Params) -> Result<QueryResult> {
        if let Some(r) = txn::intercept(self, stmt) {
            return r;
        }
        match stmt {
            WeirStatement::Sql(s) => self.execute_sql_statement(s, params),
            WeirStatement::CreateTable(ct) => ddl::create_weir_table(self, ct),
            WeirStatement::Admin(a) => ddl::admin(self, a, params),
            WeirStatement::CreateDatabase(c) => ddl::create_database_with_options(self, c),
            WeirStatement::CreateFlow(c) => flow_ddl::create_flow(self, c),
            WeirStatement::DropFlow(d) => flow_ddl::drop_flow(self, d),
            WeirStatement::ShowFlows(f) => flow_ddl::show_flows(self, f),
            WeirStatement::ShowCreateFlow(f) => flow_ddl::show_create_flow(self, f),
            WeirStatement::CommentOnFlow(c) => flow_ddl::comment_on_flow(self, c),
            WeirStatement::Tdengine(t) => tdengine::execute(self, t),
            WeirStatement::Tql(t) => {
                let planner = self.planner(params);
                let (columns, batches) = crate::tql::execute(&planner, t)?;
                Ok(QueryResult::Rows { columns, batches })
            }
            WeirStatement::TqlWith(w) if w.explain.is_some() => {
                let planner = self.planner(params);
                let (columns, batches) = crate::tql::explain_with(&planner, w)?;
                Ok(QueryResult::Rows { columns, batches })
            }
            WeirStatement::TqlWith(w) => {
                let planner = self.planner(params);
                crate::tql::with_query(&planner, w)?;
                let plan = planner.plan_query(&w.query, None)?;
                let columns = crate::planner::output_columns(&plan);
                let plan = planner.physical(plan)?;
                let rows = stream::RowStream::new(crate::exec::build(&plan, &planner.ctx)?, planner.ctx.clone());
                Ok(QueryResult::Rows { columns, batches: rows.collect()? })
            }
            WeirStatement::Vacuum(v) => ddl::vacuum(self, v),
            WeirStatement::AlterSequence(a) => sequence::alter(self, a),
            WeirStatement::CreateSchemaWith(c) => schema::create_with(self, c),
            WeirStatement::CreateCast(c) => operator::create_cast(self, c),
            WeirStatement::DropCast(d) => operator::drop_cast(self, d),
        }
    }

    /// One statement of PostgreSQL's grammar.
    pub fn execute_sql_statement(&mut self, stmt: &Statement, params: Params) -> Result<QueryResult> {
        // INSERT into / DROP of TDengine's child tables and supertables.
        if let Some(r) = tdengine::intercept(self, stmt, &params) {
            return r;
        }
        match stmt {
            Statement::Query(q) if dml_with::applies(q) => dml_with::execute(self, q, params),
            Statement::Query(q) if ddl::select_into(q).is_some() => {
                let (name, query) = ddl::select_into(q).expect("checked")?;
                ddl::create_table_as(self, &name, false, &[], &query)
            }
            Statement::Query(q) => {
                let keys = crate::planner::incremental::IncrementalKeys::from_settings(&self.settings)?;
                let return_seqs = keys.as_ref().is_some_and(|k| k.return_region_seq);
                // Incremental reads report watermarks on success only, so
                // they are computed whole; so is a block's statement (its
                // failure must fail the block before the next one runs).
                let stream = self.may_stream() && keys.is_none();
                let planner = self.planner_with(params, keys);
                let result = planner.plan_query(q, None).and_then(|plan| {
                    let columns = crate::planner::output_columns(&plan);
                    let plan = planner.physical(plan)?;
                    let rows = stream::RowStream::new(crate::exec::build(&plan, &planner.ctx)?, planner.ctx.clone());
                    if stream {
                        let rows = rows.pipelined(crate::planner::analysis::may_run_elsewhere(&plan));
                        return Ok(QueryResult::Stream { columns, rows });
                    }
                    Ok(QueryResult::Rows { columns, batches: rows.collect()? })
                });
                // Watermarks come with success only, complete or not at all
                // they are never extra columns of the rows.
                let marks = planner.watermarks.borrow().clone();
                drop(planner);
                if return_seqs {
                    match &result {
                        Ok(_) => {
                            let m: serde_json::Map<String, serde_json::Value> =
                                marks.iter().map(|(r, s)| (r.to_string(), serde_json::Value::from(*s))).collect();
                            self.settings.insert("flow.region_seqs".into(), serde_json::Value::Object(m).to_string());
                        }
                        Err(_) => {
                            self.settings.remove("flow.region_seqs");
                        }
                    }
                }
                result
            }
            Statement::Copy { .. } => copy::start(self, stmt),
            Statement::Prepare { name, data_types, statement } => prepare::prepare(self, name, data_types, statement),
            Statement::Execute { name: Some(name), parameters, immediate: false, into, using, .. }
                if into.is_empty() && using.is_empty() =>
            {
                prepare::execute(self, name, parameters)
            }
            Statement::Deallocate { name, .. } => prepare::deallocate(self, name),
            Statement::LISTEN { .. } | Statement::UNLISTEN { .. } | Statement::NOTIFY { .. } => listen::execute(self, stmt),
            // GreptimeDB's (and MySQL's) USE db: the connection's database
            // changes, as if it had connected to it.
            Statement::Use(ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n)) => {
                let db = crate::planner::object_name(n)?.1;
                if !self.engine.catalog.database_exists(&db) {
                    bail!(UndefinedDatabase, "database \"{db}\" does not exist");
                }
                self.database = db.clone();
                self.engine.activity.update(self.pid, |r| r.database = db);
                Ok(QueryResult::Command("USE".into()))
            }
            Statement::Insert(_) | Statement::Delete(_) | Statement::Update(_) => rule::execute_dml(self, stmt, params),
            Statement::Merge(m) => merge::execute(self, m, params),
            Statement::CreateRule(r) => rule::create(self, r),
            Statement::CreateOperator(o) => operator::create_operator(self, o),
            Statement::DropOperator(d) => operator::drop_operator(self, d),
            Statement::CreateOperatorClass(c) => operator::create_opclass(self, c),
            Statement::DropOperatorClass(d) => operator::drop_opclass(self, d),
            Statement::DropRule(r) => rule::drop(self, r),
            Statement::Set(_) | Statement::Reset(_) | Statement::ShowVariable { .. } | Statement::ShowVariables { .. } => {
                session_vars::execute(self, stmt)
            }
            _ => match roles::execute(self, stmt).or_else(|| privilege::execute(self, stmt)) {
                Some(r) => r,
                None => ddl::execute(self, stmt),
            },
        }
    }

    /// Data of a COPY in progress.
    pub fn copy_data(&mut self, data: &[u8]) -> Result<()> {
        match self.copy.take() {
            Some(mut c) => {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.push(data, self)))
                    .unwrap_or_else(|_| Err(err!(Internal, "internal error during COPY")));
                if r.is_err() {
                    // Dropping the COPY publishes its written chunks empty.
                    drop(c);
                    self.fail();
                } else {
                    self.copy = Some(c);
                }
                r
            }
            None => bail!(Internal, "no COPY in progress"),
        }
    }

    /// End of COPY data: write the last chunk and commit, or nothing.
    pub fn copy_done(&mut self) -> Result<usize> {
        let Some(c) = self.copy.take() else { bail!(Internal, "no COPY in progress") };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.finish(self)))
            .unwrap_or_else(|_| Err(err!(Internal, "internal error during COPY")));
        if r.is_err() {
            self.fail();
        }
        r
    }

    pub fn copy_fail(&mut self) {
        self.copy = None;
        self.fail();
    }
}
