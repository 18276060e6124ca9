//! CREATE [OR REPLACE] AGGREGATE: a user-defined aggregate over user
//! functions (its transition, final and moving-aggregate support
//! functions), kept in the catalog as a function with an `AggregateDef`, as
//! PostgreSQL keeps aggregates in pg_proc. The support functions must exist
//! with the argument types PostgreSQL looks them up by; the planner's
//! `user_agg.rs` binds a call's, and exec's `user_agg.rs` runs them.

use sqlparser::ast::{self, ArgMode, CreateAggregateArgs, CreateAggregateOption as O};

use super::function::{function_database, is_anyelement, param_type};
use super::{QueryResult, Session};
use crate::catalog::{AggregateDef, FunctionArg, FunctionDef, FunctionReturns};
use crate::error::Result;
use crate::planner::{ident, object_name};
use crate::types::SqlType;
use crate::{bail, err};

/// CREATE [OR REPLACE] AGGREGATE name (args) (SFUNC = …, STYPE = …, …).
pub fn create(s: &mut Session, ca: &ast::CreateAggregate) -> Result<QueryResult> {
    let (database, name) = function_database(s, &ca.name)?;
    let mut args = Vec::new();
    match &ca.args {
        CreateAggregateArgs::List(list) => {
            for a in list {
                match &a.mode {
                    None | Some(ArgMode::In) => {}
                    Some(m) => bail!(FeatureNotSupported, "{m} arguments of aggregates are not supported"),
                }
                let ty =
                    param_type(s, &a.data_type)?.ok_or_else(|| err!(InvalidFunctionDefinition, "aggregates cannot accept type void"))?;
                args.push(FunctionArg {
                    name: a.name.as_ref().map(ident),
                    ty,
                    default: None,
                    polymorphic: is_anyelement(&a.data_type),
                    type_name: None,
                });
            }
        }
        CreateAggregateArgs::Star => {}
        CreateAggregateArgs::Legacy => bail!(FeatureNotSupported, "old-style CREATE AGGREGATE (no argument list) is not supported"),
        CreateAggregateArgs::OrderedSet { .. } => bail!(FeatureNotSupported, "ordered-set aggregates are not supported"),
    }
    let (mut sfunc, mut stype, mut finalfunc, mut initcond) = (None, None, None, None);
    let (mut msfunc, mut minvfunc, mut mstype, mut mfinalfunc, mut minitcond) = (None, None, None, None, None);
    let fname = |n: &ast::ObjectName| -> Result<String> { Ok(object_name(n)?.1) };
    let literal = |v: &ast::ValueWithSpan| -> Result<String> {
        match &v.value {
            ast::Value::SingleQuotedString(x) | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: x, .. }) => Ok(x.clone()),
            ast::Value::Number(n, _) => Ok(n.to_string()),
            other => bail!(Syntax, "syntax error at or near \"{other}\""),
        }
    };
    for o in &ca.options {
        match o {
            O::StateTransitionFunction(n) => sfunc = Some(fname(n)?),
            O::StateDataType(t) => stype = Some(state_type(s, t)?),
            O::FinalFunction(n) => finalfunc = Some(fname(n)?),
            O::InitialCondition(v) => initcond = Some(literal(v)?),
            O::MovingStateTransitionFunction(n) => msfunc = Some(fname(n)?),
            O::MovingInverseTransitionFunction(n) => minvfunc = Some(fname(n)?),
            O::MovingStateDataType(t) => mstype = Some(state_type(s, t)?),
            O::MovingFinalFunction(n) => mfinalfunc = Some(fname(n)?),
            O::MovingInitialCondition(v) => minitcond = Some(literal(v)?),
            // Parallel plans and state sizes are the executor's business;
            // partial aggregation of user aggregates is never used.
            O::StateDataSize(_)
            | O::MovingStateDataSize(_)
            | O::Parallel(_)
            | O::CombineFunction(_)
            | O::SerialFunction(_)
            | O::DeserialFunction(_)
            | O::FinalFunctionModify(_)
            | O::MovingFinalFunctionModify(_) => {}
            other => bail!(FeatureNotSupported, "CREATE AGGREGATE option {other} is not supported"),
        }
    }
    let stype = stype.ok_or_else(|| err!(InvalidFunctionDefinition, "aggregate stype must be specified"))?;
    let sfunc = sfunc.ok_or_else(|| err!(InvalidFunctionDefinition, "aggregate sfunc must be specified"))?;
    let functions = |n: &str| s.engine.catalog.functions(&database, n);
    // The transition function: (stype, args…) → stype.
    let with_state =
        |st: SqlType| -> Vec<(SqlType, bool)> { std::iter::once((st, false)).chain(args.iter().map(|a| (a.ty, a.polymorphic))).collect() };
    let sf = support(&functions(&sfunc), &sfunc, &with_state(stype))?;
    check_returns(&sf, stype, "transition")?;
    let mut result = stype;
    if let Some(f) = &finalfunc {
        let ff = support(&functions(f), f, &[(stype, false)])?;
        result = ff.returns.ty.ok_or_else(|| err!(InvalidFunctionDefinition, "final function {} returns void", ff.signature()))?;
    }
    check_initcond(initcond.as_deref(), stype)?;
    check_strict_start(&sf, initcond.as_deref(), &args, stype)?;
    match (&msfunc, &minvfunc) {
        (None, None) => {
            if mstype.is_some() || mfinalfunc.is_some() || minitcond.is_some() {
                bail!(InvalidFunctionDefinition, "aggregate msfunc must be specified when mstype is specified");
            }
        }
        (Some(mf), Some(mi)) => {
            let mstype =
                mstype.ok_or_else(|| err!(InvalidFunctionDefinition, "aggregate mstype must be specified when msfunc is specified"))?;
            let fwd = support(&functions(mf), mf, &with_state(mstype))?;
            check_returns(&fwd, mstype, "transition")?;
            let inv = support(&functions(mi), mi, &with_state(mstype))?;
            check_returns(&inv, mstype, "inverse transition")?;
            if fwd.strict != inv.strict {
                bail!(InvalidFunctionDefinition, "strictness of aggregate's forward and inverse transition functions must match");
            }
            let mut mresult = mstype;
            if let Some(f) = &mfinalfunc {
                let ff = support(&functions(f), f, &[(mstype, false)])?;
                mresult = ff.returns.ty.unwrap_or(SqlType::Unknown);
            }
            if mresult != result {
                bail!(
                    InvalidFunctionDefinition,
                    "moving-aggregate implementation returns type {}, but plain implementation returns type {}",
                    mresult.pg_name(),
                    result.pg_name()
                );
            }
            check_initcond(minitcond.as_deref(), mstype)?;
            check_strict_start(&fwd, minitcond.as_deref(), &args, mstype)?;
        }
        _ => bail!(InvalidFunctionDefinition, "must specify both or neither of msfunc and minvfunc"),
    }
    let polymorphic_result = result == SqlType::Unknown;
    if polymorphic_result && !args.iter().any(|a| a.polymorphic) {
        return Err(err!(InvalidFunctionDefinition, "cannot determine result data type")
            .with_detail("An aggregate returning a polymorphic type must have at least one polymorphic argument."));
    }
    let types: Vec<SqlType> = args.iter().map(|a| a.ty).collect();
    if let Some(old) = functions(&name).into_iter().find(|f| f.arg_types() == types) {
        if old.aggregate.is_none() {
            if ca.or_replace {
                return Err(err!(WrongObjectType, "cannot change routine kind").with_detail(format!("\"{}\" is a function.", name)));
            }
            bail!(DuplicateFunction, "function \"{name}\" already exists with same argument types");
        }
    }
    let aggregate = AggregateDef { sfunc, stype, finalfunc, initcond, msfunc, minvfunc, mstype, mfinalfunc, minitcond };
    let def = FunctionDef {
        id: 0,
        database: database.clone(),
        name: name.clone(),
        args,
        returns: FunctionReturns {
            ty: Some(result),
            set: false,
            columns: vec![],
            trigger: false,
            polymorphic: polymorphic_result,
            type_name: None,
        },
        language: "internal".into(),
        body: String::new(),
        source: String::new(),
        volatility: 'i',
        strict: false,
        aggregate: Some(aggregate),
    };
    let existed = functions(&name).iter().any(|f| f.arg_types() == types);
    s.engine.catalog.create_function(def, ca.or_replace)?;
    if !existed {
        super::txn::created_function(s, &database, &name, &types);
    }
    Ok(QueryResult::Command("CREATE AGGREGATE".into()))
}

