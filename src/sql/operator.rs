//! CREATE / DROP OPERATOR and CREATE / DROP OPERATOR CLASS: what they name
//! is checked to exist (types, the operator's function, a class's support
//! functions) and recorded in the catalog (`catalog/operator.rs`). Hash
//! partitioning calls a hash class's support function 2
//! (`planner/partition.rs`). A block's ROLLBACK puts back what a statement
//! changed.
//!
//! Domains are their base type wherever values are bound, so an operator
//! declared on a domain is recorded but never chosen over the base type's.
//!
//! May import `planner` and `catalog`.

use sqlparser::ast;

use super::{QueryResult, Session};
use crate::catalog::operator::{FunctionRef, OpClassDef, OperatorDef, OperatorObject, SupportFunction, TypeRef};
use crate::error::Result;
use crate::planner::{ident, type_ref};
use crate::{bail, err};

/// The database an object name lives in, and its last part.
fn database_of(s: &Session, name: &ast::ObjectName) -> Result<(String, String)> {
    super::function::function_database(s, name)
}

/// An operator's symbol as written (`=`, `<>`, `public.===` → `===`).
fn symbol(name: &ast::ObjectName) -> String {
    name.0.last().map(|p| p.to_string()).unwrap_or_default()
}

fn record(s: &mut Session, key: String, before: Option<OperatorObject>) {
    super::txn::changed_operator_object(s, key, before);
}

/// The user function `name(args)` must exist with exactly these types.
fn function_ref(s: &Session, database: &str, name: &ast::ObjectName, args: Vec<TypeRef>) -> Result<FunctionRef> {
    let f = FunctionRef { name: database_of(s, name)?.1, args };
    crate::planner::support_function(&s.engine.catalog, database, &f)?;
    Ok(f)
}

/// CREATE OPERATOR name (FUNCTION = f, LEFTARG = t, RIGHTARG = t, …).
pub fn create_operator(s: &mut Session, op: &ast::CreateOperator) -> Result<QueryResult> {
    let (database, _) = database_of(s, &op.name)?;
    let name = symbol(&op.name);
    let cat = &s.engine.catalog;
    let left = op.left_arg.as_ref().map(|t| type_ref(cat, &database, t)).transpose()?;
    let Some(right) = op.right_arg.as_ref().map(|t| type_ref(cat, &database, t)).transpose()? else {
        bail!(InvalidFunctionDefinition, "operator argument types must be specified");
    };
    let args: Vec<TypeRef> = left.iter().cloned().chain([right.clone()]).collect();
    // The binder looks for user operators where an operand is of a user type.
    if args.iter().all(|t| matches!(t, TypeRef::Builtin(_))) {
        bail!(FeatureNotSupported, "operators on built-in types only are not supported");
    }
    let function = function_ref(s, &database, &op.function, args)?;
    let key = crate::catalog::operator::operator_key(&database, &name, left.as_ref(), &right);
    if s.engine.catalog.operator_object(&key).is_some() {
        bail!(DuplicateFunction, "operator {name} already exists");
    }
    let mut commutator = None;
    let mut negator = None;
    for o in &op.options {
        match o {
            ast::OperatorOption::Commutator(n) => commutator = Some(symbol(n)),
            ast::OperatorOption::Negator(n) => negator = Some(symbol(n)),
            // Planner estimates and join strategies: weir's planner does not use them.
            ast::OperatorOption::Restrict(_) | ast::OperatorOption::Join(_) | ast::OperatorOption::Hashes | ast::OperatorOption::Merges => {
            }
        }
    }
    if negator.as_deref() == Some(name.as_str()) {
        bail!(InvalidFunctionDefinition, "operator cannot be its own negator");
    }
    let def = OperatorDef { id: 0, database, name, left, right, function: function.name, commutator, negator };
    let (_, old) = s.engine.catalog.put_operator_object(OperatorObject::Operator(def))?;
    record(s, key, old);
    Ok(QueryResult::Command("CREATE OPERATOR".into()))
}

