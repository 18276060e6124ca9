//! Predicate pushdown: each conjunct of a filter moves as far down as it
//! keeps its meaning — through projections (substituting their
//! expressions), sorts, DISTINCT and other filters, below joins to the side
//! it reads (inner joins: either side; left/semi/anti: the left; right: the
//! right) and into scans. A scan learns from its filters the time range
//! over the time index and the sets of primary-key values ("tag sets",
//! from `=` and `IN`), which storage uses to skip files and row groups;
//! the filters stay with the scan, as pruning is an optimisation, not the
//! answer.
//!
//! Conjuncts with subqueries or volatile functions, or that read no column
//! at all, stay where they are.

use super::{and_all, conjuncts, is_volatile};
use crate::exec::expr::{BinOp, Expr};
use crate::exec::plan::JoinKind;
use crate::planner::logical::{LogicalPlan, Scan};
use crate::types::{SqlType, Value};

/// Push every filter of the plan down as far as it goes.
pub fn push_down_filters(plan: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Filter { input, predicate } => {
            let input = push_down_filters(*input);
            let mut conj = Vec::new();
            conjuncts(predicate, &mut conj);
            push_conjuncts(input, conj)
        }
        other => map_inputs(other, push_down_filters),
    }
}

/// Rebuild a node with `f` applied to each input.
pub fn map_inputs(plan: LogicalPlan, f: fn(LogicalPlan) -> LogicalPlan) -> LogicalPlan {
    use LogicalPlan as P;
    match plan {
        p @ (P::Scan(_) | P::Memory { .. } | P::Values { .. } | P::Series { .. } | P::WorkTable { .. }) => p,
        P::Filter { input, predicate } => P::Filter { input: Box::new(f(*input)), predicate },
        P::Project { input, exprs, columns } => P::Project { input: Box::new(f(*input)), exprs, columns },
        P::ProjectSet { input, srfs, columns } => P::ProjectSet { input: Box::new(f(*input)), srfs, columns },
        P::Aggregate { input, group_by, aggs, columns } => P::Aggregate { input: Box::new(f(*input)), group_by, aggs, columns },
        P::Window { input, calls, columns } => P::Window { input: Box::new(f(*input)), calls, columns },
        P::Join { left, right, kind, on, filter, columns } => {
            P::Join { left: Box::new(f(*left)), right: Box::new(f(*right)), kind, on, filter, columns }
        }
        P::Sort { input, keys, fetch } => P::Sort { input: Box::new(f(*input)), keys, fetch },
        P::Limit { input, limit, offset } => P::Limit { input: Box::new(f(*input)), limit, offset },
        P::Distinct { input } => P::Distinct { input: Box::new(f(*input)) },
        P::DistinctOn { input, keys } => P::DistinctOn { input: Box::new(f(*input)), keys },
        P::SetOp { left, right, kind, all } => P::SetOp { left: Box::new(f(*left)), right: Box::new(f(*right)), kind, all },
        P::RecursiveUnion { anchor, recursive, id, all, columns } => {
            P::RecursiveUnion { anchor: Box::new(f(*anchor)), recursive: Box::new(f(*recursive)), id, all, columns }
        }
    }
}

fn movable(c: &Expr) -> bool {
    !c.has_subquery() && !is_volatile(c) && !c.columns_used().is_empty()
}

/// A filter of `conj` over `input`; a filter already on top of `input`
/// takes the conjuncts after its own.
fn filter_over(input: LogicalPlan, conj: Vec<Expr>) -> LogicalPlan {
    if conj.is_empty() {
        return input;
    }
    match input {
        LogicalPlan::Filter { input, predicate } => {
            let mut all = Vec::new();
            conjuncts(predicate, &mut all);
            all.extend(conj);
            LogicalPlan::Filter { input, predicate: and_all(all).expect("not empty") }
        }
        other => LogicalPlan::Filter { input: Box::new(other), predicate: and_all(conj).expect("not empty") },
    }
}