/// A state type (a polymorphic state is not supported).
fn state_type(s: &Session, t: &ast::DataType) -> Result<SqlType> {
    if is_anyelement(t) {
        bail!(FeatureNotSupported, "polymorphic aggregate state types are not supported");
    }
    param_type(s, t)?.ok_or_else(|| err!(InvalidFunctionDefinition, "aggregate transition data type cannot be void"))
}

/// The support function `name` of these argument types (each with whether
/// the aggregate's argument there is `anyelement`): an overload whose
/// parameters take them, a polymorphic parameter taking any.
fn support(overloads: &[FunctionDef], name: &str, want: &[(SqlType, bool)]) -> Result<FunctionDef> {
    let fits = |f: &FunctionDef| {
        f.aggregate.is_none()
            && f.args.len() == want.len()
            && f.args.iter().zip(want).all(|(p, &(t, poly))| {
                p.polymorphic || (!poly && (p.ty == t || crate::exec::functions::registry::implicit_coercion(t, p.ty) == Some((0, false))))
            })
    };
    if let Some(f) = overloads.iter().find(|f| fits(f)) {
        return Ok(f.clone());
    }
    let b = if overloads.iter().all(|f| f.aggregate.is_some()) { builtin(name, want) } else { None };
    match b {
        Some(f) => Ok(f),
        None => {
            let names: Vec<&str> = want.iter().map(|&(t, poly)| if poly { "anyelement" } else { t.pg_name() }).collect();
            bail!(UndefinedFunction, "function {name}({}) does not exist", names.join(", "))
        }
    }
}

