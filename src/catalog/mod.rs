//! The catalog: databases, tables, views, indexes and functions, persisted in sled.
//!
//! Knows names and definitions only; it opens no region. May import
//! `error` and `types`, never `storage`, `exec`, `planner`, `sql`.

pub mod comment;
mod flow;
pub mod function;
pub mod operator;
pub mod partition;
pub mod rule;
pub mod sequence;
mod tdengine;
pub mod trigger;
pub mod user_type;

pub use flow::{FlowDef, FlowProgress, FlowStatistics, WriteClock};
pub use function::{AggregateDef, FunctionArg, FunctionDef, FunctionReturns};
pub use rule::{RuleDef, RuleEvent};
pub use sequence::{Identity, OwnedBy, SequenceDef, SequenceValue};
pub use tdengine::{
    ChildTableDef, GroupProgress, RecalcRequest, SnodeDef, StreamDef, StreamState, StreamStateWrite, SuperTableDef, WindowMark,
};
pub use user_type::{BaseDef, DomainDef, TypeDef, TypeKind};

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::types::SqlType;
use crate::{bail, err};

pub mod acl;
pub mod roles;
pub mod stream_stats;
pub use roles::RoleDef;

/// One column of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// DEFAULT expression as SQL text, evaluated at insert time.
    pub default: Option<String>,
    /// Fractional digits a timestamp column keeps (`TIMESTAMP(p)`, p < 6);
    /// None keeps microseconds.
    #[serde(default)]
    pub precision: Option<u8>,
    /// A NUMERIC(p, s) column's typmod (PostgreSQL's encoding, see
    /// `types::numeric::make_typmod`), or a VARCHAR(n) / CHAR(n) column's n + 4 (a text
    /// column with a typmod is CHAR(n), kept without trailing blanks); None for every other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typmod: Option<i32>,
    /// The user-defined type the column was declared with (a composite type or a
    /// domain, `name[]` for an array of one), whose values `ty` carries; None for a
    /// built-in type. INSERT's `(f3.if1, f4[1].if2)` targets read its fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
}

impl ColumnDef {
    /// The column's type as SQL writes it, with its precision.
    pub fn type_name(&self) -> String {
        match self.precision {
            Some(p) if self.ty.is_timestamp() => {
                let name = self.ty.sql_name();
                match name.split_once(' ') {
                    Some((head, tail)) => format!("{head}({p}) {tail}"),
                    None => format!("{name}({p})"),
                }
            }
            _ => match (self.ty, self.typmod) {
                (SqlType::Numeric, Some(t)) => match crate::types::numeric::typmod_parts(t) {
                    Some((p, s)) => format!("NUMERIC({p}, {s})"),
                    None => self.ty.sql_name().to_string(),
                },
                (SqlType::Varchar, Some(t)) => format!("character varying({})", t - 4),
                (SqlType::Text, Some(t)) => format!("character({})", t - 4),
                _ => self.ty.sql_name().to_string(),
            },
        }
    }
}

/// A table's definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableDef {
    pub id: u32,
    pub database: String,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// Index of the TIME INDEX column.
    pub time_index: Option<usize>,
    /// Tag columns (PRIMARY KEY), as column indices.
    pub primary_key: Vec<usize>,
    pub append_mode: bool,
    /// TTL in milliseconds; Some(0) means 'instant'.
    pub ttl_ms: Option<i64>,
    /// The original TTL text, for SHOW CREATE TABLE.
    pub ttl_text: Option<String>,
    pub regions: u32,
    /// Declarative partitioning (PARTITION BY / PARTITION OF); empty for
    /// an ordinary table.
    #[serde(default, skip_serializing_if = "partition::Partitioning::is_none")]
    pub partition: partition::Partitioning,
    /// The parents a table inherits from (`INHERITS (p, …)`, `ALTER TABLE
    /// … INHERIT p`), in order, by name in the table's database. A parent's
    /// scan reads its descendants too (`planner/inherit.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherits: Vec<String>,
    /// CHECK constraints, checked on every write (`sql/check.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckDef>,
    /// Its triggers, in creation order (they fire in name order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<trigger::TriggerDef>,
    /// Row-level security: whether it is on and the table's policies.
    #[serde(default, skip_serializing_if = "RowSecurity::is_default")]
    pub row_security: RowSecurity,
}