/// DROP OPERATOR [IF EXISTS] name (left, right), ….
pub fn drop_operator(s: &mut Session, d: &ast::DropOperator) -> Result<QueryResult> {
    for sig in &d.operators {
        let (database, _) = database_of(s, &sig.name)?;
        let name = symbol(&sig.name);
        let cat = &s.engine.catalog;
        let left = sig.left_type.as_ref().map(|t| type_ref(cat, &database, t)).transpose()?;
        let right = type_ref(cat, &database, &sig.right_type)?;
        let key = crate::catalog::operator::operator_key(&database, &name, left.as_ref(), &right);
        match s.engine.catalog.drop_operator_object(&key)? {
            Some(old) => record(s, key, Some(old)),
            None if d.if_exists => {}
            None => {
                let l = left.as_ref().map_or("NONE".to_string(), TypeRef::name);
                bail!(UndefinedFunction, "operator does not exist: {l} {name} {}", right.name());
            }
        }
    }
    Ok(QueryResult::Command("DROP OPERATOR".into()))
}

/// CREATE OPERATOR CLASS name [DEFAULT] FOR TYPE t USING method AS
/// OPERATOR n op [(l, r)], FUNCTION n f(types), ….
pub fn create_opclass(s: &mut Session, c: &ast::CreateOperatorClass) -> Result<QueryResult> {
    let (database, name) = database_of(s, &c.name)?;
    let method = ident(&c.using);
    if method != "hash" && method != "btree" {
        bail!(FeatureNotSupported, "operator classes of access method \"{method}\" are not supported");
    }
    if c.family.is_some() {
        bail!(FeatureNotSupported, "CREATE OPERATOR CLASS … FAMILY is not supported");
    }
    let cat = &s.engine.catalog;
    let for_type = type_ref(cat, &database, &c.for_type)?;
    let key = crate::catalog::operator::opclass_key(&database, &method, &name);
    if cat.operator_object(&key).is_some() {
        bail!(DuplicateObject, "operator class \"{name}\" for access method \"{method}\" already exists");
    }
    let mut operators = Vec::new();
    let mut functions = Vec::new();
    for item in &c.items {
        match item {
            ast::OperatorClassItem::Operator { strategy_number, operator_name, op_types, .. } => {
                let op = symbol(operator_name);
                let (l, r) = match op_types {
                    Some(t) => (type_ref(cat, &database, &t.left)?, type_ref(cat, &database, &t.right)?),
                    None => (for_type.clone(), for_type.clone()),
                };
                // A built-in type's operators are weir's own; a user type's must exist.
                if matches!((&l, &r), (TypeRef::User(_), _) | (_, TypeRef::User(_)))
                    && cat.operator_object(&crate::catalog::operator::operator_key(&database, &op, Some(&l), &r)).is_none()
                {
                    bail!(UndefinedFunction, "operator does not exist: {} {op} {}", l.name(), r.name());
                }
                operators.push((*strategy_number, op));
            }
            ast::OperatorClassItem::Function { support_number, function_name, argument_types, .. } => {
                let args = argument_types.iter().map(|t| type_ref(cat, &database, t)).collect::<Result<Vec<_>>>()?;
                let function = function_ref(s, &database, function_name, args)?;
                if method == "hash" && *support_number == 2 && function.args.len() != 2 {
                    bail!(InvalidObjectDefinition, "hash function 2 must have two arguments");
                }
                functions.push(SupportFunction { number: *support_number, function });
            }
            ast::OperatorClassItem::Storage { .. } => bail!(FeatureNotSupported, "operator class STORAGE is not supported"),
        }
    }
    let def = OpClassDef { id: 0, database, name, method, for_type, default: c.default, operators, functions };
    let (_, old) = s.engine.catalog.put_operator_object(OperatorObject::OpClass(def))?;
    record(s, key, old);
    Ok(QueryResult::Command("CREATE OPERATOR CLASS".into()))
}

