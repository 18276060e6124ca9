//! Transaction blocks of a session: BEGIN / COMMIT / ROLLBACK, savepoints,
//! the block's buffered writes (applied at COMMIT as one unit through
//! `StorageEngine::commit`), each statement's read view (snapshot plus the
//! block's own writes) and DDL inside a block.
//!
//! Owns [`Block`]. May import `storage`, `catalog`, `exec`, `error`; never
//! `server`. Outside a block nothing here is on the write path: autocommit
//! statements write straight to their regions, as before.
//!
//! A block's writes are kept per region as tombstones of committed rows and
//! new rows with temporary row ids (`TEMP_ROWID_BASE..`), so DELETE and
//! UPDATE of a row the block inserted edit the buffer. Reads lay them over
//! the snapshot. A savepoint is a copy of that state (batches are shared,
//! so it is cheap). DDL: CREATE TABLE / CREATE VIEW run at once and are
//! undone by ROLLBACK (or a dropped connection); DROP TABLE waits for
//! COMMIT; GRANT / REVOKE, role statements and ALTER TABLE (OWNER TO) run
//! at once and the roles and ACL entries they changed are put back if the
//! block does not commit; everything else is refused inside a block (25001).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt64Array};
use sqlparser::ast::{self, Statement, TransactionAccessMode, TransactionIsolationLevel, TransactionMode};

use super::{QueryResult, Session, TxState, WeirStatement};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::storage::{region_id, ReadView, Region, RegionId, RegionWrites, SeqNo, TEMP_ROWID_BASE};
use crate::{bail, err};

/// Isolation of a block, as PostgreSQL names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }

    fn parse(text: &str) -> Isolation {
        match text.trim().to_ascii_lowercase().as_str() {
            "repeatable read" => Isolation::RepeatableRead,
            "serializable" => Isolation::Serializable,
            _ => Isolation::ReadCommitted,
        }
    }

    fn of(level: &TransactionIsolationLevel) -> Isolation {
        match level {
            TransactionIsolationLevel::RepeatableRead | TransactionIsolationLevel::Snapshot => Isolation::RepeatableRead,
            TransactionIsolationLevel::Serializable => Isolation::Serializable,
            _ => Isolation::ReadCommitted,
        }
    }
}

/// One region's part of a block.
#[derive(Clone)]
struct Part {
    region: Arc<Region>,
    writes: RegionWrites,
}

/// DDL run inside a block, undone if the block does not commit.
#[derive(Clone)]
enum Created {
    Table {
        database: String,
        name: String,
        id: u32,
    },
    View {
        database: String,
        name: String,
    },
    /// Roles and privileges a statement changed, with their earlier values.
    Auth(crate::catalog::roles::AuthUndo),
    /// A type the block created, replaced or dropped: how it was before
    /// (None: absent) and after.
    Type {
        before: Option<crate::catalog::TypeDef>,
        after: Option<crate::catalog::TypeDef>,
    },
    /// An index the block created (catalog metadata: dropped again).
    Index {
        database: String,
        name: String,
    },
    /// An operator, operator class or cast the block created, replaced or
    /// dropped: the catalog key and what it held before (None: nothing).
    Operator {
        key: String,
        before: Option<crate::catalog::operator::OperatorObject>,
    },
    /// A function (or aggregate) the block created.
    Function {
        database: String,
        name: String,
        types: Vec<crate::types::SqlType>,
    },
}

/// The buffered writes of a block.
#[derive(Clone)]
struct Writes {
    parts: BTreeMap<RegionId, Part>,
    /// Bytes buffered (never decreased by deletes of the block's own rows).
    bytes: usize,
    next_temp_rowid: u64,
}

struct Savepoint {
    name: String,
    writes: Writes,
    created: usize,
    drops: usize,
    /// The NOTIFYs and LISTENs queued before it (`listen.rs`).
    notify: (usize, usize),
}

