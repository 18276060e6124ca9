//! Set-returning functions in a select list and composite field access.
//!
//! While binding, a call of `generate_series`, `unnest`,
//! `generate_subscripts` or `information_schema._pg_expandarray` becomes a
//! marker `Expr::Func` named `srf:<name>` (`srf:_pg_expandarray.x` for a
//! field of its record). `project_set` then gathers the markers of a select
//! list (equal calls once), adds a `LogicalPlan::ProjectSet` under the
//! projection and replaces each marker by a column of it — as PostgreSQL
//! plans `SELECT generate_series(1, 3) + 1` as a Result over a ProjectSet.
//! Markers anywhere else (WHERE, CASE, aggregate arguments …) are refused
//! with PostgreSQL's errors by the binder's callers.
//!
//! Records are carried as their text form (`(5,1)`, `record_out`); a field
//! of a record column of a derived table, `(t.keys).x`, is found by tracing
//! the column to the `record_out` call that made it (`record_fields`) and is
//! read back with `record_field`.
//!
//! Lives in the planner; uses exec's plan types only.

use sqlparser::ast;

use super::logical::LogicalPlan;
use super::{coerce, Planner, Scope};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::{JoinKind, PlanColumn, SrfCall, SrfKind};
use crate::types::{SqlType, Value};
use crate::{bail, err};

const PREFIX: &str = "srf:";
const LATERAL_HINT: &str = "You might be able to move the set-returning function into a LATERAL FROM item.";

/// Is `e` itself a set-returning call marker?
pub fn is_srf(e: &Expr) -> bool {
    matches!(e, Expr::Func { name, .. } if name.starts_with(PREFIX))
}

/// Does `e` contain a set-returning call (not counting nested subqueries)?
pub fn contains_srf(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= is_srf(x));
    found
}

/// Refuse set-returning calls in `what` (WHERE, HAVING, …) as PostgreSQL does.
pub fn refuse_in(e: &Expr, what: &str) -> Result<()> {
    if contains_srf(e) {
        bail!(FeatureNotSupported, "set-returning functions are not allowed in {what}");
    }
    Ok(())
}

/// Refuse set-returning calls inside CASE / COALESCE (PostgreSQL 10+).
pub fn refuse_in_conditional(args: &[&Expr], what: &str) -> Result<()> {
    if args.iter().any(|a| contains_srf(a)) {
        return Err(err!(FeatureNotSupported, "set-returning functions are not allowed in {what}").with_hint(LATERAL_HINT));
    }
    Ok(())
}

/// Refuse set-returning calls in an aggregate's or window function's arguments.
pub fn refuse_in_call(args: &[Expr], kind: &str) -> Result<()> {
    if args.iter().any(contains_srf) {
        return Err(err!(FeatureNotSupported, "{kind} function calls cannot contain set-returning function calls").with_hint(LATERAL_HINT));
    }
    Ok(())
}

/// The marker's call and the record field it reads (None: the whole value).
fn parse_marker(name: &str) -> Option<(SrfKind, Option<&str>)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (fname, field) = match rest.split_once('.') {
        Some((f, x)) => (f, Some(x)),
        None => (rest, None),
    };
    let kind = if fname == LATERAL { SrfKind::Lateral { left: false } } else { SrfKind::from_name(fname)? };
    Some((kind, field))
}

/// The marker's name of a set-returning user function's call: its rows are
/// a `SubqueryKind::Rows` subquery (`function.rs`), run per input row as
/// a LATERAL item's are.
const LATERAL: &str = "lateral";

/// The marker of a set-returning call whose rows are the `Rows` subquery
/// `rows` (a user-defined function's body), of one column of type `ty`.
pub fn rows_marker(rows: Expr, ty: SqlType) -> Expr {
    Expr::Func { name: format!("{PREFIX}{LATERAL}"), args: vec![rows], ty }
}

/// The element type of an array argument: an `ARRAY[...]` constructor's
/// common type; otherwise unknown (weir's arrays are text values).
fn element_type(p: &Planner, arg: &ast::Expr, scope: &Scope) -> Result<SqlType> {
    if let ast::Expr::Array(ast::Array { elem, .. }) = arg {
        let mut ty = SqlType::Unknown;
        for e in elem {
            let b = p.bind_expr(e, scope, None)?;
            ty = SqlType::common(ty, b.ty()).ok_or_else(|| err!(DatatypeMismatch, "ARRAY types {ty} and {} cannot be matched", b.ty()))?;
        }
        return Ok(ty);
    }
    Ok(SqlType::Unknown)
}

