//! The planner: a query's AST → logical plan (the binder: `bind.rs` for
//! expressions, `select.rs` for queries) → rewrite passes (`rewrite/`) →
//! physical plan (`physical.rs`), which `exec::build` turns into operators.
//!
//! May import `exec`, `storage`, `catalog`, `types`, `error`; never `sql`
//! or `server`.

pub mod analysis;
mod array_ops;
mod bind;
mod cte;
pub use cte::{next_group, recursive_with_order, Cte, CteKind};
pub mod function;
pub use function::specialize;
mod hop;
pub mod incremental;
pub mod inherit;
pub mod logical;
mod named_window;
mod narrow;
mod ordered_set;
pub mod partition;
pub mod physical;
mod privilege;
mod regtypes;
pub mod rewrite;
pub mod row_security;
mod search_cycle;
mod select;
pub use select::output_name;
mod srf;
pub mod system;
mod tdengine;
mod user_agg;
mod user_type;
pub use srf::contains_srf;
pub use user_type::{declared_user_type, io_function, resolve_type, support_function, type_ref, type_ref_type, Shape};
pub mod viewdef;
mod window_order;

use std::cell::RefCell;
use std::sync::Arc;

use crate::catalog::{Catalog, TableDef};
use crate::error::Result;
use crate::exec::plan::{Plan, PlanColumn};
use crate::exec::ExecCtx;
use crate::storage::{region_id, Region, RegionDescriptor, StorageEngine};
use crate::types::{SqlType, Value};
use crate::{bail, err};
use logical::LogicalPlan;

pub use bind::{char_typmod, coerce, numeric_typmod, sql_type, with_numeric_typmod};
pub use regtypes::split_dotted;

/// Columns visible at one query level, and a link to the enclosing level.
pub struct Scope<'a> {
    pub columns: Vec<PlanColumn>,
    pub parent: Option<&'a Scope<'a>>,
    /// Columns of this scope referenced from inner (correlated) queries.
    pub outer_refs: RefCell<Vec<(usize, SqlType)>>,
    /// Columns holding records (from set-returning calls of a derived
    /// table), with their fields, for `(t.col).field`.
    pub records: RefCell<Vec<(usize, Vec<(String, SqlType)>)>>,
}

impl<'a> Scope<'a> {
    pub fn new(columns: Vec<PlanColumn>, parent: Option<&'a Scope<'a>>) -> Scope<'a> {
        Scope { columns, parent, outer_refs: RefCell::new(Vec::new()), records: RefCell::new(Vec::new()) }
    }
}

/// Parameters of a statement: their types, and values once bound.
#[derive(Debug, Default, Clone)]
pub struct Params {
    pub types: Vec<Option<SqlType>>,
    /// None while describing a statement; Some at execution.
    pub values: Option<Vec<Value>>,
}

/// Plans one statement against the catalog.
pub struct Planner<'a> {
    pub catalog: &'a Catalog,
    pub storage: &'a StorageEngine,
    pub database: String,
    /// The connection's database (`public` in `search_path`) when it is not
    /// `database`: planning a view of another database (see [`Planner::lookup`]).
    pub home: Option<String>,
    pub ctx: ExecCtx,
    pub params: RefCell<Params>,
    /// Seed 001 keys of this query, if any (the session parses them).
    pub incremental: Option<incremental::IncrementalKeys>,
    /// (region, snapshot sequence) of every source region scanned.
    pub watermarks: RefCell<Vec<(u64, u64)>>,
    /// WITH queries in scope, innermost last.
    pub ctes: RefCell<Vec<cte::Cte>>,
    /// Results of data-modifying WITH queries (`WITH t AS (DELETE ...
    /// RETURNING *)`), computed before the statement: name → rows.
    pub materialized: Vec<(String, Vec<PlanColumn>, Vec<arrow::array::RecordBatch>)>,
    /// WITH queries computed before planning (TQL bodies): name → rows.
    /// Read by name where no SQL WITH query of that name is in scope.
    pub computed_ctes: RefCell<Vec<(String, Vec<arrow::array::RecordBatch>, Vec<crate::exec::plan::PlanColumn>)>>,
    /// The role whose SELECT privilege every relation read is checked
    /// against (42501): the session's user, a view's owner inside that
    /// view. None: unchecked (a flow's own evaluation, describing a
    /// statement, planning a view's definition).
    pub check_as: RefCell<Option<String>>,
    /// User-defined functions whose bodies are being bound, innermost last.
    pub functions: RefCell<Vec<function::FnFrame>>,
    /// The next SELECT planned is a branch of a set operation: its untyped literal
    /// outputs (`SELECT NULL, 'x'`) stay untyped for the set operation to resolve, as
    /// PostgreSQL resolves them with the other branches' types.
    pub set_branch: std::cell::Cell<bool>,
    /// The session's temporary relations: (name as written, stored name of
    /// the planner's database), for names in text (`'t'::regclass`).
    pub temp_names: Vec<(String, String)>,
}