/// A table's row-level security (`ALTER TABLE … ENABLE / FORCE ROW LEVEL SECURITY`,
/// `CREATE POLICY`), applied by `planner/row_security.rs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RowSecurity {
    pub enabled: bool,
    /// FORCE: the owner is subject to the policies too.
    #[serde(default)]
    pub forced: bool,
    #[serde(default)]
    pub policies: Vec<PolicyDef>,
}

impl RowSecurity {
    pub fn is_default(&self) -> bool {
        *self == RowSecurity::default()
    }
}

/// One policy (`CREATE POLICY name ON t [AS PERMISSIVE | RESTRICTIVE] [FOR cmd]
/// [TO roles] [USING (…)] [WITH CHECK (…)]`), its expressions as SQL text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyDef {
    pub name: String,
    pub permissive: bool,
    /// `all`, `select`, `insert`, `update` or `delete`.
    pub command: String,
    /// The roles it applies to; empty means PUBLIC.
    #[serde(default)]
    pub roles: Vec<String>,
    pub using: Option<String>,
    pub check: Option<String>,
}

/// A CHECK constraint: its name and its expression as SQL text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckDef {
    pub name: String,
    pub expr: String,
    /// `NO INHERIT`: children do not get it.
    #[serde(default)]
    pub no_inherit: bool,
    /// Inherited from a parent (PostgreSQL's conislocal false).
    #[serde(default)]
    pub inherited: bool,
}

