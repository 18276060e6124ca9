//! Temporary tables, views and sequences (`CREATE TEMP TABLE`, `CREATE TEMP
//! VIEW`, `CREATE TEMP SEQUENCE`, and a view over a temporary relation, which
//! PostgreSQL makes temporary too).
//!
//! A temporary relation is an ordinary catalog table or view of the
//! session's database stored under a name private to the session
//! (`pg_temp_<n>_<name>`). Before a statement runs, `rewrite` maps the
//! relation names it mentions through the session's temporary names, so a
//! temporary table shadows a permanent one of the same name (unless the
//! name is written `public.t`), `pg_temp.t` names it explicitly, and a
//! `FROM t` keeps `t` as its qualifier. The session drops its temporary
//! relations when it ends (`drop_all`); a leftover of a crashed server is
//! dropped when a session creates the same temporary name again.
//!
//! Works on the parsed statement (sqlparser's AST), never on SQL text. May
//! import `parser`, `planner` (name folding), `catalog` through the session.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlparser::ast::{self, ObjectName, ObjectNamePart, Statement, TableFactor, Visit, VisitMut, Visitor, VisitorMut};

use super::Session;
use crate::bail;
use crate::error::Result;
use crate::parser::Statement as WeirStatement;
use crate::planner::{ident, Params};

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The session's temporary relations.
#[derive(Debug, Default)]
pub struct TempRelations {
    /// Number of this session's private names (0: none made yet).
    id: u64,
    /// (name as the user wrote it, stored name, is a view).
    entries: Vec<(String, String, bool)>,
}

impl TempRelations {
    /// (name as the user wrote it, stored name) of each temporary relation.
    pub fn names(&self) -> Vec<(String, String)> {
        self.entries.iter().map(|(n, s, _)| (n.clone(), s.clone())).collect()
    }

    fn stored(&self, name: &str) -> Option<&str> {
        self.entries.iter().find(|(n, _, _)| n == name).map(|(_, s, _)| s.as_str())
    }

    fn private_name(&mut self, name: &str) -> String {
        if self.id == 0 {
            self.id = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
        }
        format!("pg_temp_{}_{}", self.id, name)
    }
}

/// What `rewrite` made of a statement: the statement to run, and a
/// temporary relation to record once it succeeds.
pub struct Rewritten {
    pub stmt: WeirStatement,
    /// (user's name, stored name, is a view).
    pub creates: Option<(String, String, bool)>,
}