/// An open transaction block.
pub struct Block {
    read_only: bool,
    /// Behind a lock because DML writes through `&Session` while the
    /// planner borrows the session; shared with read views, which copy
    /// the parts lazily.
    writes: Arc<Mutex<Writes>>,
    savepoints: Vec<Savepoint>,
    created: Vec<Created>,
    /// Tables dropped at COMMIT.
    drops: Vec<TableDef>,
    /// REPEATABLE READ / SERIALIZABLE: the block's snapshot, taken at its
    /// first statement (as PostgreSQL does), with versions held.
    snapshot: Option<Arc<HashMap<RegionId, SeqNo>>>,
    holder: String,
    /// The transaction timestamp (now(), 'now'): when the block began.
    start_us: i64,
}

impl Block {
    fn new(pid: i32, read_only: bool) -> Block {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Block {
            read_only,
            writes: Arc::new(Mutex::new(Writes { parts: BTreeMap::new(), bytes: 0, next_temp_rowid: TEMP_ROWID_BASE })),
            savepoints: Vec::new(),
            created: Vec::new(),
            drops: Vec::new(),
            snapshot: None,
            holder: format!("txn-{pid}-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            start_us: crate::exec::functions::now_micros(),
        }
    }
}

/// The transaction timestamp: when the open block began, else now (a
/// statement outside a block is its own transaction).
pub fn transaction_ts(s: &Session) -> i64 {
    s.block.as_ref().map_or_else(crate::exec::functions::now_micros, |b| b.start_us)
}

/// Transaction control and DDL inside a block; None = not handled here.
pub fn intercept(s: &mut Session, stmt: &WeirStatement) -> Option<Result<QueryResult>> {
    let stmt = match stmt {
        WeirStatement::Sql(q) => q,
        WeirStatement::Admin(_) => return None,
        WeirStatement::CreateDatabase(_) if s.block.is_some() => {
            return Some(Err(err!(ActiveSqlTransaction, "CREATE DATABASE cannot run inside a transaction block")));
        }
        WeirStatement::CreateDatabase(_) => return None,
        // Flows (engineer flows): they change running state, not only the
        // catalog, so they are refused inside a block.
        WeirStatement::CreateFlow(_) | WeirStatement::DropFlow(_) | WeirStatement::CommentOnFlow(_) if s.block.is_some() => {
            return Some(Err(err!(ActiveSqlTransaction, "flow statements cannot run inside a transaction block")));
        }
        WeirStatement::Vacuum(_) if s.block.is_some() => {
            return Some(Err(err!(ActiveSqlTransaction, "VACUUM cannot run inside a transaction block")));
        }
        WeirStatement::Vacuum(_) => return None,
        // A sequence's values are not transactional; ALTER SEQUENCE applies at once.
        WeirStatement::AlterSequence(_) => return None,
        WeirStatement::CreateSchemaWith(_) => return None,
        // Recorded for ROLLBACK where they run (`operator.rs`).
        WeirStatement::CreateCast(_) | WeirStatement::DropCast(_) => return None,
        // TDengine's statements (engineer tdengine) write through, like flows.
        WeirStatement::Tdengine(_) if s.block.is_some() => {
            return Some(Err(err!(ActiveSqlTransaction, "TDengine statements cannot run inside a transaction block")));
        }
        WeirStatement::Tdengine(_) => return None,
        WeirStatement::CreateFlow(_)
        | WeirStatement::DropFlow(_)
        | WeirStatement::CommentOnFlow(_)
        | WeirStatement::ShowFlows(_)
        | WeirStatement::ShowCreateFlow(_)
        | WeirStatement::Tql(_)
        | WeirStatement::TqlWith(_) => return None,
        WeirStatement::CreateTable(ct) => {
            s.block.as_ref()?;
            if let Err(e) = take_snapshot(s) {
                return Some(Err(e));
            }
            if s.block.as_ref().is_some_and(|b| b.read_only) {
                return Some(Err(err!(ReadOnlySqlTransaction, "cannot execute CREATE TABLE in a read-only transaction")));
            }
            let ct = ct.clone();
            return Some(create_in_block(s, &ct.name, true, |s| super::ddl::create_weir_table(s, &ct)));
        }
    };
    Some(match stmt {
        Statement::StartTransaction { modes, .. } => begin(s, modes),
        Statement::Commit { chain, .. } => end(s, true, *chain),
        Statement::Rollback { chain, savepoint: None } => end(s, false, *chain),
        Statement::Rollback { savepoint: Some(name), .. } => rollback_to(s, &crate::planner::ident(name)),
        Statement::Savepoint { name } => savepoint(s, &crate::planner::ident(name)),
        Statement::ReleaseSavepoint { name } => release(s, &crate::planner::ident(name)),
        _ if s.block.is_none() => return None,
        _ => return in_block(s, stmt),
    })
}

fn begin(s: &mut Session, modes: &[TransactionMode]) -> Result<QueryResult> {
    if s.block.is_some() {
        // PostgreSQL warns and carries on.
        return Ok(QueryResult::Command("BEGIN".into()));
    }
    let mut isolation = None;
    let mut read_only = s.settings.get("default_transaction_read_only").is_some_and(|v| v == "on");
    for m in modes {
        match m {
            TransactionMode::IsolationLevel(l) => isolation = Some(Isolation::of(l)),
            TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => read_only = true,
            TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => read_only = false,
        }
    }
    let iso =
        isolation.unwrap_or_else(|| Isolation::parse(s.settings.get("default_transaction_isolation").map(String::as_str).unwrap_or("")));
    s.settings.insert("transaction_isolation".into(), iso.name().into());
    s.settings.insert("transaction_read_only".into(), if read_only { "on" } else { "off" }.into());
    s.block = Some(Block::new(s.pid, read_only));
    s.tx = TxState::InBlock;
    Ok(QueryResult::Command("BEGIN".into()))
}

/// COMMIT (`commit`) or ROLLBACK, optionally AND CHAIN.
fn end(s: &mut Session, commit: bool, chain: bool) -> Result<QueryResult> {
    let failed = s.tx == TxState::Failed;
    let Some(block) = s.block.take() else {
        // PostgreSQL warns "there is no transaction in progress".
        s.tx = TxState::Idle;
        return Ok(QueryResult::Command(if commit { "COMMIT" } else { "ROLLBACK" }.into()));
    };
    let iso = s.settings.get("transaction_isolation").cloned();
    let ro = block.read_only;
    s.tx = TxState::Idle;
    let result = if commit && !failed { apply(s, block) } else { discard(s, block) };
    if !(commit && !failed) || result.is_err() {
        super::listen::discard(s);
    }
    super::session_vars::apply_set_configs(s);
    super::session_vars::restore_local_settings(s);
    reset_settings(s);
    if chain {
        s.block = Some(Block::new(s.pid, ro));
        s.tx = TxState::InBlock;
        if let Some(i) = iso {
            s.settings.insert("transaction_isolation".into(), i);
        }
        s.settings.insert("transaction_read_only".into(), if ro { "on" } else { "off" }.into());
    }
    result?;
    Ok(QueryResult::Command(if commit && !failed { "COMMIT" } else { "ROLLBACK" }.into()))
}

fn reset_settings(s: &mut Session) {
    let iso = s.settings.get("default_transaction_isolation").cloned().unwrap_or_else(|| "read committed".into());
    s.settings.insert("transaction_isolation".into(), iso);
    let ro = s.settings.get("default_transaction_read_only").cloned().unwrap_or_else(|| "off".into());
    s.settings.insert("transaction_read_only".into(), ro);
}

/// COMMIT: the buffered writes as one unit, then the deferred drops.
fn apply(s: &Session, block: Block) -> Result<()> {
    let engine = s.engine.clone();
    engine.storage.snapshot_source().release(&block.holder);
    let dropped: HashSet<u32> = block.drops.iter().map(|d| d.id).collect();
    let writes = std::mem::take(&mut block.writes.lock().parts);
    let parts: Vec<(Arc<Region>, RegionWrites)> =
        writes.into_values().filter(|p| !dropped.contains(&((p.region.id >> 32) as u32))).map(|p| (p.region, p.writes)).collect();
    if let Err(e) = engine.storage.commit(parts) {
        undo_created(s, &block.created);
        return Err(e);
    }
    for def in &block.drops {
        drop_table(s, def)?;
    }
    Ok(())
}

/// Run a statement outside a transaction block as one commit: its writes
/// are buffered like a block's and committed together (an UPDATE's
/// deletes and inserts: no reader, such as a flow's change log, sees the
/// old row gone before the new one is there); inside a block, as usual.
pub fn as_one_commit(s: &mut Session, run: impl FnOnce(&mut Session) -> Result<QueryResult>) -> Result<QueryResult> {
    if s.block.is_some() {
        return run(s);
    }
    s.block = Some(Block::new(s.pid, false));
    let r = run(s);
    let block = s.block.take().expect("the statement's own block");
    match r {
        Ok(q) => {
            apply(s, block)?;
            Ok(q)
        }
        Err(e) => {
            discard(s, block)?;
            Err(e)
        }
    }
}

/// ROLLBACK, an aborted block, or a dropped connection.
fn discard(s: &Session, block: Block) -> Result<()> {
    s.engine.storage.snapshot_source().release(&block.holder);
    undo_created(s, &block.created);
    Ok(())
}

/// The session ends (connection dropped): its open block is discarded.
pub fn on_session_end(s: &mut Session) {
    if let Some(b) = s.block.take() {
        let _ = discard(s, b);
    }
}

fn undo_created(s: &Session, created: &[Created]) {
    for c in created.iter().rev() {
        let r = match c {
            Created::Table { database, name, id } => match s.engine.catalog.table(database, name) {
                Some(def) if def.id == *id => s.engine.catalog.drop_table(database, name).and_then(|def| {
                    for r in 0..def.regions.max(1) {
                        s.engine.storage.drop_region(region_id(def.id, r))?;
                    }
                    Ok(())
                }),
                _ => Ok(()),
            },
            Created::View { database, name } => s.engine.catalog.drop_view(database, name),
            Created::Auth(undo) => s.engine.catalog.undo_auth(undo),
            Created::Type { before, after } => (|| {
                if let Some(a) = after {
                    if s.engine.catalog.user_type(&a.database, &a.name).is_some_and(|t| t.id == a.id) {
                        s.engine.catalog.drop_type(&a.database, &a.name)?;
                    }
                }
                match before {
                    Some(b) => s.engine.catalog.restore_type(b.clone()),
                    None => Ok(()),
                }
            })(),
            Created::Index { database, name } => s.engine.catalog.drop_index(database, name),
            Created::Operator { key, before } => (|| {
                s.engine.catalog.drop_operator_object(key)?;
                match before {
                    Some(b) => s.engine.catalog.put_operator_object(b.clone()).map(|_| ()),
                    None => Ok(()),
                }
            })(),
            Created::Function { database, name, types } => s.engine.catalog.drop_function(database, name, types).map(|_| ()),
        };
        if let Err(e) = r {
            tracing::warn!(error = %e, "undoing DDL of a rolled back transaction failed");
        }
    }
}

fn drop_table(s: &Session, def: &TableDef) -> Result<()> {
    if s.engine.catalog.table(&def.database, &def.name).is_some_and(|d| d.id == def.id) {
        s.engine.catalog.drop_table(&def.database, &def.name)?;
        for r in 0..def.regions.max(1) {
            s.engine.storage.drop_region(region_id(def.id, r))?;
        }
    }
    Ok(())
}

fn no_block(what: &str) -> crate::error::WeirError {
    err!(NoActiveSqlTransaction, "{what} can only be used in transaction blocks")
}

fn savepoint(s: &mut Session, name: &str) -> Result<QueryResult> {
    let Some(b) = s.block.as_mut() else { return Err(no_block("SAVEPOINT")) };
    let writes = b.writes.lock().clone();
    let notify = s.listen_tx.mark();
    b.savepoints.push(Savepoint { name: name.to_string(), writes, created: b.created.len(), drops: b.drops.len(), notify });
    Ok(QueryResult::Command("SAVEPOINT".into()))
}

/// The innermost savepoint called `name` (PostgreSQL picks the newest).
fn find(b: &Block, name: &str) -> Result<usize> {
    b.savepoints.iter().rposition(|p| p.name == name).ok_or_else(|| err!(InvalidSavepoint, "savepoint \"{name}\" does not exist"))
}

fn release(s: &mut Session, name: &str) -> Result<QueryResult> {
    let Some(b) = s.block.as_mut() else { return Err(no_block("RELEASE SAVEPOINT")) };
    let i = find(b, name)?;
    b.savepoints.truncate(i);
    Ok(QueryResult::Command("RELEASE".into()))
}

fn rollback_to(s: &mut Session, name: &str) -> Result<QueryResult> {
    let Some(mut b) = s.block.take() else { return Err(no_block("ROLLBACK TO SAVEPOINT")) };
    let i = match find(&b, name) {
        Ok(i) => i,
        Err(e) => {
            s.block = Some(b);
            return Err(e);
        }
    };
    // The savepoint stays; later ones go.
    b.savepoints.truncate(i + 1);
    let sp = &b.savepoints[i];
    *b.writes.lock() = sp.writes.clone();
    let (nc, nd) = (sp.created, sp.drops);
    s.listen_tx.truncate(sp.notify);
    let undo: Vec<Created> = b.created.drain(nc..).collect();
    b.drops.truncate(nd);
    undo_created(s, &undo);
    s.block = Some(b);
    s.tx = TxState::InBlock;
    Ok(QueryResult::Command("ROLLBACK".into()))
}

/// GRANT / REVOKE and the role statements: PostgreSQL rolls them back with
/// the block, and refuses them in a read-only one.
fn changes_roles_or_privileges(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::Grant(_)
            | Statement::Revoke(_)
            | Statement::GrantRole(_)
            | Statement::RevokeRole(_)
            | Statement::CreateRole(_)
            | Statement::CreateUser(_)
            | Statement::AlterRole { .. }
            | Statement::AlterDefaultPrivileges(_)
            | Statement::Drop { object_type: ast::ObjectType::Role | ast::ObjectType::User, .. }
    )
}