impl<'a> Planner<'a> {
    pub fn new(catalog: &'a Catalog, storage: &'a StorageEngine, database: &str, ctx: ExecCtx, params: Params) -> Self {
        Planner {
            catalog,
            storage,
            database: database.to_string(),
            home: None,
            ctx,
            params: RefCell::new(params),
            incremental: None,
            watermarks: RefCell::new(Vec::new()),
            ctes: RefCell::new(Vec::new()),
            materialized: Vec::new(),
            computed_ctes: RefCell::new(Vec::new()),
            check_as: RefCell::new(None),
            functions: RefCell::new(Vec::new()),
            set_branch: std::cell::Cell::new(false),
            temp_names: Vec::new(),
        }
    }

    /// The regions of a table, opened.
    pub fn regions(&self, def: &TableDef) -> Result<Vec<Arc<Region>>> {
        // A partitioned table's rows are its leaves' (its own regions stay empty).
        if def.partition.key.is_some() {
            let mut out = Vec::new();
            for leaf in self.partition_leaves(def)? {
                out.extend(self.regions(&leaf)?);
            }
            return Ok(out);
        }
        (0..def.regions.max(1))
            .map(|n| {
                self.storage.region(region_id(def.id, n)).ok_or_else(|| err!(Internal, "region {n} of table {} is not open", def.name))
            })
            .collect()
    }

    pub fn table(&self, name: &str) -> Result<TableDef> {
        self.catalog.table(&self.database, name).ok_or_else(|| err!(UndefinedTable, "relation \"{name}\" does not exist"))
    }

    /// A relation name as a lookup resolves it: a qualified name as
    /// written; an unqualified one in the first schema of `search_path`
    /// that has it (PostgreSQL's order; `public` is the connection's
    /// database), else the connection's database.
    pub fn lookup(&self, name: &sqlparser::ast::ObjectName) -> Result<Relation> {
        let rel = relation(self.catalog, &self.database, name)?;
        if rel.written_schema.is_some() {
            return Ok(rel);
        }
        let exists = |db: &str| {
            self.catalog.table(db, &rel.name).is_some()
                || self.catalog.view(db, &rel.name).is_some()
                || self.catalog.sequence(db, &rel.name).is_some()
        };
        // A view of another database reads that database's relations first.
        let home = self.home.as_deref().unwrap_or(&self.database);
        if home != self.database && exists(&self.database) {
            return Ok(rel);
        }
        for db in self.search_path_databases() {
            if exists(&db) {
                return Ok(Relation { written_schema: None, schema: Some(SchemaRef::Database(db)), name: rel.name });
            }
        }
        Ok(rel)
    }

    /// The databases `search_path` names, in its order (`public` is the
    /// connection's database; system schemas left out).
    pub fn search_path_databases(&self) -> Vec<String> {
        let home = self.home.as_deref().unwrap_or(&self.database);
        self.search_path_schemas()
            .into_iter()
            .filter_map(|s| match s.as_str() {
                "public" => Some(home.to_string()),
                x if system::is_reserved_schema(x) => None,
                _ => Some(s),
            })
            .collect()
    }

