//! PromQL planned into weir's plans: a selector is the metric's table
//! scan (the logical plan of `load::plan`, rewritten as any query is, so
//! label matchers and the time range prune the scan) under
//! `SeriesNormalize` and an instant or range manipulate node
//! (`exec/promql.rs`); a subquery is its inner expression planned over its
//! own steps under the same two nodes; sum / avg / count / min / max are
//! weir's hash aggregate grouped by the step time and the kept labels, the
//! other aggregations `PromNode::Aggregate`; binary operators between two
//! vectors (or a vector and a computed scalar) are hash joins on the step
//! time and the matching labels under `PromNode::Binary`, `and` / `unless`
//! semi / anti joins and `or` their union (several fields: a left join
//! with the other side's counts per field); numbers and `time()` are
//! `PromNode::EmptyMetric`. The result is sorted by the labels, then time,
//! and projected into GreptimeDB's layout (`naming`).
//!
//! May import `planner`, `exec`, `catalog`, `types`, `error` and its
//! siblings; never `sql`, `server` or `flow`.

use std::time::UNIX_EPOCH;

use promql_parser::label::MatchOp;
use promql_parser::parser::token::*;
use promql_parser::parser::value::ValueType;
use promql_parser::parser::{
    AggregateExpr, AtModifier, BinaryExpr, Call, Expr, LabelModifier, Offset, SubqueryExpr, VectorMatchCardinality, VectorSelector,
};

use super::args::Range;
use super::load;
use super::naming::{Col, Layout};
use crate::error::Result;
use crate::exec::expr::Expr as X;
use crate::exec::plan::{AggCall, AggFunc, JoinKind, Plan, PlanColumn, SetOpKind, SortKey};
use crate::exec::promql::{Check, Generated, Grid, InstantFn, PromAgg, PromNode, RangeFn, Relabel, ValueMap, ValueOp};
use crate::planner::Planner;
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// Steps a subquery may evaluate (its inner range over its step).
pub const SUBQUERY_STEPS_MAX: i64 = 1_000_000;

/// A planned sub-expression: columns `(time, labels… (text), one float8
/// value per field)`; a scalar has no labels and a row at every step.
struct Sub {
    plan: Plan,
    labels: Vec<String>,
    fields: usize,
    scalar: bool,
}

impl Sub {
    fn columns(&self) -> &[PlanColumn] {
        self.plan.columns()
    }
}

/// What the planning of one (sub)query knows: its steps, and the
/// statement's start and end (what `@ start()` / `@ end()` mean, inside
/// subqueries too).
struct Cx<'a> {
    planner: &'a Planner<'a>,
    range: Range,
    bounds: (i64, i64),
}

impl Cx<'_> {
    fn grid(&self) -> Grid {
        Grid { start_ms: self.range.start_ms, step_ms: self.range.step_ms, steps: self.range.steps() }
    }
}

fn col(p: &Plan, i: usize) -> X {
    X::Column { index: i, ty: p.columns()[i].ty }
}

