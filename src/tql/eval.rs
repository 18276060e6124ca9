//! PromQL evaluation over all steps at once: every node yields its whole
//! result (a scalar per step, or series with a value or none per step), and
//! the operators work series by series over those vectors. Semantics are
//! Prometheus's (v3): lookback and range windows are left-open
//! `(t - d, t]`, a staleness marker ends a series, label matching ignores
//! the metric name (weir's results carry none).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Instant, UNIX_EPOCH};

use promql_parser::label::Labels as PLabels;
use promql_parser::parser::token::*;
use promql_parser::parser::{
    AggregateExpr, AtModifier, BinaryExpr, Expr, LabelModifier, Offset, SubqueryExpr, VectorMatchCardinality, VectorSelector,
};

use super::args::Range;
use super::load::{self, is_stale, Labels, Raw, FIELD_LABEL};
use crate::bail;
use crate::error::Result;
use crate::exec::promql::ValueOp;
use crate::planner::Planner;

/// Steps a subquery may evaluate (its inner range over its step).
pub const SUBQUERY_STEPS_MAX: i64 = 1_000_000;

/// One output series: a value or none at each step.
#[derive(Debug, Clone)]
pub struct Series {
    pub labels: Labels,
    pub vals: Vec<Option<f64>>,
}

/// A range selector's samples and, per step, the time its window ends at.
pub struct Matrix {
    pub series: Vec<Raw>,
    pub range_ms: i64,
    pub ends: Vec<i64>,
}

impl Matrix {
    /// The sample indices of series `s` in step `i`'s window `(end - range, end]`.
    pub fn window(&self, s: usize, i: usize) -> std::ops::Range<usize> {
        let ts = &self.series[s].ts;
        let end = self.ends[i];
        let a = ts.partition_point(|&x| x <= end - self.range_ms);
        let b = ts.partition_point(|&x| x <= end);
        a..b.max(a)
    }
}

pub enum Val {
    Scalar(Vec<f64>),
    Vector(Vec<Series>),
    Str(String),
    Matrix(Matrix),
}

impl Val {
    fn kind(&self) -> &'static str {
        match self {
            Val::Scalar(_) => "scalar",
            Val::Vector(_) => "instant vector",
            Val::Str(_) => "string",
            Val::Matrix(_) => "range vector",
        }
    }
}

pub struct Evaluator<'a> {
    pub planner: &'a Planner<'a>,
    pub range: Range,
    /// The statement's start and end: what `@ start()` / `@ end()` mean,
    /// inside subqueries too (Prometheus's rule).
    bounds: (i64, i64),
    analyze: bool,
    depth: Cell<usize>,
    stats: RefCell<Vec<String>>,
}

