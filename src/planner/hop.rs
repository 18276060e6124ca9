//! Hopping windows as a GROUP BY key. `hop(ts, slide, size[, origin])`
//! puts a row into every window it falls in (windows `size` long, one
//! starting every `slide`), so the binder joins the FROM rows with the
//! window numbers k = 0 … ceil(size / slide) − 1 (a `generate_series`) and
//! groups by `hop(ts, slide, size, origin, k)` — the start of the k-th
//! newest window holding the row — keeping the pairs where that window
//! holds it. The join appends one column, so every bound column index
//! stays valid. `analysis::hop_window` recognises the key for flows.
//!
//! Owns only this rewrite; imports the logical plan and exec expressions.

use super::logical::LogicalPlan as Plan;
use super::Planner;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::{JoinKind, PlanColumn};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// At most this many windows may hold one row (size / slide).
pub const MAX_OVERLAP: i64 = 10_000;

/// Expand `plan` for the hop key among `group_by`, if there is one.
/// Returns the expanded plan and (the key as written, the key over the
/// expanded rows); the caller replaces the first by the second in the
/// select list, HAVING, ORDER BY and DISTINCT ON.
pub(super) fn expand(planner: &Planner, plan: Plan, group_by: &mut [Expr]) -> Result<(Plan, Option<(Expr, Expr)>)> {
    let is_hop = |e: &Expr| matches!(e, Expr::Func { name, args, .. } if name == "hop" && (3..=4).contains(&args.len()));
    let Some(first) = group_by.iter().position(is_hop) else { return Ok((plan, None)) };
    let old = group_by[first].clone();
    if group_by.iter().any(|e| is_hop(e) && *e != old) {
        bail!(FeatureNotSupported, "a GROUP BY may hold only one hop() window");
    }
    let Expr::Func { args, ty, .. } = &old else { unreachable!("checked by is_hop") };
    let micros = |e: &Expr, what: &str| -> Result<i64> {
        let mut varies = false;
        e.walk(&mut |x| varies |= matches!(x, Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. }));
        if varies {
            bail!(FeatureNotSupported, "the {what} of hop() must be a constant interval");
        }
        match planner.eval_const(e)? {
            Value::Interval(iv) if iv.months != 0 => {
                bail!(FeatureNotSupported, "timestamps cannot be binned into intervals containing months or years")
            }
            Value::Interval(iv) if iv.approx_micros() > 0 => Ok(iv.approx_micros()),
            Value::Null => bail!(InvalidParameterValue, "the {what} of hop() cannot be NULL"),
            _ => bail!(InvalidParameterValue, "the {what} of hop() must be greater than zero"),
        }
    };
    let slide = micros(&args[1], "slide")?;
    let size = micros(&args[2], "size")?;
    let n = size / slide + i64::from(size % slide != 0);
    if n > MAX_OVERLAP {
        return Err(err!(InvalidParameterValue, "a hop() window of this size overlaps {n} others")
            .with_detail(format!("at most {MAX_OVERLAP} windows may hold one row (size / slide)")));
    }
    let width = plan.columns().len();
    let origin = args.get(3).cloned().unwrap_or(Expr::Literal { value: Value::Timestamp(0), ty: args[0].ty() });
    let new = Expr::Func {
        name: "hop".into(),
        args: vec![args[0].clone(), args[1].clone(), args[2].clone(), origin, Expr::Column { index: width, ty: SqlType::Int8 }],
        ty: *ty,
    };
    let k = PlanColumn::new("hop_k", SqlType::Int8);
    let lit = |v: i64| Expr::Literal { value: Value::Int(v), ty: SqlType::Int8 };
    let series = Plan::Series { args: vec![lit(0), lit(n - 1)], columns: vec![k.clone()] };
    let mut columns = plan.columns().to_vec();
    columns.push(k);
    let joined = Plan::Join {
        left: Box::new(plan),
        right: Box::new(series),
        kind: JoinKind::Inner,
        on: vec![],
        filter: Some(Expr::IsNull { expr: Box::new(new.clone()), negated: true }),
        columns,
    };
    for g in group_by.iter_mut() {
        if *g == old {
            *g = new.clone();
        }
    }
    Ok((joined, Some((old, new))))
}

/// Replace `old` by `new` in `e` (not inside subqueries).
pub(super) fn substitute(e: &Expr, old: &Expr, new: &Expr) -> Expr {
    e.map(0, &|x, d| (d == 0 && x == old).then(|| new.clone()))
}
