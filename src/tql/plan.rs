//! PromQL planned into weir's plans: a selector is the metric's table
//! scan (the logical plan of `load::plan`, rewritten as any query is, so
//! label equalities and the time range prune the scan) under
//! `SeriesNormalize` and an instant or range manipulate node
//! (`exec/promql.rs`); an aggregation is weir's hash aggregate grouped by
//! the step time and the kept labels; the result is sorted by the labels,
//! then time, and projected into GreptimeDB's layout (`naming`).
//!
//! Covered so far: instant and range selectors (label equalities, offset),
//! the range functions of `exec::promql::RangeFn`, sum / avg / count / min
//! / max with by / without, and as `PromNode::Map` the instant functions
//! abs … sgn, round, clamp*, unary minus and arithmetic or comparisons
//! with a number; `and` / `unless` as semi / anti hash joins on the step
//! time and the matching labels (`on` / `ignoring`), `or` as their union
//! with the right side's anti join. `plan` answers None for any
//! other expression, which the evaluator (`eval`) then runs.
//!
//! May import `planner`, `exec`, `catalog`, `types`, `error` and its
//! siblings; never `sql`, `server` or `flow`.

use promql_parser::label::MatchOp;
use promql_parser::parser::token::{T_AVG, T_COUNT, T_LAND, T_LOR, T_LUNLESS, T_MAX, T_MIN, T_SUM};
use promql_parser::parser::{Expr, LabelModifier, Offset, VectorSelector};

use super::args::Range;
use super::load;
use super::naming::{Col, Layout};
use crate::error::Result;
use crate::exec::expr::Expr as X;
use crate::exec::plan::{AggCall, AggFunc, JoinKind, Plan, PlanColumn, SetOpKind, SortKey};
use crate::exec::promql::{Grid, InstantFn, PromNode, RangeFn, ValueMap};
use crate::planner::Planner;
use crate::types::{SqlType, Value};

/// A planned sub-expression: columns `(time, labels…, one float8 value per
/// field)`.
struct Sub {
    plan: Plan,
    labels: Vec<String>,
    fields: usize,
}

impl Sub {
    fn columns(&self) -> &[PlanColumn] {
        self.plan.columns()
    }
}

fn col(p: &Plan, i: usize) -> X {
    X::Column { index: i, ty: p.columns()[i].ty }
}

