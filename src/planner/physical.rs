//! Physical planning: turns an optimized logical plan into exec's physical
//! plan, which `exec::build` makes into operators. A scan's pushed filters
//! become a selection over the storage scan, its time range and
//! single-value tag sets the scan request; join equalities become hash-join keys
//! (none: a nested loop); a sort under a LIMIT becomes a top-k. Subquery
//! expressions are optimized and physically planned here, each on its own.
//!
//! May import `exec` (the plan it produces), `storage`, `types`, `error`.

use std::cell::RefCell;
use std::sync::Arc;

use super::logical::{logical_subplan, LogicalPlan, Scan};
use super::rewrite::{and_all, optimize};
use crate::error::{Result, WeirError};
use crate::exec::expr::{BinOp, Expr, SubPlan, SubqueryCache, SubqueryKind};
use crate::exec::plan::{AggCall, Plan, SortKey, SrfCall, WindowCall};
use crate::exec::ExecCtx;
use crate::storage::{CmpOp, CmpValue, ColumnCmp, ColumnEq, ScanRequest};
use crate::types::SqlType;

/// Build the physical plan of an optimized logical plan.
pub fn physical_plan(plan: &LogicalPlan, ctx: &ExecCtx) -> Result<Plan> {
    let x = |e: &Expr| physical_expr(e, ctx);
    let xs = |v: &[Expr]| v.iter().map(x).collect::<Result<Vec<_>>>();
    let p = |p: &LogicalPlan| physical_plan(p, ctx).map(Box::new);
    let keys = |v: &[SortKey]| {
        v.iter().map(|k| Ok(SortKey { expr: x(&k.expr)?, desc: k.desc, nulls_first: k.nulls_first })).collect::<Result<Vec<_>>>()
    };
    Ok(match plan {
        LogicalPlan::Scan(s) => scan(s, ctx)?,
        LogicalPlan::Memory { batches, columns, .. } => Plan::Memory { batches: batches.clone(), columns: columns.clone() },
        LogicalPlan::Values { rows, columns } => {
            Plan::Values { rows: rows.iter().map(|r| xs(r)).collect::<Result<_>>()?, columns: columns.clone() }
        }
        LogicalPlan::Series { args, columns } => Plan::Series { args: xs(args)?, columns: columns.clone() },
        LogicalPlan::Filter { input, predicate } => Plan::Filter { input: p(input)?, predicate: x(predicate)? },
        LogicalPlan::Project { input, exprs, columns } => Plan::Project { input: p(input)?, exprs: xs(exprs)?, columns: columns.clone() },
        LogicalPlan::ProjectSet { input, srfs, columns } => Plan::ProjectSet {
            input: p(input)?,
            srfs: srfs.iter().map(|c| Ok(SrfCall { kind: c.kind, args: xs(&c.args)?, out: c.out.clone() })).collect::<Result<_>>()?,
            columns: columns.clone(),
        },
        LogicalPlan::Aggregate { input, group_by, aggs, columns } => Plan::Aggregate {
            input: p(input)?,
            group_by: xs(group_by)?,
            aggs: aggs
                .iter()
                .map(|a| {
                    Ok(AggCall {
                        func: a.func,
                        args: xs(&a.args)?,
                        distinct: a.distinct,
                        filter: a.filter.as_ref().map(x).transpose()?,
                        ty: a.ty,
                    })
                })
                .collect::<Result<_>>()?,
            columns: columns.clone(),
        },
        LogicalPlan::Window { input, calls, columns } => Plan::Window {
            input: p(input)?,
            calls: calls
                .iter()
                .map(|c| {
                    Ok(WindowCall {
                        func: c.func,
                        args: xs(&c.args)?,
                        partition_by: xs(&c.partition_by)?,
                        order_by: keys(&c.order_by)?,
                        frame: c.frame.try_map(x)?,
                        ty: c.ty,
                    })
                })
                .collect::<Result<_>>()?,
            columns: columns.clone(),
        },
        LogicalPlan::Join { left, right, kind, on, filter, columns } => Plan::Join {
            left: p(left)?,
            right: p(right)?,
            kind: *kind,
            left_keys: on.iter().map(|(l, _)| x(l)).collect::<Result<_>>()?,
            right_keys: on.iter().map(|(_, r)| x(r)).collect::<Result<_>>()?,
            condition: filter.as_ref().map(x).transpose()?,
            columns: columns.clone(),
        },
        LogicalPlan::Sort { input, keys: k, fetch } => {
            // A top-k on a time bucket reads the newest buckets first.
            let planned = match super::narrow::narrow(input, k, *fetch) {
                Some(n) => Box::new(super::narrow::wrap(*p(input)?, n)),
                None => p(input)?,
            };
            Plan::Sort { input: planned, keys: keys(k)?, limit: *fetch }
        }
        LogicalPlan::Limit { input, limit, offset } => Plan::Limit { input: p(input)?, limit: *limit, offset: *offset },
        LogicalPlan::Distinct { input } => Plan::Distinct { input: p(input)? },
        LogicalPlan::DistinctOn { input, keys } => Plan::DistinctOn { input: p(input)?, keys: xs(keys)? },
        LogicalPlan::SetOp { left, right, kind, all } => Plan::SetOp { left: p(left)?, right: p(right)?, kind: *kind, all: *all },
        LogicalPlan::RecursiveUnion { anchor, recursive, id, all, columns } => {
            Plan::RecursiveUnion { anchor: p(anchor)?, recursive: p(recursive)?, id: *id, all: *all, columns: columns.clone() }
        }
        LogicalPlan::WorkTable { id, columns } => Plan::WorkTable { id: *id, columns: columns.clone() },
    })
}

