//! Object privileges at the statement level: GRANT / REVOKE on databases,
//! tables and views (`ON ALL TABLES IN SCHEMA`, WITH GRANT OPTION, PUBLIC),
//! ALTER TABLE … OWNER TO, the owner of each new object, and the check
//! every statement passes before it runs (`check_statement`): the target
//! of INSERT / UPDATE / DELETE / TRUNCATE / COPY FROM, ownership for DROP,
//! ALTER, CREATE INDEX and the ADMIN functions, CREATE on the database for
//! CREATE TABLE / VIEW / FLOW. Reads (SELECT, subqueries, views, COPY TO,
//! the sources of a flow) are checked by the planner on the relations it
//! binds (`Planner::check_as`), views as their owner.
//!
//! Owns no storage: owners and ACLs live in the catalog (`catalog::acl`).
//! May import `catalog`, `planner`, `parser`, `error`.

use sqlparser::ast::{self, Statement};

use super::{QueryResult, Session};
use crate::catalog::acl::{self, AclObject};
use crate::error::Result;
use crate::parser::Statement as WeirStatement;
use crate::planner::{relation, SchemaRef};
use crate::{bail, err};

/// Is this a privilege statement? Then run it.
pub fn execute(s: &mut Session, stmt: &Statement) -> Option<Result<QueryResult>> {
    Some(match stmt {
        Statement::Grant(g) => grant(s, &g.privileges, g.objects.as_ref(), &g.grantees, g.with_grant_option, true),
        Statement::Revoke(r) => grant(s, &r.privileges, r.objects.as_ref(), &r.grantees, r.grant_option_for, false),
        Statement::AlterDefaultPrivileges(a) => alter_default_privileges(s, a),
        Statement::AlterTable(at)
            if !at.operations.is_empty() && at.operations.iter().all(|o| matches!(o, ast::AlterTableOperation::OwnerTo { .. })) =>
        {
            alter_owner(s, at)
        }
        _ => return None,
    })
}

/// The objects a GRANT / REVOKE names, with the word PostgreSQL's messages
/// use for each.
fn grant_objects(s: &Session, objects: Option<&ast::GrantObjects>) -> Result<Vec<(AclObject, &'static str, String)>> {
    let cat = &s.engine.catalog;
    let mut out = Vec::new();
    let relation_obj = |n: &ast::ObjectName| -> Result<(AclObject, &'static str, String)> {
        let rel = relation(cat, &s.database, n)?;
        let db = match &rel.schema {
            Some(SchemaRef::Database(d)) => d.clone(),
            Some(SchemaRef::System(_)) => bail!(FeatureNotSupported, "privileges on system tables cannot be changed"),
            None => bail!(UndefinedSchema, "schema \"{}\" does not exist", rel.written_schema.clone().unwrap_or_default()),
        };
        let kind = if cat.table(&db, &rel.name).is_some() {
            "table"
        } else if cat.view(&db, &rel.name).is_some() {
            "view"
        } else {
            bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display())
        };
        Ok((AclObject::Relation(db, rel.name.clone()), kind, rel.name))
    };
    match objects {
        Some(ast::GrantObjects::Tables(names) | ast::GrantObjects::Views(names)) => {
            for n in names {
                out.push(relation_obj(n)?);
            }
        }
        Some(ast::GrantObjects::AllTablesInSchema { schemas }) => {
            for sch in schemas {
                let (_, name) = crate::planner::object_name(sch)?;
                let db = match crate::planner::resolve_schema(cat, &s.database, Some(&name)) {
                    Some(SchemaRef::Database(d)) => d,
                    Some(SchemaRef::System(_)) => bail!(FeatureNotSupported, "privileges on system tables cannot be changed"),
                    None => bail!(UndefinedSchema, "schema \"{name}\" does not exist"),
                };
                for t in cat.tables(&db) {
                    out.push((AclObject::Relation(db.clone(), t.name.clone()), "table", t.name));
                }
                for v in cat.views(&db) {
                    out.push((AclObject::Relation(db.clone(), v.name.clone()), "view", v.name));
                }
            }
        }
        Some(ast::GrantObjects::Databases(names)) => {
            for n in names {
                let name = crate::planner::object_name(n)?.1;
                if !cat.database_exists(&name) {
                    bail!(UndefinedDatabase, "database \"{name}\" does not exist");
                }
                out.push((AclObject::Database(name.clone()), "database", name));
            }
        }
        Some(other) => bail!(FeatureNotSupported, "GRANT and REVOKE ON {other} are not supported"),
        None => bail!(Syntax, "syntax error at or near \"TO\""),
    }
    Ok(out)
}