fn ms(d: &std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

fn text_lit(s: &str) -> X {
    X::lit(Value::Text(s.to_string()), SqlType::Text)
}

fn null_text() -> X {
    X::lit(Value::Null, SqlType::Text)
}

/// `(time, labels…, values…)` columns.
fn sub_columns(labels: &[String], fields: usize) -> Vec<PlanColumn> {
    let mut c = vec![PlanColumn::new("time", SqlType::Timestamp)];
    c.extend(labels.iter().map(|l| PlanColumn::new(l.clone(), SqlType::Text)));
    c.extend((0..fields).map(|i| PlanColumn::new(format!("value{i}"), SqlType::Float8)));
    c
}

fn prom(input: Plan, node: PromNode, columns: Vec<PlanColumn>) -> Plan {
    Plan::Prom { input: Box::new(input), node, columns }
}

/// The plan of `e` over `range` laid out as `layout`.
pub fn plan(planner: &Planner, e: &Expr, range: &Range, layout: &Layout) -> Result<Plan> {
    match e.value_type() {
        ValueType::Matrix => {
            bail!(DatatypeMismatch, "a PromQL range vector result cannot be returned as rows; apply a function such as rate() to it")
        }
        ValueType::String => bail!(FeatureNotSupported, "a PromQL string result cannot be returned as rows"),
        _ => {}
    }
    let cx = Cx { planner, range: range.clone(), bounds: (range.start_ms, range.end_ms) };
    let sub = node(&cx, e)?;
    if sub.fields != layout.values.len().max(1) {
        bail!(
            FeatureNotSupported,
            "this PromQL expression gives {} value columns where {} were expected",
            sub.fields,
            layout.values.len().max(1)
        );
    }
    // A label the result carries that the layout lacks comes last, by name.
    let mut cols = layout.cols.clone();
    let mut extra: Vec<&String> = sub.labels.iter().filter(|l| !cols.contains(&Col::Label((*l).clone()))).collect();
    extra.sort();
    cols.extend(extra.into_iter().map(|l| Col::Label(l.clone())));
    // Sorted by the labels (absent first), then time.
    let mut keys = Vec::new();
    for c in &cols {
        if let Col::Label(l) = c {
            if let Some(i) = sub.labels.iter().position(|x| x == l) {
                keys.push(SortKey { expr: col(&sub.plan, 1 + i), desc: false, nulls_first: true });
            }
        }
    }
    keys.push(SortKey { expr: col(&sub.plan, 0), desc: false, nulls_first: true });
    let sorted = Plan::Sort { input: Box::new(sub.plan), keys, limit: None };
    let columns = super::output::plan_columns(layout, &cols);
    let mut exprs = Vec::with_capacity(columns.len());
    for (c, out) in cols.iter().zip(&columns) {
        let e = match c {
            Col::Time => col(&sorted, 0),
            Col::Label(l) => match sub.labels.iter().position(|x| x == l) {
                Some(i) => col(&sorted, 1 + i),
                None => null_text(),
            },
            Col::Value(i) => col(&sorted, 1 + sub.labels.len() + *i),
        };
        exprs.push(if e.ty() == out.ty { e } else { X::Cast { expr: Box::new(e), ty: out.ty } });
    }
    Ok(Plan::Project { input: Box::new(sorted), exprs, columns })
}

/// No rows, in a sub-expression's columns.
fn empty(labels: Vec<String>, fields: usize) -> Sub {
    let columns = sub_columns(&labels, fields);
    Sub { plan: Plan::Values { rows: vec![], columns }, labels, fields, scalar: false }
}

/// One row without columns: what a node that makes its own rows reads.
fn one_row() -> Plan {
    Plan::Values { rows: vec![vec![null_text()]], columns: vec![PlanColumn::new("one", SqlType::Text)] }
}

/// A scalar made at each step (a number, `time()`).
fn generated(cx: &Cx, value: Generated) -> Sub {
    let node = PromNode::EmptyMetric { grid: cx.grid(), value };
    Sub { plan: prom(one_row(), node, sub_columns(&[], 1)), labels: vec![], fields: 1, scalar: true }
}

fn node(cx: &Cx, e: &Expr) -> Result<Sub> {
    cx.planner.ctx.check()?;
    Ok(match e {
        Expr::NumberLiteral(n) => generated(cx, Generated::Const(n.val.to_bits())),
        Expr::StringLiteral(_) => bail!(FeatureNotSupported, "a PromQL string cannot be used here"),
        Expr::Paren(p) => node(cx, &p.expr)?,
        Expr::VectorSelector(vs) => selector(cx, vs, None, None)?,
        Expr::MatrixSelector(_) | Expr::Subquery(_) => {
            bail!(DatatypeMismatch, "a PromQL range vector cannot be used here; apply a function such as rate() to it")
        }
        Expr::Unary(_) if number(e).is_some() => generated(cx, Generated::Const(number(e).expect("a number").to_bits())),
        Expr::Unary(u) => map(node(cx, &u.expr)?, ValueMap::Neg),
        Expr::Binary(b) => binary(cx, b)?,
        Expr::Call(c) => call(cx, c)?,
        Expr::Aggregate(a) => aggregation(cx, a)?,
        Expr::Extension(_) => bail!(FeatureNotSupported, "PromQL extensions are not supported"),
    })
}

/// A number literal (in parentheses, negated, or arithmetic of numbers).
fn number(e: &Expr) -> Option<f64> {
    match e {
        Expr::NumberLiteral(n) => Some(n.val),
        Expr::Paren(p) => number(&p.expr),
        Expr::Unary(u) => number(&u.expr).map(|v| -v),
        Expr::Binary(b) => {
            let op = value_op(b.op.id())?;
            let (v, keep) = op.apply(number(&b.lhs)?, number(&b.rhs)?);
            if op.is_comparison() {
                // Only `bool` comparisons of numbers parse.
                return Some(if keep { 1.0 } else { 0.0 });
            }
            Some(v)
        }
        _ => None,
    }
}

fn string(e: &Expr) -> Result<String> {
    match e {
        Expr::StringLiteral(s) => Ok(s.val.clone()),
        Expr::Paren(p) => string(&p.expr),
        other => bail!(DatatypeMismatch, "expected a string, got {other}"),
    }
}

/// A function's number argument (only constants are planned).
fn param(e: &Expr, what: &str) -> Result<f64> {
    match number(e) {
        Some(v) => Ok(v),
        None => bail!(FeatureNotSupported, "the {what} parameter must be a number; {e} is not supported"),
    }
}

/// The executor's operator for a PromQL arithmetic or comparison token.
pub fn value_op(op: u16) -> Option<ValueOp> {
    Some(match op {
        T_ADD => ValueOp::Add,
        T_SUB => ValueOp::Sub,
        T_MUL => ValueOp::Mul,
        T_DIV => ValueOp::Div,
        T_MOD => ValueOp::Mod,
        T_POW => ValueOp::Pow,
        T_ATAN2 => ValueOp::Atan2,
        T_EQLC => ValueOp::Eq,
        T_NEQ => ValueOp::Ne,
        T_GTR => ValueOp::Gt,
        T_LSS => ValueOp::Lt,
        T_GTE => ValueOp::Ge,
        T_LTE => ValueOp::Le,
        _ => return None,
    })
}

/// Each value of `s` mapped (`PromNode::Map`).
fn map(s: Sub, m: ValueMap) -> Sub {
    let node = PromNode::Map { tags: s.labels.len(), map: m };
    let columns = node.columns(s.columns());
    Sub { plan: prom(s.plan, node, columns), labels: s.labels, fields: s.fields, scalar: s.scalar }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        other => other,
    }
}