/// A built-in function taking exactly these argument types (PostgreSQL's
/// `int4pl` and friends), described as a function definition.
fn builtin(name: &str, want: &[(SqlType, bool)]) -> Option<FunctionDef> {
    let types: Vec<SqlType> = want.iter().map(|&(t, _)| t).collect();
    let reg = crate::exec::functions::registry();
    let def = reg.lookup(name)?;
    let r = reg.resolve(name, &types).ok()?;
    if want.iter().any(|&(_, poly)| poly) || r.params.iter().zip(&types).any(|(p, t)| p.is_some_and(|p| p != *t)) {
        return None;
    }
    Some(FunctionDef {
        id: 0,
        database: String::new(),
        name: name.to_string(),
        args: types.iter().map(|&ty| FunctionArg { name: None, ty, default: None, polymorphic: false, type_name: None }).collect(),
        returns: FunctionReturns { ty: Some(r.ret), set: false, columns: vec![], trigger: false, polymorphic: false, type_name: None },
        language: "internal".into(),
        body: String::new(),
        source: String::new(),
        volatility: 'i',
        strict: def.strict,
        aggregate: None,
    })
}

/// A transition function must return the state type.
fn check_returns(f: &FunctionDef, stype: SqlType, what: &str) -> Result<()> {
    match f.returns.ty {
        Some(t) if t == stype || f.returns.polymorphic => Ok(()),
        _ => bail!(DatatypeMismatch, "return type of {what} function {} is not {}", f.name, stype.pg_name()),
    }
}

/// INITCOND must be a valid literal of the state type.
fn check_initcond(init: Option<&str>, stype: SqlType) -> Result<()> {
    if let Some(text) = init {
        let a: arrow::array::ArrayRef = std::sync::Arc::new(arrow::array::StringArray::from(vec![text]));
        crate::exec::expr::cast_array(&a, SqlType::Text, stype)?;
    }
    Ok(())
}

/// A strict transition function without an initial state takes the first
/// input as the state, which must then be of the state's type.
fn check_strict_start(f: &FunctionDef, init: Option<&str>, args: &[FunctionArg], stype: SqlType) -> Result<()> {
    if f.strict && init.is_none() && args.first().is_none_or(|a| a.polymorphic || a.ty != stype) {
        bail!(
            InvalidFunctionDefinition,
            "must not omit initial value when transition function is strict and transition type is not compatible with input type"
        );
    }
    Ok(())
}
