//! Calls with `WITHIN GROUP (ORDER BY …)`: PostgreSQL's ordered-set
//! aggregates (percentile_cont, percentile_disc, mode) and hypothetical-set
//! aggregates (rank, dense_rank, percent_rank, cume_dist of the row the
//! direct arguments make). The call binds to an `AggCall` whose arguments
//! are the direct arguments, then each ORDER BY key with its direction
//! (`AggCall::order_keys`); `exec::ordered_set` computes the result.
//!
//! Lives in the planner; the direct arguments' grouping check is in
//! `select.rs` (they must use only grouped columns).

use sqlparser::ast;

use super::bind::AggCollector;
use super::{coerce, Planner, Scope};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::functions::registry::no_such_function;
use crate::exec::plan::{AggCall, AggFunc, OrderedSetFunc};
use crate::types::{Elem, SqlType, Value};
use crate::{bail, err};

/// A call's parts other than WITHIN GROUP.
pub(super) struct CallParts<'c> {
    pub args: &'c [ast::Expr],
    pub distinct: bool,
    /// ORDER BY inside the parentheses.
    pub ordered: bool,
    pub filter: Option<&'c ast::Expr>,
}

impl<'a> Planner<'a> {
    /// `name(args) WITHIN GROUP (ORDER BY keys) [FILTER (WHERE …)]`.
    pub(super) fn bind_ordered_set(
        &self,
        name: &str,
        call: CallParts<'_>,
        within: &[ast::OrderByExpr],
        scope: &Scope,
        agg: Option<&AggCollector>,
    ) -> Result<Expr> {
        let Some(func) = OrderedSetFunc::from_name(name) else {
            bail!(WrongObjectType, "{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP");
        };
        if call.ordered {
            bail!(Syntax, "cannot use multiple ORDER BY clauses with WITHIN GROUP");
        }
        if call.distinct {
            bail!(Syntax, "cannot use DISTINCT with WITHIN GROUP");
        }
        if agg.is_none() {
            bail!(Grouping, "aggregate functions are not allowed here");
        }
        if func.hypothetical() {
            explicit_collations_match(call.args, within)?;
        }
        // Neither the direct arguments nor the keys may hold aggregates.
        let mut direct: Vec<Expr> = call.args.iter().map(|a| self.bind_expr(a, scope, None)).collect::<Result<_>>()?;
        let mut keys = Vec::new();
        for o in within {
            let k = self.bind_expr(&o.expr, scope, None)?;
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            keys.push((k, desc, o.options.nulls_first.unwrap_or(desc)));
        }
        super::srf::refuse_in_call(&direct, "aggregate")?;
        // Keys over an enclosing query's columns only make the aggregate that
        // query's (PostgreSQL's rule), where this level's columns do not exist.
        let reads = |e: &Expr, outer: bool| {
            let mut f = false;
            e.walk(&mut |x| f |= if outer { matches!(x, Expr::Outer { .. }) } else { matches!(x, Expr::Column { .. }) });
            f
        };
        let outer_level = keys.iter().any(|k| reads(&k.0, true)) && !keys.iter().any(|k| reads(&k.0, false));
        if outer_level && direct.iter().any(|d| reads(d, false)) {
            bail!(Grouping, "outer-level aggregate cannot contain a lower-level variable in its direct arguments");
        }
        super::srf::refuse_in_call(&keys.iter().map(|k| k.0.clone()).collect::<Vec<_>>(), "aggregate")?;
        let tys: Vec<SqlType> = direct.iter().chain(keys.iter().map(|k| &k.0)).map(|e| e.ty()).collect();
        let no_such = || no_such_function(name, &tys);
        let text_if_unknown = |e: Expr| if e.ty() == SqlType::Unknown { coerce(e, SqlType::Text) } else { Ok(e) };
        let ty = match func {
            OrderedSetFunc::Mode => {
                if !direct.is_empty() || keys.len() != 1 {
                    return Err(no_such());
                }
                keys[0].0 = text_if_unknown(keys[0].0.clone())?;
                keys[0].0.ty()
            }
            OrderedSetFunc::PercentileCont | OrderedSetFunc::PercentileDisc => {
                if direct.len() != 1 || keys.len() != 1 {
                    return Err(no_such());
                }
                let many = direct[0].ty().is_array();
                let fty = if many { SqlType::Array(Elem::Float8) } else { SqlType::Float8 };
                let dty = direct[0].ty();
                if !(dty.is_numeric() || dty == SqlType::Unknown || (many && dty.elem().is_some_and(|e| e.is_numeric()))) {
                    return Err(no_such());
                }
                direct[0] = coerce(direct[0].clone(), fty)?;
                let kty = keys[0].0.ty();
                let value_ty = if func == OrderedSetFunc::PercentileDisc {
                    keys[0].0 = text_if_unknown(keys[0].0.clone())?;
                    keys[0].0.ty()
                } else if kty == SqlType::Interval {
                    SqlType::Interval
                } else if kty.is_numeric() || kty == SqlType::Unknown {
                    keys[0].0 = coerce(keys[0].0.clone(), SqlType::Float8)?;
                    SqlType::Float8
                } else {
                    return Err(no_such());
                };
                if many {
                    value_ty.array_of().ok_or_else(|| err!(FeatureNotSupported, "arrays of arrays are not supported"))?
                } else {
                    value_ty
                }
            }
            _ => {
                // A hypothetical row: its values and the keys take common types.
                if direct.len() != keys.len() || keys.is_empty() {
                    return Err(no_such());
                }
                for (d, k) in direct.iter_mut().zip(keys.iter_mut()) {
                    let common = SqlType::common(k.0.ty(), d.ty()).ok_or_else(|| {
                        err!(DatatypeMismatch, "WITHIN GROUP types {} and {} cannot be matched", k.0.ty().pg_name(), d.ty().pg_name())
                    })?;
                    let common = if common == SqlType::Unknown { SqlType::Text } else { common };
                    *d = coerce(d.clone(), common)?;
                    k.0 = coerce(k.0.clone(), common)?;
                }
                if matches!(func, OrderedSetFunc::Rank | OrderedSetFunc::DenseRank) {
                    SqlType::Int8
                } else {
                    SqlType::Float8
                }
            }
        };
        let mut args = direct;
        for (k, desc, nulls_first) in keys {
            args.push(k);
            args.push(Expr::lit(Value::Int(AggCall::order_flags(desc, nulls_first)), SqlType::Int4));
        }
        let filter = call.filter.map(|x| self.bind_expr(x, scope, None).and_then(|e| coerce(e, SqlType::Bool))).transpose()?;
        Ok(Expr::Agg(Box::new(AggCall { func: AggFunc::OrderedSet(func), args, distinct: false, filter, ty })))
    }
}

/// A hypothetical row's value and its key are unified: two explicit,
/// different collations conflict (42P21).
fn explicit_collations_match(direct: &[ast::Expr], within: &[ast::OrderByExpr]) -> Result<()> {
    for (d, k) in direct.iter().zip(within) {
        if let (ast::Expr::Collate { collation: a, .. }, ast::Expr::Collate { collation: b, .. }) = (d, &k.expr) {
            let (a, b) = (a.to_string(), b.to_string());
            if a.trim_matches('"') != b.trim_matches('"') {
                bail!(CollationMismatch, "collation mismatch between explicit collations {a} and {b}");
            }
        }
    }
    Ok(())
}

/// An ordered-set aggregate named without WITHIN GROUP (42809), as
/// PostgreSQL refuses it.
pub(super) fn check_needs_within_group(name: &str, f: &ast::Function) -> Result<()> {
    if f.within_group.is_empty() && f.over.is_none() {
        if let Some(func) = OrderedSetFunc::from_name(name) {
            if !func.hypothetical() {
                bail!(WrongObjectType, "WITHIN GROUP is required for ordered-set aggregate {name}");
            }
        }
    }
    Ok(())
}