/// The privilege bits a GRANT / REVOKE lists, for an object of `kind`.
fn privilege_mask(p: &ast::Privileges, obj: &AclObject, kind: &str) -> Result<u32> {
    let actions = match p {
        ast::Privileges::All { .. } => return Ok(obj.all()),
        ast::Privileges::Actions(a) => a,
    };
    let mut mask = 0;
    for a in actions {
        let (bit, columns) = match a {
            ast::Action::Select { columns } => (acl::SELECT, columns.is_some()),
            ast::Action::Insert { columns } => (acl::INSERT, columns.is_some()),
            ast::Action::Update { columns } => (acl::UPDATE, columns.is_some()),
            ast::Action::References { columns } => (acl::REFERENCES, columns.is_some()),
            ast::Action::Delete => (acl::DELETE, false),
            ast::Action::Truncate => (acl::TRUNCATE, false),
            ast::Action::Trigger => (acl::TRIGGER, false),
            ast::Action::Connect => (acl::CONNECT, false),
            ast::Action::Create { obj_type: None } => (acl::CREATE, false),
            ast::Action::Temporary => (acl::TEMP, false),
            ast::Action::Usage => (acl::USAGE, false),
            other => bail!(Syntax, "unrecognized privilege type \"{other}\""),
        };
        if columns {
            bail!(FeatureNotSupported, "column privileges are not supported");
        }
        if bit & obj.all() == 0 {
            let kind = if kind == "database" { "database" } else { "relation" };
            bail!(InvalidGrantOperation, "invalid privilege type {} for {kind}", acl::privilege_name(bit));
        }
        mask |= bit;
    }
    Ok(mask)
}

/// Grantee names ("" for PUBLIC); each must be a role.
fn grantee_names(s: &Session, gs: &[ast::Grantee]) -> Result<Vec<String>> {
    let mut out = vec![];
    for g in gs {
        match (&g.grantee_type, &g.name) {
            (ast::GranteesType::Public, _) => out.push(String::new()),
            (_, Some(ast::GranteeName::ObjectName(n))) => {
                let name = crate::planner::object_name(n)?.1;
                if name == "public" {
                    out.push(String::new());
                    continue;
                }
                if s.engine.catalog.role(&name).is_none() {
                    bail!(UndefinedObject, "role \"{name}\" does not exist");
                }
                out.push(name);
            }
            _ => bail!(FeatureNotSupported, "grantee {g} is not supported"),
        }
    }
    Ok(out)
}

fn grant(
    s: &mut Session,
    privileges: &ast::Privileges,
    objects: Option<&ast::GrantObjects>,
    grantees: &[ast::Grantee],
    option: bool,
    is_grant: bool,
) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let targets = grant_objects(s, objects)?;
    let grantees = grantee_names(s, grantees)?;
    for (obj, kind, name) in &targets {
        let mask = privilege_mask(privileges, obj, kind)?;
        // PostgreSQL's select_best_grantor: an owner (or superuser) grants
        // as the owner; anyone else grants what it holds WITH GRANT OPTION.
        let owner = cat.owner_of(obj);
        let (held, grantable) = cat.privileges(&s.user, obj);
        let grantor = if cat.is_owner(&s.user, obj) { owner } else { s.user.clone() };
        let mask = mask & grantable;
        if mask == 0 && grantable == 0 && held == 0 {
            bail!(InsufficientPrivilege, "permission denied for {kind} {name}");
        }
        cat.edit_acl(obj, |a, _| {
            for g in &grantees {
                if is_grant {
                    acl::acl_grant(a, g, &grantor, mask, option);
                } else {
                    acl::acl_revoke(a, g, &grantor, mask, option);
                }
            }
            Ok(())
        })?;
    }
    Ok(QueryResult::Command(if is_grant { "GRANT" } else { "REVOKE" }.into()))
}