/// The time an `@` modifier pins evaluation to.
fn at_ms(cx: &Cx, at: &Option<AtModifier>) -> Option<i64> {
    Some(match at.as_ref()? {
        AtModifier::Start => cx.bounds.0,
        AtModifier::End => cx.bounds.1,
        AtModifier::At(st) => match st.duration_since(UNIX_EPOCH) {
            Ok(d) => ms(&d),
            Err(e) => -ms(&e.duration()),
        },
    })
}

fn offset_ms(o: &Option<Offset>) -> i64 {
    match o {
        None => 0,
        Some(Offset::Pos(d)) => ms(d),
        Some(Offset::Neg(d)) => -ms(d),
    }
}

/// A selector: scan → SeriesNormalize → instant manipulate (with
/// `timestamps`: the samples' times) or range manipulate.
fn selector(cx: &Cx, vs: &VectorSelector, window: Option<(i64, RangeFn)>, timestamps: Option<()>) -> Result<Sub> {
    let Some(t) = load::target(cx.planner, vs)? else { return Ok(empty(vec![], 1)) };
    let def = &t.table;
    let offset = offset_ms(&vs.offset);
    let at = at_ms(cx, &vs.at);
    let before = window.map(|(r, _)| r).unwrap_or(cx.range.lookback_ms);
    let (first, last) = match at {
        Some(a) => (a, a),
        None => (cx.range.start_ms, cx.range.end_ms),
    };
    let labels: Vec<String> = t.tags.iter().map(|&i| def.columns[i].name.clone()).collect();
    let lo = (first - offset).saturating_sub(before);
    let hi = last - offset;
    if hi <= lo {
        return Ok(empty(labels, t.fields.len()));
    }
    let scan = cx.planner.physical(load::plan(cx.planner, vs, &t, lo, hi)?)?;
    let tags = t.tags.len();
    let normalize = PromNode::SeriesNormalize { tags, offset_ms: offset };
    let columns = normalize.columns(scan.columns());
    let normalized = prom(scan, normalize, columns);
    let grid = cx.grid();
    let node = match window {
        None => {
            PromNode::InstantManipulate { tags, grid, lookback_ms: cx.range.lookback_ms, at_ms: at, timestamps: timestamps.map(|_| offset) }
        }
        Some((range_ms, func)) => PromNode::RangeManipulate { tags, grid, range_ms, func, at_ms: at },
    };
    let columns = node.columns(normalized.columns());
    Ok(Sub { plan: prom(normalized, node, columns), labels, fields: t.fields.len(), scalar: false })
}

/// A range function over a range selector or a subquery.
fn range_call(cx: &Cx, m: &Expr, func: RangeFn) -> Result<Sub> {
    match strip(m) {
        Expr::MatrixSelector(ms_) => selector(cx, &ms_.vs, Some((ms(&ms_.range), func)), None),
        Expr::Subquery(sq) => subquery(cx, sq, func),
        other => bail!(DatatypeMismatch, "expected a range vector, got {other}"),
    }
}

/// A subquery `expr[range:step]` under a range function: the inner
/// expression evaluated at the multiples of the step (the query's step by
/// default) that fall in some step's window, its rows the samples of the
/// windows ending at each step's time (moved by `@` and `offset`).
fn subquery(cx: &Cx, sq: &SubqueryExpr, func: RangeFn) -> Result<Sub> {
    let range_ms = ms(&sq.range);
    let step_ms = sq.step.as_ref().map(ms).filter(|&s| s > 0).unwrap_or(cx.range.step_ms);
    let offset = offset_ms(&sq.offset);
    let at = at_ms(cx, &sq.at);
    let (first, last) = match at {
        Some(a) => (a, a),
        None => (cx.range.start_ms, cx.range.end_ms),
    };
    let lo = (first - offset).saturating_sub(range_ms);
    let hi = last - offset;
    let start = lo.div_euclid(step_ms).saturating_add(1).saturating_mul(step_ms);
    // No inner step in any window: one step past every window.
    let end = hi.div_euclid(step_ms).saturating_mul(step_ms).max(start);
    if (end - start) / step_ms >= SUBQUERY_STEPS_MAX {
        bail!(
            ProgramLimitExceeded,
            "a PromQL subquery would evaluate more than {SUBQUERY_STEPS_MAX} steps; use a larger subquery step or a shorter range"
        );
    }
    let inner_cx = Cx {
        planner: cx.planner,
        range: Range { start_ms: start, end_ms: end, step_ms, lookback_ms: cx.range.lookback_ms },
        bounds: cx.bounds,
    };
    let inner = node(&inner_cx, &sq.expr)?;
    if inner.scalar {
        bail!(DatatypeMismatch, "a subquery needs an instant vector, not a scalar");
    }
    let tags = inner.labels.len();
    let normalize = PromNode::SeriesNormalize { tags, offset_ms: offset };
    let columns = normalize.columns(inner.columns());
    let normalized = prom(inner.plan, normalize, columns);
    let node = PromNode::RangeManipulate { tags, grid: cx.grid(), range_ms, func, at_ms: at };
    let columns = node.columns(normalized.columns());
    Ok(Sub { plan: prom(normalized, node, columns), labels: inner.labels, fields: inner.fields, scalar: false })
}