/// A storage scan, with a selection of the pushed filters over it.
fn scan(s: &Scan, ctx: &ExecCtx) -> Result<Plan> {
    let mut request =
        ScanRequest { projection: s.projection.clone(), time_range: s.time_range, last_row: s.last_row, ..Default::default() };
    if let Some(first) = s.regions.0.first() {
        // Storage prunes by each tag column's set of values (an equality
        // or IN-list); the selection above still filters.
        request.filters = tag_filters(&s.tag_sets, first);
    }
    let plan = Plan::Scan { regions: s.regions.clone(), request, columns: s.columns.clone() };
    // Filters address table columns; the selection sees the projection.
    let out_of = |tc: usize| (0..s.columns.len()).position(|i| s.table_column(i) == tc).expect("scan filter column is projected");
    // Time bounds the request's range already applies exactly are not
    // evaluated again (a selection over every scanned row otherwise).
    let mut conj = Vec::new();
    for f in &s.filters {
        super::rewrite::conjuncts(f.clone(), &mut conj);
    }
    let filters: Vec<Expr> = conj
        .iter()
        .filter(|c| !super::rewrite::pushdown::implied_by_time_range(s, c))
        .map(|f| physical_expr(&f.remap_columns(&out_of), ctx))
        .collect::<Result<_>>()?;
    let mut plan = plan;
    if let Plan::Scan { request, .. } = &mut plan {
        request.cmps = conj.iter().filter_map(column_cmp).collect();
    }
    Ok(match and_all(filters) {
        Some(predicate) => Plan::Filter { input: Box::new(plan), predicate },
        None => plan,
    })
}

/// A scan's tag value sets as storage's pruning filters over `region`'s
/// columns (an empty set or one holding NULL prunes nothing).
pub fn tag_filters(sets: &[(usize, Vec<crate::types::Value>)], region: &crate::storage::Region) -> Vec<ColumnEq> {
    let fields = region.desc.schema.fields();
    sets.iter()
        .filter(|(col, set)| !set.is_empty() && !set.iter().any(|v| v.is_null()) && *col < fields.len())
        .filter_map(|(col, set)| {
            let ty = SqlType::from_arrow(fields[*col].data_type());
            crate::types::values_to_array(set, ty).ok().map(|value| ColumnEq { column: *col, value })
        })
        .collect()
}