impl TableDef {
    /// A new table (id assigned when created) whose first column is the
    /// time index, with one region and no TTL: the shape TDengine's tables
    /// and a stream's output tables take.
    pub fn time_first(database: &str, name: &str, columns: Vec<ColumnDef>, primary_key: Vec<usize>) -> TableDef {
        TableDef {
            id: 0,
            database: database.to_string(),
            name: name.to_string(),
            columns,
            time_index: Some(0),
            primary_key,
            append_mode: false,
            ttl_ms: None,
            ttl_text: None,
            regions: 1,
            partition: Default::default(),
            inherits: vec![],
            checks: vec![],
            triggers: Vec::new(),
            row_security: RowSecurity::default(),
        }
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// A view: a name for a stored query.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewDef {
    pub database: String,
    pub name: String,
    pub sql: String,
    pub columns: Vec<String>,
    /// Drawn from the id generator tables use (so its OID, like a table's,
    /// is unique and stable); 0 until the catalog assigns it.
    #[serde(default)]
    pub id: u32,
    /// `WITH (security_invoker)`: the view's relations are checked as the
    /// user who reads it instead of its owner.
    #[serde(default)]
    pub security_invoker: bool,
    /// `pg_get_viewdef`'s texts (pretty, plain), made from the query when
    /// the view is created (`planner::viewdef`); None when the deparser does
    /// not know the query's shape (or the view predates it): the SQL is shown.
    #[serde(default)]
    pub definition: Option<(String, String)>,
    /// `WITH (…)` options as `pg_class.reloptions` lists them (`name=value`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// An index: recorded; unique ones are enforced on plain tables.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexDef {
    pub database: String,
    pub name: String,
    pub table: String,
    pub columns: Vec<String>,
    pub unique: bool,
    /// As [`ViewDef::id`]: the index's OID is stable across drops of others.
    #[serde(default)]
    pub id: u32,
}

#[derive(Default)]
struct State {
    /// Each database's slot: a small number it keeps while it exists
    /// (its namespace's and pg_database's OIDs), so those OIDs do not move
    /// when another database is created or dropped.
    databases: BTreeMap<String, u32>,
    tables: BTreeMap<(String, String), TableDef>,
    views: BTreeMap<(String, String), ViewDef>,
    indexes: BTreeMap<(String, String), IndexDef>,
    roles: BTreeMap<String, RoleDef>,
    /// Owners and ACLs by `acl::AclObject` key (`acl.rs`).
    acls: BTreeMap<String, acl::ObjectAcl>,
    /// User-defined functions by (database, name): their overloads.
    functions: BTreeMap<(String, String), Vec<FunctionDef>>,
    /// Sequences by (database, name) (`sequence.rs`).
    sequences: BTreeMap<(String, String), SequenceDef>,
    /// User-defined types by (database, name) (`user_type.rs`).
    types: BTreeMap<(String, String), TypeDef>,
    /// Rules by (database, table, name) (`rule.rs`).
    rules: BTreeMap<(String, String, String), rule::RuleDef>,
    /// Comments on relations and columns (`comment.rs`).
    comments: BTreeMap<comment::CommentKey, comment::CommentDef>,
    /// Operators, operator classes and casts by key (`operator.rs`).
    operators: BTreeMap<String, operator::OperatorObject>,
}

thread_local! {
    /// Nesting depth of `Catalog::with_one_flush` on this thread.
    static DEFER_FLUSH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// A write was deferred on this thread since the outermost
    /// `with_one_flush` began (its end flushes only then).
    static DEFERRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The catalog. Every change is written through to sled and flushed.
pub struct Catalog {
    tree: sled::Tree,
    db: sled::Db,
    state: RwLock<State>,
    /// Running flows' statistics (in memory; `information_schema.flow_statistics`).
    pub flow_stats: RwLock<BTreeMap<String, flow::FlowStatistics>>,
    /// Streaming flows' operators (in memory; `information_schema.flow_operators`).
    pub flow_operators: RwLock<BTreeMap<String, Vec<stream_stats::FlowOperatorStats>>>,
    /// When the writes flows have not reflected yet happened (lag).
    pub write_clock: std::sync::Arc<flow::WriteClock>,
    /// Moves on every definition change (see [`Catalog::schema_version`]).
    schema_version: std::sync::atomic::AtomicU64,
    /// Per stream (header key), the state changes no annex has carried yet
    /// (absent: not known, the next annex carries the whole state).
    #[allow(clippy::type_complexity)]
    unannexed: parking_lot::Mutex<std::collections::HashMap<String, BTreeMap<Vec<u8>, Option<Vec<u8>>>>>,
    /// Sequences' values (`sequence.rs`), apart from `state` so nextval
    /// does not hold up planning.
    sequence_values: parking_lot::Mutex<BTreeMap<(String, String), sequence::LiveValue>>,
}

const DB_PREFIX: &str = "db/";
const TABLE_PREFIX: &str = "table/";
const VIEW_PREFIX: &str = "view/";
const INDEX_PREFIX: &str = "index/";
const ROLE_PREFIX: &str = "role/";
const ACL_PREFIX: &str = "acl/";
const FUNCTION_PREFIX: &str = "function/";

/// The smallest slot no database holds.
fn free_slot(databases: &BTreeMap<String, u32>) -> u32 {
    let used: std::collections::BTreeSet<u32> = databases.values().copied().collect();
    (0..).find(|n| !used.contains(n)).unwrap_or(0)
}

impl Catalog {
    pub fn open(dir: &Path) -> Result<Catalog> {
        let db = crate::sled_open::open(&sled::Config::new().path(dir.join("catalog")))?;
        let tree = db.open_tree("catalog")?;
        let mut state = State::default();
        let mut sequence_values = BTreeMap::new();
        // Databases stored before slots existed (an empty entry).
        let mut unslotted: Vec<String> = Vec::new();
        for item in tree.iter() {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).to_string();
            let corrupt = |e: serde_json::Error| err!(Corrupt, "catalog entry {key} is corrupt: {e}");
            if let Some(name) = key.strip_prefix(DB_PREFIX) {
                match <[u8; 4]>::try_from(v.as_ref()) {
                    Ok(b) => {
                        state.databases.insert(name.to_string(), u32::from_le_bytes(b));
                    }
                    Err(_) => unslotted.push(name.to_string()),
                }
            } else if key.starts_with(TABLE_PREFIX) {
                let t: TableDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.tables.insert((t.database.clone(), t.name.clone()), t);
            } else if key.starts_with(VIEW_PREFIX) {
                let t: ViewDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.views.insert((t.database.clone(), t.name.clone()), t);
            } else if key.starts_with(INDEX_PREFIX) {
                let t: IndexDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.indexes.insert((t.database.clone(), t.name.clone()), t);
            } else if key.starts_with(ROLE_PREFIX) {
                let r: RoleDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.roles.insert(r.name.clone(), r);
            } else if key.starts_with(ACL_PREFIX) {
                let a: acl::ObjectAcl = serde_json::from_slice(&v).map_err(corrupt)?;
                state.acls.insert(key.clone(), a);
            } else if key.starts_with(FUNCTION_PREFIX) {
                let f: FunctionDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.functions.entry((f.database.clone(), f.name.clone())).or_default().push(f);
            } else if key.starts_with(user_type::TYPE_PREFIX) {
                let t: TypeDef = serde_json::from_slice(&v).map_err(corrupt)?;
                t.register();
                state.types.insert((t.database.clone(), t.name.clone()), t);
            } else if key.starts_with(comment::COMMENT_PREFIX) {
                let c: comment::CommentDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.comments.insert(c.key(), c);
            } else if key.starts_with(operator::OPERATOR_PREFIX) {
                let o: operator::OperatorObject = serde_json::from_slice(&v).map_err(corrupt)?;
                state.operators.insert(key.clone(), o);
            } else if key.starts_with(rule::RULE_PREFIX) {
                let r: rule::RuleDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.rules.insert((r.database.clone(), r.table.clone(), r.name.clone()), r);
            } else if key.starts_with(sequence::SEQUENCE_PREFIX) {
                let s: SequenceDef = serde_json::from_slice(&v).map_err(corrupt)?;
                state.sequences.insert((s.database.clone(), s.name.clone()), s);
            } else if let Some(k) = key.strip_prefix(sequence::SEQUENCE_VALUE_PREFIX) {
                let value: SequenceValue = serde_json::from_slice(&v).map_err(corrupt)?;
                if let Some((db, name)) = k.split_once('/') {
                    sequence_values.insert((db.to_string(), name.to_string()), sequence::LiveValue::logged(value));
                }
            } else if key.starts_with(flow::FLOW_PREFIX) {
                // Flows are read from sled when used; a damaged entry is
                // found here, at open, rather than skipped later.
                serde_json::from_slice::<FlowDef>(&v).map_err(corrupt)?;
            } else if key.starts_with(flow::PROGRESS_PREFIX) {
                serde_json::from_slice::<FlowProgress>(&v).map_err(corrupt)?;
            }
        }
        // In name order, the smallest free slots: a catalog of only such
        // entries keeps the OIDs it had (the index in name order), and the
        // slots are stored so they stay.
        for name in unslotted {
            let slot = free_slot(&state.databases);
            tree.insert(format!("{DB_PREFIX}{name}").as_bytes(), &slot.to_le_bytes()[..])?;
            state.databases.insert(name, slot);
        }
        let cat = Catalog {
            tree,
            db,
            state: RwLock::new(state),
            flow_stats: Default::default(),
            flow_operators: Default::default(),
            write_clock: Default::default(),
            schema_version: Default::default(),
            unannexed: Default::default(),
            sequence_values: parking_lot::Mutex::new(sequence_values),
        };
        if !cat.database_exists("public") {
            cat.create_database("public")?;
        }
        cat.assign_missing_ids()?;
        Ok(cat)
    }

    /// Views and indexes written before they had ids get one now (their
    /// OIDs were positional then).
    fn assign_missing_ids(&self) -> Result<()> {
        let mut st = self.state.write();
        for v in st.views.values_mut().filter(|v| v.id == 0) {
            v.id = self.next_table_id()?;
            self.put(format!("{VIEW_PREFIX}{}/{}", v.database, v.name), serde_json::to_vec(&*v).unwrap())?;
        }
        for i in st.indexes.values_mut().filter(|i| i.id == 0) {
            i.id = self.next_table_id()?;
            self.put(format!("{INDEX_PREFIX}{}/{}", i.database, i.name), serde_json::to_vec(&*i).unwrap())?;
        }
        Ok(())
    }

    fn put(&self, key: String, value: Vec<u8>) -> Result<()> {
        self.tree.insert(key.as_bytes(), value)?;
        if DEFER_FLUSH.with(|d| d.get()) == 0 {
            self.tree.flush()?;
        } else {
            DEFERRED.with(|d| d.set(true));
        }
        self.definitions_changed(&key);
        Ok(())
    }

    /// Run `f` with this thread's catalog writes made durable by one flush
    /// at its end instead of one each (a stream evaluation that creates
    /// 1,000 output subtables: 2,000 fsyncs were seconds of its latency).
    /// Other threads' writes still flush each; `f`'s are durable when this
    /// returns, also when `f` fails. No write, no flush.
    pub fn with_one_flush<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        DEFER_FLUSH.with(|d| d.set(d.get() + 1));
        let r = f();
        let depth = DEFER_FLUSH.with(|d| {
            d.set(d.get() - 1);
            d.get()
        });
        if depth == 0 && DEFERRED.with(|d| d.replace(false)) {
            self.tree.flush()?;
        }
        r
    }

