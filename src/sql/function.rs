//! CREATE [OR REPLACE] FUNCTION and DROP FUNCTION (user-defined SQL
//! functions; the catalog's `function.rs` keeps them, the planner's
//! `function.rs` binds their calls).
//!
//! LANGUAGE sql bodies are `AS '…'` / `AS $$…$$` (statements, the last one a
//! SELECT), `RETURN expr` and `BEGIN ATOMIC … END`; LANGUAGE plpgsql bodies
//! of the form `BEGIN RETURN expr; END`. A SQL body is planned once at
//! creation with NULL arguments, so a bad body fails CREATE FUNCTION as
//! PostgreSQL's check_function_bodies makes it.

use sqlparser::ast::{self, ArgMode, CreateFunctionBody, FunctionReturnType};

use super::{QueryResult, Session};
use crate::catalog::{FunctionArg, FunctionDef, FunctionReturns};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::planner::{ident, object_name, Scope};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// The database a function name lives in: unqualified, `public` and
/// `pg_temp` are the session's.
pub(super) fn function_database(s: &Session, name: &ast::ObjectName) -> Result<(String, String)> {
    let (schema, fname) = object_name(name)?;
    let db = match schema.as_deref() {
        None | Some("public") | Some("pg_temp") => s.database.clone(),
        Some(d) if s.engine.catalog.database_exists(d) => d.to_string(),
        Some(d) => bail!(UndefinedSchema, "schema \"{d}\" does not exist"),
    };
    Ok((db, fname))
}

/// Whether a parameter or result type is `anyelement` (polymorphic: the
/// call's argument type; `param_type` gives `Unknown` for it).
pub(super) fn is_anyelement(dt: &ast::DataType) -> bool {
    matches!(dt, ast::DataType::Custom(n, _) if n.to_string().eq_ignore_ascii_case("anyelement"))
}

/// The name of the composite type (a `CREATE TYPE … AS (…)` or a table) a
/// parameter is declared as, if it is one.
fn composite_name(s: &Session, dt: &ast::DataType) -> Option<String> {
    let ast::DataType::Custom(n, _) = dt else { return None };
    let name = crate::planner::object_name(n).ok()?.1;
    let cat = &s.engine.catalog;
    let composite = cat.user_type(&s.database, &name).is_some_and(|t| matches!(t.kind, crate::catalog::user_type::TypeKind::Composite(_)));
    (composite || cat.table(&s.database, &name).is_some()).then_some(name)
}

/// A parameter or result type; `void` is None, `anyelement` Unknown.
pub(super) fn param_type(s: &Session, dt: &ast::DataType) -> Result<Option<SqlType>> {
    match dt {
        _ if is_anyelement(dt) => Ok(Some(SqlType::Unknown)),
        ast::DataType::Custom(n, _) if n.to_string().eq_ignore_ascii_case("void") => Ok(None),
        ast::DataType::Custom(n, _) if n.to_string().eq_ignore_ascii_case("record") => {
            bail!(FeatureNotSupported, "functions returning record are not supported")
        }
        other => crate::planner::resolve_type(&s.engine.catalog, &s.database, other).map(Some),
    }
}