/// Map a statement's relation names through the session's temporary
/// relations; make CREATE TEMP TABLE / VIEW private. None: nothing to change.
/// A temporary view (or one over temporary relations) named in another schema
/// is PostgreSQL's 42P16.
pub fn rewrite(s: &mut Session, stmt: &WeirStatement) -> Result<Option<Rewritten>> {
    let sql = match stmt {
        WeirStatement::Sql(sql) => sql,
        WeirStatement::Vacuum(v) if !s.temp.entries.is_empty() => {
            let mut v = v.clone();
            let mut mapper = Mapper { temp: &s.temp, ctes: &HashSet::new(), mapped: false };
            for t in v.tables.iter_mut() {
                mapper.map_name(&mut t.name);
            }
            return Ok(mapper.mapped.then(|| Rewritten { stmt: WeirStatement::Vacuum(v), creates: None }));
        }
        _ => return Ok(None),
    };
    let temp_create = match sql {
        Statement::CreateTable(ct) => ct.temporary,
        Statement::CreateView(cv) => cv.temporary,
        Statement::CreateSequence { temporary, .. } => *temporary,
        _ => false,
    };
    if s.temp.entries.is_empty() && !temp_create {
        return Ok(None);
    }
    let mut out = sql.clone();
    // CTE names shadow temporary tables within the statement.
    let mut ctes = CteNames::default();
    let _ = Visit::visit(sql, &mut ctes);
    // So do the WITH queries of a statement this one is the main part of (`dml_with.rs`).
    if let Some(w) = &s.with_scope {
        ctes.0.extend(w.ctes.iter().map(|c| c.name.clone()));
        ctes.0.extend(w.materialized.iter().map(|m| m.0.clone()));
    }
    let mut mapper = Mapper { temp: &s.temp, ctes: &ctes.0, mapped: false };
    // The name a CREATE makes is not a reference: keep it as written.
    let created_name = match &out {
        Statement::CreateTable(ct) => Some(ct.name.clone()),
        Statement::CreateView(cv) => Some(cv.name.clone()),
        Statement::CreateSequence { name, .. } => Some(name.clone()),
        _ => None,
    };
    let _ = VisitMut::visit(&mut out, &mut mapper);
    match &mut out {
        Statement::Drop { object_type: ast::ObjectType::Table | ast::ObjectType::View | ast::ObjectType::Sequence, names, .. } => {
            for n in names.iter_mut() {
                mapper.map_name(n);
            }
        }
        Statement::Copy { source: ast::CopySource::Table { table_name, .. }, .. } => mapper.map_name(table_name),
        // INHERITS names relations (a temporary parent's stored name).
        Statement::CreateTable(ast::CreateTable { inherits: Some(parents), .. }) => {
            for n in parents.iter_mut() {
                mapper.map_name(n);
            }
        }
        // So does ALTER TABLE … [NO] INHERIT.
        Statement::AlterTable(at) => {
            for op in at.operations.iter_mut() {
                if let ast::AlterTableOperation::Inherit { parent } | ast::AlterTableOperation::NoInherit { parent } = op {
                    mapper.map_name(parent);
                }
            }
        }
        Statement::CreateTrigger(ct) => mapper.map_name(&mut ct.table_name),
        Statement::DropTrigger(ast::DropTrigger { table_name: Some(t), .. }) => mapper.map_name(t),
        _ => {}
    }
    let mapped = mapper.mapped;
    let mut creates = None;
    match (&mut out, created_name) {
        (Statement::CreateTable(ct), Some(name)) => {
            ct.name = name;
            if ct.temporary {
                creates = make_private(s, &mut ct.name, false);
            }
        }
        (Statement::CreateSequence { name, temporary, .. }, Some(written)) => {
            *name = written;
            if *temporary {
                creates = make_private(s, name, false);
                *temporary = false;
            }
        }
        (Statement::CreateView(cv), Some(name)) => {
            cv.name = name;
            if cv.temporary || mapped {
                let replaces = plain(&cv.name).is_some_and(|n| s.temp.stored(&n).is_some());
                if replaces {
                    // CREATE OR REPLACE of a temporary view: the same private name.
                    let mut m = Mapper { temp: &s.temp, ctes: &HashSet::new(), mapped: false };
                    m.map_name(&mut cv.name);
                } else {
                    if plain(&cv.name).is_none() {
                        bail!(InvalidTableDefinition, "cannot create temporary relation in non-temporary schema");
                    }
                    creates = make_private(s, &mut cv.name, true);
                }
            }
        }
        _ => {}
    }
    if !mapped && creates.is_none() {
        return Ok(None);
    }
    Ok(Some(Rewritten { stmt: WeirStatement::Sql(out), creates }))
}

/// Record a temporary relation a statement created.
pub fn record(s: &mut Session, created: (String, String, bool)) {
    s.temp.entries.retain(|(n, _, _)| *n != created.0);
    s.temp.entries.push(created);
}

/// Forget temporary relations that no longer exist (after a DROP).
pub fn prune(s: &mut Session) {
    if s.temp.entries.is_empty() {
        return;
    }
    let cat = &s.engine.catalog;
    let db = s.database.clone();
    s.temp.entries.retain(|(_, stored, _)| {
        cat.table(&db, stored).is_some() || cat.view(&db, stored).is_some() || cat.sequence(&db, stored).is_some()
    });
}

/// Drop every temporary relation of the session (it is ending).
pub fn drop_all(s: &mut Session) {
    let entries = std::mem::take(&mut s.temp.entries);
    // Views first: they may read the tables.
    let mut ordered: Vec<&(String, String, bool)> = entries.iter().filter(|e| e.2).collect();
    ordered.extend(entries.iter().filter(|e| !e.2));
    for (_, stored, is_view) in ordered {
        drop_stored(s, stored, *is_view);
    }
}