/// The labels `absent()` gives its result: the selector's equality
/// matchers (a label matched twice, or by another operator, is left out,
/// as Prometheus does), by name.
pub fn absent_labels(vs: &VectorSelector) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for m in &vs.matchers.matchers {
        if m.name == "__name__" || m.name == load::FIELD_LABEL {
            continue;
        }
        out.retain(|(n, _)| *n != m.name);
        if matches!(m.op, MatchOp::Equal) && !seen.contains(&m.name.as_str()) && !m.value.is_empty() {
            out.push((m.name.clone(), m.value.clone()));
        }
        seen.push(&m.name);
    }
    out.sort();
    out
}

/// `absent(v)` / `absent_over_time(m)`: a row at each step without one in `inner`.
fn absent(cx: &Cx, inner: Sub, arg: &Expr) -> Sub {
    let labels = match strip(arg) {
        Expr::VectorSelector(vs) => absent_labels(vs),
        Expr::MatrixSelector(m) => absent_labels(&m.vs),
        _ => vec![],
    };
    let names: Vec<String> = labels.iter().map(|(n, _)| n.clone()).collect();
    let node = PromNode::Absent { grid: cx.grid(), labels };
    Sub { plan: prom(inner.plan, node, sub_columns(&names, 1)), labels: names, fields: 1, scalar: false }
}

fn call(cx: &Cx, c: &Call) -> Result<Sub> {
    let name = c.func.name;
    let args: Vec<&Expr> = c.args.args.iter().map(|a| a.as_ref()).collect();
    if let Some(f) = RangeFn::from_name(name) {
        return range_call(cx, args[0], f);
    }
    Ok(match name {
        "quantile_over_time" => range_call(cx, args[1], RangeFn::QuantileOverTime(param(args[0], "quantile")?.to_bits()))?,
        "predict_linear" => range_call(cx, args[0], RangeFn::PredictLinear(param(args[1], "predict_linear")?.to_bits()))?,
        "double_exponential_smoothing" | "holt_winters" => {
            let sf = param(args[1], "smoothing factor")?;
            let tf = param(args[2], "trend factor")?;
            if !(sf > 0.0 && sf < 1.0) {
                bail!(InvalidParameterValue, "invalid smoothing factor. Expected: 0 < sf < 1, got: {sf:.6}");
            }
            if !(tf > 0.0 && tf < 1.0) {
                bail!(InvalidParameterValue, "invalid trend factor. Expected: 0 < tf < 1, got: {tf:.6}");
            }
            range_call(cx, args[0], RangeFn::DoubleExponentialSmoothing(sf.to_bits(), tf.to_bits()))?
        }
        "mad_over_time" => range_call(cx, args[0], RangeFn::MadOverTime)?,
        "absent_over_time" => {
            let inner = range_call(cx, args[0], RangeFn::CountOverTime)?;
            absent(cx, inner, args[0])
        }
        "absent" => {
            let inner = node(cx, args[0])?;
            absent(cx, inner, args[0])
        }
        "time" => generated(cx, Generated::Time),
        "pi" => generated(cx, Generated::Const(std::f64::consts::PI.to_bits())),
        "vector" => Sub { scalar: false, ..node(cx, args[0])? },
        "scalar" => {
            let inner = node(cx, args[0])?;
            let node = PromNode::Scalar { tags: inner.labels.len(), grid: cx.grid() };
            Sub { plan: prom(inner.plan, node, sub_columns(&[], 1)), labels: vec![], fields: 1, scalar: true }
        }
        "timestamp" => match strip(args[0]) {
            Expr::VectorSelector(vs) => selector(cx, vs, None, Some(()))?,
            _ => map(node(cx, args[0])?, ValueMap::Timestamp),
        },
        "sort" | "sort_desc" => node(cx, args[0])?,
        "label_replace" | "label_join" => label_fn(cx, name, &args)?,
        "histogram_quantile" => {
            let q = param(args[0], "quantile")?;
            let inner = node(cx, args[1])?;
            let Some(le) = inner.labels.iter().position(|l| l == "le") else {
                return Ok(empty(inner.labels, inner.fields));
            };
            let labels: Vec<String> = inner.labels.iter().filter(|l| *l != "le").cloned().collect();
            let node = PromNode::HistogramQuantile { tags: inner.labels.len(), le, q: q.to_bits() };
            let columns = sub_columns(&labels, inner.fields);
            Sub { plan: prom(inner.plan, node, columns), labels, fields: inner.fields, scalar: false }
        }
        "round" | "clamp" | "clamp_min" | "clamp_max" => {
            let nums: Vec<f64> = args[1..].iter().map(|a| param(a, name)).collect::<Result<_>>()?;
            let m = match (name, nums.as_slice()) {
                ("round", []) => ValueMap::Round { to: 1f64.to_bits() },
                ("round", [to]) => ValueMap::Round { to: to.to_bits() },
                ("clamp", [lo, hi]) => ValueMap::Clamp { lo: lo.to_bits(), hi: hi.to_bits(), both: true },
                ("clamp_min", [lo]) => ValueMap::Clamp { lo: lo.to_bits(), hi: f64::NAN.to_bits(), both: false },
                ("clamp_max", [hi]) => ValueMap::Clamp { lo: f64::NAN.to_bits(), hi: hi.to_bits(), both: false },
                _ => bail!(Syntax, "wrong number of arguments to {name}()"),
            };
            map(node(cx, args[0])?, m)
        }
        name if let Some(f) = InstantFn::from_name(name) => {
            if args.is_empty() {
                // year() …: of each step's time.
                map(Sub { scalar: false, ..generated(cx, Generated::Time) }, ValueMap::Func(f))
            } else {
                map(node(cx, args[0])?, ValueMap::Func(f))
            }
        }
        other => bail!(FeatureNotSupported, "PromQL function {other}() is not supported"),
    })
}