fn ms(d: &std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

fn dur(d_ms: i64) -> String {
    promql_parser::util::duration::display_duration(&std::time::Duration::from_millis(d_ms.max(0) as u64))
}

impl<'a> Evaluator<'a> {
    pub fn new(planner: &'a Planner<'a>, range: Range) -> Evaluator<'a> {
        let bounds = (range.start_ms, range.end_ms);
        Evaluator { planner, range, bounds, analyze: false, depth: Cell::new(0), stats: RefCell::new(vec![]) }
    }

    pub fn analyzing(mut self) -> Self {
        self.analyze = true;
        self
    }

    pub fn take_stats(&self) -> Vec<String> {
        std::mem::take(&mut self.stats.borrow_mut())
    }

    pub fn steps(&self) -> usize {
        self.range.steps()
    }

    /// The time a selector reads at for step time `t`: `@` pins it, then
    /// `offset` moves it back.
    fn selector_time(&self, vs: &VectorSelector, t: i64) -> i64 {
        self.modified_time(&vs.at, &vs.offset, t)
    }

    /// A step time moved by an `@` and an `offset` modifier.
    fn modified_time(&self, at: &Option<AtModifier>, offset: &Option<Offset>, t: i64) -> i64 {
        let base = match at {
            None => t,
            Some(AtModifier::Start) => self.bounds.0,
            Some(AtModifier::End) => self.bounds.1,
            Some(AtModifier::At(st)) => match st.duration_since(UNIX_EPOCH) {
                Ok(d) => ms(&d),
                Err(e) => -ms(&e.duration()),
            },
        };
        match offset {
            None => base,
            Some(Offset::Pos(d)) => base - ms(d),
            Some(Offset::Neg(d)) => base + ms(d),
        }
    }

    fn record(&self, line: String) {
        if self.analyze {
            self.stats.borrow_mut().push(format!("{}{line}", "  ".repeat(self.depth.get())));
        }
    }

    /// One line describing a node (EXPLAIN and ANALYZE).
    fn describe(&self, e: &Expr) -> Option<String> {
        Some(match e {
            Expr::Paren(_) => return None,
            Expr::NumberLiteral(n) => format!("PromNumber: {}", n.val),
            Expr::StringLiteral(s) => format!("PromString: {:?}", s.val),
            Expr::VectorSelector(vs) => {
                format!("PromInstantSelector: {vs} lookback={}", dur(self.range.lookback_ms))
            }
            Expr::MatrixSelector(m) => format!("PromRangeSelector: {m}"),
            Expr::Call(c) => format!("PromFunction: {}", c.func.name),
            Expr::Aggregate(a) => {
                let m = match &a.modifier {
                    None => String::new(),
                    Some(LabelModifier::Include(l)) => format!(" by ({})", l.labels.join(", ")),
                    Some(LabelModifier::Exclude(l)) => format!(" without ({})", l.labels.join(", ")),
                };
                format!("PromAggregate: {}{m}", a.op)
            }
            Expr::Binary(b) => {
                let mut s = format!("PromBinary: {}", b.op);
                if let Some(m) = &b.modifier {
                    if m.return_bool {
                        s.push_str(" bool");
                    }
                    match &m.matching {
                        Some(LabelModifier::Include(l)) => s.push_str(&format!(" on ({})", l.labels.join(", "))),
                        Some(LabelModifier::Exclude(l)) => s.push_str(&format!(" ignoring ({})", l.labels.join(", "))),
                        None => {}
                    }
                    match &m.card {
                        VectorMatchCardinality::ManyToOne(l) => s.push_str(&format!(" group_left ({})", l.labels.join(", "))),
                        VectorMatchCardinality::OneToMany(l) => s.push_str(&format!(" group_right ({})", l.labels.join(", "))),
                        _ => {}
                    }
                }
                s
            }
            Expr::Unary(_) => "PromNegate".to_string(),
            Expr::Subquery(_) => "PromSubquery".to_string(),
            Expr::Extension(_) => "PromExtension".to_string(),
        })
    }

    fn children(e: &Expr) -> Vec<&Expr> {
        match e {
            Expr::Paren(p) => vec![&p.expr],
            Expr::Unary(u) => vec![&u.expr],
            Expr::Call(c) => c.args.args.iter().map(|a| a.as_ref()).collect(),
            Expr::Aggregate(a) => a.param.iter().map(|p| p.as_ref()).chain(std::iter::once(a.expr.as_ref())).collect(),
            Expr::Binary(b) => vec![&b.lhs, &b.rhs],
            Expr::Subquery(s) => vec![&s.expr],
            _ => vec![],
        }
    }

    /// EXPLAIN: the PromQL nodes, each selector with the scan plan weir
    /// runs for it (after the rewrites: tag sets and time range pushed).
    pub fn explain(&self, e: &Expr, depth: usize, out: &mut Vec<String>) -> Result<()> {
        let pad = "  ".repeat(depth);
        let mut next = depth;
        if let Some(d) = self.describe(e) {
            out.push(format!("{pad}{d}"));
            next += 1;
        }
        let (vs, range) = match e {
            Expr::VectorSelector(vs) => (Some(vs), self.range.lookback_ms),
            Expr::MatrixSelector(m) => (Some(&m.vs), ms(&m.range)),
            _ => (None, 0),
        };
        if let Some(vs) = vs {
            match load::target(self.planner, vs)? {
                None => out.push(format!("{pad}  EmptyMetric: {}", load::metric_name(vs)?)),
                Some(t) => {
                    let (lo, hi) = self.bounds(vs, range);
                    let plan = load::plan(self.planner, vs, &t, lo, hi)?;
                    for l in self.planner.physical(plan)?.explain() {
                        out.push(format!("{pad}  {l}"));
                    }
                }
            }
        }
        for c in Self::children(e) {
            self.explain(c, next, out)?;
        }
        Ok(())
    }

    /// The `(lo, hi]` a selector reads over all steps.
    fn bounds(&self, vs: &VectorSelector, range_ms: i64) -> (i64, i64) {
        let n = self.steps();
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for i in [0, n - 1] {
            let t = self.selector_time(vs, self.range.ts(i));
            lo = lo.min(t);
            hi = hi.max(t);
        }
        (lo.saturating_sub(range_ms), hi)
    }

    pub fn eval(&self, e: &Expr) -> Result<Val> {
        self.planner.ctx.check()?;
        let desc = if self.analyze { self.describe(e) } else { None };
        let slot = desc.as_ref().map(|_| {
            let mut s = self.stats.borrow_mut();
            s.push(String::new());
            s.len() - 1
        });
        if slot.is_some() {
            self.depth.set(self.depth.get() + 1);
        }
        let started = Instant::now();
        let r = self.eval_inner(e);
        if let (Some(i), Some(d)) = (slot, desc) {
            self.depth.set(self.depth.get() - 1);
            let what = match &r {
                Ok(Val::Vector(v)) => {
                    let samples: usize = v.iter().map(|s| s.vals.iter().filter(|x| x.is_some()).count()).sum();
                    format!("series={} samples={samples}", v.len())
                }
                Ok(Val::Matrix(m)) => {
                    format!("series={} samples={}", m.series.len(), m.series.iter().map(|s| s.ts.len()).sum::<usize>())
                }
                Ok(v) => v.kind().to_string(),
                Err(_) => "error".into(),
            };
            let line = format!("{}{d} ({what}, time={:.3} ms)", "  ".repeat(self.depth.get()), started.elapsed().as_secs_f64() * 1000.0);
            self.stats.borrow_mut()[i] = line;
        }
        r
    }

    fn eval_inner(&self, e: &Expr) -> Result<Val> {
        match e {
            Expr::NumberLiteral(n) => Ok(Val::Scalar(vec![n.val; self.steps()])),
            Expr::StringLiteral(s) => Ok(Val::Str(s.val.clone())),
            Expr::Paren(p) => self.eval(&p.expr),
            Expr::Unary(u) => match self.eval(&u.expr)? {
                Val::Scalar(v) => Ok(Val::Scalar(v.into_iter().map(|x| -x).collect())),
                Val::Vector(mut v) => {
                    for s in &mut v {
                        for x in s.vals.iter_mut().flatten() {
                            *x = -*x;
                        }
                    }
                    Ok(Val::Vector(v))
                }
                other => bail!(DatatypeMismatch, "unary minus needs a scalar or an instant vector, not a {}", other.kind()),
            },
            Expr::VectorSelector(vs) => Ok(Val::Vector(self.select(vs, false)?)),
            Expr::MatrixSelector(m) => {
                let range_ms = ms(&m.range);
                let (lo, hi) = self.bounds(&m.vs, range_ms);
                let (series, rows) = load::load(self.planner, &m.vs, lo, hi, false)?;
                self.record(format!("Scan: {} rows={rows}", load::metric_name(&m.vs)?));
                let ends = (0..self.steps()).map(|i| self.selector_time(&m.vs, self.range.ts(i))).collect();
                Ok(Val::Matrix(Matrix { series, range_ms, ends }))
            }
            Expr::Call(c) => super::funcs::call(self, c),
            Expr::Aggregate(a) => self.aggregate(a),
            Expr::Binary(b) => self.binary(b),
            Expr::Subquery(sq) => self.subquery(sq),
            Expr::Extension(_) => bail!(FeatureNotSupported, "PromQL extensions are not supported"),
        }
    }

    /// An instant selector: the latest sample within the lookback at each
    /// step, none if that sample is a staleness marker; with `timestamps`,
    /// the sample's time in seconds instead of its value (`timestamp()`).
    pub fn select(&self, vs: &VectorSelector, timestamps: bool) -> Result<Vec<Series>> {
        let lookback = self.range.lookback_ms;
        let (lo, hi) = self.bounds(vs, lookback);
        let (raw, rows) = load::load(self.planner, vs, lo, hi, true)?;
        self.record(format!("Scan: {} rows={rows}", load::metric_name(vs)?));
        let times: Vec<i64> = (0..self.steps()).map(|i| self.selector_time(vs, self.range.ts(i))).collect();
        let mut out = Vec::with_capacity(raw.len());
        for r in raw {
            let vals: Vec<Option<f64>> = times
                .iter()
                .map(|&t| {
                    let idx = r.ts.partition_point(|&x| x <= t);
                    if idx == 0 {
                        return None;
                    }
                    let j = idx - 1;
                    if r.ts[j] <= t - lookback || is_stale(r.vals[j]) {
                        return None;
                    }
                    Some(if timestamps { r.ts[j] as f64 / 1000.0 } else { r.vals[j] })
                })
                .collect();
            if vals.iter().any(|v| v.is_some()) {
                out.push(Series { labels: r.labels, vals });
            }
        }
        Ok(out)
    }

    /// A subquery `expr[range:step]`: the inner expression evaluated at
    /// the multiples of the step (the query's step by default) that fall
    /// in some step's window, as a range vector whose windows end at each
    /// step's time (moved by the subquery's `@` and `offset`).
    fn subquery(&self, sq: &SubqueryExpr) -> Result<Val> {
        let range_ms = ms(&sq.range);
        let step_ms = sq.step.as_ref().map(ms).filter(|&s| s > 0).unwrap_or(self.range.step_ms);
        let ends: Vec<i64> = (0..self.steps()).map(|i| self.modified_time(&sq.at, &sq.offset, self.range.ts(i))).collect();
        let lo = ends.iter().copied().min().unwrap_or(0).saturating_sub(range_ms);
        let hi = ends.iter().copied().max().unwrap_or(0);
        let start = lo.div_euclid(step_ms).saturating_add(1).saturating_mul(step_ms);
        let end = hi.div_euclid(step_ms).saturating_mul(step_ms);
        if end < start {
            return Ok(Val::Matrix(Matrix { series: vec![], range_ms, ends }));
        }
        if (end - start) / step_ms >= SUBQUERY_STEPS_MAX {
            bail!(
                ProgramLimitExceeded,
                "a PromQL subquery would evaluate more than {SUBQUERY_STEPS_MAX} steps; use a larger subquery step or a shorter range"
            );
        }
        let inner = Evaluator {
            planner: self.planner,
            range: Range { start_ms: start, end_ms: end, step_ms, lookback_ms: self.range.lookback_ms },
            bounds: self.bounds,
            analyze: self.analyze,
            depth: Cell::new(self.depth.get()),
            stats: RefCell::new(vec![]),
        };
        let v = inner.eval(&sq.expr);
        self.stats.borrow_mut().extend(inner.take_stats());
        let series = match v? {
            Val::Vector(v) => v
                .into_iter()
                .map(|s| {
                    let (mut ts, mut vals) = (Vec::new(), Vec::new());
                    for (i, x) in s.vals.iter().enumerate() {
                        if let Some(x) = x {
                            ts.push(inner.range.ts(i));
                            vals.push(*x);
                        }
                    }
                    Raw { labels: s.labels, ts, vals }
                })
                .collect(),
            other => bail!(DatatypeMismatch, "a subquery needs an instant vector, not a {}", other.kind()),
        };
        Ok(Val::Matrix(Matrix { series, range_ms, ends }))
    }

    pub fn vector(&self, e: &Expr) -> Result<Vec<Series>> {
        match self.eval(e)? {
            Val::Vector(v) => Ok(v),
            other => bail!(DatatypeMismatch, "expected an instant vector, got a {}", other.kind()),
        }
    }

    pub fn scalar(&self, e: &Expr) -> Result<Vec<f64>> {
        match self.eval(e)? {
            Val::Scalar(v) => Ok(v),
            other => bail!(DatatypeMismatch, "expected a scalar, got a {}", other.kind()),
        }
    }

    pub fn string(&self, e: &Expr) -> Result<String> {
        match self.eval(e)? {
            Val::Str(s) => Ok(s),
            other => bail!(DatatypeMismatch, "expected a string, got a {}", other.kind()),
        }
    }

    pub fn matrix(&self, e: &Expr) -> Result<Matrix> {
        match self.eval(e)? {
            Val::Matrix(m) => Ok(m),
            other => bail!(DatatypeMismatch, "expected a range vector, got a {}", other.kind()),
        }
    }

    fn aggregate(&self, a: &AggregateExpr) -> Result<Val> {
        let n = self.steps();
        let op = a.op.id();
        let param = match &a.param {
            Some(p) if op == T_COUNT_VALUES => Some(Val::Str(self.string(p)?)),
            Some(p) => Some(Val::Scalar(self.scalar(p)?)),
            None => None,
        };
        let input = self.vector(&a.expr)?;
        // Groups in order of first appearance.
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let mut groups: Vec<(Labels, Vec<usize>)> = Vec::new();
        for (i, s) in input.iter().enumerate() {
            let g = group_labels(&s.labels, a.modifier.as_ref());
            let at = *index.entry(g.clone()).or_insert_with(|| {
                groups.push((g, vec![]));
                groups.len() - 1
            });
            groups[at].1.push(i);
        }
        let scalar_param = |i: usize| match &param {
            Some(Val::Scalar(v)) => v[i],
            _ => f64::NAN,
        };
        let mut out: Vec<Series> = Vec::new();
        match op {
            T_TOPK | T_BOTTOMK => {
                let mut keep: Vec<Vec<Option<f64>>> = input.iter().map(|_| vec![None; n]).collect();
                for (_, members) in &groups {
                    for i in 0..n {
                        let k = scalar_param(i);
                        if k.is_nan() || k < 1.0 {
                            continue;
                        }
                        let k = k.min(members.len() as f64) as usize;
                        let mut present: Vec<(usize, f64)> = members.iter().filter_map(|&m| input[m].vals[i].map(|v| (m, v))).collect();
                        // NaN sorts last either way, as Prometheus ranks it.
                        present.sort_by(|x, y| {
                            let (a, b) = (x.1, y.1);
                            let o = if op == T_TOPK { b.partial_cmp(&a) } else { a.partial_cmp(&b) };
                            o.unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
                        });
                        for &(m, v) in present.iter().take(k) {
                            keep[m][i] = Some(v);
                        }
                    }
                }
                for (s, vals) in input.into_iter().zip(keep) {
                    if vals.iter().any(|v| v.is_some()) {
                        out.push(Series { labels: s.labels, vals });
                    }
                }
            }
            T_COUNT_VALUES => {
                let Some(Val::Str(label)) = &param else { unreachable!("count_values has a string parameter") };
                let mut index: HashMap<Labels, usize> = HashMap::new();
                for (g, members) in &groups {
                    for i in 0..n {
                        let mut counts: Vec<(String, f64)> = Vec::new();
                        for &m in members {
                            if let Some(v) = input[m].vals[i] {
                                let text = format_value(v);
                                match counts.iter_mut().find(|(t, _)| *t == text) {
                                    Some(c) => c.1 += 1.0,
                                    None => counts.push((text, 1.0)),
                                }
                            }
                        }
                        for (text, c) in counts {
                            let mut l = g.clone();
                            set_label(&mut l, label, &text);
                            let at = *index.entry(l.clone()).or_insert_with(|| {
                                out.push(Series { labels: l, vals: vec![None; n] });
                                out.len() - 1
                            });
                            out[at].vals[i] = Some(c);
                        }
                    }
                }
            }
            _ => {
                for (g, members) in groups {
                    let mut vals = vec![None; n];
                    let mut buf: Vec<f64> = Vec::with_capacity(members.len());
                    for (i, slot) in vals.iter_mut().enumerate() {
                        buf.clear();
                        buf.extend(members.iter().filter_map(|&m| input[m].vals[i]));
                        if buf.is_empty() {
                            continue;
                        }
                        *slot = Some(match op {
                            T_SUM => buf.iter().sum(),
                            T_AVG => buf.iter().sum::<f64>() / buf.len() as f64,
                            T_COUNT => buf.len() as f64,
                            T_GROUP => 1.0,
                            T_MIN => buf.iter().copied().fold(f64::NAN, |m, x| if m.is_nan() || x < m { x } else { m }),
                            T_MAX => buf.iter().copied().fold(f64::NAN, |m, x| if m.is_nan() || x > m { x } else { m }),
                            T_STDDEV => variance(&buf).sqrt(),
                            T_STDVAR => variance(&buf),
                            T_QUANTILE => quantile(scalar_param(i), &mut buf),
                            _ => bail!(FeatureNotSupported, "PromQL aggregation {} is not supported", a.op),
                        });
                    }
                    out.push(Series { labels: g, vals });
                }
            }
        }
        Ok(Val::Vector(out))
    }

    fn binary(&self, b: &BinaryExpr) -> Result<Val> {
        let op = b.op.id();
        let return_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
        let l = self.eval(&b.lhs)?;
        let r = self.eval(&b.rhs)?;
        let comparison = matches!(op, T_EQLC | T_NEQ | T_GTR | T_LSS | T_GTE | T_LTE);
        match (l, r) {
            (Val::Scalar(l), Val::Scalar(r)) => {
                Ok(Val::Scalar(l.iter().zip(&r).map(|(&x, &y)| elem(op, x, y).map(|(v, _)| v)).collect::<Result<_>>()?))
            }
            (Val::Vector(mut v), Val::Scalar(s)) | (Val::Scalar(s), Val::Vector(mut v)) => {
                let swapped = matches!(b.lhs.value_type(), promql_parser::parser::value::ValueType::Scalar);
                for series in &mut v {
                    for (i, slot) in series.vals.iter_mut().enumerate() {
                        let Some(x) = *slot else { continue };
                        let (lv, rv) = if swapped { (s[i], x) } else { (x, s[i]) };
                        let (mut value, keep) = elem(op, lv, rv)?;
                        if comparison && swapped {
                            value = x;
                        }
                        *slot = if return_bool {
                            Some(if keep { 1.0 } else { 0.0 })
                        } else if keep {
                            Some(value)
                        } else {
                            None
                        };
                    }
                }
                v.retain(|s| s.vals.iter().any(|x| x.is_some()));
                Ok(Val::Vector(v))
            }
            (Val::Vector(l), Val::Vector(r)) => match op {
                T_LAND | T_LOR | T_LUNLESS => Ok(Val::Vector(self.set_op(op, b, l, r))),
                _ => Ok(Val::Vector(self.vector_op(op, b, l, r, return_bool)?)),
            },
            (l, r) => bail!(DatatypeMismatch, "binary operator {} does not apply to a {} and a {}", b.op, l.kind(), r.kind()),
        }
    }

    fn set_op(&self, op: u16, b: &BinaryExpr, l: Vec<Series>, r: Vec<Series>) -> Vec<Series> {
        let n = self.steps();
        let matching = b.modifier.as_ref().and_then(|m| m.matching.as_ref());
        let rsig: Vec<Labels> = r.iter().map(|s| signature(&s.labels, matching)).collect();
        let lsig: Vec<Labels> = l.iter().map(|s| signature(&s.labels, matching)).collect();
        // Per signature, the steps at which the other side has a sample.
        let presence = |sigs: &[Labels], side: &[Series]| {
            let mut m: HashMap<Labels, Vec<bool>> = HashMap::new();
            for (sig, s) in sigs.iter().zip(side) {
                let e = m.entry(sig.clone()).or_insert_with(|| vec![false; n]);
                for (i, v) in s.vals.iter().enumerate() {
                    e[i] |= v.is_some();
                }
            }
            m
        };
        let mut out = Vec::new();
        match op {
            T_LAND | T_LUNLESS => {
                let rp = presence(&rsig, &r);
                for (s, sig) in l.into_iter().zip(&lsig) {
                    let p = rp.get(sig);
                    let vals: Vec<Option<f64>> = s
                        .vals
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let there = p.is_some_and(|p| p[i]);
                            if (op == T_LAND) == there {
                                *v
                            } else {
                                None
                            }
                        })
                        .collect();
                    if vals.iter().any(|v| v.is_some()) {
                        out.push(Series { labels: s.labels, vals });
                    }
                }
            }
            _ => {
                let lp = presence(&lsig, &l);
                out.extend(l);
                for (s, sig) in r.into_iter().zip(&rsig) {
                    let p = lp.get(sig);
                    let vals: Vec<Option<f64>> =
                        s.vals.iter().enumerate().map(|(i, v)| if p.is_some_and(|p| p[i]) { None } else { *v }).collect();
                    if vals.iter().any(|v| v.is_some()) {
                        match out.iter_mut().find(|o| o.labels == s.labels) {
                            Some(o) => {
                                for (i, v) in vals.into_iter().enumerate() {
                                    if v.is_some() && o.vals[i].is_none() {
                                        o.vals[i] = v;
                                    }
                                }
                            }
                            None => out.push(Series { labels: s.labels, vals }),
                        }
                    }
                }
            }
        }
        out
    }

    fn vector_op(&self, op: u16, b: &BinaryExpr, l: Vec<Series>, r: Vec<Series>, return_bool: bool) -> Result<Vec<Series>> {
        let n = self.steps();
        let modifier = b.modifier.as_ref();
        let matching = modifier.and_then(|m| m.matching.as_ref());
        let card = modifier.map(|m| m.card.clone()).unwrap_or(VectorMatchCardinality::OneToOne);
        let comparison = matches!(op, T_EQLC | T_NEQ | T_GTR | T_LSS | T_GTE | T_LTE);
        let (many, one, swapped, include) = match &card {
            VectorMatchCardinality::OneToMany(ls) => (&r, &l, true, ls.labels.clone()),
            VectorMatchCardinality::ManyToOne(ls) => (&l, &r, false, ls.labels.clone()),
            _ => (&l, &r, false, vec![]),
        };
        let mut one_by_sig: HashMap<Labels, Vec<usize>> = HashMap::new();
        for (i, s) in one.iter().enumerate() {
            one_by_sig.entry(signature(&s.labels, matching)).or_default().push(i);
        }
        let many_sig: Vec<Labels> = many.iter().map(|s| signature(&s.labels, matching)).collect();
        let one_to_one = matches!(card, VectorMatchCardinality::OneToOne);
        let mut out: Vec<Series> = Vec::new();
        let mut out_index: HashMap<Labels, usize> = HashMap::new();
        let mut result_labels: HashMap<(usize, usize), usize> = HashMap::new();
        let mut seen_many: HashMap<(Labels, usize), usize> = HashMap::new();
        for i in 0..n {
            seen_many.clear();
            for (mi, ms) in many.iter().enumerate() {
                let Some(mv) = ms.vals[i] else { continue };
                let Some(cands) = one_by_sig.get(&many_sig[mi]) else { continue };
                let mut found = None;
                for &c in cands {
                    if one[c].vals[i].is_some() {
                        if found.is_some() {
                            bail!(
                                InvalidParameterValue,
                                "found duplicate series for the match group {} on the {} hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side",
                                fmt_labels(&many_sig[mi]),
                                if swapped { "left" } else { "right" }
                            );
                        }
                        found = Some(c);
                    }
                }
                let Some(oi) = found else { continue };
                if one_to_one {
                    if let Some(prev) = seen_many.insert((many_sig[mi].clone(), i), mi) {
                        if prev != mi {
                            bail!(
                                InvalidParameterValue,
                                "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                            );
                        }
                    }
                }
                let ov = one[oi].vals[i].expect("checked present");
                let (lv, rv) = if swapped { (ov, mv) } else { (mv, ov) };
                let (mut value, keep) = elem(op, lv, rv)?;
                if return_bool {
                    value = if keep { 1.0 } else { 0.0 };
                } else if !keep {
                    continue;
                }
                let _ = comparison;
                let at = match result_labels.get(&(mi, oi)) {
                    Some(&at) => at,
                    None => {
                        let labels = result_metric(&ms.labels, &one[oi].labels, matching, one_to_one, &include);
                        let at = *out_index.entry(labels.clone()).or_insert_with(|| {
                            out.push(Series { labels, vals: vec![None; n] });
                            out.len() - 1
                        });
                        result_labels.insert((mi, oi), at);
                        at
                    }
                };
                if out[at].vals[i].is_some() {
                    bail!(InvalidParameterValue, "vector cannot contain metrics with the same labelset");
                }
                out[at].vals[i] = Some(value);
            }
        }
        Ok(out)
    }
}