/// A statement inside a block other than transaction control.
fn in_block(s: &mut Session, stmt: &Statement) -> Option<Result<QueryResult>> {
    if let Err(e) = take_snapshot(s) {
        return Some(Err(e));
    }
    let read_only = s.block.as_ref().is_some_and(|b| b.read_only);
    match stmt {
        Statement::Insert(_) | Statement::Delete(_) | Statement::Update(_) | Statement::Copy { to: false, .. } if read_only => {
            let word = stmt.to_string().split_whitespace().next().unwrap_or("").to_ascii_uppercase();
            Some(Err(err!(ReadOnlySqlTransaction, "cannot execute {word} in a read-only transaction")))
        }
        Statement::CreateTable(_) | Statement::CreateView(_) | Statement::CreateIndex(_) | Statement::Drop { .. } if read_only => {
            let word = stmt.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_ascii_uppercase();
            Some(Err(err!(ReadOnlySqlTransaction, "cannot execute {word} in a read-only transaction")))
        }
        _ if read_only && changes_roles_or_privileges(stmt) => {
            let word = stmt.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_ascii_uppercase();
            let word = if word.starts_with("GRANT") || word.starts_with("REVOKE") {
                word.split(' ').next().unwrap_or("").to_string()
            } else {
                word
            };
            Some(Err(err!(ReadOnlySqlTransaction, "cannot execute {word} in a read-only transaction")))
        }
        _ if changes_roles_or_privileges(stmt) || matches!(stmt, Statement::AlterTable(_)) => {
            Some(auth_in_block(s, |s| s.execute_sql_statement(stmt, Default::default())))
        }
        Statement::CreateTable(ct) => Some(create_in_block(s, &ct.name, true, |s| s.execute_sql_statement(stmt, Default::default()))),
        Statement::CreateView(cv) => Some(create_in_block(s, &cv.name, false, |s| s.execute_sql_statement(stmt, Default::default()))),
        Statement::Drop { object_type: ast::ObjectType::Table, if_exists, names, .. } => Some(drop_in_block(s, *if_exists, names)),
        Statement::CreateIndex(ci) => Some(create_index_in_block(s, &ci.table_name, stmt)),
        // A dropped type is put back by ROLLBACK (`user_type.rs`).
        Statement::Drop { object_type: ast::ObjectType::Type, .. } => None,
        Statement::CreateDatabase { .. } | Statement::Drop { .. } | Statement::Truncate(_) => {
            let text = stmt.to_string();
            let word = text.split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_ascii_uppercase();
            Some(Err(err!(ActiveSqlTransaction, "{word} cannot run inside a transaction block").with_detail(
                "weir applies this statement at once and cannot roll it back; CREATE TABLE, CREATE VIEW, CREATE INDEX and DROP TABLE are the DDL a block can undo",
            )))
        }
        // Everything else runs as it would outside a block (reads, SET,
        // SHOW; DML joins the block through `write_rows` / `delete_rows`).
        _ => None,
    }
}

