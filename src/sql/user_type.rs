//! CREATE TYPE (shell, composite `AS (…)`, enum `AS ENUM (…)`), CREATE
//! DOMAIN, DROP TYPE and DROP DOMAIN. Definitions live in the catalog
//! (`catalog/user_type.rs`); type names and casts resolve them in the
//! planner (`planner/user_type.rs`). A block's ROLLBACK takes a created type
//! away and puts a dropped one back.

use sqlparser::ast::{self, UserDefinedTypeRepresentation as Rep};

use super::{QueryResult, Session};
use crate::catalog::{DomainDef, TypeDef, TypeKind};
use crate::error::Result;
use crate::planner::{ident, resolve_type};
use crate::{bail, err};

/// The database a type name lives in: as a function's (unqualified,
/// `public` and `pg_temp` are the session's).
fn type_database(s: &Session, name: &ast::ObjectName) -> Result<(String, String)> {
    super::function::function_database(s, name)
}

/// CREATE TYPE name [AS (…) | AS ENUM (…)].
pub fn create_type(s: &mut Session, name: &ast::ObjectName, rep: Option<&Rep>) -> Result<QueryResult> {
    let (database, tname) = type_database(s, name)?;
    let kind = match rep {
        None => TypeKind::Shell,
        Some(Rep::Composite { attributes }) => {
            let mut fields: Vec<(String, crate::types::SqlType)> = Vec::new();
            for a in attributes {
                let f = ident(&a.name);
                if fields.iter().any(|(n, _)| *n == f) {
                    bail!(DuplicateColumn, "column \"{f}\" specified more than once");
                }
                fields.push((f, resolve_type(&s.engine.catalog, &database, &a.data_type)?));
            }
            TypeKind::Composite(fields)
        }
        Some(Rep::Enum { labels }) => {
            let labels: Vec<String> = labels.iter().map(|l| l.value.clone()).collect();
            if let Some(l) = labels.iter().find(|l| l.len() > 63) {
                return Err(err!(InvalidParameterValue, "invalid enum label \"{l}\"").with_detail("Labels must be 63 bytes or less."));
            }
            TypeKind::Enum(labels)
        }
        Some(Rep::SqlDefinition { .. }) => {
            bail!(FeatureNotSupported, "base types (CREATE TYPE … (INPUT = …, OUTPUT = …)) are not supported")
        }
        Some(Rep::Range { .. }) => bail!(FeatureNotSupported, "range types are not supported"),
    };
    create(s, TypeDef { id: 0, database, name: tname, kind })?;
    Ok(QueryResult::Command("CREATE TYPE".into()))
}

/// CREATE DOMAIN name AS type [DEFAULT expr] [CONSTRAINT n] CHECK (…) ….
pub fn create_domain(s: &mut Session, cd: &ast::CreateDomain) -> Result<QueryResult> {
    let (database, name) = type_database(s, &cd.name)?;
    let base = resolve_type(&s.engine.catalog, &database, &cd.data_type)?;
    let mut checks = Vec::new();
    for c in &cd.constraints {
        match c {
            ast::TableConstraint::Check(ck) => {
                // PostgreSQL names them <domain>_check, <domain>_check1, ….
                let cname = match &ck.name {
                    Some(n) => ident(n),
                    None => {
                        let taken = |c: &str| checks.iter().any(|(n, _): &(String, String)| n == c);
                        let mut c = format!("{name}_check");
                        let mut k = 1;
                        while taken(&c) {
                            c = format!("{name}_check{k}");
                            k += 1;
                        }
                        c
                    }
                };
                checks.push((cname, ck.expr.to_string()));
            }
            other => bail!(FeatureNotSupported, "domain constraint {other} is not supported"),
        }
    }
    let base_type = crate::planner::declared_user_type(&s.engine.catalog, &database, &cd.data_type);
    let domain = DomainDef { base, base_type, not_null: false, default: cd.default.as_ref().map(|e| e.to_string()), checks };
    let def = TypeDef { id: 0, database, name, kind: TypeKind::Domain(domain) };
    // The CHECK expressions must bind over VALUE of the base type.
    let planner = s.planner(Default::default());
    let probe = crate::exec::expr::Expr::lit(crate::types::Value::Null, base);
    planner.cast_to_user_type(probe, &def)?;
    std::mem::drop(planner);
    create(s, def)?;
    Ok(QueryResult::Command("CREATE DOMAIN".into()))
}

fn create(s: &mut Session, def: TypeDef) -> Result<()> {
    let existed = s.engine.catalog.user_type(&def.database, &def.name);
    let def = s.engine.catalog.create_type(def)?;
    super::txn::changed_type(s, existed, Some(def));
    Ok(())
}

/// DROP TYPE / DROP DOMAIN [IF EXISTS] name, … [CASCADE | RESTRICT].
pub fn drop(s: &mut Session, names: &[ast::ObjectName], if_exists: bool, domain: bool) -> Result<QueryResult> {
    let word = if domain { "domain" } else { "type" };
    for n in names {
        let (database, name) = type_database(s, n)?;
        match s.engine.catalog.user_type(&database, &name) {
            None if if_exists => continue,
            None => bail!(UndefinedObject, "{word} \"{name}\" does not exist"),
            Some(def) if domain && !matches!(def.kind, TypeKind::Domain(_)) => {
                bail!(WrongObjectType, "\"{name}\" is not a domain")
            }
            Some(def) => {
                s.engine.catalog.drop_type(&database, &name)?;
                super::txn::changed_type(s, Some(def), None);
            }
        }
    }
    Ok(QueryResult::Command(if domain { "DROP DOMAIN" } else { "DROP TYPE" }.into()))
}