/// Prometheus's vectorElemBinop (`exec::promql::ValueOp`): the value and,
/// for comparisons, whether the sample is kept.
pub fn elem(op: u16, l: f64, r: f64) -> Result<(f64, bool)> {
    match value_op(op) {
        Some(o) => Ok(o.apply(l, r)),
        None => bail!(FeatureNotSupported, "PromQL operator is not supported here"),
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

/// The labels of an aggregation's group: `by` keeps the listed ones,
/// `without` drops them; the field label always stays, so each field
/// aggregates alone.
fn group_labels(l: &Labels, m: Option<&LabelModifier>) -> Labels {
    l.iter()
        .filter(|(n, _)| {
            n == FIELD_LABEL
                || match m {
                    None => false,
                    Some(LabelModifier::Include(ls)) => contains(ls, n),
                    Some(LabelModifier::Exclude(ls)) => !contains(ls, n),
                }
        })
        .cloned()
        .collect()
}

fn contains(ls: &PLabels, n: &str) -> bool {
    ls.labels.iter().any(|x| x == n)
}

/// The labels two samples match on.
fn signature(l: &Labels, m: Option<&LabelModifier>) -> Labels {
    group_labels(l, Some(m.unwrap_or(&LabelModifier::Exclude(PLabels { labels: vec![] }))))
}

/// Prometheus's resultMetric (without the metric name, which weir's
/// results do not carry).
fn result_metric(many: &Labels, one: &Labels, m: Option<&LabelModifier>, one_to_one: bool, include: &[String]) -> Labels {
    let mut l: Labels = if one_to_one {
        match m {
            Some(LabelModifier::Include(ls)) => many.iter().filter(|(n, _)| n == FIELD_LABEL || contains(ls, n)).cloned().collect(),
            Some(LabelModifier::Exclude(ls)) => many.iter().filter(|(n, _)| !contains(ls, n)).cloned().collect(),
            None => many.clone(),
        }
    } else {
        many.clone()
    };
    for n in include {
        let v = load::label(one, n).to_string();
        set_label(&mut l, n, &v);
    }
    l
}

/// Set (or, with an empty value, remove) a label, keeping the order.
pub fn set_label(l: &mut Labels, name: &str, value: &str) {
    l.retain(|(n, _)| n != name);
    if !value.is_empty() {
        let at = l.partition_point(|(n, _)| n.as_str() < name);
        l.insert(at, (name.to_string(), value.to_string()));
    }
}

pub fn fmt_labels(l: &Labels) -> String {
    format!("{{{}}}", l.iter().map(|(n, v)| format!("{n}={v:?}")).collect::<Vec<_>>().join(", "))
}

/// Go's strconv.FormatFloat(v, 'f', -1, 64), as count_values prints.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

pub use crate::exec::promql::variance;

/// Prometheus's quantile: linear interpolation between the closest ranks.
pub fn quantile(q: f64, v: &mut [f64]) -> f64 {
    if v.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = v.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let w = rank - rank.floor();
    v[lower as usize] * (1.0 - w) + v[upper as usize] * w
}