/// The body as SQL statements, and as written (`prosrc`).
fn body_text(cf: &ast::CreateFunction, language: &str) -> Result<(String, String)> {
    let written = match &cf.function_body {
        Some(CreateFunctionBody::AsBeforeOptions { body, link_symbol: None } | CreateFunctionBody::AsAfterOptions(body)) => match body {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => {
                    Some(s.clone())
                }
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    match (language, &cf.function_body, written) {
        ("sql", _, Some(text)) => Ok((text.clone(), text)),
        ("sql", Some(CreateFunctionBody::Return(e)), _) => Ok((format!("SELECT {e}"), String::new())),
        ("sql", Some(CreateFunctionBody::BeginAtomic(b)), _) => {
            let stmts: Vec<String> = b.statements.iter().map(|s| s.to_string()).collect();
            Ok((stmts.join(";\n"), String::new()))
        }
        // Other PL/pgSQL bodies are kept to be refused when called.
        ("plpgsql", _, Some(text)) => match crate::parser::plpgsql::return_expression(&text).ok().flatten() {
            Some(e) => Ok((format!("SELECT {e}"), text)),
            None => Ok((String::new(), text)),
        },
        (_, None, _) => bail!(InvalidFunctionDefinition, "no function body specified"),
        _ => bail!(InvalidFunctionDefinition, "a function body must be a string constant or a SQL body"),
    }
}

/// CREATE [OR REPLACE] FUNCTION.
pub fn create(s: &mut Session, cf: &ast::CreateFunction) -> Result<QueryResult> {
    if cf.or_alter || cf.if_not_exists || cf.using.is_some() {
        bail!(Syntax, "syntax error at or near \"{}\"", if cf.or_alter { "ALTER" } else { "IF" });
    }
    if cf.temporary {
        bail!(FeatureNotSupported, "CREATE TEMPORARY FUNCTION is not supported");
    }
    let (database, name) = function_database(s, &cf.name)?;
    let language = cf.language.as_ref().map(ident).unwrap_or_else(|| "sql".to_string());
    match language.as_str() {
        "sql" | "plpgsql" => {}
        "internal" => return create_internal(s, cf, database, name),
        "c" => bail!(FeatureNotSupported, "LANGUAGE {language} functions are not supported"),
        other => bail!(UndefinedObject, "language \"{other}\" does not exist"),
    }
    let mut args = Vec::new();
    let mut out_columns = Vec::new();
    for a in cf.args.iter().flatten() {
        let pname = a.name.as_ref().map(ident);
        match &a.mode {
            None | Some(ArgMode::In) => {}
            Some(ArgMode::Out) => {
                let ty = param_type(s, &a.data_type)?.ok_or_else(|| err!(InvalidFunctionDefinition, "an OUT parameter cannot be void"))?;
                out_columns.push((pname.unwrap_or_else(|| format!("column{}", out_columns.len() + 1)), ty));
                continue;
            }
            Some(m) => bail!(FeatureNotSupported, "{m} parameters are not supported"),
        }
        let ty = param_type(s, &a.data_type)?
            .ok_or_else(|| err!(InvalidFunctionDefinition, "SQL functions cannot have arguments of type void"))?;
        let default = a.default_expr.as_ref().map(|e| e.to_string());
        if default.is_none() && args.iter().any(|x: &FunctionArg| x.default.is_some()) {
            bail!(InvalidFunctionDefinition, "input parameters after one with a default value must also have defaults");
        }
        if let Some(n) = &pname {
            if args.iter().any(|x: &FunctionArg| x.name.as_ref() == Some(n)) {
                bail!(InvalidFunctionDefinition, "parameter name \"{n}\" used more than once");
            }
        }
        let type_name = composite_name(s, &a.data_type);
        args.push(FunctionArg { name: pname, ty, default, polymorphic: is_anyelement(&a.data_type), type_name });
    }
    let returns = match &cf.return_type {
        Some(FunctionReturnType::DataType(ast::DataType::Trigger)) => {
            if language != "plpgsql" {
                bail!(InvalidFunctionDefinition, "{} functions cannot return type trigger", language.to_uppercase());
            }
            if !args.is_empty() {
                bail!(InvalidFunctionDefinition, "trigger functions cannot have declared arguments");
            }
            FunctionReturns { ty: None, set: false, columns: vec![], trigger: true, polymorphic: false, type_name: None }
        }
        Some(FunctionReturnType::DataType(ast::DataType::Table(Some(cols)))) => {
            let columns = cols
                .iter()
                .map(|c| Ok((ident(&c.name), param_type(s, &c.data_type)?.unwrap_or(SqlType::Unknown))))
                .collect::<Result<Vec<(String, SqlType)>>>()?;
            FunctionReturns { ty: None, set: true, columns, trigger: false, polymorphic: false, type_name: None }
        }
        Some(FunctionReturnType::DataType(ast::DataType::Custom(n, _)))
            if n.to_string().eq_ignore_ascii_case("record") && !out_columns.is_empty() =>
        {
            FunctionReturns { ty: None, set: false, columns: out_columns.clone(), trigger: false, polymorphic: false, type_name: None }
        }
        Some(FunctionReturnType::DataType(dt)) => FunctionReturns {
            ty: param_type(s, dt)?,
            set: false,
            columns: vec![],
            trigger: false,
            polymorphic: is_anyelement(dt),
            type_name: composite_name(s, dt),
        },
        Some(FunctionReturnType::SetOf(dt)) => FunctionReturns {
            ty: param_type(s, dt)?,
            set: true,
            columns: vec![],
            trigger: false,
            polymorphic: is_anyelement(dt),
            type_name: composite_name(s, dt),
        },
        None if !out_columns.is_empty() => {
            FunctionReturns { ty: None, set: false, columns: out_columns.clone(), trigger: false, polymorphic: false, type_name: None }
        }
        None => bail!(InvalidFunctionDefinition, "function result type must be specified"),
    };
    let mut returns = returns;
    if returns.polymorphic && !args.iter().any(|a| a.polymorphic) {
        return Err(err!(InvalidFunctionDefinition, "cannot determine result data type")
            .with_detail("A result of type anyelement requires at least one input of type anyelement."));
    }
    if let [(_, ty)] = returns.columns.as_slice() {
        // One column (one OUT parameter, a one-column TABLE): the function
        // returns that type; the column keeps its name.
        returns.ty = Some(*ty);
    }
    create_def(s, cf, database, name, language, args, returns)
}

/// CREATE FUNCTION … LANGUAGE internal AS 'name': a built-in function under
/// a user's name and types. `name` is an input or output function a base
/// type names (`int4in`, `int4out`, …; `cstring` and shell types allowed,
/// recorded by name until CREATE TYPE fills the shell in) or a function of
/// weir's registry (`hashint4`), called with the arguments' values.
fn create_internal(s: &mut Session, cf: &ast::CreateFunction, database: String, name: String) -> Result<QueryResult> {
    let source = match &cf.function_body {
        Some(CreateFunctionBody::AsBeforeOptions { body, .. } | CreateFunctionBody::AsAfterOptions(body)) => match body {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(t) | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: t, .. }) => {
                    t.trim().to_string()
                }
                _ => bail!(InvalidFunctionDefinition, "a function body must be a string constant"),
            },
            _ => bail!(InvalidFunctionDefinition, "a function body must be a string constant"),
        },
        _ => bail!(InvalidFunctionDefinition, "no function body specified"),
    };
    let io = crate::planner::io_function(&source).is_some();
    if !io && crate::exec::functions::registry().lookup(&source).is_none() {
        bail!(UndefinedFunction, "there is no built-in function named \"{source}\"");
    }
    // cstring and shell types: a placeholder (Unknown) with the type's name.
    let typ = |dt: &ast::DataType| -> Result<(SqlType, Option<String>)> {
        if let ast::DataType::Custom(n, _) = dt {
            let tname = object_name(n)?.1;
            let shell = s.engine.catalog.user_type(&s.database, &tname).is_some_and(|t| t.kind == crate::catalog::TypeKind::Shell);
            if tname == "cstring" || shell {
                return Ok((SqlType::Unknown, Some(tname)));
            }
        }
        let ty = param_type(s, dt)?.ok_or_else(|| err!(InvalidFunctionDefinition, "internal functions cannot take or return void here"))?;
        Ok((ty, None))
    };
    let mut args = Vec::new();
    for a in cf.args.iter().flatten() {
        if !matches!(a.mode, None | Some(ArgMode::In)) {
            bail!(FeatureNotSupported, "OUT parameters of internal functions are not supported");
        }
        let (ty, type_name) = typ(&a.data_type)?;
        if type_name.is_some() && !io && type_name.as_deref() == Some("cstring") {
            bail!(FeatureNotSupported, "cstring arguments are for input and output functions");
        }
        args.push(FunctionArg { name: a.name.as_ref().map(ident), ty, default: None, polymorphic: false, type_name });
    }
    let ret = match &cf.return_type {
        Some(FunctionReturnType::DataType(dt)) => typ(dt)?.0,
        _ => bail!(InvalidFunctionDefinition, "function result type must be specified"),
    };
    let returns = FunctionReturns { ty: Some(ret), set: false, columns: vec![], trigger: false, polymorphic: false, type_name: None };
    let volatility = match cf.behavior {
        Some(ast::FunctionBehavior::Immutable) => 'i',
        Some(ast::FunctionBehavior::Stable) => 's',
        _ => 'v',
    };
    let strict = matches!(cf.called_on_null, Some(ast::FunctionCalledOnNull::Strict | ast::FunctionCalledOnNull::ReturnsNullOnNullInput));
    let def = FunctionDef {
        id: 0,
        database,
        name,
        args,
        returns,
        language: "internal".into(),
        body: String::new(),
        source,
        volatility,
        strict,
        aggregate: None,
    };
    s.engine.catalog.create_function(def, cf.or_replace)?;
    Ok(QueryResult::Command("CREATE FUNCTION".into()))
}