/// Place conjuncts over `plan` (whose own filters were already pushed).
fn push_conjuncts(plan: LogicalPlan, conj: Vec<Expr>) -> LogicalPlan {
    if conj.is_empty() {
        return plan;
    }
    let (down, stay): (Vec<Expr>, Vec<Expr>) = conj.into_iter().partition(movable);
    if down.is_empty() {
        return filter_over(plan, stay);
    }
    let plan = match plan {
        LogicalPlan::Scan(mut s) => {
            for c in down {
                let local = c.remap_columns(&|i| s.table_column(i));
                narrow_scan(&mut s, &local);
                s.filters.push(local);
            }
            LogicalPlan::Scan(s)
        }
        LogicalPlan::Filter { input, predicate } => {
            // What is still here could not move: it stays, first.
            let mut kept = Vec::new();
            conjuncts(predicate, &mut kept);
            filter_over(push_conjuncts(*input, down), kept)
        }
        LogicalPlan::Project { input, exprs, columns } => {
            let (through, here): (Vec<Expr>, Vec<Expr>) = down.into_iter().partition(|c| {
                c.columns_used().iter().all(|&i| {
                    let e = &exprs[i];
                    !e.has_subquery() && !is_volatile(e) && !matches!(e, Expr::Agg(_) | Expr::Window(_))
                })
            });
            let through: Vec<Expr> = through.iter().map(|c| substitute(c, &exprs)).collect();
            let input = push_conjuncts(*input, through);
            filter_over(LogicalPlan::Project { input: Box::new(input), exprs, columns }, here)
        }
        LogicalPlan::Sort { input, keys, fetch } if fetch.is_none() => {
            LogicalPlan::Sort { input: Box::new(push_conjuncts(*input, down)), keys, fetch }
        }
        LogicalPlan::Distinct { input } => LogicalPlan::Distinct { input: Box::new(push_conjuncts(*input, down)) },
        LogicalPlan::Aggregate { input, group_by, aggs, columns } => {
            // A conjunct over group keys only keeps or drops whole groups:
            // it can filter the rows before grouping instead.
            let ng = group_by.len();
            let (through, here): (Vec<Expr>, Vec<Expr>) = down
                .into_iter()
                .partition(|c| c.columns_used().iter().all(|&i| i < ng && !group_by[i].has_subquery() && !is_volatile(&group_by[i])));
            let through: Vec<Expr> = through.iter().map(|c| substitute(c, &group_by)).collect();
            let input = push_conjuncts(*input, through);
            filter_over(LogicalPlan::Aggregate { input: Box::new(input), group_by, aggs, columns }, here)
        }
        LogicalPlan::Window { input, calls, columns } => {
            // A conjunct over columns every call partitions by drops whole
            // partitions: it can run before the window functions.
            let (through, here): (Vec<Expr>, Vec<Expr>) = down.into_iter().partition(|c| {
                c.columns_used()
                    .iter()
                    .all(|&i| calls.iter().all(|w| w.partition_by.contains(&Expr::Column { index: i, ty: columns[i].ty })))
            });
            let input = push_conjuncts(*input, through);
            filter_over(LogicalPlan::Window { input: Box::new(input), calls, columns }, here)
        }
        LogicalPlan::SetOp { left, right, kind, all } => {
            // Both sides have the same column types; a row's fate under a
            // deterministic conjunct is the same on either side.
            let left = Box::new(push_conjuncts(*left, down.clone()));
            let right = Box::new(push_conjuncts(*right, down));
            LogicalPlan::SetOp { left, right, kind, all }
        }
        LogicalPlan::Join { left, right, kind, mut on, filter, columns } => {
            let nl = left.columns().len();
            let (mut to_left, mut to_right, mut here) = (Vec::new(), Vec::new(), Vec::new());
            for c in down {
                let used = c.columns_used();
                let left_only = used.iter().all(|&i| i < nl);
                let right_only = used.iter().all(|&i| i >= nl);
                if left_only && matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) {
                    to_left.push(c);
                } else if right_only && matches!(kind, JoinKind::Inner | JoinKind::Right) {
                    to_right.push(c.remap_columns(&|i| i - nl));
                } else if let Some(pair) = (kind == JoinKind::Inner).then(|| equi_sides(&c, nl)).flatten() {
                    // `l = r` across an inner join: one more join key (or
                    // one it already has).
                    if !on.contains(&pair) {
                        on.push(pair);
                    }
                } else {
                    here.push(c);
                }
            }
            let left = Box::new(push_conjuncts(*left, to_left));
            let right = Box::new(push_conjuncts(*right, to_right));
            filter_over(LogicalPlan::Join { left, right, kind, on, filter, columns }, here)
        }
        other => filter_over(other, down),
    };
    filter_over(plan, stay)
}