fn drop_stored(s: &mut Session, stored: &str, is_view: bool) {
    let kind = match is_view {
        true => "VIEW",
        false if s.engine.catalog.sequence(&s.database, stored).is_some() => "SEQUENCE",
        false => "TABLE",
    };
    let ddl = format!("DROP {kind} IF EXISTS \"{}\"", stored.replace('"', "\"\""));
    if let Ok(stmts) = crate::parser::parse(&ddl) {
        for st in stmts {
            let _ = s.guard(|sess| sess.execute_statement(&st, Params::default()));
        }
    }
}

/// A one-part name (or `pg_temp.name`), folded.
fn plain(name: &ObjectName) -> Option<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(ident(i)),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [n] => Some(n.clone()),
        [schema, n] if schema == "pg_temp" => Some(n.clone()),
        _ => None,
    }
}

/// Give a CREATE TEMP's name its private form; the entry to record.
fn make_private(s: &mut Session, name: &mut ObjectName, is_view: bool) -> Option<(String, String, bool)> {
    let user = plain(name)?;
    let stored = s.temp.private_name(&user);
    // A leftover of a server that stopped before the session ended.
    let known = s.temp.entries.iter().any(|(_, st, _)| *st == stored);
    if !known {
        let cat = &s.engine.catalog;
        let (t, v) = (
            cat.table(&s.database, &stored).is_some() || cat.sequence(&s.database, &stored).is_some(),
            cat.view(&s.database, &stored).is_some(),
        );
        if t || v {
            drop_stored(s, &stored, v);
        }
    }
    *name = ObjectName(vec![ObjectNamePart::Identifier(ast::Ident::with_quote('"', stored.clone()))]);
    Some((user, stored, is_view))
}

#[derive(Default)]
struct CteNames(HashSet<String>);

impl Visitor for CteNames {
    type Break = ();
    fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
        if let Some(w) = &q.with {
            for c in &w.cte_tables {
                self.0.insert(ident(&c.alias.name));
            }
        }
        ControlFlow::Continue(())
    }
}

struct Mapper<'a> {
    temp: &'a TempRelations,
    ctes: &'a HashSet<String>,
    mapped: bool,
}

impl Mapper<'_> {
    /// The stored name a written name maps to, if it names a temporary relation.
    fn target(&self, name: &ObjectName) -> Option<String> {
        let n = plain(name)?;
        if name.0.len() == 1 && self.ctes.contains(&n) {
            return None;
        }
        self.temp.stored(&n).map(str::to_string)
    }

    fn map_name(&mut self, name: &mut ObjectName) {
        if let Some(stored) = self.target(name) {
            *name = ObjectName(vec![ObjectNamePart::Identifier(ast::Ident::with_quote('"', stored))]);
            self.mapped = true;
        }
    }
}

impl VisitorMut for Mapper<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        // `FROM t` keeps `t` as the qualifier of its columns.
        if let TableFactor::Table { name, alias, args: None, .. } = f {
            if alias.is_none() && self.target(name).is_some() {
                let last = match name.0.last() {
                    Some(ObjectNamePart::Identifier(i)) => i.clone(),
                    _ => return ControlFlow::Continue(()),
                };
                *alias = Some(ast::TableAlias { explicit: false, name: last, columns: vec![], at: None });
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &mut ObjectName) -> ControlFlow<()> {
        self.map_name(name);
        ControlFlow::Continue(())
    }

    /// CTE names do not hide tables from a data-modifying statement's target (`WITH t AS
    /// (…) INSERT INTO t SELECT * FROM t` writes the table t, reading the CTE t).
    fn pre_visit_statement(&mut self, stmt: &mut Statement) -> ControlFlow<()> {
        let target = match stmt {
            Statement::Insert(ast::Insert { table: ast::TableObject::TableName(n), .. }) => Some(n),
            _ => None,
        };
        if let Some(n) = target {
            let mut all = Mapper { temp: self.temp, ctes: &HashSet::new(), mapped: false };
            all.map_name(n);
            self.mapped |= all.mapped;
        }
        ControlFlow::Continue(())
    }
}