/// The database and name a table or view name resolves to.
fn resolve(s: &Session, n: &ast::ObjectName) -> Result<(String, String)> {
    let rel = crate::planner::relation(&s.engine.catalog, &s.database, n)?;
    Ok((rel.database()?, rel.name))
}

fn create_in_block(
    s: &mut Session,
    name: &ast::ObjectName,
    table: bool,
    run: impl FnOnce(&mut Session) -> Result<QueryResult>,
) -> Result<QueryResult> {
    let (database, name) = resolve(s, name)?;
    let existed_table = s.engine.catalog.table(&database, &name).map(|t| t.id);
    let existed_view = s.engine.catalog.view(&database, &name).is_some();
    let r = run(s)?;
    let created = if table {
        match s.engine.catalog.table(&database, &name) {
            Some(t) if Some(t.id) != existed_table => Some(Created::Table { database, name, id: t.id }),
            _ => None,
        }
    } else if !existed_view {
        Some(Created::View { database, name })
    } else {
        None
    };
    if let (Some(c), Some(b)) = (created, s.block.as_mut()) {
        b.created.push(c);
    }
    Ok(r)
}

/// A type a statement created, changed or dropped: put back as it was if
/// the block does not commit. Nothing to record outside a block.
pub(super) fn changed_type(s: &mut Session, before: Option<crate::catalog::TypeDef>, after: Option<crate::catalog::TypeDef>) {
    if let Some(b) = s.block.as_mut() {
        b.created.push(Created::Type { before, after });
    }
}