/// ALTER DEFAULT PRIVILEGES [FOR ROLE r, …] [IN SCHEMA db, …] GRANT / REVOKE
/// … ON TABLES: what relations those roles create later start with (a weir
/// database is a schema; tables and views both count as TABLES).
fn alter_default_privileges(s: &mut Session, a: &ast::AlterDefaultPrivileges) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let mut roles = Vec::new();
    let mut schemas = Vec::new();
    for o in &a.options {
        match o {
            ast::DefaultPrivilegesOption::ForRole(rs) => roles.extend(rs.iter().map(crate::planner::ident)),
            ast::DefaultPrivilegesOption::InSchema(ns) => {
                for n in ns {
                    let (_, name) = crate::planner::object_name(n)?;
                    match crate::planner::resolve_schema(cat, &s.database, Some(&name)) {
                        Some(SchemaRef::Database(d)) => schemas.push(d),
                        Some(SchemaRef::System(_)) => bail!(FeatureNotSupported, "default privileges in system schemas are not supported"),
                        None => bail!(UndefinedSchema, "schema \"{name}\" does not exist"),
                    }
                }
            }
        }
    }
    if roles.is_empty() {
        roles.push(s.user.clone());
    }
    for r in &roles {
        if cat.role(r).is_none() {
            bail!(UndefinedObject, "role \"{r}\" does not exist");
        }
        // PostgreSQL: only a member of the role (or a superuser) may.
        if !cat.is_superuser(&s.user) && !cat.role_closure(&s.user, false).contains(r) {
            bail!(InsufficientPrivilege, "permission denied to change default privileges");
        }
    }
    let (privileges, object_type, grantees, option, is_grant) = match &a.operation {
        ast::AlterDefaultPrivilegesOperation::Grant { privileges, object_type, grantees, with_grant_option } => {
            (privileges, object_type, grantees, *with_grant_option, true)
        }
        ast::AlterDefaultPrivilegesOperation::Revoke { grant_option_for, privileges, object_type, grantees, .. } => {
            (privileges, object_type, grantees, *grant_option_for, false)
        }
    };
    if !matches!(object_type, ast::DefaultPrivilegesObjectType::Tables) {
        bail!(FeatureNotSupported, "default privileges ON {object_type} are not supported");
    }
    let mask = privilege_mask(privileges, &AclObject::Relation(String::new(), String::new()), "table")?;
    let grantees = grantee_names(s, grantees)?;
    let targets: Vec<Option<&str>> = if schemas.is_empty() { vec![None] } else { schemas.iter().map(|d| Some(d.as_str())).collect() };
    for role in &roles {
        for schema in &targets {
            cat.edit_default_acl(role, *schema, |acl| {
                for g in &grantees {
                    if is_grant {
                        acl::acl_grant(acl, g, role, mask, option);
                    } else {
                        acl::acl_revoke(acl, g, role, mask, option);
                    }
                }
                Ok(())
            })?;
        }
    }
    Ok(QueryResult::Command("ALTER DEFAULT PRIVILEGES".into()))
}