/// `label_replace(v, dst, replacement, src, regex)` / `label_join(v, dst, sep, src…)`.
fn label_fn(cx: &Cx, name: &str, args: &[&Expr]) -> Result<Sub> {
    let inner = node(cx, args[0])?;
    let dst = string(args[1])?;
    let pos = |l: &str| inner.labels.iter().position(|x| x == l);
    let how = if name == "label_replace" {
        let regex = string(args[4])?;
        crate::exec::promql::relabel_regex(&regex)?;
        Relabel::Replace { src: pos(&string(args[3])?), regex, replacement: string(args[2])? }
    } else {
        let srcs = args[3..].iter().map(|a| Ok(pos(&string(a)?))).collect::<Result<_>>()?;
        Relabel::Join { srcs, sep: string(args[2])? }
    };
    let mut labels = inner.labels.clone();
    let dst_at = match pos(&dst) {
        Some(i) => i,
        None => {
            labels.push(dst);
            inner.labels.len()
        }
    };
    let node = PromNode::Relabel { tags: inner.labels.len(), dst: dst_at, how };
    let columns = sub_columns(&labels, inner.fields);
    Ok(Sub { plan: prom(inner.plan, node, columns), labels, fields: inner.fields, scalar: false })
}

/// The labels an aggregation keeps (a `by` label the input lacks: None).
fn kept_labels(inner: &Sub, m: Option<&LabelModifier>) -> Vec<(String, Option<usize>)> {
    let names: Vec<String> = match m {
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
    names
        .into_iter()
        .map(|n| {
            let i = inner.labels.iter().position(|x| *x == n);
            (n, i)
        })
        .collect()
}

fn aggregation(cx: &Cx, a: &AggregateExpr) -> Result<Sub> {
    let op = a.op.id();
    let func = match op {
        T_SUM => Some(AggFunc::Sum),
        T_AVG => Some(AggFunc::Avg),
        T_COUNT => Some(AggFunc::Count),
        T_MIN => Some(AggFunc::Min),
        T_MAX => Some(AggFunc::Max),
        _ => None,
    };
    let inner = node(cx, &a.expr)?;
    if let Some(func) = func {
        let fields = inner.fields;
        let s = aggregate(inner, func, a.modifier.as_ref());
        // count of one field of several: SQL's count is 0 where PromQL has no sample.
        return Ok(if func == AggFunc::Count && fields > 1 { map(s, ValueMap::NullIfZero) } else { s });
    }
    let num = || param(a.param.as_deref().ok_or_else(|| err!(Syntax, "{} needs a parameter", a.op))?, &a.op.to_string());
    let agg = match op {
        T_TOPK => PromAgg::TopK(num()?.to_bits()),
        T_BOTTOMK => PromAgg::BottomK(num()?.to_bits()),
        T_QUANTILE => PromAgg::Quantile(num()?.to_bits()),
        T_STDDEV => PromAgg::Stddev,
        T_STDVAR => PromAgg::Stdvar,
        T_GROUP => PromAgg::Group,
        T_COUNT_VALUES => PromAgg::CountValues,
        _ => bail!(FeatureNotSupported, "PromQL aggregation {} is not supported", a.op),
    };
    let mut kept = kept_labels(&inner, a.modifier.as_ref());
    let tags = inner.labels.len();
    if matches!(agg, PromAgg::TopK(_) | PromAgg::BottomK(_)) {
        let node = PromNode::Aggregate { tags, group: kept.iter().map(|k| k.1.map(|i| 1 + i)).collect(), func: agg };
        let columns = inner.columns().to_vec();
        return Ok(Sub { plan: prom(inner.plan, node, columns), labels: inner.labels, fields: inner.fields, scalar: false });
    }
    let fields = inner.fields;
    let mut extra = None;
    if agg == PromAgg::CountValues {
        let label = string(a.param.as_deref().ok_or_else(|| err!(Syntax, "count_values needs a label name"))?)?;
        kept.retain(|k| k.0 != label);
        extra = Some(label);
    }
    let mut labels: Vec<String> = kept.iter().map(|k| k.0.clone()).collect();
    labels.extend(extra);
    let node = PromNode::Aggregate { tags, group: kept.iter().map(|k| k.1.map(|i| 1 + i)).collect(), func: agg };
    let columns = sub_columns(&labels, fields);
    Ok(Sub { plan: prom(inner.plan, node, columns), labels, fields, scalar: false })
}

fn binary(cx: &Cx, b: &BinaryExpr) -> Result<Sub> {
    let op = b.op.id();
    if let Some(v) = number(&Expr::Binary(b.clone())) {
        return Ok(generated(cx, Generated::Const(v.to_bits())));
    }
    if matches!(op, T_LAND | T_LOR | T_LUNLESS) {
        let (l, r) = (node(cx, &b.lhs)?, node(cx, &b.rhs)?);
        // Several fields are series of their own, matched field by field.
        if l.fields != r.fields {
            bail!(FeatureNotSupported, "and / or / unless between metrics with different numbers of fields are not supported");
        }
        return Ok(set_op(op, l, r, b.modifier.as_ref().and_then(|m| m.matching.as_ref())));
    }
    let Some(vop) = value_op(op) else { bail!(FeatureNotSupported, "PromQL operator {} is not supported", b.op) };
    let bool_result = b.modifier.as_ref().is_some_and(|m| m.return_bool);
    // A vector (or scalar) and a number: each value mapped.
    match (number(&b.lhs), number(&b.rhs)) {
        (None, Some(s)) => {
            let m = ValueMap::Scalar { op: vop, scalar: s.to_bits(), scalar_left: false, bool_result };
            return Ok(map(node(cx, &b.lhs)?, m));
        }
        (Some(s), None) => {
            let m = ValueMap::Scalar { op: vop, scalar: s.to_bits(), scalar_left: true, bool_result };
            return Ok(map(node(cx, &b.rhs)?, m));
        }
        _ => {}
    }
    let (l, r) = (node(cx, &b.lhs)?, node(cx, &b.rhs)?);
    join_values(l, r, vop, bool_result, b.modifier.as_ref().map(|m| (&m.matching, &m.card)))
}

/// Two sides' values joined on the step time and their matching labels
/// (none with a scalar side), then `PromNode::Binary`.
fn join_values(
    l: Sub,
    r: Sub,
    op: ValueOp,
    bool_result: bool,
    m: Option<(&Option<LabelModifier>, &VectorMatchCardinality)>,
) -> Result<Sub> {
    let matching = m.and_then(|m| m.0.as_ref());
    let card = m.map(|m| m.1.clone()).unwrap_or(VectorMatchCardinality::OneToOne);
    let scalar_result = l.scalar && r.scalar;
    let keep_right = l.scalar && !r.scalar;
    let fields = l.fields.max(r.fields);
    if l.fields != r.fields && !(l.scalar || r.scalar) {
        bail!(FeatureNotSupported, "binary operators between metrics with different numbers of fields are not supported");
    }
    // many: the side whose labels the result keeps.
    let (swapped, include) = match &card {
        VectorMatchCardinality::OneToMany(ls) => (true, ls.labels.clone()),
        VectorMatchCardinality::ManyToOne(ls) => (false, ls.labels.clone()),
        _ => (l.scalar && !r.scalar, vec![]),
    };
    let grouped = matches!(card, VectorMatchCardinality::OneToMany(_) | VectorMatchCardinality::ManyToOne(_));
    let sig = if l.scalar || r.scalar { vec![] } else { signature(&l, &r, matching) };
    let (many, one) = if swapped { (r, l) } else { (l, r) };
    let mut labels: Vec<String> = if grouped || one.scalar {
        many.labels.clone()
    } else {
        match matching {
            Some(LabelModifier::Include(ls)) => many.labels.iter().filter(|n| ls.labels.contains(n)).cloned().collect(),
            Some(LabelModifier::Exclude(ls)) => many.labels.iter().filter(|n| !ls.labels.contains(n)).cloned().collect(),
            None => many.labels.clone(),
        }
    };
    for n in &include {
        if !labels.contains(n) {
            labels.push(n.clone());
        }
    }
    let (mk, ok) = (match_keys(&many, &sig), match_keys(&one, &sig));
    let many_cols = many.columns().len();
    let mut columns = many.columns().to_vec();
    columns.extend(one.columns().iter().cloned());
    let (many_labels, one_labels) = (many.labels.clone(), one.labels.clone());
    let (many_fields, one_fields) = (many.fields, one.fields);
    let joined = Plan::Join {
        left: Box::new(many.plan),
        right: Box::new(one.plan),
        kind: JoinKind::Inner,
        left_keys: mk,
        right_keys: ok,
        condition: None,
        columns,
    };
    let many_col = |i: usize| col(&joined, i);
    let one_col = |i: usize| col(&joined, many_cols + i);
    let mut exprs = vec![many_col(0)];
    for n in &labels {
        exprs.push(if include.contains(n) {
            match one_labels.iter().position(|x| x == n) {
                Some(i) => one_col(1 + i),
                None => null_text(),
            }
        } else {
            many_col(1 + many_labels.iter().position(|x| x == n).expect("a label of the many side"))
        });
    }
    let many_vals: Vec<X> = (0..fields).map(|f| many_col(1 + many_labels.len() + f.min(many_fields - 1))).collect();
    let one_vals: Vec<X> = (0..fields).map(|f| one_col(1 + one_labels.len() + f.min(one_fields - 1))).collect();
    let (lv, rv) = if swapped { (one_vals, many_vals) } else { (many_vals, one_vals) };
    exprs.extend(lv);
    exprs.extend(rv);
    let mut checks = Vec::new();
    if !scalar_result && !(keep_right || one.scalar) {
        let side = if swapped { "left" } else { "right" };
        let base = exprs.len();
        // The one side's duplicates: a many-side series joined twice.
        for i in 0..many_labels.len() {
            exprs.push(many_col(1 + i));
        }
        checks.push(Check {
            cols: (base..base + many_labels.len()).collect(),
            kept_only: false,
            message: format!(
                "found duplicate series for the match group on the {side} hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side"
            ),
        });
        if grouped {
            checks.push(Check {
                cols: (1..=labels.len()).collect(),
                kept_only: true,
                message: "multiple matches for labels: grouping labels must ensure unique matches".into(),
            });
        } else {
            let base = exprs.len();
            exprs.extend(match_keys_of(&joined, &many_labels, &sig));
            checks.push(Check {
                cols: (base..base + sig.len()).collect(),
                kept_only: true,
                message: "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)".into(),
            });
        }
    }
    let mut pcols = sub_columns(&labels, fields);
    pcols.extend((0..fields).map(|i| PlanColumn::new(format!("right{i}"), SqlType::Float8)));
    while pcols.len() < exprs.len() {
        pcols.push(PlanColumn::new(format!("key{}", pcols.len()), SqlType::Text));
    }
    let exprs: Vec<X> =
        exprs.into_iter().zip(&pcols).map(|(e, c)| if e.ty() == c.ty { e } else { X::Cast { expr: Box::new(e), ty: c.ty } }).collect();
    let projected = Plan::Project { input: Box::new(joined), exprs, columns: pcols };
    let node = PromNode::Binary { tags: labels.len(), fields, op, bool_result, keep_right, checks };
    Ok(Sub { plan: prom(projected, node, sub_columns(&labels, fields)), labels, fields, scalar: scalar_result })
}

/// The signature labels of the many side's columns in a joined plan.
fn match_keys_of(p: &Plan, labels: &[String], sig: &[String]) -> Vec<X> {
    sig.iter()
        .map(|n| match labels.iter().position(|x| x == n) {
            Some(i) => X::Func { name: "coalesce".into(), args: vec![col(p, 1 + i), text_lit("")], ty: SqlType::Text },
            None => text_lit(""),
        })
        .collect()
}

/// An aggregation: grouped by the step time and the kept labels (a `by`
/// label the input lacks is absent), each field aggregated alone.
fn aggregate(inner: Sub, func: AggFunc, m: Option<&LabelModifier>) -> Sub {
    let kept = kept_labels(&inner, m);
    let cols = inner.columns().to_vec();
    let mut group_by = vec![col(&inner.plan, 0)];
    let mut columns = vec![cols[0].clone()];
    for (l, i) in &kept {
        match i {
            Some(i) => group_by.push(col(&inner.plan, 1 + i)),
            None => group_by.push(null_text()),
        }
        columns.push(PlanColumn::new(l.clone(), SqlType::Text));
    }
    let kept: Vec<String> = kept.into_iter().map(|k| k.0).collect();
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
    Sub { plan, labels: kept, fields, scalar: false }
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

/// Per step and signature, how many samples of each field `s` has
/// (`(time, signature keys…, count per field)`).
fn presence(s: Sub, sig: &[String]) -> Plan {
    let group_by = match_keys(&s, sig);
    let first = 1 + s.labels.len();
    let mut columns = vec![PlanColumn::new("time", SqlType::Timestamp)];
    columns.extend(sig.iter().map(|n| PlanColumn::new(n.clone(), SqlType::Text)));
    columns.extend((0..s.fields).map(|f| PlanColumn::new(format!("count{f}"), SqlType::Int8)));
    let aggs = (0..s.fields)
        .map(|f| AggCall { func: AggFunc::Count, args: vec![col(&s.plan, first + f)], distinct: false, filter: None, ty: SqlType::Int8 })
        .collect();
    Plan::Aggregate { input: Box::new(s.plan), group_by, aggs, columns }
}

/// Several fields: each field of `keep` where `other` has (IfPresent) or
/// lacks (IfAbsent) that field at the same step and signature, through a
/// left join with `other`'s counts.
fn masked(keep: Sub, other: Sub, sig: &[String], op: ValueOp) -> Sub {
    let fields = keep.fields;
    let counts = presence(other, sig);
    let right_keys = (0..1 + sig.len()).map(|i| col(&counts, i)).collect();
    let left_keys = match_keys(&keep, sig);
    let nkeep = keep.columns().len();
    let mut columns = keep.columns().to_vec();
    columns.extend(counts.columns().iter().cloned());
    let labels = keep.labels;
    let joined = Plan::Join {
        left: Box::new(keep.plan),
        right: Box::new(counts),
        kind: JoinKind::Left,
        left_keys,
        right_keys,
        condition: None,
        columns,
    };
    let mut exprs: Vec<X> = (0..nkeep).map(|i| col(&joined, i)).collect();
    for f in 0..fields {
        let c = X::Func {
            name: "coalesce".into(),
            args: vec![col(&joined, nkeep + 1 + sig.len() + f), X::lit(Value::Int(0), SqlType::Int8)],
            ty: SqlType::Int8,
        };
        exprs.push(X::Cast { expr: Box::new(c), ty: SqlType::Float8 });
    }
    let mut pcols = sub_columns(&labels, fields);
    pcols.extend((0..fields).map(|f| PlanColumn::new(format!("count{f}"), SqlType::Float8)));
    let exprs =
        exprs.into_iter().zip(&pcols).map(|(e, c)| if e.ty() == c.ty { e } else { X::Cast { expr: Box::new(e), ty: c.ty } }).collect();
    let projected = Plan::Project { input: Box::new(joined), exprs, columns: pcols };
    let node = PromNode::Binary { tags: labels.len(), fields, op, bool_result: false, keep_right: false, checks: vec![] };
    Sub { plan: prom(projected, node, sub_columns(&labels, fields)), labels, fields, scalar: false }
}

/// `and` / `unless`: the left side's rows with (semi join) or without
/// (anti join) a right-side sample of the same signature at that step;
/// `or`: the left side's rows, then the right side's without a left-side
/// sample of the same signature at that step (anti join), as one union.
/// With several fields, each field is a series of its own: a left join
/// with the other side's counts per field (`masked`).
fn set_op(op: u16, l: Sub, r: Sub, m: Option<&LabelModifier>) -> Sub {
    let sig = signature(&l, &r, m);
    let fields = l.fields;
    let semi = |a: Sub, b: Sub, kind: JoinKind| {
        if fields > 1 {
            return masked(a, b, &sig, if kind == JoinKind::Semi { ValueOp::IfPresent } else { ValueOp::IfAbsent });
        }
        let columns = a.columns().to_vec();
        let (left_keys, right_keys) = (match_keys(&a, &sig), match_keys(&b, &sig));
        Sub {
            plan: Plan::Join { left: Box::new(a.plan), right: Box::new(b.plan), kind, left_keys, right_keys, condition: None, columns },
            labels: a.labels,
            fields: 1,
            scalar: false,
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
            let left = Sub { plan: l.plan.clone(), labels: l.labels.clone(), fields, scalar: false };
            let right = semi(r, l, JoinKind::Anti);
            let widen = |s: Sub| {
                let mut exprs = vec![col(&s.plan, 0)];
                let mut columns = vec![s.columns()[0].clone()];
                for n in &labels {
                    let e = match s.labels.iter().position(|x| x == n) {
                        Some(i) => col(&s.plan, 1 + i),
                        None => null_text(),
                    };
                    exprs.push(if e.ty() == SqlType::Text { e } else { X::Cast { expr: Box::new(e), ty: SqlType::Text } });
                    columns.push(PlanColumn::new(n.clone(), SqlType::Text));
                }
                for f in 0..fields {
                    let v = 1 + s.labels.len() + f;
                    let e = col(&s.plan, v);
                    exprs.push(if e.ty() == SqlType::Float8 { e } else { X::Cast { expr: Box::new(e), ty: SqlType::Float8 } });
                    columns.push(PlanColumn::new(format!("value{f}"), SqlType::Float8));
                }
                Plan::Project { input: Box::new(s.plan), exprs, columns }
            };
            let plan = Plan::SetOp { left: Box::new(widen(left)), right: Box::new(widen(right)), kind: SetOpKind::Union, all: true };
            Sub { plan, labels, fields, scalar: false }
        }
    }
}