/// An operator object a statement created, replaced or dropped (`key`,
/// `before` what it held): put back if the block does not commit.
pub(super) fn changed_operator_object(s: &mut Session, key: String, before: Option<crate::catalog::operator::OperatorObject>) {
    if let Some(b) = s.block.as_mut() {
        b.created.push(Created::Operator { key, before });
    }
}

/// A function or aggregate a statement created: dropped again if the
/// block does not commit. Nothing to record outside a block.
pub(super) fn created_function(s: &mut Session, database: &str, name: &str, types: &[crate::types::SqlType]) {
    if let Some(b) = s.block.as_mut() {
        b.created.push(Created::Function { database: database.to_string(), name: name.to_string(), types: types.to_vec() });
    }
}

/// CREATE INDEX runs at once (an index is the catalog's description of one,
/// nothing in storage); ROLLBACK drops the index it made.
fn create_index_in_block(s: &mut Session, table: &ast::ObjectName, stmt: &Statement) -> Result<QueryResult> {
    let (database, table) = resolve(s, table)?;
    let names = |s: &Session| -> Vec<String> { s.engine.catalog.indexes(&database, &table).into_iter().map(|i| i.name).collect() };
    let before = names(s);
    let r = s.execute_sql_statement(stmt, Default::default())?;
    let made: Vec<String> = names(s).into_iter().filter(|n| !before.contains(n)).collect();
    if let Some(b) = s.block.as_mut() {
        b.created.extend(made.into_iter().map(|name| Created::Index { database: database.clone(), name }));
    }
    Ok(r)
}