impl<'a> Planner<'a> {
    /// Bind a set-returning call to its marker: argument coercions and the
    /// result type as PostgreSQL resolves them.
    pub(super) fn bind_srf(&self, kind: SrfKind, args: &[ast::Expr], scope: &Scope, bound: Vec<Expr>) -> Result<Expr> {
        let types: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
        let no_such = || crate::exec::functions::registry::no_such_function(kind.name(), &types);
        let (args, ty) = match kind {
            SrfKind::GenerateSeries => {
                if !(2..=3).contains(&bound.len()) {
                    return Err(no_such());
                }
                let ts = types.iter().find(|t| t.is_timestamp()).copied();
                if let Some(ts) = ts {
                    if bound.len() != 3 {
                        return Err(no_such());
                    }
                    let mut it = bound.into_iter();
                    let a = coerce(it.next().unwrap(), ts)?;
                    let b = coerce(it.next().unwrap(), ts)?;
                    let step = coerce(it.next().unwrap(), SqlType::Interval)?;
                    (vec![a, b, step], ts)
                } else if types.contains(&SqlType::Numeric) {
                    if types.iter().any(|t| !t.is_integer() && !matches!(t, SqlType::Unknown | SqlType::Numeric)) {
                        return Err(no_such());
                    }
                    (bound.into_iter().map(|b| coerce(b, SqlType::Numeric)).collect::<Result<_>>()?, SqlType::Numeric)
                } else {
                    if types.iter().any(|t| !t.is_integer() && *t != SqlType::Unknown) {
                        return Err(no_such());
                    }
                    let ty = if types.contains(&SqlType::Int8) { SqlType::Int8 } else { SqlType::Int4 };
                    (bound.into_iter().map(|b| coerce(b, ty)).collect::<Result<_>>()?, ty)
                }
            }
            SrfKind::Unnest => {
                if bound.len() != 1 {
                    bail!(FeatureNotSupported, "unnest with several arguments is not supported");
                }
                let arr = bound.into_iter().next().unwrap();
                let elem = match arr.ty().elem() {
                    Some(t) => t,
                    None => element_type(self, &args[0], scope)?,
                };
                (vec![coerce(arr, SqlType::Text)?], elem)
            }
            SrfKind::GenerateSubscripts => {
                if !(2..=3).contains(&bound.len()) {
                    return Err(no_such());
                }
                let mut it = bound.into_iter();
                let mut v = vec![coerce(it.next().unwrap(), SqlType::Text)?, coerce(it.next().unwrap(), SqlType::Int4)?];
                if let Some(r) = it.next() {
                    v.push(coerce(r, SqlType::Bool)?);
                }
                (v, SqlType::Int4)
            }
            SrfKind::ExpandArray => {
                if bound.len() != 1 {
                    return Err(no_such());
                }
                (vec![coerce(bound.into_iter().next().unwrap(), SqlType::Text)?], SqlType::Text)
            }
            SrfKind::ListeningChannels => {
                if !bound.is_empty() {
                    return Err(no_such());
                }
                (vec![], SqlType::Text)
            }
            SrfKind::Lateral { .. } => bail!(Internal, "LATERAL is not a function"),
        };
        if args.iter().any(contains_srf) {
            bail!(FeatureNotSupported, "set-returning functions as arguments of set-returning functions are not supported");
        }
        Ok(Expr::Func { name: format!("{PREFIX}{}", kind.name()), args, ty })
    }

    /// `regexp_matches(…)` and `regexp_split_to_table(…)`: the unnest of the
    /// array their scalar helper builds (one text[] per match, or the
    /// pieces); None for other names.
    pub(super) fn bind_regexp_srf(&self, name: &str, bound: Vec<Expr>) -> Result<Option<Expr>> {
        let (helper, elem) = match name {
            "regexp_matches" => ("regexp_matches_array", SqlType::Array(crate::types::Elem::Text)),
            "regexp_split_to_table" => ("regexp_split_to_table_array", SqlType::Text),
            _ => return Ok(None),
        };
        let types: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
        let call = self.call(helper, bound).map_err(|_| crate::exec::functions::registry::no_such_function(name, &types))?;
        Ok(Some(Expr::Func { name: format!("{PREFIX}{}", SrfKind::Unnest.name()), args: vec![coerce(call, SqlType::Text)?], ty: elem }))
    }

    /// `(root).field`: a field of a record-returning call, or of a record
    /// column of a derived table.
    pub(super) fn bind_field(&self, root: Expr, field: &str, scope: &Scope) -> Result<Expr> {
        if let Expr::Func { name, args, .. } = &root {
            if let Some((SrfKind::ExpandArray, None)) = parse_marker(name) {
                let ty = match field {
                    "x" => SqlType::Unknown,
                    "n" => SqlType::Int4,
                    _ => bail!(UndefinedColumn, "could not identify column \"{field}\" in record data type"),
                };
                return Ok(Expr::Func { name: format!("{PREFIX}_pg_expandarray.{field}"), args: args.clone(), ty });
            }
        }
        if let Expr::Column { index, .. } = &root {
            if let Some(fields) = scope.records.borrow().iter().find(|(i, _)| i == index).map(|(_, f)| f.clone()) {
                let Some(k) = fields.iter().position(|(n, _)| n == field) else {
                    bail!(UndefinedColumn, "could not identify column \"{field}\" in record data type")
                };
                return Ok(Expr::Func {
                    name: "record_field".into(),
                    args: vec![root, Expr::lit(Value::Int(k as i64), SqlType::Int4)],
                    ty: fields[k].1,
                });
            }
        }
        bail!(WrongObjectType, "column notation .{field} applied to type {}, which is not a composite type", root.ty())
    }
}

