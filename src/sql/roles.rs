//! Role statements: CREATE ROLE / USER, ALTER ROLE / USER, DROP ROLE /
//! USER, GRANT role TO, REVOKE role FROM, with PostgreSQL's checks (a
//! superuser, or CREATEROLE for non-superuser roles).
//!
//! Owns no storage: roles live in the catalog (`catalog::roles`). May
//! import `catalog`, `parser`, `error`.

use sqlparser::ast::{self, Expr, Password, RoleOption, Statement, Value as AstValue};

use super::{QueryResult, Session};
use crate::catalog::roles::password_verifier;
use crate::catalog::RoleDef;
use crate::error::Result;
use crate::{bail, err};

fn ident_name(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

fn object_role_name(n: &ast::ObjectName) -> Result<String> {
    Ok(crate::planner::object_name(n)?.1)
}

fn password_text(p: &Password) -> Result<Option<String>> {
    match p {
        Password::NullPassword => Ok(None),
        Password::Password(Expr::Value(v)) => match &v.value {
            AstValue::SingleQuotedString(s) | AstValue::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => Ok(Some(s.clone())),
            AstValue::Null => Ok(None),
            _ => bail!(Syntax, "syntax error at or near \"PASSWORD\""),
        },
        _ => bail!(Syntax, "syntax error at or near \"PASSWORD\""),
    }
}

/// May the session's user create or change role `target` (superuser flag
/// `super_target`)?
fn check_role_admin(s: &Session, what: &str, target_super: bool) -> Result<()> {
    let Some(me) = s.engine.catalog.role(&s.user) else {
        bail!(InsufficientPrivilege, "permission denied to {what}");
    };
    if me.superuser {
        return Ok(());
    }
    if target_super {
        return Err(err!(InsufficientPrivilege, "permission denied to {what}")
            .with_detail("Only roles with the SUPERUSER attribute may change roles with the SUPERUSER attribute."));
    }
    if !me.createrole {
        return Err(err!(InsufficientPrivilege, "permission denied to {what}")
            .with_detail("Only roles with the CREATEROLE attribute may change roles."));
    }
    Ok(())
}

fn apply_options(r: &mut RoleDef, opts: &[RoleOption]) -> Result<()> {
    for o in opts {
        match o {
            RoleOption::SuperUser(b) => r.superuser = *b,
            RoleOption::Login(b) => r.login = *b,
            RoleOption::CreateDB(b) => r.createdb = *b,
            RoleOption::CreateRole(b) => r.createrole = *b,
            RoleOption::Inherit(b) => r.inherit = *b,
            RoleOption::Password(p) => {
                r.password = match password_text(p)? {
                    Some(t) if t.is_empty() => None,
                    Some(t) => Some(password_verifier(&t)?),
                    None => None,
                }
            }
            RoleOption::BypassRLS(_) | RoleOption::Replication(_) | RoleOption::ConnectionLimit(_) | RoleOption::ValidUntil(_) => {}
        }
    }
    Ok(())
}

fn grantee_names(gs: &[ast::Grantee]) -> Result<Vec<String>> {
    let mut out = vec![];
    for g in gs {
        match &g.name {
            Some(ast::GranteeName::ObjectName(n)) => out.push(object_role_name(n)?),
            _ => bail!(FeatureNotSupported, "this grantee is not supported"),
        }
    }
    Ok(out)
}

/// Is this statement a role statement? Then run it.
pub fn execute(s: &mut Session, stmt: &Statement) -> Option<Result<QueryResult>> {
    Some(match stmt {
        Statement::CreateRole(cr) => create_role(s, cr),
        Statement::AlterRole { name, operation } => alter_role(s, name, operation),
        Statement::Drop { object_type: ast::ObjectType::Role | ast::ObjectType::User, if_exists, names, .. } => {
            drop_roles(s, *if_exists, names)
        }
        Statement::GrantRole(g) => grant_role(s, &g.roles, &g.grantees, true),
        Statement::RevokeRole(r) => grant_role(s, &r.roles, &r.grantees, false),
        _ => return None,
    })
}

fn create_role(s: &mut Session, cr: &ast::CreateRole) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    for n in &cr.names {
        let name = object_role_name(n)?;
        let mut r = RoleDef::new(&name);
        r.superuser = cr.superuser.unwrap_or(false);
        check_role_admin(s, "create role", r.superuser)?;
        r.login = cr.login.unwrap_or(false);
        r.createdb = cr.create_db.unwrap_or(false);
        r.createrole = cr.create_role.unwrap_or(false);
        r.inherit = cr.inherit.unwrap_or(true);
        if let Some(p) = &cr.password {
            if let Some(t) = password_text(p)?.filter(|t| !t.is_empty()) {
                r.password = Some(password_verifier(&t)?);
            }
        }
        r.member_of = cr.in_role.iter().chain(&cr.in_group).map(ident_name).collect();
        if cr.if_not_exists && cat.role(&name).is_some() {
            continue;
        }
        cat.create_role(r)?;
        for m in cr.role.iter().chain(&cr.user) {
            let m = ident_name(m);
            let n2 = name.clone();
            cat.alter_role(&m, |r| {
                if !r.member_of.contains(&n2) {
                    r.member_of.push(n2);
                }
                Ok(())
            })?;
        }
    }
    Ok(QueryResult::Command("CREATE ROLE".into()))
}