    fn del(&self, key: String) -> Result<()> {
        self.tree.remove(key.as_bytes())?;
        self.tree.flush()?;
        self.definitions_changed(&key);
        Ok(())
    }

    /// A version of every definition (databases, tables, views, indexes,
    /// roles, privileges, flows, TDengine objects): it moves whenever one
    /// changes, so a plan made when it was `v` is still the plan while it
    /// reads `v` (flows keep their plans on it). Read it before planning:
    /// writers change the state under its lock and move the version before
    /// they release it.
    pub fn schema_version(&self) -> u64 {
        self.schema_version.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn definitions_changed(&self, key: &str) {
        // A flow's or stream's progress is not a definition.
        const RUNTIME: [&str; 5] = [
            flow::PROGRESS_PREFIX,
            flow::PENDING_PREFIX,
            tdengine::STREAM_STATE_PREFIX,
            tdengine::STREAM_GROUP_PREFIX,
            sequence::SEQUENCE_VALUE_PREFIX,
        ];
        if !RUNTIME.iter().any(|p| key.starts_with(p)) {
            self.schema_version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    pub fn database_exists(&self, name: &str) -> bool {
        self.state.read().databases.contains_key(name)
    }

    pub fn databases(&self) -> Vec<String> {
        self.state.read().databases.keys().cloned().collect()
    }

    /// The databases with their slots (see `State::databases`), by name.
    pub fn database_slots(&self) -> Vec<(String, u32)> {
        self.state.read().databases.iter().map(|(d, n)| (d.clone(), *n)).collect()
    }

    pub fn create_database(&self, name: &str) -> Result<()> {
        let mut st = self.state.write();
        if st.databases.contains_key(name) {
            bail!(DuplicateDatabase, "database \"{name}\" already exists");
        }
        let slot = free_slot(&st.databases);
        self.put(format!("{DB_PREFIX}{name}"), slot.to_le_bytes().to_vec())?;
        st.databases.insert(name.to_string(), slot);
        Ok(())
    }

    /// Drop a database; returns the tables it held so their regions can go.
    pub fn drop_database(&self, name: &str) -> Result<Vec<TableDef>> {
        let mut st = self.state.write();
        if !st.databases.contains_key(name) {
            bail!(UndefinedDatabase, "database \"{name}\" does not exist");
        }
        let tables: Vec<TableDef> = st.tables.values().filter(|t| t.database == name).cloned().collect();
        for t in &tables {
            self.del(format!("{TABLE_PREFIX}{}/{}", t.database, t.name))?;
            st.tables.remove(&(t.database.clone(), t.name.clone()));
            self.forget_acl(&mut st, &acl::AclObject::Relation(t.database.clone(), t.name.clone()))?;
        }
        let views: Vec<(String, String)> = st.views.keys().filter(|k| k.0 == name).cloned().collect();
        for k in views {
            self.del(format!("{VIEW_PREFIX}{}/{}", k.0, k.1))?;
            self.forget_acl(&mut st, &acl::AclObject::Relation(k.0.clone(), k.1.clone()))?;
            st.views.remove(&k);
        }
        self.forget_acl(&mut st, &acl::AclObject::Database(name.to_string()))?;
        let commented: Vec<String> = st.comments.keys().filter(|k| k.0 == name).map(|k| k.1.clone()).collect();
        for rel in commented {
            self.forget_comments(&mut st, name, &rel)?;
        }
        let idx: Vec<(String, String)> = st.indexes.keys().filter(|k| k.0 == name).cloned().collect();
        for k in idx {
            self.del(format!("{INDEX_PREFIX}{}/{}", k.0, k.1))?;
            st.indexes.remove(&k);
        }
        let seqs: Vec<String> = st.sequences.keys().filter(|k| k.0 == name).map(|k| k.1.clone()).collect();
        for s in seqs {
            self.drop_sequence_locked(&mut st, name, &s)?;
        }
        let funcs: Vec<(String, String)> = st.functions.keys().filter(|k| k.0 == name).cloned().collect();
        for k in funcs {
            for f in st.functions.remove(&k).unwrap_or_default() {
                self.del(f.key())?;
            }
        }
        let types: Vec<(String, String)> = st.types.keys().filter(|k| k.0 == name).cloned().collect();
        for k in types {
            if let Some(t) = st.types.remove(&k) {
                self.del(t.key())?;
            }
        }
        self.drop_database_operators(&mut st, name)?;
        self.del(format!("{DB_PREFIX}{name}"))?;
        st.databases.remove(name);
        Ok(tables)
    }

    pub fn next_table_id(&self) -> Result<u32> {
        Ok((self.db.generate_id()? + 1) as u32)
    }

    pub fn create_table(&self, def: TableDef) -> Result<()> {
        let mut st = self.state.write();
        let key = (def.database.clone(), def.name.clone());
        if st.tables.contains_key(&key) || st.views.contains_key(&key) || st.sequences.contains_key(&key) {
            bail!(DuplicateTable, "relation \"{}\" already exists", def.name);
        }
        self.put(format!("{TABLE_PREFIX}{}/{}", def.database, def.name), serde_json::to_vec(&def).unwrap())?;
        st.tables.insert(key, def);
        Ok(())
    }

    /// Replace a table's definition in one write (TRUNCATE gives it new
    /// regions under a new id). Returns the old definition.
    pub fn replace_table(&self, def: TableDef) -> Result<TableDef> {
        let mut st = self.state.write();
        let key = (def.database.clone(), def.name.clone());
        let Some(old) = st.tables.get(&key).cloned() else {
            bail!(UndefinedTable, "table \"{}\" does not exist", def.name);
        };
        self.put(format!("{TABLE_PREFIX}{}/{}", def.database, def.name), serde_json::to_vec(&def).unwrap())?;
        st.tables.insert(key, def);
        Ok(old)
    }

    pub fn drop_table(&self, database: &str, name: &str) -> Result<TableDef> {
        let mut st = self.state.write();
        let key = (database.to_string(), name.to_string());
        let Some(def) = st.tables.remove(&key) else {
            bail!(UndefinedTable, "table \"{name}\" does not exist");
        };
        self.del(format!("{TABLE_PREFIX}{database}/{name}"))?;
        self.forget_acl(&mut st, &acl::AclObject::Relation(database.to_string(), name.to_string()))?;
        self.forget_comments(&mut st, database, name)?;
        self.drop_owned_sequences(&mut st, database, name)?;
        let idx: Vec<(String, String)> =
            st.indexes.iter().filter(|(k, v)| k.0 == database && v.table == name).map(|(k, _)| k.clone()).collect();
        for k in idx {
            self.del(format!("{INDEX_PREFIX}{}/{}", k.0, k.1))?;
            st.indexes.remove(&k);
        }
        // The table's rules go with it.
        let rules: Vec<_> = st.rules.keys().filter(|k| k.0 == database && k.1 == name).cloned().collect();
        for k in rules {
            self.del(format!("{}{}/{}/{}", rule::RULE_PREFIX, k.0, k.1, k.2))?;
            st.rules.remove(&k);
        }
        Ok(def)
    }

    /// ALTER TABLE … RENAME TO: the table's entry, its indexes and its
    /// owner and privileges move to the new name (regions are by id and
    /// stay). Views are the caller's (their SQL names the table).
    pub fn rename_table(&self, database: &str, old: &str, new: &str) -> Result<()> {
        let mut st = self.state.write();
        let key = (database.to_string(), new.to_string());
        if st.tables.contains_key(&key) || st.views.contains_key(&key) || st.sequences.contains_key(&key) {
            bail!(DuplicateTable, "relation \"{new}\" already exists");
        }
        let Some(mut def) = st.tables.remove(&(database.to_string(), old.to_string())) else {
            bail!(UndefinedTable, "relation \"{old}\" does not exist");
        };
        def.name = new.to_string();
        self.put(format!("{TABLE_PREFIX}{database}/{new}"), serde_json::to_vec(&def).unwrap())?;
        self.del(format!("{TABLE_PREFIX}{database}/{old}"))?;
        st.tables.insert(key, def);
        self.rename_owner_table(&mut st, database, old, new)?;
        self.rename_comments(&mut st, database, old, new)?;
        for ix in st.indexes.values_mut().filter(|i| i.database == database && i.table == old) {
            ix.table = new.to_string();
            self.put(format!("{INDEX_PREFIX}{}/{}", ix.database, ix.name), serde_json::to_vec(&*ix).unwrap())?;
        }
        let rules: Vec<_> = st.rules.keys().filter(|k| k.0 == database && k.1 == old).cloned().collect();
        for k in rules {
            let Some(mut r) = st.rules.remove(&k) else { continue };
            self.del(format!("{}{}/{}/{}", rule::RULE_PREFIX, k.0, k.1, k.2))?;
            r.table = new.to_string();
            self.put(format!("{}{}/{}/{}", rule::RULE_PREFIX, r.database, r.table, r.name), serde_json::to_vec(&r).unwrap())?;
            st.rules.insert((r.database.clone(), r.table.clone(), r.name.clone()), r);
        }
        let old_acl = acl::AclObject::Relation(database.to_string(), old.to_string()).key();
        if let Some(a) = st.acls.remove(&old_acl) {
            let new_acl = acl::AclObject::Relation(database.to_string(), new.to_string()).key();
            self.put(new_acl.clone(), serde_json::to_vec(&a).unwrap())?;
            self.del(old_acl)?;
            st.acls.insert(new_acl, a);
        }
        Ok(())
    }

    /// Replace an index's definition (ALTER TABLE … RENAME COLUMN renames
    /// its columns); it keeps its id.
    pub fn replace_index(&self, def: IndexDef) -> Result<()> {
        let mut st = self.state.write();
        self.put(format!("{INDEX_PREFIX}{}/{}", def.database, def.name), serde_json::to_vec(&def).unwrap())?;
        st.indexes.insert((def.database.clone(), def.name.clone()), def);
        Ok(())
    }

    pub fn table(&self, database: &str, name: &str) -> Option<TableDef> {
        self.state.read().tables.get(&(database.to_string(), name.to_string())).cloned()
    }

    pub fn tables(&self, database: &str) -> Vec<TableDef> {
        self.state.read().tables.values().filter(|t| t.database == database).cloned().collect()
    }

    /// The partitions of a partitioned table (its direct children).
    pub fn partitions(&self, database: &str, parent: &str) -> Vec<TableDef> {
        self.state
            .read()
            .tables
            .values()
            .filter(|t| t.database == database && t.partition.of.as_ref().is_some_and(|o| o.parent == parent))
            .cloned()
            .collect()
    }

    /// The tables that inherit directly from a table, in creation order
    /// (PostgreSQL's OID order).
    pub fn inheritors(&self, database: &str, parent: &str) -> Vec<TableDef> {
        let mut out: Vec<TableDef> = self
            .state
            .read()
            .tables
            .values()
            .filter(|t| t.database == database && t.inherits.iter().any(|p| p == parent))
            .cloned()
            .collect();
        out.sort_by_key(|t| t.id);
        out
    }

    pub fn all_tables(&self) -> Vec<TableDef> {
        self.state.read().tables.values().cloned().collect()
    }

    /// Create (or replace: the view keeps its id) a view.
    pub fn create_view(&self, mut def: ViewDef, or_replace: bool) -> Result<()> {
        let mut st = self.state.write();
        let key = (def.database.clone(), def.name.clone());
        if st.tables.contains_key(&key) || st.sequences.contains_key(&key) || (st.views.contains_key(&key) && !or_replace) {
            bail!(DuplicateTable, "relation \"{}\" already exists", def.name);
        }
        def.id = match st.views.get(&key) {
            Some(old) => old.id,
            None => self.next_table_id()?,
        };
        self.put(format!("{VIEW_PREFIX}{}/{}", def.database, def.name), serde_json::to_vec(&def).unwrap())?;
        st.views.insert(key, def);
        Ok(())
    }

    pub fn drop_view(&self, database: &str, name: &str) -> Result<()> {
        let mut st = self.state.write();
        if st.views.remove(&(database.to_string(), name.to_string())).is_none() {
            bail!(UndefinedTable, "view \"{name}\" does not exist");
        }
        self.forget_acl(&mut st, &acl::AclObject::Relation(database.to_string(), name.to_string()))?;
        self.forget_comments(&mut st, database, name)?;
        self.del(format!("{VIEW_PREFIX}{database}/{name}"))
    }

    pub fn view(&self, database: &str, name: &str) -> Option<ViewDef> {
        self.state.read().views.get(&(database.to_string(), name.to_string())).cloned()
    }

    pub fn views(&self, database: &str) -> Vec<ViewDef> {
        self.state.read().views.values().filter(|t| t.database == database).cloned().collect()
    }

    pub fn create_index(&self, mut def: IndexDef) -> Result<()> {
        let mut st = self.state.write();
        let key = (def.database.clone(), def.name.clone());
        if st.indexes.contains_key(&key) {
            bail!(DuplicateTable, "relation \"{}\" already exists", def.name);
        }
        def.id = self.next_table_id()?;
        self.put(format!("{INDEX_PREFIX}{}/{}", def.database, def.name), serde_json::to_vec(&def).unwrap())?;
        st.indexes.insert(key, def);
        Ok(())
    }

    pub fn drop_index(&self, database: &str, name: &str) -> Result<()> {
        let mut st = self.state.write();
        if st.indexes.remove(&(database.to_string(), name.to_string())).is_none() {
            bail!(UndefinedObject, "index \"{name}\" does not exist");
        }
        self.del(format!("{INDEX_PREFIX}{database}/{name}"))
    }

    pub fn index(&self, database: &str, name: &str) -> Option<IndexDef> {
        self.state.read().indexes.get(&(database.to_string(), name.to_string())).cloned()
    }

    /// Every CREATE INDEX index of a database, by name.
    pub fn database_indexes(&self, database: &str) -> Vec<IndexDef> {
        self.state.read().indexes.values().filter(|i| i.database == database).cloned().collect()
    }

    pub fn indexes(&self, database: &str, table: &str) -> Vec<IndexDef> {
        self.state.read().indexes.values().filter(|i| i.database == database && i.table == table).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Namespace and pg_database OIDs came from a database's index in name
    /// order, so creating or dropping another database moved them; a query
    /// joining pg_class to pg_namespace while slt files created their
    /// databases found no row (ddl/temp_tables.slt:246, session 15).
    #[test]
    fn a_database_keeps_its_slot_while_others_come_and_go() {
        let dir = tempfile::tempdir().unwrap();
        let slots = |cat: &Catalog| cat.database_slots().into_iter().collect::<BTreeMap<String, u32>>();
        {
            let cat = Catalog::open(dir.path()).unwrap();
            for d in ["m", "t", "z"] {
                cat.create_database(d).unwrap();
            }
            let before = slots(&cat);
            cat.drop_database("m").unwrap();
            cat.create_database("a").unwrap();
            let after = slots(&cat);
            assert_eq!(after["t"], before["t"]);
            assert_eq!(after["z"], before["z"]);
            // A dropped database's slot is free again; slots stay distinct.
            assert_eq!(after["a"], before["m"]);
            cat.create_database("b").unwrap();
            let all = slots(&cat);
            assert_eq!(all.values().collect::<std::collections::BTreeSet<_>>().len(), all.len());
            // Entries of a catalog from before slots (empty values).
            cat.put(format!("{DB_PREFIX}old1"), vec![]).unwrap();
            cat.put(format!("{DB_PREFIX}old2"), vec![]).unwrap();
        }
        let first = slots(&Catalog::open(dir.path()).unwrap());
        let again = slots(&Catalog::open(dir.path()).unwrap());
        assert_eq!(first, again, "slots survive a reopen");
        assert_eq!(first.values().collect::<std::collections::BTreeSet<_>>().len(), first.len());
    }

    #[test]
    fn a_damaged_flow_entry_is_corrupt_at_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cat = Catalog::open(dir.path()).unwrap();
            cat.put(format!("{}f1", flow::FLOW_PREFIX), b"{not json".to_vec()).unwrap();
        }
        let e = Catalog::open(dir.path()).err().expect("a damaged flow entry fails the open");
        assert_eq!(e.kind, crate::error::ErrorKind::Corrupt, "{e}");
        assert!(e.to_string().contains("flow/f1"), "{e}");
    }
}