/// A statement that changes roles or privileges runs at once; what it
/// changed is put back if the block does not commit (PostgreSQL's GRANT,
/// REVOKE and role statements are transactional).
fn auth_in_block(s: &mut Session, run: impl FnOnce(&mut Session) -> Result<QueryResult>) -> Result<QueryResult> {
    // Even a failed statement may have changed some entries (a GRANT to
    // several roles that fails at the second): they are undone with the block.
    let engine = s.engine.clone();
    let (r, undo) = engine.catalog.journal_auth(|| run(s));
    if let (false, Some(b)) = (undo.is_empty(), s.block.as_mut()) {
        b.created.push(Created::Auth(undo));
    }
    r
}

fn drop_in_block(s: &mut Session, if_exists: bool, names: &[ast::ObjectName]) -> Result<QueryResult> {
    let mut defs = Vec::new();
    for n in names {
        let (database, name) = match resolve(s, n) {
            Err(_) if if_exists => continue,
            r => r?,
        };
        let already = s.block.as_ref().is_some_and(|b| b.drops.iter().any(|d| d.name == name && d.database == database));
        match s.engine.catalog.table(&database, &name) {
            Some(def) if !already => defs.push(def),
            _ if if_exists => {}
            _ => bail!(UndefinedTable, "table \"{name}\" does not exist"),
        }
    }
    let Some(b) = s.block.as_mut() else { bail!(Internal, "no transaction block") };
    b.drops.extend(defs);
    Ok(QueryResult::Command("DROP TABLE".into()))
}