/// CREATE CAST (source AS target) WITH FUNCTION f | WITHOUT FUNCTION |
/// WITH INOUT [AS ASSIGNMENT | AS IMPLICIT]. One of the types must be a
/// user-defined one (the binder asks for casts where a base type is cast);
/// WITHOUT FUNCTION needs values of one width (the bits are the value).
pub fn create_cast(s: &mut Session, c: &crate::parser::CreateCast) -> Result<QueryResult> {
    use crate::catalog::operator::{CastContext, CastDef};
    let database = s.database.clone();
    let cat = &s.engine.catalog;
    let source = type_ref(cat, &database, &c.source)?;
    let target = type_ref(cat, &database, &c.target)?;
    if source == target {
        bail!(InvalidObjectDefinition, "source data type and target data type are the same");
    }
    if matches!((&source, &target), (TypeRef::Builtin(_), TypeRef::Builtin(_))) {
        bail!(FeatureNotSupported, "casts between built-in types are weir's own");
    }
    let (sty, tty) = (crate::planner::type_ref_type(cat, &database, &source)?, crate::planner::type_ref_type(cat, &database, &target)?);
    let key = crate::catalog::operator::cast_key(&database, &source, &target);
    if cat.operator_object(&key).is_some() {
        bail!(DuplicateObject, "cast from type {} to type {} already exists", source.name(), target.name());
    }
    let (function, inout) = match &c.method {
        crate::parser::CastMethod::Binary => {
            let (a, b) = (sty.physical().to_arrow(), tty.physical().to_arrow());
            if a.primitive_width().is_none() || a.primitive_width() != b.primitive_width() {
                bail!(InvalidObjectDefinition, "source and target data types are not physically compatible");
            }
            (None, false)
        }
        crate::parser::CastMethod::InOut => (None, true),
        crate::parser::CastMethod::Function(f, types) => {
            let args = match types {
                Some(t) => t.iter().map(|t| type_ref(cat, &database, t)).collect::<Result<Vec<_>>>()?,
                None => vec![source.clone()],
            };
            let f = function_ref(s, &database, f, args)?;
            let (_, defs) = crate::planner::support_function(&s.engine.catalog, &database, &f)?;
            if defs[0].returns.ty != Some(tty) {
                bail!(InvalidObjectDefinition, "return data type of cast function must match or be binary-coercible to target data type");
            }
            (Some(f), false)
        }
    };
    let context = match c.context.as_deref() {
        Some("IMPLICIT") => CastContext::Implicit,
        Some(_) => CastContext::Assignment,
        None => CastContext::Explicit,
    };
    let def = CastDef { id: 0, database, source, target, function, inout, context };
    let (_, old) = s.engine.catalog.put_operator_object(OperatorObject::Cast(def))?;
    record(s, key, old);
    Ok(QueryResult::Command("CREATE CAST".into()))
}

/// DROP CAST [IF EXISTS] (source AS target).
pub fn drop_cast(s: &mut Session, d: &crate::parser::DropCast) -> Result<QueryResult> {
    let database = s.database.clone();
    let cat = &s.engine.catalog;
    let (source, target) = match (type_ref(cat, &database, &d.source), type_ref(cat, &database, &d.target)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(_), _) | (_, Err(_)) if d.if_exists => return Ok(QueryResult::Command("DROP CAST".into())),
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let key = crate::catalog::operator::cast_key(&database, &source, &target);
    match s.engine.catalog.drop_operator_object(&key)? {
        Some(old) => record(s, key, Some(old)),
        None if d.if_exists => {}
        None => bail!(UndefinedObject, "cast from type {} to type {} does not exist", source.name(), target.name()),
    }
    Ok(QueryResult::Command("DROP CAST".into()))
}

/// DROP OPERATOR CLASS [IF EXISTS] name, … USING method: refused while a
/// partitioned table's key uses it.
pub fn drop_opclass(s: &mut Session, d: &ast::DropOperatorClass) -> Result<QueryResult> {
    let method = ident(&d.using);
    for n in &d.names {
        let (database, name) = database_of(s, n)?;
        let key = crate::catalog::operator::opclass_key(&database, &method, &name);
        if s.engine.catalog.operator_object(&key).is_none() {
            if d.if_exists {
                continue;
            }
            bail!(UndefinedObject, "operator class \"{name}\" does not exist for access method \"{method}\"");
        }
        let cat = &s.engine.catalog;
        let user = cat.tables(&database).into_iter().find(|t| {
            t.partition.key.as_ref().is_some_and(|k| k.strategy.name() == method && k.opclasses.iter().any(|c| c.as_deref() == Some(&name)))
        });
        if let Some(t) = user {
            return Err(err!(
                DependentObjectsStillExist,
                "cannot drop operator class {name} for access method {method} because other objects depend on it"
            )
            .with_detail(format!("table {} depends on operator class {name} for access method {method}", t.name))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        let old = s.engine.catalog.drop_operator_object(&key)?;
        record(s, key, old);
    }
    Ok(QueryResult::Command("DROP OPERATOR CLASS".into()))
}