/// ALTER TABLE t OWNER TO r: the owner (or a superuser) hands the table to
/// a role it is a member of.
fn alter_owner(s: &mut Session, at: &ast::AlterTable) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let rel = relation(cat, &s.database, &at.name)?;
    let db = rel.database()?;
    let kind = if cat.table(&db, &rel.name).is_some() {
        "table"
    } else if cat.view(&db, &rel.name).is_some() {
        "view"
    } else {
        if at.if_exists {
            return Ok(QueryResult::Command("ALTER TABLE".into()));
        }
        bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
    };
    for op in &at.operations {
        let ast::AlterTableOperation::OwnerTo { new_owner } = op else { continue };
        let new = match new_owner {
            ast::Owner::Ident(i) => crate::planner::ident(i),
            _ => s.user.clone(),
        };
        if cat.role(&new).is_none() {
            bail!(UndefinedObject, "role \"{new}\" does not exist");
        }
        let obj = AclObject::Relation(db.clone(), rel.name.clone());
        cat.check_relation_owner(&s.user, &db, &rel.name, kind)?;
        if !cat.is_superuser(&s.user) && !cat.role_closure(&s.user, false).contains(&new) {
            bail!(InsufficientPrivilege, "must be member of role \"{new}\"");
        }
        cat.change_owner(&obj, &new)?;
    }
    Ok(QueryResult::Command("ALTER TABLE".into()))
}

/// The kind word of a relation for messages ("table" / "view"), if it exists.
fn relation_kind(s: &Session, db: &str, name: &str) -> Option<&'static str> {
    let cat = &s.engine.catalog;
    if cat.table(db, name).is_some() {
        Some("table")
    } else if cat.view(db, name).is_some() {
        Some("view")
    } else if cat.sequence(db, name).is_some() {
        Some("sequence")
    } else {
        None
    }
}

/// 42501 unless the session may create relations in `db` (CREATE on the
/// database, which is also the schema: PostgreSQL's message names it so).
fn check_create_in(s: &Session, db: &str, written_schema: Option<&str>) -> Result<()> {
    if !s.engine.catalog.has_privilege(&s.user, &AclObject::Database(db.to_string()), acl::CREATE) {
        bail!(InsufficientPrivilege, "permission denied for schema {}", written_schema.unwrap_or("public"));
    }
    Ok(())
}