/// `l = r` with l over the left input only and r over the right only:
/// (l, r renumbered over the right input).
fn equi_sides(c: &Expr, nl: usize) -> Option<(Expr, Expr)> {
    let Expr::Binary { op: BinOp::Eq, left, right, .. } = c else { return None };
    let (lu, ru) = (left.columns_used(), right.columns_used());
    if lu.is_empty() || ru.is_empty() {
        return None;
    }
    let (l, r) = if lu.iter().all(|&i| i < nl) && ru.iter().all(|&i| i >= nl) {
        (left, right)
    } else if ru.iter().all(|&i| i < nl) && lu.iter().all(|&i| i >= nl) {
        (right, left)
    } else {
        return None;
    };
    Some(((**l).clone(), r.remap_columns(&|i| i - nl)))
}

/// A conjunct over a projection's output, rewritten over its input.
fn substitute(c: &Expr, exprs: &[Expr]) -> Expr {
    c.map(0, &|x, d| match x {
        Expr::Column { index, .. } if d == 0 => Some(exprs[*index].clone()),
        _ => None,
    })
}

/// Narrow a scan's time range and tag sets by one conjunct over the
/// table's columns: `time_index op literal`, `primary_key = literal` and
/// `primary_key IN (literals)`.
pub fn narrow_scan(s: &mut Scan, pred: &Expr) {
    let ti = s.table.time_index;
    let pk = s.table.primary_key.clone();
    let mut parts = Vec::new();
    conjuncts(pred.clone(), &mut parts);
    for p in parts {
        if let Expr::InList { expr, list, negated: false } = &p {
            if let Expr::Column { index, .. } = expr.as_ref() {
                let vals: Option<Vec<Value>> = list
                    .iter()
                    .map(|e| match e {
                        Expr::Literal { value, .. } => Some(value.clone()),
                        _ => None,
                    })
                    .collect();
                if let Some(vals) = vals.filter(|_| pk.contains(index)) {
                    // NULL never matches IN.
                    narrow_tags(s, *index, vals.into_iter().filter(|v| !v.is_null()).collect());
                }
            }
            continue;
        }
        let Expr::Binary { op, left, right, .. } = &p else { continue };
        // bucket(ts) >= t implies ts >= t: a bucket starts at or before
        // its timestamps (date_trunc, date_bin, time_bucket floor).
        if let (Some(c), Expr::Literal { value: Value::Timestamp(t), .. }) = (bucketed_column(left), right.as_ref()) {
            if Some(c) == ti && matches!(op, BinOp::GtEq | BinOp::Gt) {
                let (lo, hi) = s.time_range.unwrap_or((i64::MIN, i64::MAX));
                s.time_range = Some((lo.max(if *op == BinOp::Gt { t.saturating_add(1) } else { *t }), hi));
            }
            continue;
        }
        let (left, right) = (through_utc_cast(left, ti), through_utc_cast(right, ti));
        let (col, lit, op) = match (left, right) {
            (Expr::Column { index, .. }, Expr::Literal { value, .. }) => (*index, value.clone(), *op),
            (Expr::Literal { value, .. }, Expr::Column { index, .. }) => {
                let flipped = op.commuted();
                (*index, value.clone(), flipped)
            }
            _ => continue,
        };
        if Some(col) == ti {
            let Value::Timestamp(t) = lit else { continue };
            let (mut lo, mut hi) = s.time_range.unwrap_or((i64::MIN, i64::MAX));
            match op {
                BinOp::GtEq => lo = lo.max(t),
                BinOp::Gt => lo = lo.max(t.saturating_add(1)),
                BinOp::Lt => hi = hi.min(t),
                BinOp::LtEq => hi = hi.min(t.saturating_add(1)),
                BinOp::Eq => {
                    lo = lo.max(t);
                    hi = hi.min(t.saturating_add(1));
                }
                _ => continue,
            }
            s.time_range = Some((lo, hi));
        } else if op == BinOp::Eq && pk.contains(&col) && !lit.is_null() {
            narrow_tags(s, col, vec![lit]);
        }
    }
}