fn alter_role(s: &mut Session, name: &ast::Ident, op: &ast::AlterRoleOperation) -> Result<QueryResult> {
    let name = ident_name(name);
    let cat = &s.engine.catalog;
    let Some(target) = cat.role(&name) else {
        bail!(UndefinedObject, "role \"{name}\" does not exist");
    };
    match op {
        ast::AlterRoleOperation::WithOptions { options } => {
            // Anyone may change their own password.
            let only_password = options.iter().all(|o| matches!(o, RoleOption::Password(_)));
            if !(only_password && name == s.user) {
                let to_super = options.iter().any(|o| matches!(o, RoleOption::SuperUser(_)));
                check_role_admin(s, "alter role", target.superuser || to_super)?;
            }
            cat.alter_role(&name, |r| apply_options(r, options))?;
        }
        ast::AlterRoleOperation::RenameRole { role_name } => {
            check_role_admin(s, "rename role", target.superuser)?;
            let new = ident_name(role_name);
            if new == s.user || name == s.user {
                bail!(FeatureNotSupported, "session user cannot be renamed");
            }
            let mut r = target.clone();
            r.name = new.clone();
            // A renamed role keeps its oid and memberships; members follow it.
            cat.create_role(r)?;
            let oid = target.oid;
            cat.alter_role(&new, |r| {
                r.oid = oid;
                Ok(())
            })?;
            for m in cat.roles() {
                if m.member_of.contains(&name) {
                    let (old, new) = (name.clone(), new.clone());
                    cat.alter_role(&m.name, |r| {
                        for x in r.member_of.iter_mut() {
                            if *x == old {
                                *x = new.clone();
                            }
                        }
                        Ok(())
                    })?;
                }
            }
            // Entries move to the new name before the old role goes, so no
            // reader sees an entry naming a role that does not exist.
            cat.rename_role_in_acls(&name, &new)?;
            cat.drop_role(&name)?;
        }
        _ => bail!(FeatureNotSupported, "this form of ALTER ROLE is not supported"),
    }
    Ok(QueryResult::Command("ALTER ROLE".into()))
}

fn drop_roles(s: &mut Session, if_exists: bool, names: &[ast::ObjectName]) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    for n in names {
        let name = object_role_name(n)?;
        let Some(target) = cat.role(&name) else {
            if if_exists {
                continue;
            }
            bail!(UndefinedObject, "role \"{name}\" does not exist");
        };
        check_role_admin(s, "drop role", target.superuser)?;
        if name == s.user {
            bail!(ObjectInUse, "current user cannot be dropped");
        }
        if target.oid == 10 {
            bail!(ObjectInUse, "cannot drop role {name} because it is required by the database system");
        }
        let deps = cat.role_dependents(&name, &s.database);
        if !deps.is_empty() {
            return Err(err!(DependentObjectsStillExist, "role \"{name}\" cannot be dropped because some objects depend on it")
                .with_detail(deps.join("\n")));
        }
        cat.drop_role(&name)?;
    }
    Ok(QueryResult::Command("DROP ROLE".into()))
}

