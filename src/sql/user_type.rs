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
        Some(Rep::SqlDefinition { options }) => base_type(s, &database, &tname, options)?,
        Some(Rep::Range { .. }) => bail!(FeatureNotSupported, "range types are not supported"),
    };
    let base = matches!(kind, TypeKind::Base(_));
    let def = create(s, TypeDef { id: 0, database, name: tname, kind })?;
    if base {
        fill_in_functions(s, &def)?;
    }
    Ok(QueryResult::Command("CREATE TYPE".into()))
}

/// `CREATE TYPE name (INPUT = f, OUTPUT = g [, LIKE = t, …])`: f and g must
/// be LANGUAGE internal functions naming one built-in type's input and
/// output (`int4in`, `int4out`): the new type's values are that type's.
/// Storage options (LIKE, INTERNALLENGTH, ALIGNMENT, …) describe the bits,
/// which are the representation's here.
fn base_type(s: &Session, database: &str, name: &str, options: &[ast::UserDefinedTypeSqlDefinitionOption]) -> Result<TypeKind> {
    use ast::UserDefinedTypeSqlDefinitionOption as O;
    let mut input = None;
    let mut output = None;
    for o in options {
        match o {
            O::Input(f) => input = Some(f),
            O::Output(f) => output = Some(f),
            O::Like(t) => {
                resolve_type(&s.engine.catalog, database, &ast::DataType::Custom(t.clone(), vec![]))?;
            }
            O::Receive(_)
            | O::Send(_)
            | O::InternalLength(_)
            | O::PassedByValue
            | O::Alignment(_)
            | O::Storage(_)
            | O::Category(_)
            | O::Preferred(_)
            | O::Delimiter(_)
            | O::Collatable(_) => {}
            other => bail!(FeatureNotSupported, "CREATE TYPE option {other} is not supported"),
        }
    }
    let Some(input) = input else { bail!(InvalidObjectDefinition, "type input function must be specified") };
    let Some(output) = output else { bail!(InvalidObjectDefinition, "type output function must be specified") };
    let io = |f: &ast::ObjectName, want_input: bool| -> Result<(String, crate::types::Elem)> {
        let fname = crate::planner::object_name(f)?.1;
        let found = s.engine.catalog.functions(database, &fname).into_iter().find_map(|d| {
            let (repr, is_input) = crate::planner::io_function(&d.source).filter(|_| d.language == "internal")?;
            (is_input == want_input).then_some(repr)
        });
        match found {
            Some(repr) => Ok((fname, repr)),
            None if want_input => Err(err!(UndefinedFunction, "function {fname}(cstring) does not exist")),
            None => Err(err!(UndefinedFunction, "function {fname}({name}) does not exist")),
        }
    };
    let (input, repr) = io(input, true)?;
    let (output, out_repr) = io(output, false)?;
    if repr != out_repr {
        bail!(FeatureNotSupported, "a base type's input and output functions must be those of one built-in type");
    }
    Ok(TypeKind::Base(crate::catalog::BaseDef { repr, input, output }))
}

/// The functions declared over the shell a base type filled in take the
/// type now (their arguments were recorded by its name).
fn fill_in_functions(s: &mut Session, def: &TypeDef) -> Result<()> {
    let Some(ty) = def.base_type() else { return Ok(()) };
    let cat = &s.engine.catalog;
    for f in cat.database_functions(&def.database) {
        if !f.args.iter().any(|a| a.type_name.as_deref() == Some(def.name.as_str())) {
            continue;
        }
        let old_types = f.arg_types();
        let mut new = f.clone();
        for a in new.args.iter_mut().filter(|a| a.type_name.as_deref() == Some(def.name.as_str())) {
            a.ty = ty;
            a.type_name = None;
        }
        cat.drop_function(&def.database, &f.name, &old_types)?;
        cat.create_function(new, false)?;
    }
    Ok(())
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

fn create(s: &mut Session, def: TypeDef) -> Result<TypeDef> {
    let existed = s.engine.catalog.user_type(&def.database, &def.name);
    let def = s.engine.catalog.create_type(def)?;
    super::txn::changed_type(s, existed, Some(def.clone()));
    Ok(def)
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
