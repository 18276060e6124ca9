//! Table inheritance's statements: CREATE TABLE … INHERITS (the parents'
//! columns first, merged by name, with their NOT NULL, defaults and CHECK
//! constraints), ALTER TABLE … INHERIT / NO INHERIT, and DROP TABLE of a
//! parent (2BP01 while children exist, unless CASCADE). The catalog keeps
//! each table's parents by name (`TableDef::inherits`); scans of a parent
//! read its descendants (`planner/inherit.rs`); UPDATE and DELETE do too
//! (`dml.rs`).
//!
//! May import `planner`, `catalog`; not `server`.

use sqlparser::ast;

use super::{QueryResult, Session};
use crate::catalog::{CheckDef, ColumnDef, TableDef};
use crate::error::Result;
use crate::{bail, err};

/// The tables INHERITS names, checked (existing tables of the child's
/// database, not partitioned, each once).
pub fn parents(s: &Session, database: &str, names: &[ast::ObjectName]) -> Result<Vec<TableDef>> {
    let planner = s.planner(Default::default());
    let mut out: Vec<TableDef> = Vec::new();
    for n in names {
        let p = planner.table_named(n)?;
        if p.partition.key.is_some() {
            bail!(WrongObjectType, "cannot inherit from partitioned table \"{}\"", p.name);
        }
        if p.partition.of.is_some() {
            bail!(WrongObjectType, "cannot inherit from partition \"{}\"", p.name);
        }
        if p.database != database {
            bail!(FeatureNotSupported, "a table must be in its parents' database");
        }
        if out.iter().any(|o| o.id == p.id) {
            bail!(DuplicateTable, "relation \"{}\" would be inherited from more than once", p.name);
        }
        out.push(p);
    }
    Ok(out)
}

/// The parents' columns in order (one column per name: the same type in
/// each, NOT NULL if any says so), then the table's own (a column named
/// like an inherited one merges with it: same type; its NOT NULL and
/// DEFAULT add to the inherited ones).
pub fn merge_columns(parents: &[TableDef], own: Vec<ColumnDef>) -> Result<Vec<ColumnDef>> {
    let mut out: Vec<ColumnDef> = Vec::new();
    for p in parents {
        for c in &p.columns {
            merge_column(&mut out, c.clone(), true)?;
        }
    }
    for c in own {
        merge_column(&mut out, c, false)?;
    }
    Ok(out)
}

/// One column into the merged list: new, or merged with the one of its
/// name (an inherited one keeps the first default, a written one's wins).
fn merge_column(out: &mut Vec<ColumnDef>, c: ColumnDef, inherited: bool) -> Result<()> {
    let Some(x) = out.iter_mut().find(|x| x.name == c.name) else {
        out.push(c);
        return Ok(());
    };
    if x.ty != c.ty || (c.typmod.is_some() && x.typmod != c.typmod) {
        let what = if inherited { "inherited column" } else { "column" };
        return Err(err!(DatatypeMismatch, "{what} \"{}\" has a type conflict", c.name).with_detail(format!(
            "{} versus {}",
            x.ty.pg_name(),
            c.ty.pg_name()
        )));
    }
    x.nullable &= c.nullable;
    if c.default.is_some() && (!inherited || x.default.is_none()) {
        x.default = c.default;
    }
    Ok(())
}

/// The CHECK constraints children get from their parents (each name once).
pub fn inherited_checks(parents: &[TableDef]) -> Vec<CheckDef> {
    let mut out: Vec<CheckDef> = Vec::new();
    for p in parents {
        for c in p.checks.iter().filter(|c| !c.no_inherit) {
            if !out.iter().any(|o| o.name == c.name) {
                out.push(CheckDef { inherited: true, ..c.clone() });
            }
        }
    }
    out
}