#[allow(clippy::too_many_arguments)]
fn create_def(
    s: &mut Session,
    cf: &ast::CreateFunction,
    database: String,
    name: String,
    language: String,
    args: Vec<FunctionArg>,
    returns: FunctionReturns,
) -> Result<QueryResult> {
    let (body, source) = body_text(cf, &language)?;
    let volatility = match cf.behavior {
        Some(ast::FunctionBehavior::Immutable) => 'i',
        Some(ast::FunctionBehavior::Stable) => 's',
        _ => 'v',
    };
    let strict = matches!(cf.called_on_null, Some(ast::FunctionCalledOnNull::Strict | ast::FunctionCalledOnNull::ReturnsNullOnNullInput));
    let def =
        FunctionDef { id: 0, database: database.clone(), name, args, returns, language, body, source, volatility, strict, aggregate: None };
    validate(s, &def)?;
    s.engine.catalog.create_function(def, cf.or_replace)?;
    Ok(QueryResult::Command("CREATE FUNCTION".into()))
}

/// Plan the body once over NULL arguments: its names must resolve and its
/// result must fit the declared type (PostgreSQL's check_function_bodies).
/// A body whose last statement is not a query is accepted as written
/// (calling it is refused).
fn validate(s: &Session, def: &FunctionDef) -> Result<()> {
    // PL/pgSQL is checked when it runs, as PostgreSQL does.
    if def.language == "plpgsql" {
        return Ok(());
    }
    let stmts = crate::parser::parse(&def.body)?;
    if !matches!(stmts.last(), Some(crate::parser::Statement::Sql(ast::Statement::Query(_)))) {
        if def.returns.ty.is_none() && def.returns.columns.is_empty() {
            return Ok(());
        }
        bail!(FeatureNotSupported, "SQL functions whose body is not one SELECT are not supported");
    }
    let mut planner = s.planner(Default::default());
    planner.database = def.database.clone();
    planner.check_as.replace(None);
    // A polymorphic function is checked as if called with text.
    let def = &crate::planner::specialize(def, SqlType::Text);
    let args: Vec<Expr> = def.args.iter().map(|a| Expr::lit(Value::Null, a.ty)).collect();
    let empty = Scope::new(vec![], None);
    let r = if def.returns.set || !def.returns.columns.is_empty() || def.returns.ty.is_none() {
        planner.plan_set_body(def, args, &empty, 0).map(|_| ())
    } else {
        planner.bind_body(def, args, &empty).map(|_| ())
    };
    match r {
        // The NULLs standing for the arguments are not the call's values:
        // what they make fail (a NULL frame offset, 22013) is no error.
        Err(e) if e.kind.sqlstate().starts_with("22") => Ok(()),
        r => r,
    }
}