    /// A table by its possibly qualified name (`t`, `public.t`, `db.t`),
    /// unqualified names through `search_path` ([`Planner::lookup`]).
    pub fn table_named(&self, name: &sqlparser::ast::ObjectName) -> Result<TableDef> {
        let r = self.lookup(name)?;
        match &r.schema {
            Some(SchemaRef::Database(db)) => {
                self.catalog.table(db, &r.name).ok_or_else(|| err!(UndefinedTable, "relation \"{}\" does not exist", r.display()))
            }
            Some(SchemaRef::System(_)) => bail!(FeatureNotSupported, "{} is a system table", r.display()),
            None => bail!(UndefinedTable, "relation \"{}\" does not exist", r.display()),
        }
    }

    /// A query's physical plan: bind, rewrite, plan physically.
    pub fn plan(&self, q: &sqlparser::ast::Query) -> Result<Plan> {
        let logical = self.plan_query(q, None)?;
        self.physical(logical)
    }

    /// Rewrite a logical plan, then plan it physically.
    pub fn physical(&self, logical: LogicalPlan) -> Result<Plan> {
        physical::physical_plan(&rewrite::optimize(logical, &self.ctx), &self.ctx)
    }

    /// The parameter types as known after planning (unknown → text).
    pub fn param_types(&self) -> Vec<SqlType> {
        self.params.borrow().types.iter().map(|t| t.unwrap_or(SqlType::Text)).collect()
    }
}

/// What a schema qualifier names. A weir database is also a schema of one
/// catalog (as in GreptimeDB): `db.t` is table `t` of database `db`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaRef {
    /// A database's tables; `public` and no qualifier are the
    /// connection's database.
    Database(String),
    /// `pg_catalog` or `information_schema`.
    System(String),
}

/// The schema a qualifier names, or None when there is no such schema.
/// `public` always means the connection's database (PostgreSQL's habit),
/// even if a database called `public` exists.
pub fn resolve_schema(catalog: &Catalog, current: &str, schema: Option<&str>) -> Option<SchemaRef> {
    match schema {
        None | Some("public") => Some(SchemaRef::Database(current.to_string())),
        Some(s @ ("pg_catalog" | "information_schema")) => Some(SchemaRef::System(s.to_string())),
        Some(s) if s == current || catalog.database_exists(s) => Some(SchemaRef::Database(s.to_string())),
        Some(_) => None,
    }
}

/// A relation name resolved against the catalog.
#[derive(Debug, Clone)]
pub struct Relation {
    /// The schema as written, if qualified.
    pub written_schema: Option<String>,
    /// What the schema names; None if it names nothing.
    pub schema: Option<SchemaRef>,
    pub name: String,
}

