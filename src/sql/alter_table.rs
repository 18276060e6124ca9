//! ALTER TABLE: add, drop and rename columns (of a partitioned table: of every
//! table of its tree), and rename the table (OWNER TO is `privilege.rs`'s);
//! ALTER VIEW … RENAME COLUMN.
//!
//! A column change rewrites the table, as TRUNCATE renews it: new regions under a
//! new id receive the old rows in the new shape (kept columns copied, an added
//! column at its default), the catalog entry is replaced, then the old regions are
//! dropped. Storage therefore never reads a WAL or SST written with another schema;
//! the price is a copy of the table (fine for PostgreSQL-style tables, heavy for a
//! large time-series table). A rename of the table is a catalog change only
//! (regions are by id); views that name the table have their query rewritten to
//! the new name. After a column change, a view reading the table is deparsed
//! again from its definition over the new columns (`reprinted`: renamed ones
//! under their new names or as column aliases, added ones left out, as
//! PostgreSQL's rule keeps column numbers) and that text becomes its SQL; failing
//! that, its deparsed definition as it was becomes its SQL (`frozen`). Views are
//! stored as SQL, so a column change that leaves a view unplannable is refused (2BP01 for DROP COLUMN, which CASCADE answers by dropping
//! the views, as PostgreSQL does). Runs outside transaction blocks only. Writes to
//! the table during the copy fail with 40001 (retry) instead of being lost.
//! Imports `sql` siblings, `planner`, `exec` values and `storage` regions.

use std::ops::ControlFlow;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use sqlparser::ast;

use super::{dml, QueryResult, Session};
use crate::catalog::{ColumnDef, TableDef, ViewDef};
use crate::error::Result;
use crate::planner::viewdef::Altered;
use crate::planner::{ident, object_name, relation};
use crate::storage::{region_id, ScanRequest};
use crate::{bail, err};

/// Where a column of the rewritten table takes its values from.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    Old(usize),
    Default,
}

pub fn execute(s: &mut Session, at: &ast::AlterTable) -> Result<QueryResult> {
    let done = || Ok(QueryResult::Command("ALTER TABLE".into()));
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let rel = relation(cat, &s.database, &at.name)?;
    let old = rel.database().ok().and_then(|db| cat.table(&db, &rel.name));
    let Some(old) = old else {
        if at.if_exists {
            return done();
        }
        bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
    };
    let supported = |op: &ast::AlterTableOperation| {
        matches!(
            op,
            ast::AlterTableOperation::AddColumn { column_position: None, .. }
                | ast::AlterTableOperation::DropColumn { .. }
                | ast::AlterTableOperation::RenameColumn { .. }
        )
    };
    match at.operations.as_slice() {
        [ast::AlterTableOperation::AttachPartitionOf { partition, for_values }] => super::partition::attach(s, &old, partition, for_values),
        [ast::AlterTableOperation::DetachPartitionOf { partition, mode: None }] => super::partition::detach(s, &old, partition),
        ops if !old.partition.is_none() && !ops.is_empty() && ops.iter().all(supported) => {
            if s.block.is_some() {
                return Err(err!(ActiveSqlTransaction, "ALTER TABLE cannot change columns inside a transaction block")
                    .with_detail("weir rewrites the table and cannot roll that back"));
            }
            alter_tree_columns(s, &old, ops)?;
            done()
        }
        [ast::AlterTableOperation::RenameTable { table_name: ast::RenameTableNameKind::To(n) | ast::RenameTableNameKind::As(n) }] => {
            if s.block.is_some() {
                bail!(ActiveSqlTransaction, "ALTER TABLE … RENAME cannot run inside a transaction block");
            }
            rename_table(s, &old, n)?;
            done()
        }
        // Storage parameters tune PostgreSQL's heap and vacuum; weir has
        // neither, so known ones are accepted and change nothing.
        [ast::AlterTableOperation::SetOptionsParens { options }] => {
            for o in options {
                let name = match o {
                    ast::SqlOption::Ident(n) | ast::SqlOption::KeyValue { key: n, .. } => n.to_string().to_lowercase(),
                    other => bail!(Syntax, "syntax error at or near \"{other}\""),
                };
                check_storage_parameter(&name)?;
            }
            done()
        }
        [ast::AlterTableOperation::ResetOptions { options }] => {
            for n in options {
                check_storage_parameter(&n.to_string().to_lowercase())?;
            }
            done()
        }
        [ast::AlterTableOperation::AddConstraint { constraint, .. }]
            if matches!(constraint, ast::TableConstraint::Unique(_) | ast::TableConstraint::PrimaryKey(_)) =>
        {
            add_unique(s, &old, constraint)?;
            done()
        }
        [ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::Check(ck), .. }] => super::check::add(s, &old, ck),
        [ast::AlterTableOperation::DropConstraint { if_exists, name, .. }] => super::check::drop(s, &old, name, *if_exists),
        [op @ (ast::AlterTableOperation::EnableRowLevelSecurity
        | ast::AlterTableOperation::DisableRowLevelSecurity
        | ast::AlterTableOperation::ForceRowLevelSecurity
        | ast::AlterTableOperation::NoForceRowLevelSecurity)] => super::policy::set_row_security(s, &old, op),
        [ast::AlterTableOperation::Inherit { parent }] => super::inherit::add_parent(s, &old, parent),
        [ast::AlterTableOperation::NoInherit { parent }] => super::inherit::remove_parent(s, &old, parent),
        ops if !ops.is_empty() && ops.iter().all(supported) => {
            if s.block.is_some() {
                return Err(err!(ActiveSqlTransaction, "ALTER TABLE cannot change columns inside a transaction block")
                    .with_detail("weir rewrites the table and cannot roll that back"));
            }
            alter_columns(s, &old, ops)?;
            done()
        }
        ops => {
            // The operation's leading words (`SET`, `ATTACH PARTITION`, `ADD CONSTRAINT`).
            let op = ops.iter().find(|o| !supported(o)).map(|o| o.to_string()).unwrap_or_default();
            let head = op.split('(').next().unwrap_or_default();
            let words: Vec<&str> = head.split_whitespace().take(2).collect();
            bail!(FeatureNotSupported, "ALTER TABLE … {} is not supported", words.join(" "))
        }
    }
}