/// The storage request of an UPDATE's or DELETE's read of `region`, a
/// region of `table`: narrowed by the statement's predicate (over the
/// table's columns) as a query's scan is, by time range, primary-key value
/// sets and early comparisons. The predicate is still evaluated over what
/// it returns; without this a point UPDATE read every row of the table.
pub fn narrowed_request(table: &crate::catalog::TableDef, region: &crate::storage::Region, pred: &Expr) -> ScanRequest {
    let mut s = Scan {
        table: table.clone(),
        regions: crate::exec::plan::Regions(Vec::new(), Vec::new()),
        projection: None,
        columns: Vec::new(),
        filters: Vec::new(),
        time_range: None,
        tag_sets: Vec::new(),
        last_row: false,
    };
    super::rewrite::pushdown::narrow_scan(&mut s, pred);
    let mut request = ScanRequest { time_range: s.time_range, filters: tag_filters(&s.tag_sets, region), ..Default::default() };
    let mut conj = Vec::new();
    super::rewrite::conjuncts(pred.clone(), &mut conj);
    request.cmps = conj.iter().filter_map(column_cmp).collect();
    request
}

/// A conjunct storage can evaluate as it reads (`ColumnCmp`): a float8 or
/// integer table column compared with a constant of its own kind.
fn column_cmp(e: &Expr) -> Option<ColumnCmp> {
    let Expr::Binary { op, left, right, .. } = e else { return None };
    let (op, flipped) = match op {
        BinOp::Lt => (CmpOp::Lt, CmpOp::Gt),
        BinOp::LtEq => (CmpOp::LtEq, CmpOp::GtEq),
        BinOp::Gt => (CmpOp::Gt, CmpOp::Lt),
        BinOp::GtEq => (CmpOp::GtEq, CmpOp::LtEq),
        _ => return None,
    };
    let (column, ty, value, op) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column { index, ty }, Expr::Literal { value, .. }) => (*index, *ty, value, op),
        (Expr::Literal { value, .. }, Expr::Column { index, ty }) => (*index, *ty, value, flipped),
        _ => return None,
    };
    let value = match (ty, value) {
        (SqlType::Float8, crate::types::Value::Float(f)) => CmpValue::F64(*f),
        (SqlType::Int2 | SqlType::Int4 | SqlType::Int8, crate::types::Value::Int(i)) => CmpValue::I64(*i),
        _ => return None,
    };
    Some(ColumnCmp { column, op, value })
}

