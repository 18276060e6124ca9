//! CHECK constraints: named as PostgreSQL names them (`t_a_check` when the
//! expression reads one column, `t_check` otherwise, a number appended on a
//! clash), checked on every write (`partition::write`: INSERT, UPDATE, COPY)
//! with 23514 naming the constraint, and ALTER TABLE … ADD CONSTRAINT …
//! CHECK (the stored rows checked first) / DROP CONSTRAINT. A parent's
//! constraints pass to its children (`inherit.rs`) unless NO INHERIT.
//!
//! May import `planner`, `catalog`, `exec`; not `server`.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use arrow::array::{Array, AsArray, RecordBatch};
use sqlparser::ast;

use super::{QueryResult, Session};
use crate::catalog::{CheckDef, TableDef};
use crate::error::Result;
use crate::planner::{ident, Planner};
use crate::{bail, err};

/// PostgreSQL's identifier limit (NAMEDATALEN - 1).
const NAME_MAX: usize = 63;

/// The columns an expression reads (bare or qualified names).
fn columns_read(e: &ast::Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let _ = ast::visit_expressions(e, |x| {
        match x {
            ast::Expr::Identifier(i) => {
                out.insert(ident(i));
            }
            ast::Expr::CompoundIdentifier(parts) => {
                if let Some(i) = parts.last() {
                    out.insert(ident(i));
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// PostgreSQL's ChooseConstraintName: `table_column_check`, shortened to
/// fit, with 1, 2, … appended to the label while the name is taken.
pub fn choose_name(table: &str, e: &ast::Expr, taken: &[String]) -> String {
    let cols = columns_read(e);
    let column = if cols.len() == 1 { cols.into_iter().next() } else { None };
    let mut pass = 0;
    loop {
        let label = if pass == 0 { "check".to_string() } else { format!("check{pass}") };
        let name = make_object_name(table, column.as_deref(), &label);
        if !taken.iter().any(|t| *t == name) {
            return name;
        }
        pass += 1;
    }
}

/// makeObjectName: the longer of the two names is cut until all fits.
fn make_object_name(name1: &str, name2: Option<&str>, label: &str) -> String {
    let cut = |s: &str, n: usize| -> String {
        let mut end = n.min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    };
    let mut n1 = name1.len();
    let mut n2 = name2.map(str::len).unwrap_or(0);
    let overhead = label.len() + 1 + if name2.is_some() { 1 } else { 0 };
    while n1 + n2 + overhead > NAME_MAX {
        if n1 > n2 {
            n1 -= 1;
        } else {
            n2 -= 1;
        }
    }
    let mut out = cut(name1, n1);
    if let Some(n) = name2 {
        out.push('_');
        out.push_str(&cut(n, n2));
    }
    out.push('_');
    out.push_str(label);
    out
}

/// The CHECK constraints a CREATE TABLE writes (column and table level), in
/// order, after `inherited` (a parent's constraints: a written one of the
/// same name merges with them).
pub fn from_create(
    table: &str,
    columns: &[ast::ColumnDef],
    constraints: &[ast::TableConstraint],
    inherited: Vec<CheckDef>,
) -> Vec<CheckDef> {
    let mut out = inherited;
    let mut written: Vec<(Option<String>, &ast::Expr, bool)> = Vec::new();
    for c in columns {
        for o in &c.options {
            if let ast::ColumnOption::Check(ck) = &o.option {
                let name = o.name.as_ref().or(ck.name.as_ref()).map(ident);
                written.push((name, &ck.expr, ck.no_inherit));
            }
        }
    }
    for tc in constraints {
        if let ast::TableConstraint::Check(ck) = tc {
            written.push((ck.name.as_ref().map(ident), &ck.expr, ck.no_inherit));
        }
    }
    for (name, e, no_inherit) in written {
        let taken: Vec<String> = out.iter().map(|c| c.name.clone()).collect();
        let name = name.unwrap_or_else(|| choose_name(table, e, &taken));
        let expr = e.to_string();
        match out.iter_mut().find(|c| c.name == name) {
            // A written constraint like an inherited one is the same one.
            Some(c) if c.inherited && c.expr == expr => {}
            _ => out.push(CheckDef { name, expr, no_inherit, inherited: false }),
        }
    }
    out
}

/// Check each constraint of a new table binds (boolean, its columns);
/// two of one name are 42710.
pub fn validate(planner: &Planner, def: &TableDef) -> Result<()> {
    for (i, c) in def.checks.iter().enumerate() {
        if def.checks[..i].iter().any(|o| o.name == c.name) {
            bail!(DuplicateObject, "constraint \"{}\" for relation \"{}\" already exists", c.name, def.name);
        }
        planner.bind_check_over(&crate::parser::parse_expr(&c.expr)?, def)?;
    }
    Ok(())
}

/// Every row of `batch` (the table's columns first) must pass every
/// constraint: false fails, NULL passes.
pub fn enforce(planner: &Planner, def: &TableDef, batch: &RecordBatch) -> Result<()> {
    if def.checks.is_empty() || batch.num_rows() == 0 {
        return Ok(());
    }
    for (name, e) in planner.check_exprs(def)? {
        let a = e.eval(batch, &planner.ctx)?;
        let Some(b) = a.as_boolean_opt() else {
            continue;
        };
        if let Some(row) = (0..b.len()).find(|&i| b.is_valid(i) && !b.value(i)) {
            let cols = batch.project(&(0..def.columns.len().min(batch.num_columns())).collect::<Vec<_>>())?;
            return Err(err!(CheckViolation, "new row for relation \"{}\" violates check constraint \"{}\"", def.name, name)
                .with_detail(format!("Failing row contains ({}).", crate::planner::partition::row_text(&cols, row))));
        }
    }
    Ok(())
}

/// ALTER TABLE t ADD [CONSTRAINT name] CHECK (…) [NO INHERIT]: on the table
/// and (unless NO INHERIT) its descendants, each checked against its rows.
pub fn add(s: &mut Session, def: &TableDef, ck: &ast::CheckConstraint) -> Result<QueryResult> {
    let taken: Vec<String> = def.checks.iter().map(|c| c.name.clone()).collect();
    let name = match &ck.name {
        Some(n) => ident(n),
        None => choose_name(&def.name, &ck.expr, &taken),
    };
    if taken.contains(&name) {
        bail!(DuplicateObject, "constraint \"{name}\" for relation \"{}\" already exists", def.name);
    }
    let local = CheckDef { name: name.clone(), expr: ck.expr.to_string(), no_inherit: ck.no_inherit, inherited: false };
    let mut targets = vec![(def.clone(), local.clone())];
    if !ck.no_inherit {
        for d in below(s, def) {
            if !d.checks.iter().any(|c| c.name == name) {
                targets.push((d, CheckDef { inherited: true, ..local.clone() }));
            }
        }
    }
    {
        let planner = s.planner(Default::default());
        for (t, c) in &targets {
            planner.bind_check_over(&crate::parser::parse_expr(&c.expr)?, t)?;
            let mut with = t.clone();
            with.checks = vec![c.clone()];
            // A partitioned table's rows are its leaves' (checked as themselves).
            if t.partition.key.is_some() {
                continue;
            }
            for r in planner.regions(t)? {
                for b in super::dml::scan_region(&planner, &r, crate::storage::ScanRequest::default())? {
                    if let Err(e) = enforce(&planner, &with, &b) {
                        if e.kind == crate::error::ErrorKind::CheckViolation {
                            return Err(err!(
                                CheckViolation,
                                "check constraint \"{name}\" of relation \"{}\" is violated by some row",
                                t.name
                            ));
                        }
                        return Err(e);
                    }
                }
            }
        }
    }
    for (mut t, c) in targets {
        t.checks.push(c);
        s.engine.catalog.replace_table(t)?;
    }
    Ok(QueryResult::Command("ALTER TABLE".into()))
}

/// The tables a constraint of `def` passes to: its descendants by
/// inheritance and its partitions, each once.
fn below(s: &Session, def: &TableDef) -> Vec<TableDef> {
    let mut out = s.planner(Default::default()).descendants(def);
    for p in super::partition::with_partitions(s, def).into_iter().skip(1) {
        if !out.iter().any(|o| o.id == p.id) {
            out.push(p);
        }
    }
    out
}

/// ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name: a CHECK constraint (and
/// the copies its descendants inherited), or a UNIQUE / PRIMARY KEY one's
/// index. An inherited constraint cannot be dropped alone (42P16).
pub fn drop(s: &mut Session, def: &TableDef, name: &ast::Ident, if_exists: bool) -> Result<QueryResult> {
    let n = ident(name);
    let done = Ok(QueryResult::Command("ALTER TABLE".into()));
    let Some(c) = def.checks.iter().find(|c| c.name == n) else {
        let cat = &s.engine.catalog;
        if let Some(ix) = cat.index(&def.database, &n).filter(|i| i.table == def.name) {
            cat.drop_index(&def.database, &n)?;
            // A view grouping by the primary key may use the table's other
            // columns ungrouped (functional dependency): it depends on the key.
            if let Some(v) = super::alter_table::dependent_views(s, def).into_iter().find(|v| !super::alter_table::view_plans(s, v)) {
                cat.create_index(ix)?;
                return Err(err!(
                    DependentObjectsStillExist,
                    "cannot drop constraint {n} on table {} because other objects depend on it",
                    def.name
                )
                .with_detail(format!("view {} depends on constraint {n} on table {}", v.name, def.name))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            return done;
        }
        if if_exists {
            return done;
        }
        bail!(UndefinedObject, "constraint \"{n}\" of relation \"{}\" does not exist", def.name);
    };
    if c.inherited {
        bail!(InvalidTableDefinition, "cannot drop inherited constraint \"{n}\" of relation \"{}\"", def.name);
    }
    let mut t = def.clone();
    t.checks.retain(|c| c.name != n);
    s.engine.catalog.replace_table(t)?;
    for d in below(s, def) {
        if d.checks.iter().any(|c| c.name == n && c.inherited) {
            let mut d = d.clone();
            d.checks.retain(|c| !(c.name == n && c.inherited));
            s.engine.catalog.replace_table(d)?;
        }
    }
    done
}