fn ms(d: &std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// The plan of `e` over `range` laid out as `layout`, or None when `e`
/// uses what the plan does not cover yet.
pub fn plan(planner: &Planner, e: &Expr, range: &Range, layout: &Layout) -> Result<Option<Plan>> {
    let Some(sub) = node(planner, e, range)? else { return Ok(None) };
    if sub.fields != layout.values.len().max(1) {
        return Ok(None);
    }
    // Sorted by the layout's labels (absent first), then time.
    let mut keys = Vec::new();
    for c in &layout.cols {
        if let Col::Label(l) = c {
            if let Some(i) = sub.labels.iter().position(|x| x == l) {
                keys.push(SortKey { expr: col(&sub.plan, 1 + i), desc: false, nulls_first: true });
            }
        }
    }
    // A label the result carries that the layout lacks: the evaluator's
    // rows add a column for it; not planned.
    if sub.labels.iter().any(|l| !layout.cols.contains(&Col::Label(l.clone()))) {
        return Ok(None);
    }
    keys.push(SortKey { expr: col(&sub.plan, 0), desc: false, nulls_first: true });
    let sorted = Plan::Sort { input: Box::new(sub.plan), keys, limit: None };
    let columns = super::output::plan_columns(layout, &layout.cols);
    let mut exprs = Vec::with_capacity(columns.len());
    for (c, out) in layout.cols.iter().zip(&columns) {
        let e = match c {
            Col::Time => col(&sorted, 0),
            Col::Label(l) => match sub.labels.iter().position(|x| x == l) {
                Some(i) => col(&sorted, 1 + i),
                None => X::lit(Value::Null, SqlType::Text),
            },
            Col::Value(i) => col(&sorted, 1 + sub.labels.len() + *i),
        };
        exprs.push(if e.ty() == out.ty { e } else { X::Cast { expr: Box::new(e), ty: out.ty } });
    }
    Ok(Some(Plan::Project { input: Box::new(sorted), exprs, columns }))
}

fn node(planner: &Planner, e: &Expr, range: &Range) -> Result<Option<Sub>> {
    Ok(match e {
        Expr::Paren(p) => node(planner, &p.expr, range)?,
        Expr::VectorSelector(vs) => selector(planner, vs, range, None)?,
        Expr::Unary(u) => node(planner, &u.expr, range)?.map(|s| map(s, ValueMap::Neg)),
        Expr::Binary(b) if matches!(b.op.id(), T_LAND | T_LOR | T_LUNLESS) => {
            let (Some(l), Some(r)) = (node(planner, &b.lhs, range)?, node(planner, &b.rhs, range)?) else { return Ok(None) };
            // Several fields are series of their own told apart by a label; not planned.
            if l.fields != 1 || r.fields != 1 {
                return Ok(None);
            }
            Some(set_op(b.op.id(), l, r, b.modifier.as_ref().and_then(|m| m.matching.as_ref())))
        }
        Expr::Binary(b) => {
            let Some(op) = super::eval::value_op(b.op.id()) else { return Ok(None) };
            let bool_result = b.modifier.as_ref().is_some_and(|m| m.return_bool);
            let (vector, scalar, scalar_left) = match (number(&b.lhs), number(&b.rhs)) {
                (None, Some(s)) => (&b.lhs, s, false),
                (Some(s), None) => (&b.rhs, s, true),
                _ => return Ok(None),
            };
            let m = ValueMap::Scalar { op, scalar: scalar.to_bits(), scalar_left, bool_result };
            node(planner, vector, range)?.map(|s| map(s, m))
        }
        Expr::Call(c) if RangeFn::from_name(c.func.name).is_none() => {
            let args: Vec<&Expr> = c.args.args.iter().map(|a| a.as_ref()).collect();
            let nums: Vec<Option<f64>> = args.iter().skip(1).map(|a| number(a)).collect();
            if args.is_empty() || nums.iter().any(|n| n.is_none()) {
                return Ok(None);
            }
            let nums: Vec<f64> = nums.into_iter().flatten().collect();
            let m = match (c.func.name, nums.as_slice()) {
                (name, []) if let Some(f) = InstantFn::from_name(name) => ValueMap::Func(f),
                ("round", []) => ValueMap::Round { to: 1f64.to_bits() },
                ("round", [to]) => ValueMap::Round { to: to.to_bits() },
                ("clamp", [lo, hi]) => ValueMap::Clamp { lo: lo.to_bits(), hi: hi.to_bits(), both: true },
                ("clamp_min", [lo]) => ValueMap::Clamp { lo: lo.to_bits(), hi: f64::NAN.to_bits(), both: false },
                ("clamp_max", [hi]) => ValueMap::Clamp { lo: f64::NAN.to_bits(), hi: hi.to_bits(), both: false },
                _ => return Ok(None),
            };
            node(planner, args[0], range)?.map(|s| map(s, m))
        }
        Expr::Call(c) => {
            let Some(func) = RangeFn::from_name(c.func.name) else { return Ok(None) };
            if c.args.args.len() != 1 {
                return Ok(None);
            }
            let Expr::MatrixSelector(m) = c.args.args[0].as_ref() else { return Ok(None) };
            selector(planner, &m.vs, range, Some((ms(&m.range), func)))?
        }
        Expr::Aggregate(a) => {
            if a.param.is_some() {
                return Ok(None);
            }
            let func = match a.op.id() {
                T_SUM => AggFunc::Sum,
                T_AVG => AggFunc::Avg,
                T_COUNT => AggFunc::Count,
                T_MIN => AggFunc::Min,
                T_MAX => AggFunc::Max,
                _ => return Ok(None),
            };
            let Some(inner) = node(planner, &a.expr, range)? else { return Ok(None) };
            // count over several fields: SQL's count of a field without a
            // value is 0 where PromQL has no sample; not planned.
            if func == AggFunc::Count && inner.fields != 1 {
                return Ok(None);
            }
            aggregate(inner, func, a.modifier.as_ref())
        }
        _ => None,
    })
}

/// A number literal (in parentheses, negated).
fn number(e: &Expr) -> Option<f64> {
    match e {
        Expr::NumberLiteral(n) => Some(n.val),
        Expr::Paren(p) => number(&p.expr),
        Expr::Unary(u) => number(&u.expr).map(|v| -v),
        _ => None,
    }
}

/// Each value of `s` mapped (`PromNode::Map`).
fn map(s: Sub, m: ValueMap) -> Sub {
    let node = PromNode::Map { tags: s.labels.len(), map: m };
    let columns = node.columns(s.columns());
    Sub { plan: Plan::Prom { input: Box::new(s.plan), node, columns }, labels: s.labels, fields: s.fields }
}

/// A selector: scan → SeriesNormalize → instant or range manipulate.
fn selector(planner: &Planner, vs: &VectorSelector, range: &Range, window: Option<(i64, RangeFn)>) -> Result<Option<Sub>> {
    if vs.at.is_some() {
        return Ok(None);
    }
    let Some(t) = load::target(planner, vs)? else { return Ok(None) };
    let def = &t.table;
    for &tag in &t.tags {
        if !matches!(def.columns[tag].ty, SqlType::Text | SqlType::Varchar) {
            return Ok(None);
        }
    }
    // Only label equalities, which the scan's filter applies; other
    // matchers on tags are the evaluator's.
    for m in &vs.matchers.matchers {
        if m.name == "__name__" || m.name == load::FIELD_LABEL {
            continue;
        }
        let is_tag = t.tags.iter().any(|&i| def.columns[i].name == m.name);
        if is_tag && !(matches!(m.op, MatchOp::Equal) && !m.value.is_empty()) {
            return Ok(None);
        }
    }
    let offset_ms = match &vs.offset {
        None => 0,
        Some(Offset::Pos(d)) => ms(d),
        Some(Offset::Neg(d)) => -ms(d),
    };
    let before = window.map(|(r, _)| r).unwrap_or(range.lookback_ms);
    let lo = (range.start_ms - offset_ms).saturating_sub(before);
    let hi = range.end_ms - offset_ms;
    if hi <= lo {
        return Ok(None);
    }
    let scan = planner.physical(load::plan(planner, vs, &t, lo, hi)?)?;
    let tags = t.tags.len();
    let normalize = PromNode::SeriesNormalize { tags, offset_ms };
    let columns = normalize.columns(scan.columns());
    let normalized = Plan::Prom { input: Box::new(scan), node: normalize, columns };
    let grid = Grid { start_ms: range.start_ms, step_ms: range.step_ms, steps: range.steps() };
    let node = match window {
        None => PromNode::InstantManipulate { tags, grid, lookback_ms: range.lookback_ms },
        Some((range_ms, func)) => PromNode::RangeManipulate { tags, grid, range_ms, func },
    };
    let columns = node.columns(normalized.columns());
    Ok(Some(Sub {
        plan: Plan::Prom { input: Box::new(normalized), node, columns },
        labels: t.tags.iter().map(|&i| def.columns[i].name.clone()).collect(),
        fields: t.fields.len(),
    }))
}

/// An aggregation: grouped by the step time and the kept labels (a `by`
/// label the input lacks is absent), each field aggregated alone.
fn aggregate(inner: Sub, func: AggFunc, m: Option<&LabelModifier>) -> Option<Sub> {
    let kept: Vec<String> = match m {
        None => vec![],
        Some(LabelModifier::Include(ls)) => {
            let mut v: Vec<String> = Vec::new();
            for l in &ls.labels {
                if !v.contains(l) {
                    v.push(l.clone());
                }
            }
            v
        }
        Some(LabelModifier::Exclude(ls)) => inner.labels.iter().filter(|l| !ls.labels.contains(l)).cloned().collect(),
    };
    let cols = inner.columns().to_vec();
    let mut group_by = vec![col(&inner.plan, 0)];
    let mut columns = vec![cols[0].clone()];
    for l in &kept {
        match inner.labels.iter().position(|x| x == l) {
            Some(i) => {
                group_by.push(col(&inner.plan, 1 + i));
                columns.push(PlanColumn::new(l.clone(), cols[1 + i].ty));
            }
            None => {
                group_by.push(X::lit(Value::Null, SqlType::Text));
                columns.push(PlanColumn::new(l.clone(), SqlType::Text));
            }
        }
    }
    let ty = if func == AggFunc::Count { SqlType::Int8 } else { SqlType::Float8 };
    let first = 1 + inner.labels.len();
    let aggs: Vec<AggCall> =
        (0..inner.fields).map(|f| AggCall { func, args: vec![col(&inner.plan, first + f)], distinct: false, filter: None, ty }).collect();
    columns.extend((0..inner.fields).map(|f| PlanColumn::new(cols[first + f].name.clone(), ty)));
    let fields = inner.fields;
    let mut plan = Plan::Aggregate { input: Box::new(inner.plan), group_by, aggs, columns: columns.clone() };
    if func == AggFunc::Count {
        let exprs = (0..columns.len())
            .map(|i| {
                let e = col(&plan, i);
                if i >= 1 + kept.len() {
                    X::Cast { expr: Box::new(e), ty: SqlType::Float8 }
                } else {
                    e
                }
            })
            .collect();
        let columns = columns
            .iter()
            .enumerate()
            .map(|(i, c)| if i >= 1 + kept.len() { PlanColumn::new(c.name.clone(), SqlType::Float8) } else { c.clone() })
            .collect();
        plan = Plan::Project { input: Box::new(plan), exprs, columns };
    }
    Some(Sub { plan, labels: kept, fields })
}

/// The labels two series match on (`on` lists them, `ignoring` or nothing:
/// every label either side has but the ignored ones).
fn signature(l: &Sub, r: &Sub, m: Option<&LabelModifier>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |n: &String| {
        if !out.contains(n) {
            out.push(n.clone());
        }
    };
    match m {
        Some(LabelModifier::Include(ls)) => ls.labels.iter().for_each(&mut add),
        Some(LabelModifier::Exclude(ls)) => l.labels.iter().chain(&r.labels).filter(|n| !ls.labels.contains(n)).for_each(&mut add),
        None => l.labels.iter().chain(&r.labels).for_each(&mut add),
    }
    out
}

/// The join keys of a side: the step time, then each signature label (an
/// absent label is the empty string, as Prometheus has it).
fn match_keys(s: &Sub, sig: &[String]) -> Vec<X> {
    let mut keys = vec![col(&s.plan, 0)];
    for n in sig {
        keys.push(match s.labels.iter().position(|x| x == n) {
            Some(i) => X::Func {
                name: "coalesce".into(),
                args: vec![col(&s.plan, 1 + i), X::lit(Value::Text(String::new()), SqlType::Text)],
                ty: SqlType::Text,
            },
            None => X::lit(Value::Text(String::new()), SqlType::Text),
        });
    }
    keys
}

/// `and` / `unless`: the left side's rows with (semi join) or without
/// (anti join) a right-side sample of the same signature at that step;
/// `or`: the left side's rows, then the right side's without a left-side
/// sample of the same signature at that step (anti join), as one union.
fn set_op(op: u16, l: Sub, r: Sub, m: Option<&LabelModifier>) -> Sub {
    let sig = signature(&l, &r, m);
    let semi = |a: Sub, b: Sub, kind: JoinKind| {
        let columns = a.columns().to_vec();
        let (left_keys, right_keys) = (match_keys(&a, &sig), match_keys(&b, &sig));
        Sub {
            plan: Plan::Join { left: Box::new(a.plan), right: Box::new(b.plan), kind, left_keys, right_keys, condition: None, columns },
            labels: a.labels,
            fields: 1,
        }
    };
    match op {
        T_LAND => semi(l, r, JoinKind::Semi),
        T_LUNLESS => semi(l, r, JoinKind::Anti),
        _ => {
            let mut labels = l.labels.clone();
            for n in &r.labels {
                if !labels.contains(n) {
                    labels.push(n.clone());
                }
            }
            let left_plan = l.plan.clone();
            let left = Sub { plan: left_plan, labels: l.labels.clone(), fields: 1 };
            let right = semi(r, l, JoinKind::Anti);
            let widen = |s: Sub| {
                let mut exprs = vec![col(&s.plan, 0)];
                let mut columns = vec![s.columns()[0].clone()];
                for n in &labels {
                    let e = match s.labels.iter().position(|x| x == n) {
                        Some(i) => col(&s.plan, 1 + i),
                        None => X::lit(Value::Null, SqlType::Text),
                    };
                    exprs.push(if e.ty() == SqlType::Text { e } else { X::Cast { expr: Box::new(e), ty: SqlType::Text } });
                    columns.push(PlanColumn::new(n.clone(), SqlType::Text));
                }
                let v = 1 + s.labels.len();
                exprs.push(col(&s.plan, v));
                columns.push(s.columns()[v].clone());
                Plan::Project { input: Box::new(s.plan), exprs, columns }
            };
            let plan = Plan::SetOp { left: Box::new(widen(left)), right: Box::new(widen(right)), kind: SetOpKind::Union, all: true };
            Sub { plan, labels, fields: 1 }
        }
    }
}