/// ALTER TABLE child INHERIT parent: the child must have the parent's
/// columns (same types, NOT NULL where the parent's are) and its CHECK
/// constraints.
pub fn add_parent(s: &mut Session, child: &TableDef, parent: &ast::ObjectName) -> Result<QueryResult> {
    let p = parents(s, &child.database, std::slice::from_ref(parent))?.remove(0);
    if child.partition.key.is_some() {
        bail!(WrongObjectType, "cannot change inheritance of partitioned table");
    }
    if child.partition.of.is_some() {
        bail!(WrongObjectType, "cannot change inheritance of a partition");
    }
    if p.id == child.id || s.planner(Default::default()).descendants(child).iter().any(|d| d.id == p.id) {
        bail!(DuplicateTable, "circular inheritance not allowed");
    }
    if child.inherits.contains(&p.name) {
        bail!(DuplicateTable, "relation \"{}\" would be inherited from more than once", p.name);
    }
    for c in &p.columns {
        match child.columns.iter().find(|x| x.name == c.name) {
            None => bail!(DatatypeMismatch, "child table is missing column \"{}\"", c.name),
            Some(x) if x.ty != c.ty => {
                bail!(DatatypeMismatch, "child table \"{}\" has different type for column \"{}\"", child.name, c.name)
            }
            Some(x) if !c.nullable && x.nullable => bail!(DatatypeMismatch, "column \"{}\" in child table must be marked NOT NULL", c.name),
            _ => {}
        }
    }
    let mut new = child.clone();
    for c in p.checks.iter().filter(|c| !c.no_inherit) {
        match new.checks.iter_mut().find(|x| x.name == c.name) {
            Some(x) if x.expr == c.expr => x.inherited = true,
            Some(_) => {
                bail!(DatatypeMismatch, "child table \"{}\" has different definition for check constraint \"{}\"", child.name, c.name)
            }
            None => bail!(DatatypeMismatch, "child table is missing constraint \"{}\"", c.name),
        }
    }
    new.inherits.push(p.name.clone());
    s.engine.catalog.replace_table(new)?;
    Ok(QueryResult::Command("ALTER TABLE".into()))
}

/// ALTER TABLE child NO INHERIT parent: the constraints it had from the
/// parent stay, as its own.
pub fn remove_parent(s: &mut Session, child: &TableDef, parent: &ast::ObjectName) -> Result<QueryResult> {
    let p = s.planner(Default::default()).table_named(parent)?;
    if !child.inherits.contains(&p.name) {
        bail!(UndefinedTable, "relation \"{}\" is not a parent of relation \"{}\"", p.name, child.name);
    }
    let mut new = child.clone();
    new.inherits.retain(|n| *n != p.name);
    let still: Vec<TableDef> = new.inherits.iter().filter_map(|n| s.engine.catalog.table(&child.database, n)).collect();
    for c in new.checks.iter_mut() {
        if c.inherited && !still.iter().any(|t| t.checks.iter().any(|x| x.name == c.name && !x.no_inherit)) {
            c.inherited = false;
        }
    }
    s.engine.catalog.replace_table(new)?;
    Ok(QueryResult::Command("ALTER TABLE".into()))
}

/// Before DROP TABLE of `def`: the tables that inherit from it, which
/// CASCADE drops too; without CASCADE a child not itself dropped by the
/// statement is 2BP01.
pub fn dependents(s: &Session, def: &TableDef, cascade: bool, dropped: &[String]) -> Result<Vec<TableDef>> {
    let descendants = s.planner(Default::default()).descendants(def);
    if cascade {
        return Ok(descendants);
    }
    let blocking: Vec<&TableDef> = descendants.iter().filter(|d| !dropped.contains(&d.name)).collect();
    if !blocking.is_empty() {
        let detail: Vec<String> = s
            .engine
            .catalog
            .inheritors(&def.database, &def.name)
            .iter()
            .map(|c| format!("table {} depends on table {}", c.name, def.name))
            .collect();
        return Err(err!(DependentObjectsStillExist, "cannot drop table {} because other objects depend on it", def.name)
            .with_detail(detail.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    Ok(vec![])
}

/// A renamed table's children name it by its new name.
pub fn rename_parent(s: &Session, old: &TableDef, new_name: &str) -> Result<()> {
    for mut c in s.engine.catalog.inheritors(&old.database, &old.name) {
        for n in c.inherits.iter_mut() {
            if *n == old.name {
                *n = new_name.to_string();
            }
        }
        s.engine.catalog.replace_table(c)?;
    }
    Ok(())
}
