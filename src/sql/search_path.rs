//! `search_path` for the statements that name a relation to make or change:
//! CREATE TABLE / VIEW with an unqualified name makes it in the first schema
//! of `search_path` that exists (PostgreSQL's creation namespace), and DROP
//! TABLE / VIEW and ALTER TABLE / VIEW of an unqualified name act on the
//! relation the path finds. A weir database is the schema, so before the
//! statement runs the name is qualified with that database on the AST (as
//! `temp.rs` maps temporary names); `public` and the connection's database
//! leave it as written. Queries and DML targets already look names up along
//! the path (`Planner::lookup`).
//!
//! Works on the parsed statement, never on SQL text. May import `parser` and
//! `planner` (lookups) through the session.

use sqlparser::ast::{self, ObjectName, ObjectNamePart, Statement};

use super::Session;
use crate::parser::Statement as WeirStatement;
use crate::planner::{ident, system, Params, SchemaRef};

/// The statement with its relation names qualified by `search_path`; None
/// when nothing changes. `temp`: the statement makes a temporary relation
/// (which stays in the connection's database).
pub fn qualify(s: &Session, stmt: &WeirStatement, temp: bool) -> Option<WeirStatement> {
    // The default path ("$user", public) creates and finds in the connection's database.
    if !s.settings.contains_key("search_path") {
        return None;
    }
    let mut out = stmt.clone();
    let changed = match &mut out {
        WeirStatement::CreateTable(ct) => create_target(s, &mut ct.name),
        WeirStatement::Sql(Statement::CreateTable(ct)) if !ct.temporary && !temp => create_target(s, &mut ct.name),
        WeirStatement::Sql(Statement::CreateView(cv)) if !cv.temporary && !temp => create_target(s, &mut cv.name),
        WeirStatement::Sql(Statement::Drop { object_type: ast::ObjectType::Table | ast::ObjectType::View, names, .. }) => {
            let mut any = false;
            for n in names.iter_mut() {
                any |= found_target(s, n);
            }
            any
        }
        WeirStatement::Sql(Statement::AlterTable(at)) => found_target(s, &mut at.name),
        WeirStatement::Sql(Statement::AlterView(av)) => found_target(s, &mut av.name),
        _ => false,
    };
    changed.then_some(out)
}

/// A one-part name, folded.
fn unqualified(name: &ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Some(ident(i)),
        _ => None,
    }
}

fn qualify_with(name: &mut ObjectName, database: String) {
    name.0.insert(0, ObjectNamePart::Identifier(ast::Ident::with_quote('"', database)));
}

/// A CREATE's name: the first schema of the path that exists.
fn create_target(s: &Session, name: &mut ObjectName) -> bool {
    if unqualified(name).is_none() {
        return false;
    }
    let planner = s.planner(Params::default());
    let first = planner.search_path_schemas().into_iter().find(|n| !system::is_reserved_schema(n));
    match first {
        Some(db) if db != "public" && db != s.database => {
            qualify_with(name, db);
            true
        }
        _ => false,
    }
}

/// A DROP's or ALTER's name: the relation the path finds, when it is in
/// another database than the connection's.
fn found_target(s: &Session, name: &mut ObjectName) -> bool {
    if unqualified(name).is_none() {
        return false;
    }
    let planner = s.planner(Params::default());
    let Ok(rel) = planner.lookup(name) else { return false };
    match rel.schema {
        Some(SchemaRef::Database(db)) if db != s.database => {
            qualify_with(name, db);
            true
        }
        _ => false,
    }
}