/// An expression with its subqueries optimized and physically planned.
pub fn physical_expr(e: &Expr, ctx: &ExecCtx) -> Result<Expr> {
    if !e.has_subquery() {
        return Ok(e.clone());
    }
    let err: RefCell<Option<WeirError>> = RefCell::new(None);
    let out = e.map(0, &|x, d| {
        let Expr::Subquery { plan, kind, correlated, outer_refs, ty, .. } = x else { return None };
        if d != 0 {
            return None;
        }
        let r = (|| -> Result<Expr> {
            let plan = match logical_subplan(plan) {
                Some(l) => SubPlan::new(physical_plan(&optimize(l.clone(), ctx), ctx)?),
                None => plan.clone(),
            };
            let kind = match kind {
                SubqueryKind::In { expr, negated } => SubqueryKind::In { expr: Box::new(physical_expr(expr, ctx)?), negated: *negated },
                SubqueryKind::Quantified { expr, op, all } => {
                    SubqueryKind::Quantified { expr: Box::new(physical_expr(expr, ctx)?), op: *op, all: *all }
                }
                k => k.clone(),
            };
            Ok(Expr::Subquery {
                plan,
                kind,
                correlated: *correlated,
                outer_refs: outer_refs.clone(),
                cache: Arc::new(SubqueryCache::default()),
                ty: *ty,
            })
        })();
        match r {
            Ok(e) => Some(e),
            Err(e) => {
                err.borrow_mut().get_or_insert(e);
                Some(x.clone())
            }
        }
    });
    match err.into_inner() {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::BinOp;
    use crate::planner::rewrite::pushdown::tests::cpu_scan;
    use crate::planner::rewrite::test_util::*;
    use crate::types::Value;

    #[test]
    fn a_scan_becomes_a_storage_request_under_a_selection_of_its_filters() {
        let LogicalPlan::Scan(mut s) = cpu_scan() else { unreachable!() };
        // Reads host and v; filters on v (table column 2), output column 1.
        s.projection = Some(vec![0, 2]);
        s.columns = vec![s.columns[0].clone(), s.columns[2].clone()];
        s.filters = vec![bin(BinOp::Gt, col(2, SqlType::Int8), int(7))];
        s.time_range = Some((1, 2));
        s.tag_sets = vec![(0, vec![Value::Text("a".into())])];
        let p = physical_plan(&LogicalPlan::Scan(s), &ctx()).unwrap();
        let Plan::Filter { input, predicate } = p else { panic!("no selection: {p:?}") };
        assert_eq!(predicate, bin(BinOp::Gt, col(1, SqlType::Int8), int(7)), "the filter reads the projected column");
        let Plan::Scan { request, columns, .. } = *input else { panic!() };
        assert_eq!(request.projection, Some(vec![0, 2]));
        assert_eq!(request.time_range, Some((1, 2)));
        assert_eq!(columns.len(), 2);
    }

    #[test]
    fn time_bounds_the_scan_range_applies_are_not_selected_again() {
        let ts = |t: i64| Expr::lit(Value::Timestamp(t), SqlType::Timestamp);
        let time = || col(1, SqlType::Timestamp);
        let plan = |filters: Vec<Expr>, range: Option<(i64, i64)>| {
            let LogicalPlan::Scan(mut s) = cpu_scan() else { unreachable!() };
            s.filters = filters;
            s.time_range = range;
            physical_plan(&LogicalPlan::Scan(s), &ctx()).unwrap()
        };
        // Inside [100, 500): ts >= 100, ts > 99, ts < 500, ts <= 499 and a
        // looser ts >= 50; the bound on another column stays.
        let bounds = vec![
            bin(BinOp::GtEq, time(), ts(100)),
            bin(BinOp::Gt, time(), ts(99)),
            bin(BinOp::Lt, time(), ts(500)),
            bin(BinOp::LtEq, time(), ts(499)),
        ];
        let v = bin(BinOp::Gt, col(2, SqlType::Int8), int(7));
        let mut filters = bounds.clone();
        filters.push(bin(BinOp::GtEq, ts(600), time()));
        filters.push(v.clone());
        let p = plan(vec![crate::planner::rewrite::and_all(filters).unwrap()], Some((100, 500)));
        let Plan::Filter { input, predicate } = p else { panic!("no selection: {p:?}") };
        assert_eq!(predicate, v);
        assert!(matches!(*input, Plan::Scan { .. }));
        // All implied: no selection at all.
        assert!(matches!(plan(bounds.clone(), Some((100, 500))), Plan::Scan { .. }));
        // A bound the range does not imply (the range came from elsewhere,
        // or none) is kept: ts > 100 over [100, 500), ts <= 500.
        for (f, range) in [
            (bin(BinOp::Gt, time(), ts(100)), Some((100, 500))),
            (bin(BinOp::LtEq, time(), ts(500)), Some((100, 502))),
            (bounds[0].clone(), None),
            (bin(BinOp::NotEq, time(), ts(100)), Some((101, 500))),
        ] {
            let p = plan(vec![f.clone()], range);
            assert!(matches!(&p, Plan::Filter { predicate, .. } if *predicate == f), "{f:?} over {range:?}: {p:?}");
        }
    }

    #[test]
    fn join_equalities_become_hash_keys() {
        let l = table("l", &[("a", SqlType::Int8)]);
        let r = table("r", &[("b", SqlType::Int8)]);
        let mut columns = l.columns().to_vec();
        columns.extend(r.columns().iter().cloned());
        let j = LogicalPlan::Join {
            left: Box::new(l),
            right: Box::new(r),
            kind: crate::exec::plan::JoinKind::Inner,
            on: vec![(col(0, SqlType::Int8), col(0, SqlType::Int8))],
            filter: Some(bin(BinOp::Lt, col(0, SqlType::Int8), col(1, SqlType::Int8))),
            columns,
        };
        let Plan::Join { left_keys, right_keys, condition, .. } = physical_plan(&j, &ctx()).unwrap() else { panic!() };
        assert_eq!((left_keys.len(), right_keys.len()), (1, 1));
        assert!(condition.is_some());
    }
}