/// Whether conjunct `c` over the table's columns holds for every row of
/// the scan's time range: a bound `time_index op literal` (the shapes
/// `narrow_scan` reads, not bucket bounds) that the range lies inside.
/// Storage keeps exactly the rows in a request's range (memtable, SSTs and
/// a transaction's own writes; the time index is never NULL), so such a
/// conjunct need not be evaluated again above the scan.
pub fn implied_by_time_range(s: &Scan, c: &Expr) -> bool {
    let (Some(ti), Some((lo, hi))) = (s.table.time_index, s.time_range) else { return false };
    if s.last_row {
        // A superset of the last rows is read: keep every filter.
        return false;
    }
    let Expr::Binary { op, left, right, .. } = c else { return false };
    let (left, right) = (through_utc_cast(left, Some(ti)), through_utc_cast(right, Some(ti)));
    let (t, op) = match (left, right) {
        (Expr::Column { index, .. }, Expr::Literal { value: Value::Timestamp(t), .. }) if *index == ti => (*t, *op),
        (Expr::Literal { value: Value::Timestamp(t), .. }, Expr::Column { index, .. }) if *index == ti => (*t, op.commuted()),
        _ => return false,
    };
    match op {
        BinOp::GtEq => lo >= t,
        BinOp::Gt => lo > t,
        BinOp::Lt => hi <= t,
        BinOp::LtEq => t < i64::MAX && hi <= t + 1,
        _ => false,
    }
}

/// `ts::timestamptz` (or `::timestamp`) of the time index, as the binder
/// writes it for `ts < now()`, is the time index itself: sessions run in UTC
/// (SET TimeZone accepts only UTC), where the cast keeps the microseconds.
/// Once other session time zones exist this must look at the zone.
fn through_utc_cast(e: &Expr, ti: Option<usize>) -> &Expr {
    match e {
        Expr::Cast { expr, ty: SqlType::Timestamp | SqlType::TimestampTz } if matches!(expr.as_ref(), Expr::Column { index, .. } if Some(*index) == ti) => {
            expr
        }
        _ => e,
    }
}

/// The column a floor-to-bucket call reads: `date_trunc(unit, c)`,
/// `date_bin(stride, c[, origin])`, `time_bucket(width, c[, origin])`,
/// with constant other arguments.
fn bucketed_column(e: &Expr) -> Option<usize> {
    let Expr::Func { name, args, .. } = e else { return None };
    if !matches!(name.as_str(), "date_trunc" | "date_bin" | "time_bucket") || args.len() < 2 {
        return None;
    }
    let Expr::Column { index, .. } = &args[1] else { return None };
    let others_constant = args.iter().enumerate().all(|(i, a)| i == 1 || matches!(a, Expr::Literal { .. }));
    others_constant.then_some(*index)
}