/// REPEATABLE READ / SERIALIZABLE: the block's snapshot at its first
/// statement, with versions held until the block ends.
fn take_snapshot(s: &mut Session) -> Result<()> {
    let iso = Isolation::parse(s.settings.get("transaction_isolation").map(String::as_str).unwrap_or(""));
    let src = s.engine.storage.snapshot_source();
    let Some(b) = s.block.as_mut() else { return Ok(()) };
    if iso == Isolation::ReadCommitted || b.snapshot.is_some() {
        return Ok(());
    }
    let snap = src.take();
    src.hold(&b.holder, &snap)?;
    b.snapshot = Some(snap);
    Ok(())
}

/// What a statement of this session reads: the block's snapshot (or one
/// taken at the statement's first scan) and the block's own writes.
pub fn read_view(s: &Session) -> Arc<ReadView> {
    let src = s.engine.storage.snapshot_source();
    let b = s.block.as_ref();
    let overlay = b.map(|b| {
        let w = b.writes.clone();
        Box::new(move || w.lock().parts.iter().map(|(id, p)| (*id, Arc::new(p.writes.clone()))).collect()) as crate::storage::OverlayFn
    });
    Arc::new(ReadView::new(src, b.and_then(|b| b.snapshot.clone()), overlay))
}

fn buffer_limit(s: &Session) -> usize {
    s.engine.config.storage.txn_buffer_bytes_max
}

fn part<'a>(b: &'a mut Writes, region: &Arc<Region>) -> &'a mut Part {
    b.parts.entry(region.id).or_insert_with(|| Part { region: region.clone(), writes: RegionWrites::default() })
}

fn charge(b: &mut Writes, bytes: usize, limit: usize) -> Result<()> {
    b.bytes += bytes;
    if b.bytes > limit {
        return Err(err!(ConfigurationLimitExceeded, "transaction buffer exceeds {limit} bytes")
            .with_detail(format!("the transaction has buffered {} bytes of writes", b.bytes))
            .with_hint("commit in smaller transactions, or raise [storage] txn_buffer_bytes_max"));
    }
    Ok(())
}

/// Write new rows (all user columns, table order): buffered in a block,
/// else straight to the regions they belong to.
pub fn write_rows(s: &Session, def: &TableDef, regions: &[Arc<Region>], batch: &RecordBatch) -> Result<()> {
    let Some(block) = s.block.as_ref() else {
        return write_routed(def, regions, batch);
    };
    let mut guard = block.writes.lock();
    let b = &mut *guard;
    let routed: Vec<(usize, RecordBatch)> = if regions.len() <= 1 {
        vec![(0, batch.clone())]
    } else {
        crate::storage::route_rows(batch, &def.primary_key, regions.len() as u32)?.into_iter().map(|(r, p)| (r as usize, p)).collect()
    };
    let limit = buffer_limit(s);
    for (r, rows) in routed {
        let n = rows.num_rows() as u64;
        if n == 0 {
            continue;
        }
        let start = b.next_temp_rowid;
        b.next_temp_rowid += n;
        let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
        cols.push(Arc::new(UInt64Array::from_iter_values(start..start + n)));
        let stored = RecordBatch::try_new_with_options(
            regions[r].stored_schema(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(n as usize)),
        )?;
        charge(b, stored.get_array_memory_size(), limit)?;
        part(b, &regions[r]).writes.puts.push(stored);
    }
    Ok(())
}