/// Does an UPDATE read the table (a WHERE, or a SET value naming a column)?
fn update_reads(u: &ast::Update) -> bool {
    use std::ops::ControlFlow;
    if u.selection.is_some() || u.from.is_some() || u.returning.is_some() {
        return true;
    }
    let mut reads = false;
    for a in &u.assignments {
        let _ = sqlparser::ast::visit_expressions(&a.value, |e: &ast::Expr| {
            if matches!(e, ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)) {
                reads = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
    }
    reads
}

/// The privilege check of a statement before it runs (reads are the
/// planner's). A superuser passes every check.
pub fn check_statement(s: &Session, stmt: &WeirStatement) -> Result<()> {
    let cat = &s.engine.catalog;
    if cat.is_superuser(&s.user) {
        return Ok(());
    }
    let user = s.user.as_str();
    // The (database, name) of a table argument that exists; None lets the
    // statement report the missing relation in its own words.
    let target = |n: &ast::ObjectName| -> Option<(String, String, &'static str)> {
        let rel = relation(cat, &s.database, n).ok()?;
        let db = rel.database().ok()?;
        let kind = relation_kind(s, &db, &rel.name)?;
        Some((db, rel.name, kind))
    };
    let need = |n: &ast::ObjectName, mask: u32| -> Result<()> {
        if let Some((db, name, kind)) = target(n) {
            for bit in [acl::INSERT, acl::SELECT, acl::UPDATE, acl::DELETE, acl::TRUNCATE] {
                if mask & bit != 0 {
                    cat.check_relation(user, &db, &name, kind, bit)?;
                }
            }
        }
        Ok(())
    };
    let owner = |n: &ast::ObjectName| -> Result<()> {
        if let Some((db, name, kind)) = target(n) {
            cat.check_relation_owner(user, &db, &name, kind)?;
        }
        Ok(())
    };
    let create_in = |n: &ast::ObjectName| -> Result<()> {
        let rel = relation(cat, &s.database, n)?;
        match rel.database() {
            Ok(db) if cat.database_exists(&db) => check_create_in(s, &db, rel.written_schema.as_deref()),
            _ => Ok(()),
        }
    };
    match stmt {
        WeirStatement::CreateTable(ct) => create_in(&ct.name),
        WeirStatement::Admin(a) if matches!(a.name().as_str(), "flush_table" | "compact_table") => {
            // The table argument is checked where it is resolved
            // (`check_admin_table`), after its arguments are evaluated.
            Ok(())
        }
        WeirStatement::CreateFlow(cf) => {
            if let Some(old) = cat.flow(&crate::planner::ident(&cf.name)) {
                if cf.or_replace {
                    check_flow_owner(s, &old.name)?;
                }
            }
            match target(&cf.sink) {
                Some((db, name, kind)) => cat.check_relation(user, &db, &name, kind, acl::INSERT),
                None => create_in(&cf.sink),
            }
        }
        WeirStatement::DropFlow(d) => check_flow_owner(s, &crate::planner::ident(&d.name)),
        WeirStatement::Sql(stmt) => match stmt {
            Statement::CreateTable(ct) => create_in(&ct.name),
            Statement::CreateView(cv) => create_in(&cv.name),
            Statement::CreateSequence { name, .. } => create_in(name),
            Statement::CreateDatabase { .. } => {
                if !cat.role(user).is_some_and(|r| r.createdb) {
                    bail!(InsufficientPrivilege, "permission denied to create database");
                }
                Ok(())
            }
            Statement::Insert(ins) => match &ins.table {
                ast::TableObject::TableName(n) => need(n, acl::INSERT),
                _ => Ok(()),
            },
            Statement::Merge(m) => match super::merge::target_name(m) {
                Some(n) => need(n, super::merge::privileges(m)),
                None => Ok(()),
            },
            Statement::Update(u) => match &u.table.relation {
                ast::TableFactor::Table { name, .. } => {
                    need(name, acl::UPDATE)?;
                    if update_reads(u) {
                        need(name, acl::SELECT)?;
                    }
                    Ok(())
                }
                _ => Ok(()),
            },
            Statement::Delete(d) => {
                let tables = match &d.from {
                    ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
                };
                for t in tables {
                    if let ast::TableFactor::Table { name, .. } = &t.relation {
                        need(name, acl::DELETE)?;
                        if d.selection.is_some() || d.using.is_some() {
                            need(name, acl::SELECT)?;
                        }
                    }
                }
                Ok(())
            }
            Statement::Truncate(t) => {
                for n in &t.table_names {
                    need(&n.name, acl::TRUNCATE)?;
                }
                Ok(())
            }
            // COPY TO reads through the planner; COPY FROM writes.
            Statement::Copy { source: ast::CopySource::Table { table_name, .. }, to: false, .. } => need(table_name, acl::INSERT),
            Statement::Drop { object_type, names, .. } => {
                for n in names {
                    match object_type {
                        ast::ObjectType::Table | ast::ObjectType::View | ast::ObjectType::Sequence => owner(n)?,
                        ast::ObjectType::Index => {
                            let Ok(rel) = relation(cat, &s.database, n) else { continue };
                            let Ok(db) = rel.database() else { continue };
                            let Some(ix) = cat.index(&db, &rel.name) else { continue };
                            if !cat.is_owner(user, &AclObject::Relation(db, ix.table)) {
                                bail!(InsufficientPrivilege, "must be owner of index {}", rel.name);
                            }
                        }
                        ast::ObjectType::Database => {
                            let name = crate::planner::object_name(n)?.1;
                            if cat.database_exists(&name) && !cat.is_owner(user, &AclObject::Database(name.clone())) {
                                bail!(InsufficientPrivilege, "must be owner of database {name}");
                            }
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            Statement::CreateIndex(ci) => owner(&ci.table_name),
            Statement::Use(ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n)) => {
                let db = crate::planner::object_name(n)?.1;
                check_connect(s, &db)
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// ADMIN flush_table / compact_table: the table's owner (or a superuser).
pub fn check_admin_table(s: &Session, t: &crate::catalog::TableDef) -> Result<()> {
    s.engine.catalog.check_relation_owner(&s.user, &t.database, &t.name, "table")
}

/// DROP FLOW, CREATE OR REPLACE FLOW and ADMIN flush_flow: the flow's owner.
pub fn check_flow_owner(s: &Session, name: &str) -> Result<()> {
    let cat = &s.engine.catalog;
    if cat.flow(name).is_some() && !cat.is_owner(&s.user, &AclObject::Flow(name.to_string())) {
        bail!(InsufficientPrivilege, "must be owner of flow {name}");
    }
    Ok(())
}

/// CONNECT on a database, at startup and for USE: PostgreSQL's FATAL.
pub fn check_connect(s: &Session, db: &str) -> Result<()> {
    connect_allowed(&s.engine.catalog, &s.user, db)
}

/// 42501 "permission denied for database x" unless `user` may connect.
pub fn connect_allowed(cat: &crate::catalog::Catalog, user: &str, db: &str) -> Result<()> {
    if cat.database_exists(db) && !cat.has_privilege(user, &AclObject::Database(db.to_string()), acl::CONNECT) {
        return Err(err!(InsufficientPrivilege, "permission denied for database {db}").with_detail("User does not have CONNECT privilege."));
    }
    Ok(())
}

/// The objects a statement will create, if they do not exist yet (their
/// owner is recorded once it succeeds).
pub fn new_objects(s: &Session, stmt: &WeirStatement) -> Vec<AclObject> {
    let cat = &s.engine.catalog;
    let rel = |n: &ast::ObjectName| -> Option<AclObject> {
        let r = relation(cat, &s.database, n).ok()?;
        let db = r.database().ok()?;
        let free = cat.table(&db, &r.name).is_none() && cat.view(&db, &r.name).is_none() && cat.sequence(&db, &r.name).is_none();
        free.then_some(AclObject::Relation(db, r.name))
    };
    let mut out = Vec::new();
    match stmt {
        WeirStatement::CreateTable(ct) => out.extend(rel(&ct.name)),
        WeirStatement::CreateFlow(cf) => {
            let name = crate::planner::ident(&cf.name);
            if cat.flow(&name).is_none() {
                out.push(AclObject::Flow(name));
            }
            out.extend(rel(&cf.sink));
        }
        WeirStatement::Sql(Statement::CreateTable(ct)) => out.extend(rel(&ct.name)),
        WeirStatement::Sql(Statement::CreateView(cv)) => out.extend(rel(&cv.name)),
        WeirStatement::Sql(Statement::CreateSequence { name, .. }) => out.extend(rel(name)),
        WeirStatement::Sql(Statement::CreateDatabase { db_name, .. }) => {
            if let Ok((_, name)) = crate::planner::object_name(db_name) {
                if !cat.database_exists(&name) {
                    out.push(AclObject::Database(name));
                }
            }
        }
        _ => {}
    }
    out
}

/// After a statement succeeded: the session's user owns what it created;
/// a dropped flow's owner is forgotten.
pub fn record_owners(s: &Session, created: &[AclObject], stmt: &WeirStatement) -> Result<()> {
    let cat = &s.engine.catalog;
    for obj in created {
        let exists = match obj {
            AclObject::Database(d) => cat.database_exists(d),
            AclObject::Relation(d, n) => cat.table(d, n).is_some() || cat.view(d, n).is_some() || cat.sequence(d, n).is_some(),
            AclObject::Flow(n) => cat.flow(n).is_some(),
        };
        if exists {
            cat.set_owner(obj, &s.user)?;
            // ALTER DEFAULT PRIVILEGES of the creator.
            if let AclObject::Relation(d, _) = obj {
                if let Some(initial) = cat.initial_relation_acl(&s.user, d) {
                    cat.edit_acl(obj, |a, _| {
                        *a = initial;
                        Ok(())
                    })?;
                }
            }
        }
    }
    if let WeirStatement::DropFlow(d) = stmt {
        let name = crate::planner::ident(&d.name);
        if cat.flow(&name).is_none() {
            cat.forget_object_acl(&AclObject::Flow(name))?;
        }
    }
    Ok(())
}