/// Intersect a tag column's set with `vals`.
fn narrow_tags(s: &mut Scan, col: usize, vals: Vec<Value>) {
    match s.tag_sets.iter_mut().find(|(c, _)| *c == col) {
        Some((_, set)) => set.retain(|v| vals.contains(v)),
        None => {
            let mut unique = Vec::new();
            for v in vals {
                if !unique.contains(&v) {
                    unique.push(v);
                }
            }
            s.tag_sets.push((col, unique));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::exec::plan::PlanColumn;
    use crate::planner::rewrite::test_util::*;
    use crate::types::SqlType;
    use SqlType::Int8;

    fn two_tables_joined(kind: JoinKind) -> LogicalPlan {
        let l = table("l", &[("a", Int8), ("b", Int8)]);
        let r = table("r", &[("c", Int8)]);
        let mut columns: Vec<PlanColumn> = l.columns().to_vec();
        columns.extend(r.columns().iter().cloned());
        LogicalPlan::Join { left: Box::new(l), right: Box::new(r), kind, on: vec![(col(0, Int8), col(0, Int8))], filter: None, columns }
    }

    #[test]
    fn inner_join_conjuncts_go_to_their_side() {
        let pred = bin(
            BinOp::And,
            bin(BinOp::Gt, col(1, Int8), int(5)),
            bin(
                BinOp::And,
                bin(BinOp::Lt, col(2, Int8), int(3)),
                bin(BinOp::And, bin(BinOp::Lt, col(0, Int8), col(2, Int8)), bin(BinOp::Eq, col(2, Int8), col(1, Int8))),
            ),
        );
        let p = push_down_filters(LogicalPlan::Filter { input: Box::new(two_tables_joined(JoinKind::Inner)), predicate: pred });
        let LogicalPlan::Filter { input, predicate } = p else { panic!("cross-side conjunct stays above: {p:?}") };
        assert_eq!(predicate, bin(BinOp::Lt, col(0, Int8), col(2, Int8)));
        let LogicalPlan::Join { left, right, on, .. } = *input else { panic!() };
        assert_eq!(on, vec![(col(0, Int8), col(0, Int8)), (col(1, Int8), col(0, Int8))], "a cross-side equality is a join key");
        let LogicalPlan::Filter { predicate: lp, .. } = *left else { panic!() };
        assert_eq!(lp, bin(BinOp::Gt, col(1, Int8), int(5)));
        let LogicalPlan::Filter { predicate: rp, .. } = *right else { panic!() };
        assert_eq!(rp, bin(BinOp::Lt, col(0, Int8), int(3)), "right conjunct renumbered over the right input");
    }

    #[test]
    fn left_join_keeps_right_side_conjuncts_above() {
        let pred = bin(BinOp::Lt, col(2, Int8), int(3));
        let p = push_down_filters(LogicalPlan::Filter { input: Box::new(two_tables_joined(JoinKind::Left)), predicate: pred.clone() });
        let LogicalPlan::Filter { input, predicate } = p else { panic!() };
        assert_eq!(predicate, pred);
        assert!(matches!(*input, LogicalPlan::Join { .. }));
    }

    #[test]
    fn through_projection_by_substitution() {
        let t = table("t", &[("a", Int8), ("b", Int8)]);
        let proj = LogicalPlan::Project {
            input: Box::new(t),
            exprs: vec![bin(BinOp::Add, col(1, Int8), int(1))],
            columns: vec![PlanColumn::new("x", Int8)],
        };
        let p = push_down_filters(LogicalPlan::Filter { input: Box::new(proj), predicate: bin(BinOp::Gt, col(0, Int8), int(10)) });
        let LogicalPlan::Project { input, .. } = p else { panic!("filter moved below the projection") };
        let LogicalPlan::Filter { predicate, .. } = *input else { panic!() };
        assert_eq!(predicate, bin(BinOp::Gt, bin(BinOp::Add, col(1, Int8), int(1)), int(10)));
    }

    /// A scan of cpu(host TEXT tag, ts TIMESTAMP time index, v INT8).
    pub(crate) fn cpu_scan() -> LogicalPlan {
        use crate::catalog::{ColumnDef, TableDef};
        let c =
            |n: &str, ty| ColumnDef { name: n.into(), ty, nullable: true, default: None, precision: None, typmod: None, user_type: None };
        let table = TableDef {
            id: 1,
            database: "d".into(),
            name: "cpu".into(),
            columns: vec![c("host", SqlType::Text), c("ts", SqlType::Timestamp), c("v", Int8)],
            time_index: Some(1),
            primary_key: vec![0],
            append_mode: false,
            ttl_ms: None,
            ttl_text: None,
            regions: 1,
            partition: Default::default(),
            inherits: vec![],
            checks: vec![],
            triggers: Vec::new(),
            row_security: Default::default(),
        };
        let columns = table.columns.iter().map(|c| PlanColumn::new(c.name.clone(), c.ty)).collect();
        LogicalPlan::Scan(Scan {
            table,
            regions: crate::exec::plan::Regions(vec![], vec![]),
            projection: None,
            columns,
            filters: vec![],
            time_range: None,
            tag_sets: vec![],
            last_row: false,
        })
    }

    fn text(s: &str) -> Expr {
        Expr::lit(Value::Text(s.into()), SqlType::Text)
    }

    fn ts(us: i64) -> Expr {
        Expr::lit(Value::Timestamp(us), SqlType::Timestamp)
    }

    #[test]
    fn scans_learn_time_ranges_and_tag_sets() {
        let ts_col = col(1, SqlType::Timestamp);
        let host = col(0, SqlType::Text);
        let conj = [
            bin(BinOp::GtEq, ts_col.clone(), ts(100)),
            bin(BinOp::Gt, ts(500), ts_col.clone()),
            Expr::InList { expr: Box::new(host.clone()), list: vec![text("a"), text("b"), text("c")], negated: false },
            bin(BinOp::Eq, text("b"), host.clone()),
            bin(BinOp::Gt, col(2, Int8), int(1)),
        ];
        let pred = conj.iter().cloned().reduce(|a, b| bin(BinOp::And, a, b)).unwrap();
        let LogicalPlan::Scan(s) = push_down_filters(LogicalPlan::Filter { input: Box::new(cpu_scan()), predicate: pred }) else {
            panic!("every conjunct goes into the scan")
        };
        assert_eq!(s.filters.len(), 5);
        assert_eq!(s.time_range, Some((100, 500)));
        assert_eq!(s.tag_sets, vec![(0, vec![Value::Text("b".into())])], "IN and = intersect");
    }

    #[test]
    fn a_cast_of_the_time_index_bounds_the_scan_but_not_of_another_column() {
        // `ts < now()` binds as ts::timestamptz < '…'; in UTC that is ts < '…'.
        let cast = |c: Expr| Expr::Cast { expr: Box::new(c), ty: SqlType::TimestampTz };
        let tstz = |us: i64| Expr::lit(Value::Timestamp(us), SqlType::TimestampTz);
        let pred =
            bin(BinOp::And, bin(BinOp::Lt, cast(col(1, SqlType::Timestamp)), tstz(900)), bin(BinOp::Gt, cast(col(2, Int8)), tstz(5)));
        let LogicalPlan::Scan(s) = push_down_filters(LogicalPlan::Filter { input: Box::new(cpu_scan()), predicate: pred }) else {
            panic!()
        };
        assert_eq!(s.time_range, Some((i64::MIN, 900)));
        assert_eq!(s.filters.len(), 2, "the filters stay: the range only prunes");
    }

    #[test]
    fn a_bucket_lower_bound_is_a_time_lower_bound() {
        let bucket = Expr::Func { name: "date_trunc".into(), args: vec![text("hour"), col(1, SqlType::Timestamp)], ty: SqlType::Timestamp };
        let pred = bin(BinOp::And, bin(BinOp::GtEq, bucket.clone(), ts(3_600_000_000)), bin(BinOp::Lt, bucket, ts(7_200_000_000)));
        let LogicalPlan::Scan(s) = push_down_filters(LogicalPlan::Filter { input: Box::new(cpu_scan()), predicate: pred }) else {
            panic!()
        };
        // Only the lower bound: a bucket < t says nothing exact about ts.
        assert_eq!(s.time_range, Some((3_600_000_000, i64::MAX)));
    }

    #[test]
    fn group_key_conjuncts_go_below_the_aggregate() {
        use crate::exec::plan::{AggCall, AggFunc};
        let t = table("t", &[("host", SqlType::Text), ("v", Int8)]);
        let agg = LogicalPlan::Aggregate {
            input: Box::new(t),
            group_by: vec![col(0, SqlType::Text)],
            aggs: vec![AggCall { func: AggFunc::Sum, args: vec![col(1, Int8)], distinct: false, filter: None, ty: Int8 }],
            columns: vec![PlanColumn::new("group0", SqlType::Text), PlanColumn::new("agg0", Int8)],
        };
        let on_key = bin(BinOp::Eq, col(0, SqlType::Text), Expr::lit(Value::Text("a".into()), SqlType::Text));
        let on_sum = bin(BinOp::Gt, col(1, Int8), int(10));
        let p = push_down_filters(LogicalPlan::Filter { input: Box::new(agg), predicate: bin(BinOp::And, on_key.clone(), on_sum.clone()) });
        let LogicalPlan::Filter { input, predicate } = p else { panic!() };
        assert_eq!(predicate, on_sum, "a condition on an aggregate stays above");
        let LogicalPlan::Aggregate { input, .. } = *input else { panic!() };
        let LogicalPlan::Filter { predicate, .. } = *input else { panic!() };
        assert_eq!(predicate, on_key);
    }

    #[test]
    fn set_operations_take_the_filter_on_both_sides() {
        let l = table("l", &[("a", Int8)]);
        let r = table("r", &[("a", Int8)]);
        let u = LogicalPlan::SetOp { left: Box::new(l), right: Box::new(r), kind: crate::exec::plan::SetOpKind::Except, all: false };
        let pred = bin(BinOp::Gt, col(0, Int8), int(1));
        let LogicalPlan::SetOp { left, right, .. } = push_down_filters(LogicalPlan::Filter { input: Box::new(u), predicate: pred.clone() })
        else {
            panic!()
        };
        for side in [left, right] {
            let LogicalPlan::Filter { predicate, .. } = *side else { panic!() };
            assert_eq!(predicate, pred);
        }
    }

    #[test]
    fn not_through_limit_nor_constant_conjuncts() {
        let t = table("t", &[("a", Int8)]);
        let lim = LogicalPlan::Limit { input: Box::new(t), limit: Some(1), offset: 0 };
        let pred = bin(BinOp::And, bin(BinOp::Gt, col(0, Int8), int(1)), bin(BinOp::Eq, int(1), int(1)));
        let p = push_down_filters(LogicalPlan::Filter { input: Box::new(lim), predicate: pred.clone() });
        let LogicalPlan::Filter { input, predicate } = p else { panic!() };
        assert!(matches!(*input, LogicalPlan::Limit { .. }));
        // Order kept: the movable conjunct first, then the rest.
        assert_eq!(predicate, pred);
    }
}