/// Delete rows as returned by a scan with `__rowid` (last column).
pub fn delete_rows(s: &Session, region: &Arc<Region>, rows: &RecordBatch) -> Result<()> {
    let Some(block) = s.block.as_ref() else {
        region.delete(rows)?;
        return Ok(());
    };
    let mut guard = block.writes.lock();
    let b = &mut *guard;
    let limit = buffer_limit(s);
    let ids = rows.column(rows.num_columns() - 1).as_any().downcast_ref::<UInt64Array>().expect("__rowid is UInt64").clone();
    let own: HashSet<u64> = ids.values().iter().copied().filter(|&i| i >= TEMP_ROWID_BASE).collect();
    let lww = region.desc.last_write_wins();
    let tomb = if lww || own.is_empty() {
        rows.clone()
    } else {
        let keep: BooleanArray = ids.values().iter().map(|i| Some(*i < TEMP_ROWID_BASE)).collect();
        arrow::compute::filter_record_batch(rows, &keep)?
    };
    let p = part(b, region);
    if !own.is_empty() {
        // The block's own rows leave its buffer.
        for put in p.writes.puts.iter_mut() {
            let pid = put.column(put.num_columns() - 1).as_any().downcast_ref::<UInt64Array>().expect("__rowid is UInt64");
            let keep: BooleanArray = pid.values().iter().map(|i| Some(!own.contains(i))).collect();
            if keep.true_count() < put.num_rows() {
                *put = arrow::compute::filter_record_batch(put, &keep)?;
            }
        }
        p.writes.puts.retain(|b| b.num_rows() > 0);
    }
    // Tombstones: committed rows; with last write wins also the block's
    // own rows, which may have replaced a committed row of that identity.
    if tomb.num_rows() > 0 {
        let bytes = tomb.get_array_memory_size();
        p.writes.deletes.push(tomb);
        charge(b, bytes, limit)?;
    }
    Ok(())
}

/// Write rows as one unit: into the open block, or else as a transaction
/// of their own across the table's regions.
pub fn write_unit(s: &Session, def: &TableDef, regions: &[Arc<Region>], batch: &RecordBatch) -> Result<()> {
    if s.block.is_some() {
        return write_rows(s, def, regions, batch);
    }
    let routed: Vec<(usize, RecordBatch)> = if regions.len() <= 1 {
        vec![(0, batch.clone())]
    } else {
        crate::storage::route_rows(batch, &def.primary_key, regions.len() as u32)?.into_iter().map(|(r, p)| (r as usize, p)).collect()
    };
    let mut parts = Vec::new();
    for (r, rows) in routed {
        let n = rows.num_rows() as u64;
        let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
        cols.push(Arc::new(UInt64Array::from_iter_values(TEMP_ROWID_BASE..TEMP_ROWID_BASE + n)));
        let stored = RecordBatch::try_new_with_options(
            regions[r].stored_schema(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(n as usize)),
        )?;
        parts.push((regions[r].clone(), RegionWrites { puts: vec![stored], ..Default::default() }));
    }
    s.engine.storage.commit(parts)
}

/// Write rows to the regions they belong to (autocommit).
fn write_routed(def: &TableDef, regions: &[Arc<Region>], batch: &RecordBatch) -> Result<()> {
    if regions.len() <= 1 {
        regions[0].write(batch)?;
        return Ok(());
    }
    for (r, part) in crate::storage::route_rows(batch, &def.primary_key, regions.len() as u32)? {
        if part.num_rows() > 0 {
            regions[r as usize].write(&part)?;
        }
    }
    Ok(())
}
