//! Row-level security statements: `CREATE / ALTER / DROP POLICY` and `ALTER TABLE …
//! ENABLE | DISABLE | [NO] FORCE ROW LEVEL SECURITY`, each by the table's owner. The
//! policies live in the table's definition (`catalog::RowSecurity`); the planner applies
//! them (`planner/row_security.rs`).
//!
//! May import `catalog`, `planner`, `parser`, `error`.

use sqlparser::ast;

use super::{QueryResult, Session};
use crate::catalog::{PolicyDef, TableDef};
use crate::error::Result;
use crate::planner::{ident, Params, Planner};
use crate::{bail, err};

/// The table a policy statement names, checked to be the user's.
fn owned_table(s: &Session, name: &ast::ObjectName) -> Result<TableDef> {
    let def = s.planner(Params::default()).table_named(name)?;
    s.engine.catalog.check_relation_owner(&s.user, &def.database, &def.name, "table")?;
    Ok(def)
}

fn role_names(s: &Session, to: Option<&Vec<ast::Owner>>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for o in to.into_iter().flatten() {
        let name = match o {
            ast::Owner::Ident(i) => ident(i),
            ast::Owner::CurrentRole | ast::Owner::CurrentUser | ast::Owner::SessionUser => s.user.clone(),
        };
        if name != "public" && s.engine.catalog.role(&name).is_none() {
            bail!(UndefinedObject, "role \"{name}\" does not exist");
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    // PUBLIC with other roles is PUBLIC.
    if out.iter().any(|r| r == "public") {
        out.clear();
    }
    Ok(out)
}

/// A policy expression must bind over the table's columns, as a boolean.
fn check_expr(planner: &Planner, def: &TableDef, e: &ast::Expr, what: &str) -> Result<String> {
    let scope = crate::planner::Scope::new(Planner::policy_columns(def), None);
    let b = planner.bind_expr(e, &scope, None)?;
    if !matches!(b.ty(), crate::types::SqlType::Bool | crate::types::SqlType::Unknown) {
        bail!(DatatypeMismatch, "argument of {what} must be type boolean, not type {}", b.ty());
    }
    Ok(e.to_string())
}

pub fn create(s: &mut Session, cp: &ast::CreatePolicy) -> Result<QueryResult> {
    let mut def = owned_table(s, &cp.table_name)?;
    let name = ident(&cp.name);
    if def.row_security.policies.iter().any(|p| p.name == name) {
        bail!(DuplicateObject, "policy \"{name}\" for table \"{}\" already exists", def.name);
    }
    let command = match cp.command {
        None | Some(ast::CreatePolicyCommand::All) => "all",
        Some(ast::CreatePolicyCommand::Select) => "select",
        Some(ast::CreatePolicyCommand::Insert) => "insert",
        Some(ast::CreatePolicyCommand::Update) => "update",
        Some(ast::CreatePolicyCommand::Delete) => "delete",
    };
    if cp.with_check.is_some() && matches!(command, "select" | "delete") {
        bail!(Syntax, "WITH CHECK cannot be applied to SELECT or DELETE");
    }
    if cp.using.is_some() && command == "insert" {
        bail!(Syntax, "only WITH CHECK expression allowed for INSERT");
    }
    let roles = role_names(s, cp.to.as_ref())?;
    let planner = s.planner(Params::default());
    let using = cp.using.as_ref().map(|e| check_expr(&planner, &def, e, "POLICY USING")).transpose()?;
    let check = cp.with_check.as_ref().map(|e| check_expr(&planner, &def, e, "POLICY WITH CHECK")).transpose()?;
    std::mem::drop(planner);
    let permissive = !matches!(cp.policy_type, Some(ast::CreatePolicyType::Restrictive));
    def.row_security.policies.push(PolicyDef { name, permissive, command: command.to_string(), roles, using, check });
    s.engine.catalog.replace_table(def)?;
    Ok(QueryResult::Command("CREATE POLICY".into()))
}

pub fn alter(s: &mut Session, ap: &ast::AlterPolicy) -> Result<QueryResult> {
    let mut def = owned_table(s, &ap.table_name)?;
    let name = ident(&ap.name);
    let Some(at) = def.row_security.policies.iter().position(|p| p.name == name) else {
        bail!(UndefinedObject, "policy \"{name}\" for table \"{}\" does not exist", def.name);
    };
    match &ap.operation {
        ast::AlterPolicyOperation::Rename { new_name } => {
            let new_name = ident(new_name);
            if def.row_security.policies.iter().any(|p| p.name == new_name) {
                bail!(DuplicateObject, "policy \"{new_name}\" for table \"{}\" already exists", def.name);
            }
            def.row_security.policies[at].name = new_name;
        }
        ast::AlterPolicyOperation::Apply { to, using, with_check } => {
            let command = def.row_security.policies[at].command.clone();
            if with_check.is_some() && matches!(command.as_str(), "select" | "delete") {
                bail!(Syntax, "only USING expression allowed for SELECT, DELETE");
            }
            if using.is_some() && command == "insert" {
                bail!(Syntax, "only WITH CHECK expression allowed for INSERT");
            }
            let roles = to.as_ref().map(|t| role_names(s, Some(t))).transpose()?;
            let planner = s.planner(Params::default());
            let using = using.as_ref().map(|e| check_expr(&planner, &def, e, "POLICY USING")).transpose()?;
            let check = with_check.as_ref().map(|e| check_expr(&planner, &def, e, "POLICY WITH CHECK")).transpose()?;
            std::mem::drop(planner);
            let p = &mut def.row_security.policies[at];
            if let Some(r) = roles {
                p.roles = r;
            }
            if using.is_some() {
                p.using = using;
            }
            if check.is_some() {
                p.check = check;
            }
        }
    }
    s.engine.catalog.replace_table(def)?;
    Ok(QueryResult::Command("ALTER POLICY".into()))
}

pub fn drop(s: &mut Session, dp: &ast::DropPolicy) -> Result<QueryResult> {
    let mut def = owned_table(s, &dp.table_name)?;
    let name = ident(&dp.name);
    match def.row_security.policies.iter().position(|p| p.name == name) {
        Some(at) => {
            def.row_security.policies.remove(at);
            s.engine.catalog.replace_table(def)?;
        }
        None if dp.if_exists => {
            s.notice("NOTICE", &format!("policy \"{name}\" for relation \"{}\" does not exist, skipping", def.name));
        }
        None => return Err(err!(UndefinedObject, "policy \"{name}\" for table \"{}\" does not exist", def.name)),
    }
    Ok(QueryResult::Command("DROP POLICY".into()))
}

/// `ALTER TABLE t ENABLE | DISABLE | FORCE | NO FORCE ROW LEVEL SECURITY`.
pub fn set_row_security(s: &mut Session, def: &TableDef, op: &ast::AlterTableOperation) -> Result<QueryResult> {
    s.engine.catalog.check_relation_owner(&s.user, &def.database, &def.name, "table")?;
    let mut def = def.clone();
    let rs = &mut def.row_security;
    match op {
        ast::AlterTableOperation::EnableRowLevelSecurity => rs.enabled = true,
        ast::AlterTableOperation::DisableRowLevelSecurity => rs.enabled = false,
        ast::AlterTableOperation::ForceRowLevelSecurity => rs.forced = true,
        ast::AlterTableOperation::NoForceRowLevelSecurity => rs.forced = false,
        _ => bail!(Internal, "not a row-level security operation"),
    }
    s.engine.catalog.replace_table(def)?;
    Ok(QueryResult::Command("ALTER TABLE".into()))
}