impl Relation {
    /// The name as PostgreSQL prints it in messages (`s.t` or `t`).
    pub fn display(&self) -> String {
        match &self.written_schema {
            Some(s) => format!("{s}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The database of a table name, or PostgreSQL's 3F000 when the
    /// qualifier names no database (as CREATE and DROP report it).
    pub fn database(&self) -> Result<String> {
        match &self.schema {
            Some(SchemaRef::Database(d)) => Ok(d.clone()),
            Some(SchemaRef::System(s)) => bail!(FeatureNotSupported, "{s} is a system schema; tables cannot be changed there"),
            None => bail!(UndefinedSchema, "schema \"{}\" does not exist", self.written_schema.clone().unwrap_or_default()),
        }
    }
}

/// Marks the qualifier of a join input's column that USING or NATURAL
/// merged into one output column: `t.col` still reaches it, `col` and `*`
/// do not (they see the merged column).
const HIDDEN_MARK: char = '\u{1}';

/// Marks the qualifier of a system column (`tableoid` of a partitioned
/// table or a partition): `col` and `t.col` reach it, `*` and `t.*` do not.
const SYSTEM_MARK: char = '\u{2}';

fn unmarked(q: &str) -> &str {
    q.trim_start_matches([HIDDEN_MARK, SYSTEM_MARK])
}

/// The qualifier of a column hidden by a USING / NATURAL join.
pub fn hidden_qualifier(q: Option<&str>) -> Option<String> {
    Some(format!("{HIDDEN_MARK}{}", unmarked(q.unwrap_or(""))))
}

/// The qualifier of a system column.
pub fn system_qualifier(q: Option<&str>) -> Option<String> {
    Some(format!("{SYSTEM_MARK}{}", unmarked(q.unwrap_or(""))))
}

/// Whether a column is hidden by a USING / NATURAL join, or is a system
/// column (neither is part of `*`).
pub fn is_hidden(c: &PlanColumn) -> bool {
    c.qualifier.as_deref().is_some_and(|q| q.starts_with(HIDDEN_MARK) || q.starts_with(SYSTEM_MARK))
}

/// Whether a column is a system column (`tableoid`).
pub fn is_system(c: &PlanColumn) -> bool {
    c.qualifier.as_deref().is_some_and(|q| q.starts_with(SYSTEM_MARK))
}

/// The qualifier a written `q.col` matches (hidden or not).
pub fn visible_qualifier(c: &PlanColumn) -> Option<&str> {
    c.qualifier.as_deref().map(unmarked)
}

/// Resolve `t`, `s.t` or `catalog.s.t`. As in PostgreSQL, a catalog part
/// must be the connection's database.
pub fn relation(catalog: &Catalog, current: &str, name: &sqlparser::ast::ObjectName) -> Result<Relation> {
    if name.0.len() == 3 {
        let first = match &name.0[0] {
            sqlparser::ast::ObjectNamePart::Identifier(i) => ident(i),
            _ => bail!(FeatureNotSupported, "unsupported object name {name}"),
        };
        if first != current {
            bail!(FeatureNotSupported, "cross-database references are not implemented: {name}");
        }
    }
    let (written_schema, name) = object_name(name)?;
    let schema = resolve_schema(catalog, current, written_schema.as_deref());
    Ok(Relation { written_schema, schema, name })
}

/// Resolve an object name to (schema, name), lower-cased unless quoted.
pub fn object_name(name: &sqlparser::ast::ObjectName) -> Result<(Option<String>, String)> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            sqlparser::ast::ObjectNamePart::Identifier(i) => Ok(ident(i)),
            _ => bail!(FeatureNotSupported, "unsupported object name {name}"),
        })
        .collect::<Result<_>>()?;
    match parts.len() {
        1 => Ok((None, parts[0].clone())),
        2 => Ok((Some(parts[0].clone()), parts[1].clone())),
        3 => Ok((Some(parts[1].clone()), parts[2].clone())),
        _ => bail!(Syntax, "improper qualified name (too many dotted names): {name}"),
    }
}

/// An identifier as PostgreSQL folds it.
pub fn ident(i: &sqlparser::ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// A query's result columns as clients see them (unknown → text).
pub fn output_columns(plan: &LogicalPlan) -> Vec<PlanColumn> {
    plan.columns()
        .iter()
        .map(|c| PlanColumn { name: c.name.clone(), qualifier: None, ty: if c.ty == SqlType::Unknown { SqlType::Text } else { c.ty } })
        .collect()
}

/// The storage layout of a table's regions: its columns as arrow fields,
/// primary key, time index, append mode and TTL. CREATE TABLE and flows'
/// sink tables open regions with it.
pub fn region_descriptor(t: &TableDef) -> RegionDescriptor {
    let fields: Vec<arrow::datatypes::Field> =
        t.columns.iter().map(|c| arrow::datatypes::Field::new(&c.name, c.ty.to_arrow(), true)).collect();
    RegionDescriptor {
        table_name: t.name.clone(),
        schema: Arc::new(arrow::datatypes::Schema::new(fields)),
        primary_key: t.primary_key.clone(),
        time_index: t.time_index,
        append_mode: t.append_mode,
        ttl_ms: t.ttl_ms,
    }
}