/// The record fields of output column `idx` of `plan`, when it is a record
/// made by a set-returning call's `record_out`.
pub fn record_fields(plan: &LogicalPlan, idx: usize) -> Option<Vec<(String, SqlType)>> {
    match plan {
        LogicalPlan::Project { input, exprs, .. } => match exprs.get(idx)? {
            Expr::Func { name, args, .. } if name == "record_out" => args
                .iter()
                .map(|a| match a {
                    Expr::Column { index, ty } => Some((input.columns().get(*index)?.name.clone(), *ty)),
                    _ => None,
                })
                .collect(),
            Expr::Column { index, .. } => record_fields(input, *index),
            _ => None,
        },
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. }
        | LogicalPlan::Distinct { input }
        | LogicalPlan::DistinctOn { input, .. } => record_fields(input, idx),
        LogicalPlan::Join { left, right, kind, .. } => {
            let nl = left.columns().len();
            if idx < nl {
                record_fields(left, idx)
            } else if matches!(kind, JoinKind::Semi | JoinKind::Anti) {
                None
            } else {
                record_fields(right, idx - nl)
            }
        }
        _ => None,
    }
}

/// The record columns of a FROM list's plan, for `(t.col).field`.
pub fn record_columns(plan: &LogicalPlan) -> Vec<(usize, Vec<(String, SqlType)>)> {
    (0..plan.columns().len()).filter(|&i| plan.columns()[i].ty.is_text()).filter_map(|i| Some((i, record_fields(plan, i)?))).collect()
}

/// Put a ProjectSet under the select list when `lists` call set-returning
/// functions: each distinct call becomes columns after `plan`'s, and each
/// marker the column (or, for a whole record, the `record_out`) it reads.
pub fn project_set(plan: LogicalPlan, lists: &mut [&mut Vec<Expr>]) -> Result<LogicalPlan> {
    let mut calls: Vec<(SrfKind, Vec<Expr>, SqlType)> = Vec::new();
    for list in lists.iter() {
        for e in list.iter() {
            e.walk(&mut |x| {
                if let Expr::Func { name, args, ty } = x {
                    if let Some((kind, field)) = parse_marker(name) {
                        // A whole call's type is its value's; fields are typed by the call.
                        let ty = if field.is_some() || kind == SrfKind::ExpandArray { SqlType::Unknown } else { *ty };
                        if !calls.iter().any(|(k, a, _)| *k == kind && a == args) {
                            calls.push((kind, args.clone(), ty));
                        }
                    }
                }
            });
        }
    }
    if calls.is_empty() {
        return Ok(plan);
    }
    let base = plan.columns().len();
    let mut columns: Vec<PlanColumn> = plan.columns().to_vec();
    let mut srfs = Vec::new();
    let mut offsets = Vec::new();
    for (kind, args, ty) in &calls {
        offsets.push(columns.len());
        let out: Vec<(String, SqlType)> = match kind {
            SrfKind::ExpandArray => vec![("x".into(), SqlType::Text), ("n".into(), SqlType::Int4)],
            k => vec![(k.name().to_string(), if *ty == SqlType::Unknown { SqlType::Text } else { *ty })],
        };
        for (n, t) in &out {
            columns.push(PlanColumn::new(n.clone(), *t));
        }
        srfs.push(SrfCall { kind: *kind, args: args.clone(), out });
    }
    let _ = base;
    let place = |e: &Expr| {
        e.map(0, &|x, d| {
            let Expr::Func { name, args, ty } = x else { return None };
            if d != 0 {
                return None;
            }
            let (kind, field) = parse_marker(name)?;
            let k = calls.iter().position(|(kk, a, _)| *kk == kind && a == args)?;
            let at = offsets[k];
            Some(match (kind, field) {
                (SrfKind::ExpandArray, None) => Expr::Func {
                    name: "record_out".into(),
                    args: vec![Expr::Column { index: at, ty: SqlType::Unknown }, Expr::Column { index: at + 1, ty: SqlType::Int4 }],
                    ty: SqlType::Text,
                },
                (SrfKind::ExpandArray, Some("n")) => Expr::Column { index: at + 1, ty: SqlType::Int4 },
                _ => Expr::Column { index: at, ty: *ty },
            })
        })
    };
    for list in lists.iter_mut() {
        for e in list.iter_mut() {
            *e = place(e);
        }
    }
    Ok(LogicalPlan::ProjectSet { input: Box::new(plan), srfs, columns })
}
