//! CREATE SCHEMA and DROP SCHEMA. weir has one notion of schema: a database
//! is also a schema (`planner::relation`: `s.t` is table `t` of database
//! `s`, `public` is the connection's own), so CREATE SCHEMA makes a
//! database and DROP SCHEMA drops one, with PostgreSQL's words, SQLSTATEs
//! and RESTRICT / CASCADE. `pg_namespace` and `information_schema.schemata`
//! list them (`planner/system.rs`).

use sqlparser::ast;

use super::{QueryResult, Session};
use crate::catalog::acl::{self, AclObject};
use crate::error::Result;
use crate::parser::CreateSchemaWith;
use crate::planner::{ident, object_name, system::is_reserved_schema};
use crate::{bail, err};

/// `CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]` and
/// `CREATE SCHEMA AUTHORIZATION role` (named after the role).
pub fn create(s: &mut Session, schema_name: &ast::SchemaName, if_not_exists: bool) -> Result<QueryResult> {
    let (name, owner) = name_and_owner(schema_name)?;
    let cat = &s.engine.catalog;
    if !cat.is_superuser(&s.user) && !cat.has_privilege(&s.user, &AclObject::Database(s.database.clone()), acl::CREATE) {
        bail!(InsufficientPrivilege, "permission denied for database {}", s.database);
    }
    if let Some(o) = &owner {
        if cat.role(o).is_none() {
            bail!(UndefinedObject, "role \"{o}\" does not exist");
        }
    }
    if is_reserved_schema(&name) || name == s.database || cat.database_exists(&name) {
        if if_not_exists {
            return Ok(QueryResult::Command("CREATE SCHEMA".into()));
        }
        bail!(DuplicateSchema, "schema \"{name}\" already exists");
    }
    if name.starts_with("pg_") {
        return Err(
            err!(ReservedName, "unacceptable schema name \"{name}\"").with_detail("The prefix \"pg_\" is reserved for system schemas.")
        );
    }
    cat.create_database(&name)?;
    cat.set_owner(&AclObject::Database(name.clone()), owner.as_deref().unwrap_or(&s.user))?;
    Ok(QueryResult::Command("CREATE SCHEMA".into()))
}

/// `DROP SCHEMA [IF EXISTS] name [, ...] [CASCADE | RESTRICT]`: 2BP01 while
/// a schema holds objects, unless CASCADE (which drops them with it).
pub fn drop_schemas(s: &mut Session, if_exists: bool, cascade: bool, names: &[ast::ObjectName]) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    for n in names {
        let name = object_name(n)?.1;
        if is_reserved_schema(&name) && name != "public" {
            bail!(DependentObjectsStillExist, "cannot drop schema {name} because it is required by the database system");
        }
        if name == "public" || name == s.database {
            bail!(FeatureNotSupported, "cannot drop the schema of the current database")
        }
        if !cat.database_exists(&name) {
            if if_exists {
                continue;
            }
            bail!(UndefinedSchema, "schema \"{name}\" does not exist");
        }
        if !cat.is_owner(&s.user, &AclObject::Database(name.clone())) {
            bail!(InsufficientPrivilege, "must be owner of schema {name}");
        }
        let mut members: Vec<String> = cat.tables(&name).into_iter().map(|t| format!("table {name}.{}", t.name)).collect();
        members.extend(cat.views(&name).into_iter().map(|v| format!("view {name}.{}", v.name)));
        members.extend(cat.sequences(&name).into_iter().filter(|q| q.owned_by.is_none()).map(|q| format!("sequence {name}.{}", q.name)));
        if !members.is_empty() && !cascade {
            return Err(err!(DependentObjectsStillExist, "cannot drop schema {name} because other objects depend on it")
                .with_detail(members.iter().map(|m| format!("{m} depends on schema {name}")).collect::<Vec<_>>().join("\n"))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        super::ddl::drop_database_objects(s, &name)?;
    }
    Ok(QueryResult::Command("DROP SCHEMA".into()))
}

/// A CREATE SCHEMA's schema name and AUTHORIZATION role.
fn name_and_owner(schema_name: &ast::SchemaName) -> Result<(String, Option<String>)> {
    Ok(match schema_name {
        ast::SchemaName::Simple(n) => (object_name(n)?.1, None),
        ast::SchemaName::UnnamedAuthorization(r) => (ident(r), Some(ident(r))),
        ast::SchemaName::NamedAuthorization(n, r) => (object_name(n)?.1, Some(ident(r))),
    })
}

/// `CREATE SCHEMA s CREATE TABLE … CREATE VIEW …`: the schema, then each
/// element with its unqualified name created in it.
pub fn create_with(s: &mut Session, c: &CreateSchemaWith) -> Result<QueryResult> {
    if c.if_not_exists {
        bail!(FeatureNotSupported, "CREATE SCHEMA IF NOT EXISTS cannot include schema elements");
    }
    create(s, &c.schema_name, false)?;
    let (schema, _) = name_and_owner(&c.schema_name)?;
    for e in &c.elements {
        let mut e = e.clone();
        if !qualify(&mut e, &schema) {
            bail!(Syntax, "CREATE SCHEMA can hold CREATE TABLE, VIEW and SEQUENCE only");
        }
        s.execute_sql_statement(&e, Default::default())?;
    }
    Ok(QueryResult::Command("CREATE SCHEMA".into()))
}

/// Qualify the unqualified name of a CREATE TABLE / VIEW / SEQUENCE (not
/// temporary) with `schema`; false for any other statement.
fn qualify(stmt: &mut ast::Statement, schema: &str) -> bool {
    let name = match stmt {
        ast::Statement::CreateTable(ct) if !ct.temporary => &mut ct.name,
        ast::Statement::CreateView(cv) if !cv.temporary => &mut cv.name,
        ast::Statement::CreateSequence { temporary: false, name, .. } => name,
        _ => return false,
    };
    if name.0.len() == 1 {
        name.0.insert(0, ast::ObjectNamePart::Identifier(ast::Ident::with_quote('"', schema)));
    }
    true
}