/// DROP FUNCTION [IF EXISTS] name[(types)], ….
pub fn drop(s: &mut Session, d: &ast::DropFunction) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    'descs: for desc in &d.func_desc {
        let (database, name) = function_database(s, &desc.name)?;
        let overloads = cat.functions(&database, &name);
        let types = match &desc.args {
            Some(args) => {
                let mut types = Vec::new();
                for a in args.iter().filter(|a| !matches!(a.mode, Some(ArgMode::Out))) {
                    match param_type(s, &a.data_type) {
                        Ok(Some(t)) => types.push(t),
                        // A type weir does not have: no function of weir's takes it.
                        _ if d.if_exists => continue 'descs,
                        Ok(None) => bail!(UndefinedFunction, "function {name}(void) does not exist"),
                        Err(e) => return Err(e),
                    }
                }
                types
            }
            None => match overloads.as_slice() {
                [one] => one.arg_types(),
                [] if d.if_exists => continue 'descs,
                [] => bail!(UndefinedFunction, "could not find a function named \"{name}\""),
                _ => {
                    return Err(err!(AmbiguousFunction, "function name \"{name}\" is not unique")
                        .with_hint("Specify the argument list to select the function unambiguously."))
                }
            },
        };
        if overloads.iter().any(|f| f.aggregate.is_some() && f.arg_types() == types) {
            return Err(
                err!(WrongObjectType, "\"{name}\" is an aggregate function").with_hint("Use DROP AGGREGATE to drop aggregate functions.")
            );
        }
        if cat.drop_function(&database, &name, &types)?.is_none() && !d.if_exists {
            bail!(UndefinedFunction, "function {} does not exist", crate::catalog::function::signature(&name, &types));
        }
    }
    Ok(QueryResult::Command("DROP FUNCTION".into()))
}