/// A table storage parameter PostgreSQL knows (22023 otherwise).
fn check_storage_parameter(name: &str) -> Result<()> {
    if !storage_parameter(name) {
        bail!(InvalidParameterValue, "unrecognized parameter \"{name}\"");
    }
    Ok(())
}

/// Whether PostgreSQL knows `name` as a table storage parameter (CREATE TABLE
/// … WITH and ALTER TABLE … SET accept them and change nothing).
pub(super) fn storage_parameter(name: &str) -> bool {
    let bare = name.strip_prefix("toast.").unwrap_or(name);
    matches!(
        bare,
        "fillfactor"
            | "parallel_workers"
            | "toast_tuple_target"
            | "user_catalog_table"
            | "vacuum_index_cleanup"
            | "vacuum_truncate"
            | "log_autovacuum_min_duration"
    ) || bare.starts_with("autovacuum_")
}

/// The names of relations a view's query reads, resolved to (database, name).
fn view_reads(s: &Session, v: &ViewDef) -> Vec<(String, String)> {
    let Ok(q) = crate::parser::parse_query(&v.sql) else { return vec![] };
    let mut out = Vec::new();
    let _ = ast::visit_relations(&q, |n| {
        if let Ok(r) = relation(&s.engine.catalog, &v.database, n) {
            if let Ok(db) = r.database() {
                out.push((db, r.name));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// The views of the table's database that read it.
pub(super) fn dependent_views(s: &Session, def: &TableDef) -> Vec<ViewDef> {
    let key = (def.database.clone(), def.name.clone());
    s.engine.catalog.views(&def.database).into_iter().filter(|v| view_reads(s, v).contains(&key)).collect()
}

/// Whether a view still plans (against the catalog as it is now).
pub(super) fn view_plans(s: &Session, v: &ViewDef) -> bool {
    view_types(s, &v.database, &v.sql).is_some()
}

/// The column types a view's query plans to (None: it does not plan).
fn view_types(s: &Session, database: &str, sql: &str) -> Option<Vec<crate::types::SqlType>> {
    let q = crate::parser::parse_query(sql).ok()?;
    let mut planner = s.planner(Default::default());
    planner.home = Some(planner.database.clone());
    planner.database = database.to_string();
    planner.check_as.replace(None);
    let plan = planner.plan_query(&q, None).ok()?;
    Some(crate::planner::output_columns(&plan).iter().map(|c| c.ty).collect())
}

/// A view with its `*` as it expands now: PostgreSQL keeps a view's columns as
/// they were when it was made, so a column added to a table it reads with `*`
/// does not join it (nor break a UNION of it). The view's deparsed definition
/// is that query (columns spelled out); it replaces the SQL when it plans to
/// the same column types. Temporary views (whose SQL names private relations)
/// and views without a deparsed definition stay as they are.
fn frozen(s: &Session, v: ViewDef) -> ViewDef {
    let Some((_, plain)) = &v.definition else { return v };
    let text = plain.trim().trim_end_matches(';').to_string();
    if v.name.starts_with("pg_temp_") || text == v.sql.trim() {
        return v;
    }
    match (view_types(s, &v.database, &v.sql), view_types(s, &v.database, &text)) {
        (Some(a), Some(b)) if a == b => ViewDef { sql: text, ..v },
        _ => v,
    }
}

fn rename_table(s: &mut Session, old: &TableDef, new: &ast::ObjectName) -> Result<()> {
    let cat = &s.engine.catalog;
    let (schema, new_name) = object_name(new)?;
    if schema.is_some() {
        // PostgreSQL: the new name cannot be qualified (ALTER … SET SCHEMA moves).
        bail!(Syntax, "syntax error at or near \".\"");
    }
    let views = dependent_views(s, old);
    cat.rename_table(&old.database, &old.name, &new_name)?;
    super::partition::rename_parent(s, old, &new_name)?;
    super::inherit::rename_parent(s, old, &new_name)?;
    // The views that named the table name the new one.
    let key = (old.database.clone(), old.name.clone());
    for v in views {
        let Ok(mut q) = crate::parser::parse_query(&v.sql) else { continue };
        let _ = ast::visit_relations_mut(&mut q, |n| {
            let resolves = relation(cat, &v.database, n).ok().and_then(|r| r.database().ok().map(|db| (db, r.name)));
            // The old name no longer resolves to a table: compare the spelling.
            let last = n.0.last().and_then(|p| p.as_ident()).map(ident);
            let db_ok = match resolves {
                Some((db, _)) => db == key.0,
                None => false,
            };
            if db_ok && last.as_deref() == Some(key.1.as_str()) {
                if let Some(ast::ObjectNamePart::Identifier(i)) = n.0.last_mut() {
                    *i = ast::Ident::with_quote('"', new_name.clone());
                }
            }
            ControlFlow::<()>::Continue(())
        });
        // The definition's text names the new table too.
        let definition = v.definition.is_some().then(|| view_definition(s, &v.database, &q, &v.columns)).flatten();
        cat.create_view(ViewDef { sql: q.to_string(), definition, ..v }, true)?;
    }
    Ok(())
}

/// A view printed again after `altered` changed a relation it reads, or with
/// new column names: its deparsed definition (the query as it was, every
/// column spelled out) is deparsed once more with the relation's columns as
/// they are now, and that text becomes its SQL and its definition. As
/// PostgreSQL's stored rule refers to columns by number, the view keeps
/// reading the same columns: a renamed one prints as `t.x AS a`, or the
/// relation gets column aliases where the old name is needed (`JOIN t t(a, b)
/// USING (a)`), and an added one stays out. None when the view has no
/// deparsed definition (or is temporary) or names a dropped column.
fn reprinted(s: &Session, v: &ViewDef, columns: &[String], altered: Option<&Altered>) -> Option<ViewDef> {
    if v.name.starts_with("pg_temp_") {
        return None;
    }
    let (_, plain) = v.definition.as_ref()?;
    let q = crate::parser::parse_query(plain.trim().trim_end_matches(';')).ok()?;
    let mut planner = s.planner(Default::default());
    planner.home = Some(planner.database.clone());
    planner.database = v.database.clone();
    planner.check_as.replace(None);
    let t = planner.view_text_altered(&q, columns, altered).ok()?;
    let sql = t.plain.trim().trim_end_matches(';').to_string();
    Some(ViewDef { sql, definition: Some((t.pretty, t.plain)), columns: columns.to_vec(), ..v.clone() })
}

/// ALTER VIEW v RENAME [COLUMN] a TO b. The view's definition prints its new
/// label (`t.a AS b`) and the views that read it keep the old name as theirs
/// (`v.b AS a`).
pub fn alter_view(s: &mut Session, av: &ast::AlterView) -> Result<QueryResult> {
    let ast::AlterViewOperation::RenameColumn { old_column_name, new_column_name } = &av.operation else {
        let text = av.operation.to_string();
        let words: Vec<&str> = text.split_whitespace().take(2).collect();
        bail!(FeatureNotSupported, "ALTER VIEW … {} is not supported", words.join(" "));
    };
    if av.materialized {
        bail!(FeatureNotSupported, "materialized views are flows in weir: use CREATE FLOW");
    }
    if s.block.is_some() {
        bail!(ActiveSqlTransaction, "ALTER VIEW … RENAME cannot run inside a transaction block");
    }
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let rel = relation(cat, &s.database, &av.name)?;
    let Some(v) = rel.database().ok().and_then(|db| cat.view(&db, &rel.name)) else {
        if av.if_exists {
            return Ok(QueryResult::Command("ALTER VIEW".into()));
        }
        bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
    };
    let (from, to) = (ident(old_column_name), ident(new_column_name));
    let Some(i) = v.columns.iter().position(|c| *c == from) else {
        bail!(UndefinedColumn, "column \"{from}\" does not exist");
    };
    if from == to {
        return Ok(QueryResult::Command("ALTER VIEW".into()));
    }
    if v.columns.contains(&to) {
        bail!(DuplicateColumn, "column \"{to}\" of relation \"{}\" already exists", v.name);
    }
    let key = (v.database.clone(), v.name.clone());
    let readers: Vec<ViewDef> = cat.views(&v.database).into_iter().filter(|r| view_reads(s, r).contains(&key)).collect();
    let mut columns = v.columns.clone();
    columns[i] = to;
    let renamed = reprinted(s, &v, &columns, None).unwrap_or_else(|| ViewDef { columns: columns.clone(), ..v.clone() });
    cat.create_view(renamed, true)?;
    let altered =
        Altered { database: v.database.clone(), name: v.name.clone(), old: v.columns.clone(), now: (0..columns.len()).map(Some).collect() };
    let mut changed = Vec::new();
    for r in readers {
        match reprinted(s, &r, &r.columns, Some(&altered)).filter(|n| view_plans(s, n)) {
            Some(n) => changed.push(n),
            None => {
                cat.create_view(v, true)?;
                bail!(
                    FeatureNotSupported,
                    "cannot rename a column of view \"{}\": view \"{}\" would no longer work (weir keeps views as SQL)",
                    key.1,
                    r.name
                );
            }
        }
    }
    for n in changed {
        cat.create_view(n, true)?;
    }
    Ok(QueryResult::Command("ALTER VIEW".into()))
}

/// A view's pg_get_viewdef texts for `q`, planned in its own database.
fn view_definition(s: &Session, database: &str, q: &ast::Query, columns: &[String]) -> Option<(String, String)> {
    let mut planner = s.planner(Default::default());
    planner.home = Some(planner.database.clone());
    planner.database = database.to_string();
    planner.check_as.replace(None);
    planner.view_text(q, columns).ok().map(|t| (t.pretty, t.plain))
}

fn alter_columns(s: &mut Session, old: &TableDef, ops: &[ast::AlterTableOperation]) -> Result<()> {
    let mut cols: Vec<(ColumnDef, Source)> = old.columns.iter().cloned().enumerate().map(|(i, c)| (c, Source::Old(i))).collect();
    let mut renamed: Vec<(String, String)> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut cascade = false;
    let table = &old.name;
    let position = |cols: &[(ColumnDef, Source)], n: &str| cols.iter().position(|(c, _)| c.name == n);
    for op in ops {
        match op {
            ast::AlterTableOperation::AddColumn { if_not_exists, column_def, .. } => {
                let (c, pk) = super::ddl::sql_column(s, column_def)?;
                if super::sequence::column_sequence(column_def)?.is_some() {
                    bail!(FeatureNotSupported, "ALTER TABLE … ADD COLUMN of a SERIAL or identity column is not supported");
                }
                if position(&cols, &c.name).is_some() {
                    if *if_not_exists {
                        continue;
                    }
                    bail!(DuplicateColumn, "column \"{}\" of relation \"{table}\" already exists", c.name);
                }
                if column_def.options.iter().any(|o| matches!(o.option, ast::ColumnOption::Check(_))) {
                    bail!(FeatureNotSupported, "ALTER TABLE … ADD COLUMN with CHECK is not supported");
                }
                if pk || column_def.options.iter().any(|o| matches!(o.option, ast::ColumnOption::Unique(_))) {
                    bail!(FeatureNotSupported, "ALTER TABLE … ADD COLUMN with PRIMARY KEY or UNIQUE is not supported");
                }
                cols.push((c, Source::Default));
            }
            ast::AlterTableOperation::DropColumn { column_names, if_exists, drop_behavior, .. } => {
                cascade |= matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                for n in column_names {
                    let n = ident(n);
                    let Some(i) = position(&cols, &n) else {
                        if *if_exists {
                            continue;
                        }
                        bail!(UndefinedColumn, "column \"{n}\" of relation \"{table}\" does not exist");
                    };
                    if let Source::Old(o) = cols[i].1 {
                        if old.time_index == Some(o) {
                            bail!(FeatureNotSupported, "cannot drop column \"{n}\": it is the TIME INDEX of table \"{table}\"");
                        }
                        if old.primary_key.contains(&o) {
                            bail!(FeatureNotSupported, "cannot drop column \"{n}\": it is part of the primary key of table \"{table}\"");
                        }
                        dropped.push(old.columns[o].name.clone());
                    }
                    cols.remove(i);
                }
            }
            ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                let (from, to) = (ident(old_column_name), ident(new_column_name));
                let Some(i) = position(&cols, &from) else {
                    bail!(UndefinedColumn, "column \"{from}\" does not exist");
                };
                if position(&cols, &to).is_some() {
                    bail!(DuplicateColumn, "column \"{to}\" of relation \"{table}\" already exists");
                }
                if let Source::Old(o) = cols[i].1 {
                    renamed.push((old.columns[o].name.clone(), to.clone()));
                }
                cols[i].0.name = to;
            }
            _ => unreachable!("checked by the caller"),
        }
    }
    let unchanged = cols.len() == old.columns.len()
        && cols.iter().enumerate().all(|(i, (c, src))| *src == Source::Old(i) && c.name == old.columns[i].name);
    if unchanged {
        return Ok(());
    }
    if cols.is_empty() {
        bail!(FeatureNotSupported, "a table needs at least one column");
    }
    let new_pos = |o: usize| cols.iter().position(|(_, src)| *src == Source::Old(o)).expect("key columns are kept");
    let mut def = old.clone();
    def.id = s.engine.catalog.next_table_id()?;
    def.columns = cols.iter().map(|(c, _)| c.clone()).collect();
    def.time_index = old.time_index.map(new_pos);
    def.primary_key = old.primary_key.iter().map(|&o| new_pos(o)).collect();
    let dependents = dependent_views(s, old);
    let types: Vec<_> = dependents.iter().map(|v| view_types(s, &v.database, &v.sql)).collect();
    let views: Vec<ViewDef> = dependents.iter().cloned().map(|v| frozen(s, v)).collect();
    let altered = Altered {
        database: old.database.clone(),
        name: old.name.clone(),
        old: old.columns.iter().map(|c| c.name.clone()).collect(),
        now: cols
            .iter()
            .map(|(_, src)| match src {
                Source::Old(i) => Some(*i),
                Source::Default => None,
            })
            .collect(),
    };
    s.engine.open_table_regions(&def)?;
    let undo_regions = |s: &Session, def: &TableDef| {
        for r in 0..def.regions.max(1) {
            let _ = s.engine.storage.drop_region(region_id(def.id, r));
        }
    };
    // Writers are fenced off the old regions for the copy (40001, retry):
    // a row acknowledged there after the scan would be dropped with them.
    let fenced = own_regions(s, old)?;
    let unfence = || fenced.iter().for_each(|r| r.unfence_writes());
    if let Err(e) = fenced.iter().try_for_each(|r| r.fence_writes()).and_then(|()| copy_rows(s, old, &def, &cols)) {
        unfence();
        undo_regions(s, &def);
        return Err(e);
    }
    let cat = &s.engine.catalog;
    if let Err(e) = cat.replace_table(def.clone()) {
        unfence();
        undo_regions(s, &def);
        return Err(e);
    }
    // Each view printed again over the new columns (else with its `*` spelled
    // out as it was); one that no longer plans: CASCADE drops it, otherwise
    // the change is undone.
    let views: Vec<ViewDef> = views
        .into_iter()
        .zip(&dependents)
        .zip(types)
        .map(|((fallback, v), types)| match reprinted(s, v, &v.columns, Some(&altered)) {
            Some(r) if types.is_some() && view_types(s, &r.database, &r.sql) == types => r,
            _ => fallback,
        })
        .collect();
    let broken: Vec<ViewDef> = views.iter().filter(|v| !view_plans(s, v)).cloned().collect();
    if let Some(v) = broken.first() {
        if cascade && !dropped.is_empty() {
            for v in &broken {
                cat.drop_view(&v.database, &v.name)?;
            }
        } else {
            cat.replace_table(old.clone())?;
            unfence();
            undo_regions(s, &def);
            if let Some(c) = dropped.first() {
                return Err(err!(DependentObjectsStillExist, "cannot drop column {c} of table {table} because other objects depend on it")
                    .with_detail(format!("view {} depends on column {c} of table {table}", v.name))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            bail!(
                FeatureNotSupported,
                "cannot change the columns of table \"{table}\": view \"{}\" would no longer work (weir keeps views as SQL)",
                v.name
            );
        }
    }
    // The change stays: views keep their columns spelled out from now on.
    for v in views.into_iter().filter(|v| !broken.iter().any(|b| b.name == v.name && b.database == v.database)) {
        let stored = cat.view(&v.database, &v.name);
        if stored.is_some_and(|o| o.sql != v.sql || o.definition != v.definition) {
            cat.create_view(v, true)?;
        }
    }
    for r in 0..old.regions.max(1) {
        s.engine.storage.drop_region(region_id(old.id, r))?;
    }
    // Sequences and comments follow their renamed columns; dropped columns' comments go.
    for (from, to) in &renamed {
        cat.rename_owner_column(&old.database, &old.name, from, to)?;
        cat.rename_column_comment(&old.database, &old.name, from, to)?;
    }
    for c in &dropped {
        cat.set_comment(&old.database, &old.name, Some(c), None)?;
    }
    // Indexes follow renamed columns and go with dropped ones.
    for mut ix in cat.indexes(&old.database, &old.name) {
        if ix.columns.iter().any(|c| dropped.contains(c)) {
            cat.drop_index(&ix.database, &ix.name)?;
            continue;
        }
        let mut changed = false;
        for c in ix.columns.iter_mut() {
            if let Some((_, to)) = renamed.iter().find(|(from, _)| from == c) {
                *c = to.clone();
                changed = true;
            }
        }
        if changed {
            cat.replace_index(ix)?;
        }
    }
    Ok(())
}

/// A column change of a partitioned table: PostgreSQL's partitions inherit
/// every column, so the change is made to each table of the tree (by column
/// name: partitions may order their columns differently), partitions first
/// and the root last. A partition's own columns cannot change, and a column
/// that a partition key of the tree uses cannot be dropped or renamed (keys
/// are kept as SQL over column names). Not atomic across the tree: a table
/// whose rewrite fails (ADD COLUMN … NOT NULL over stored rows) leaves the
/// partitions before it changed.
fn alter_tree_columns(s: &mut Session, old: &TableDef, ops: &[ast::AlterTableOperation]) -> Result<()> {
    if old.partition.of.is_some() {
        for op in ops {
            match op {
                ast::AlterTableOperation::AddColumn { .. } => bail!(WrongObjectType, "cannot add column to a partition"),
                ast::AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                    for n in column_names {
                        let n = ident(n);
                        if old.column_index(&n).is_some() {
                            bail!(InvalidTableDefinition, "cannot drop inherited column \"{n}\"");
                        }
                        if !*if_exists {
                            bail!(UndefinedColumn, "column \"{n}\" of relation \"{}\" does not exist", old.name);
                        }
                    }
                }
                ast::AlterTableOperation::RenameColumn { old_column_name, .. } => {
                    let n = ident(old_column_name);
                    if old.column_index(&n).is_none() {
                        bail!(UndefinedColumn, "column \"{n}\" does not exist");
                    }
                    bail!(InvalidTableDefinition, "cannot rename inherited column \"{n}\"");
                }
                _ => unreachable!("checked by the caller"),
            }
        }
        return Ok(());
    }
    let tree = super::partition::with_partitions(s, old);
    for op in ops {
        let (names, renaming): (Vec<String>, bool) = match op {
            ast::AlterTableOperation::DropColumn { column_names, .. } => (column_names.iter().map(ident).collect(), false),
            ast::AlterTableOperation::RenameColumn { old_column_name, .. } => (vec![ident(old_column_name)], true),
            _ => continue,
        };
        for t in &tree {
            let Some(key) = &t.partition.key else { continue };
            for n in &names {
                if key.exprs.iter().any(|e| key_uses(e, n)) {
                    if renaming {
                        bail!(
                            FeatureNotSupported,
                            "cannot rename column \"{n}\": it is part of the partition key of relation \"{}\"",
                            t.name
                        );
                    }
                    bail!(
                        InvalidTableDefinition,
                        "cannot drop column \"{n}\" because it is part of the partition key of relation \"{}\"",
                        t.name
                    );
                }
            }
        }
    }
    // Depth first lists the root first; partitions change before it.
    for t in tree.iter().rev() {
        let Some(current) = s.engine.catalog.table(&t.database, &t.name) else { continue };
        alter_columns(s, &current, ops)?;
    }
    Ok(())
}

/// Whether a partition key expression (SQL text) names column `n`.
fn key_uses(expr: &str, n: &str) -> bool {
    let Ok(e) = crate::parser::parse_expr(expr) else { return true };
    let mut found = false;
    let _ = ast::visit_expressions(&e, |x| {
        let name = match x {
            ast::Expr::Identifier(i) => Some(ident(i)),
            ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident),
            _ => None,
        };
        found |= name.as_deref() == Some(n);
        ControlFlow::<()>::Continue(())
    });
    found
}

/// A table's own regions: a partitioned table's stay empty (its rows are its
/// partitions', which `Planner::regions` answers with).
fn own_regions(s: &Session, def: &TableDef) -> Result<Vec<std::sync::Arc<crate::storage::Region>>> {
    (0..def.regions.max(1))
        .map(|n| {
            s.engine.storage.region(region_id(def.id, n)).ok_or_else(|| err!(Internal, "region {n} of table {} is not open", def.name))
        })
        .collect()
}

/// Every row of `old` written to the regions of `def` in its shape.
fn copy_rows(s: &Session, old: &TableDef, def: &TableDef, cols: &[(ColumnDef, Source)]) -> Result<()> {
    let planner = s.planner(Default::default());
    let old_regions = own_regions(s, old)?;
    let new_regions = own_regions(s, def)?;
    let schema = crate::planner::region_descriptor(def).schema;
    // An added column's default, evaluated once (as INSERT does for omitted columns).
    let mut defaults: Vec<Option<crate::types::Value>> = Vec::new();
    for (i, (c, src)) in cols.iter().enumerate() {
        defaults.push(match src {
            Source::Old(_) => None,
            Source::Default => {
                let e = dml::default_expr(&planner, def, i)?;
                let one = dml::eval_column(&planner, &[e], c.ty)?;
                Some(crate::types::value_at(one.as_ref(), 0))
            }
        });
    }
    for r in &old_regions {
        for b in dml::scan_region(&planner, r, ScanRequest::default())? {
            let n = b.num_rows();
            if n == 0 {
                continue;
            }
            let mut arrays: Vec<ArrayRef> = Vec::with_capacity(cols.len());
            for (i, (c, src)) in cols.iter().enumerate() {
                let a = match (src, &defaults[i]) {
                    (Source::Old(o), _) => b.column(*o).clone(),
                    (Source::Default, Some(v)) => crate::exec::expr::scalar_array(v, c.ty, n)?,
                    (Source::Default, None) => unreachable!("defaults are computed for added columns"),
                };
                if !c.nullable && a.null_count() > 0 {
                    bail!(NotNullViolation, "column \"{}\" of relation \"{}\" contains null values", c.name, old.name);
                }
                arrays.push(a);
            }
            let batch = RecordBatch::try_new_with_options(schema.clone(), arrays, &RecordBatchOptions::new().with_row_count(Some(n)))?;
            super::txn::write_rows(s, def, &new_regions, &batch)?;
        }
    }
    Ok(())
}

/// ALTER TABLE … ADD [CONSTRAINT name] UNIQUE (…) | PRIMARY KEY (…): a unique index
/// (enforced on tables without a time index, as CREATE TABLE's are), made once the
/// stored rows are found to have no duplicate key (and, for a primary key, no NULL).
fn add_unique(s: &mut Session, def: &TableDef, constraint: &ast::TableConstraint) -> Result<()> {
    let (name, columns, pk) = match constraint {
        ast::TableConstraint::Unique(u) => (u.name.as_ref(), &u.columns, false),
        ast::TableConstraint::PrimaryKey(p) => (p.name.as_ref(), &p.columns, true),
        _ => unreachable!("checked by the caller"),
    };
    if def.time_index.is_some() {
        bail!(
            FeatureNotSupported,
            "a table with a TIME INDEX is keyed by its primary key and time index; it cannot take another unique constraint"
        );
    }
    let mut cols: Vec<usize> = Vec::new();
    for c in columns {
        let n = match &c.column.expr {
            ast::Expr::Identifier(i) => ident(i),
            other => bail!(FeatureNotSupported, "a unique constraint on the expression {other} is not supported"),
        };
        let i = def.column_index(&n).ok_or_else(|| err!(UndefinedColumn, "column \"{n}\" named in key does not exist"))?;
        cols.push(i);
    }
    let cat = &s.engine.catalog;
    let names: Vec<String> = cols.iter().map(|&i| def.columns[i].name.clone()).collect();
    let pkey = format!("{}_pkey", def.name);
    if pk && cat.indexes(&def.database, &def.name).iter().any(|i| i.name == pkey) {
        bail!(InvalidTableDefinition, "multiple primary keys for table \"{}\" are not allowed", def.name);
    }
    let index = match name {
        Some(n) => ident(n),
        None if pk => pkey,
        None => format!("{}_{}_key", def.name, names.join("_")),
    };
    // The stored rows must already satisfy it.
    let planner = s.planner(Default::default());
    let mut seen = std::collections::HashSet::new();
    for r in planner.regions(def)? {
        for b in dml::scan_region(&planner, &r, ScanRequest { projection: Some(cols.clone()), ..Default::default() })? {
            for i in 0..b.num_rows() {
                let k: Vec<crate::types::Value> = (0..cols.len()).map(|c| crate::types::value_at(b.column(c).as_ref(), i)).collect();
                if let Some(c) = k.iter().position(|v| v.is_null()) {
                    if pk {
                        bail!(NotNullViolation, "column \"{}\" of relation \"{}\" contains null values", names[c], def.name);
                    }
                    continue;
                }
                let shown: Vec<String> = k.iter().map(crate::types::format_value).collect();
                if !seen.insert(k.iter().map(crate::exec::expr::Key::from).collect::<Vec<_>>()) {
                    return Err(err!(UniqueViolation, "could not create unique index \"{index}\"").with_detail(format!(
                        "Key ({})=({}) is duplicated.",
                        names.join(", "),
                        shown.join(", ")
                    )));
                }
            }
        }
    }
    drop(planner);
    if pk {
        let mut new = def.clone();
        for &i in &cols {
            new.columns[i].nullable = false;
        }
        cat.replace_table(new)?;
    }
    cat.create_index(crate::catalog::IndexDef {
        database: def.database.clone(),
        name: index,
        table: def.name.clone(),
        columns: names,
        unique: true,
        id: 0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn key_uses_finds_columns_in_key_expressions() {
        assert!(super::key_uses("\"a\"", "a"));
        assert!(super::key_uses("(b + 0)", "b"));
        assert!(!super::key_uses("(b + 0)", "a"));
        assert!(super::key_uses("lower(t.c)", "c"));
    }
}