fn grant_role(s: &mut Session, roles: &[ast::Ident], grantees: &[ast::Grantee], grant: bool) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    let members = grantee_names(grantees)?;
    for role in roles {
        let role = ident_name(role);
        let Some(target) = cat.role(&role) else {
            bail!(UndefinedObject, "role \"{role}\" does not exist");
        };
        check_role_admin(s, if grant { "grant role" } else { "revoke role" }, target.superuser)?;
        for m in &members {
            if cat.role(m).is_none() {
                bail!(UndefinedObject, "role \"{m}\" does not exist");
            }
            if grant {
                if cat.role_closure(&role, false).contains(m) {
                    bail!(InvalidGrantOperation, "role \"{m}\" is a member of role \"{role}\"");
                }
                let r2 = role.clone();
                cat.alter_role(m, |r| {
                    if !r.member_of.contains(&r2) {
                        r.member_of.push(r2);
                    }
                    Ok(())
                })?;
            } else {
                let r2 = role.clone();
                cat.alter_role(m, |r| {
                    r.member_of.retain(|x| *x != r2);
                    Ok(())
                })?;
            }
        }
    }
    Ok(QueryResult::Command(if grant { "GRANT ROLE" } else { "REVOKE ROLE" }.into()))
}

/// Does `user` belong to `role` (directly or not; `usage`: with its
/// privileges, i.e. through INHERIT roles)?
pub fn is_member(cat: &crate::catalog::Catalog, user: &str, role: &str, usage: bool) -> bool {
    cat.is_superuser(user) || cat.role_closure(user, usage).iter().any(|r| r == role)
}

/// The query text as pg_stat_activity may show it: statements that carry a
/// password (CREATE / ALTER ROLE or USER … PASSWORD) are shown re-printed
/// with the password as `'********'`; a query string that does not parse
/// and mentions a password is not shown at all. None: show it as it is.
pub fn redacted_query(sql: &str) -> Option<String> {
    // Cheap filter before parsing: no statement without the keyword carries
    // a password; the decision itself is made on the parsed statements.
    if !sql.to_ascii_lowercase().contains("password") {
        return None;
    }
    let Ok(stmts) = crate::parser::parse(sql) else {
        return Some("<a statement with a password, not shown>".into());
    };
    let mask = |p: &mut Password| {
        if let Password::Password(e) = p {
            *e = Expr::Value(AstValue::SingleQuotedString("********".into()).into());
        }
    };
    let mut hidden = false;
    let mut out = Vec::with_capacity(stmts.len());
    for mut s in stmts {
        match &mut s {
            crate::parser::Statement::Sql(Statement::CreateRole(cr)) => {
                if let Some(p) = cr.password.as_mut() {
                    mask(p);
                    hidden = true;
                }
            }
            crate::parser::Statement::Sql(Statement::AlterRole { operation: ast::AlterRoleOperation::WithOptions { options }, .. }) => {
                for o in options.iter_mut() {
                    if let RoleOption::Password(p) = o {
                        mask(p);
                        hidden = true;
                    }
                }
            }
            _ => {}
        }
        out.push(s.to_string());
    }
    hidden.then(|| out.join("; "))
}

#[cfg(test)]
mod redact_tests {
    use super::redacted_query;

    #[test]
    fn passwords_never_reach_the_activity_text() {
        let q = redacted_query("CREATE USER bob WITH PASSWORD 'hunter2'; ALTER ROLE bob PASSWORD 'x-secret'").unwrap();
        assert!(!q.contains("hunter2") && !q.contains("x-secret"), "{q}");
        assert!(q.contains("'********'"), "{q}");
        assert_eq!(redacted_query("SELECT 1"), None);
        assert_eq!(redacted_query("SELECT 'password'"), None);
        assert!(!redacted_query("ALTER ROLE bob PASSWORD 'pw' BOGUS").unwrap().contains("pw'"));
    }
}
