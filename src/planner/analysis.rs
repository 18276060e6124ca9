//! Plan analysis for the stages after planning (flows, incremental
//! evaluation): where each output column comes from, the time window over
//! a table's time index, the group keys of an aggregation, each
//! aggregate's split into partial state / merge / final, whether a plan is
//! append-only and how volatile its functions are.
//!
//! Everything here reads plans and bound expressions, the logical plan
//! (what flows will rewrite) and exec's physical plan alike through
//! [`PlanNode`]; nothing looks at SQL text or debug output. May import
//! `planner::logical`, `exec` (plans, expressions), `storage` (through
//! scans' region descriptors), `types` and `error`; never `sql` or
//! `server`.

use chrono::{Datelike, NaiveDate};

use super::logical::LogicalPlan;
use crate::exec::expr::{cast_array, scalar_array, BinOp, Expr};
use crate::exec::plan::{AggCall, AggFunc, JoinKind, Plan, SetOpKind};
use crate::types::{value_at, SqlType, Value};

/// What a column of a scanned table is to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnRole {
    TimeIndex,
    /// A primary-key column.
    Tag,
    Field,
}

/// A table column that an output column of a plan passes on unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceColumn {
    pub table: String,
    pub column: String,
    pub role: ColumnRole,
}

/// One plan node as the analyses see it; [`PlanNode`] turns the logical
/// and the physical plan into this.
pub enum Node<'a, P: ?Sized> {
    /// A table scan: the source of each output column.
    Scan(Vec<Option<SourceColumn>>),
    /// Rows made without reading a table (VALUES, generate_series, memory).
    Rows,
    Filter(&'a P),
    Project(&'a P, &'a [Expr]),
    Aggregate(&'a P, &'a [Expr], &'a [AggCall]),
    /// Window calls append this many columns to the input's.
    Window(&'a P, usize),
    Join(&'a P, &'a P, JoinKind),
    /// `true` when the sort keeps only its first rows (top-k).
    Sort(&'a P, bool),
    Limit(&'a P),
    Distinct(&'a P),
    DistinctOn(&'a P),
    SetOp(&'a P, &'a P, SetOpKind, bool),
    /// WITH RECURSIVE: the anchor and the recursive term (which reads the
    /// working table, a `Rows` node).
    Recursive(&'a P, &'a P),
}

/// A plan the analyses can read: the logical plan and exec's physical plan.
pub trait PlanNode {
    fn node(&self) -> Node<'_, Self>;
    /// The expressions this node evaluates itself (not its inputs').
    fn own_exprs(&self) -> Vec<&Expr>;
    fn width(&self) -> usize;
}

fn role(time_index: Option<usize>, primary_key: &[usize], i: usize) -> ColumnRole {
    if time_index == Some(i) {
        ColumnRole::TimeIndex
    } else if primary_key.contains(&i) {
        ColumnRole::Tag
    } else {
        ColumnRole::Field
    }
}

impl PlanNode for Plan {
    fn node(&self) -> Node<'_, Plan> {
        match self {
            Plan::Scan { regions, request, columns } => {
                let Some(region) = regions.0.first() else { return Node::Scan(vec![None; columns.len()]) };
                let desc = &region.desc;
                Node::Scan(
                    (0..columns.len())
                        .map(|j| {
                            let i = match &request.projection {
                                Some(p) => *p.get(j)?,
                                None => j,
                            };
                            let field = desc.schema.fields().get(i)?;
                            let role = role(desc.time_index, &desc.primary_key, i);
                            Some(SourceColumn { table: desc.table_name.clone(), column: field.name().clone(), role })
                        })
                        .collect(),
                )
            }
            // PromQL's operators compute their rows (times and values) from the input's.
            Plan::Memory { .. } | Plan::Values { .. } | Plan::Series { .. } | Plan::WorkTable { .. } | Plan::Prom { .. } => Node::Rows,
            Plan::Filter { input, .. } => Node::Filter(input),
            Plan::Project { input, exprs, .. } => Node::Project(input, exprs),
            // Input columns, then computed ones, like a window node.
            Plan::ProjectSet { input, srfs, .. } => Node::Window(input, srfs.iter().map(|c| c.out.len()).sum()),
            Plan::Aggregate { input, group_by, aggs, .. } => Node::Aggregate(input, group_by, aggs),
            Plan::Window { input, calls, .. } => Node::Window(input, calls.len()),
            Plan::Join { left, right, kind, .. } => Node::Join(left, right, *kind),
            Plan::Sort { input, limit, .. } => Node::Sort(input, limit.is_some()),
            Plan::Limit { input, .. } => Node::Limit(input),
            Plan::Distinct { input } => Node::Distinct(input),
            Plan::DistinctOn { input, .. } => Node::DistinctOn(input),
            // The aggregation's own rows (a top-k above takes the same ones).
            Plan::NarrowedAggregate { input, .. } => Node::Filter(input),
            Plan::SetOp { left, right, kind, all } => Node::SetOp(left, right, *kind, *all),
            Plan::RecursiveUnion { anchor, recursive, .. } => Node::Recursive(anchor, recursive),
        }
    }

    fn own_exprs(&self) -> Vec<&Expr> {
        let mut out: Vec<&Expr> = Vec::new();
        match self {
            Plan::Scan { .. }
            | Plan::Memory { .. }
            | Plan::Limit { .. }
            | Plan::Distinct { .. }
            | Plan::SetOp { .. }
            | Plan::RecursiveUnion { .. }
            | Plan::WorkTable { .. }
            | Plan::Prom { .. }
            | Plan::NarrowedAggregate { .. } => {}
            Plan::Values { rows, .. } => out.extend(rows.iter().flatten()),
            Plan::Series { args, .. } => out.extend(args),
            Plan::Filter { predicate, .. } => out.push(predicate),
            Plan::Project { exprs, .. } => out.extend(exprs),
            Plan::ProjectSet { srfs, .. } => srfs.iter().for_each(|c| out.extend(&c.args)),
            Plan::Aggregate { group_by, aggs, .. } => {
                out.extend(group_by);
                for a in aggs {
                    out.extend(&a.args);
                    out.extend(a.filter.as_ref());
                }
            }
            Plan::Sort { keys, .. } => out.extend(keys.iter().map(|k| &k.expr)),
            Plan::Window { calls, .. } => {
                for c in calls {
                    out.extend(&c.args);
                    out.extend(&c.partition_by);
                    out.extend(c.order_by.iter().map(|k| &k.expr));
                }
            }
            Plan::Join { left_keys, right_keys, condition, .. } => {
                out.extend(left_keys);
                out.extend(right_keys);
                out.extend(condition.as_ref());
            }
            Plan::DistinctOn { keys, .. } => out.extend(keys),
        }
        out
    }

    fn width(&self) -> usize {
        self.columns().len()
    }
}

impl PlanNode for LogicalPlan {
    fn node(&self) -> Node<'_, LogicalPlan> {
        match self {
            LogicalPlan::Scan(s) => Node::Scan(
                (0..s.columns.len())
                    .map(|j| {
                        let i = s.table_column(j);
                        let c = s.table.columns.get(i)?;
                        let role = role(s.table.time_index, &s.table.primary_key, i);
                        Some(SourceColumn { table: s.table.name.clone(), column: c.name.clone(), role })
                    })
                    .collect(),
            ),
            LogicalPlan::Memory { .. } | LogicalPlan::Values { .. } | LogicalPlan::Series { .. } | LogicalPlan::WorkTable { .. } => {
                Node::Rows
            }
            LogicalPlan::Filter { input, .. } => Node::Filter(input),
            LogicalPlan::Project { input, exprs, .. } => Node::Project(input, exprs),
            LogicalPlan::ProjectSet { input, srfs, .. } => Node::Window(input, srfs.iter().map(|c| c.out.len()).sum()),
            LogicalPlan::Aggregate { input, group_by, aggs, .. } => Node::Aggregate(input, group_by, aggs),
            LogicalPlan::Window { input, calls, .. } => Node::Window(input, calls.len()),
            LogicalPlan::Join { left, right, kind, .. } => Node::Join(left, right, *kind),
            LogicalPlan::Sort { input, fetch, .. } => Node::Sort(input, fetch.is_some()),
            LogicalPlan::Limit { input, .. } => Node::Limit(input),
            LogicalPlan::Distinct { input } => Node::Distinct(input),
            LogicalPlan::DistinctOn { input, .. } => Node::DistinctOn(input),
            LogicalPlan::SetOp { left, right, kind, all } => Node::SetOp(left, right, *kind, *all),
            LogicalPlan::RecursiveUnion { anchor, recursive, .. } => Node::Recursive(anchor, recursive),
        }
    }

    fn own_exprs(&self) -> Vec<&Expr> {
        self.exprs()
    }

    fn width(&self) -> usize {
        self.columns().len()
    }
}

/// For each output column of `plan`, the table column it carries
/// unchanged, if any. Computed columns, aggregates, set operations and
/// rows not read from a table have none.
pub fn source_columns<P: PlanNode + ?Sized>(plan: &P) -> Vec<Option<SourceColumn>> {
    let through = |inner: &[Option<SourceColumn>], e: &Expr| column_of(e).and_then(|i| inner.get(i).cloned().flatten());
    match plan.node() {
        Node::Scan(cols) => cols,
        Node::Filter(input) | Node::Sort(input, _) | Node::Limit(input) | Node::Distinct(input) | Node::DistinctOn(input) => {
            source_columns(input)
        }
        Node::Project(input, exprs) => {
            let inner = source_columns(input);
            exprs.iter().map(|e| through(&inner, e)).collect()
        }
        Node::Aggregate(input, group_by, aggs) => {
            let inner = source_columns(input);
            let mut out: Vec<_> = group_by.iter().map(|e| through(&inner, e)).collect();
            out.extend(aggs.iter().map(|_| None));
            out
        }
        Node::Window(input, calls) => {
            let mut out = source_columns(input);
            out.extend((0..calls).map(|_| None));
            out
        }
        Node::Join(left, right, kind) => {
            let mut out = source_columns(left);
            if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
                out.extend(source_columns(right));
            }
            out
        }
        Node::SetOp(..) | Node::Recursive(..) | Node::Rows => vec![None; plan.width()],
    }
}

/// The input column an expression reads unchanged (a bare column, or a
/// cast between the two timestamp types, which weir stores alike).
fn column_of(e: &Expr) -> Option<usize> {
    match e {
        Expr::Column { index, .. } => Some(*index),
        Expr::Cast { expr, ty } if is_timestamp(*ty) && is_timestamp(expr.ty()) => column_of(expr),
        _ => None,
    }
}

fn is_timestamp(t: SqlType) -> bool {
    matches!(t, SqlType::Timestamp | SqlType::TimestampTz)
}

// ---------------------------------------------------------------------------
// Time windows

/// Which expression defined a time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    /// `date_bin(stride, ts[, origin])`.
    DateBin,
    /// `date_trunc(unit, ts)`.
    DateTrunc,
    /// `time_bucket(stride, ts)`.
    TimeBucket,
    /// `tumble(ts, stride[, origin])` (GreptimeDB's flow window) and
    /// `tumble_start` / `tumble_end`.
    Tumble,
    /// Arithmetic on `extract(epoch from ts)`: `floor(e / n) * n`,
    /// `floor(e / n)`, `e::bigint / n * n`, with `e` optionally scaled
    /// (`* 1000` for milliseconds).
    EpochMath,
}

/// The length of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowWidth {
    Micros(i64),
    /// Calendar months (date_trunc to month, quarter, year, decade, century).
    Months(i32),
}

/// A fixed (tumbling) window over a time index column: every timestamp
/// belongs to exactly one window `[start(ts), end(ts))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeWindow {
    /// The input column holding the time index.
    pub column: usize,
    pub width: WindowWidth,
    /// A window boundary, microseconds since the epoch (UTC).
    pub origin: i64,
    pub kind: WindowKind,
}

impl TimeWindow {
    /// The start of the window holding `ts` (microseconds since the epoch).
    pub fn start(&self, ts: i64) -> i64 {
        match self.width {
            WindowWidth::Micros(w) => self.origin + (ts - self.origin).div_euclid(w) * w,
            WindowWidth::Months(m) => {
                let k = (month_index(ts) - month_index(self.origin)).div_euclid(m as i64);
                month_start(month_index(self.origin) + k * m as i64)
            }
        }
    }

    /// The end (exclusive) of the window holding `ts`.
    pub fn end(&self, ts: i64) -> i64 {
        let s = self.start(ts);
        match self.width {
            WindowWidth::Micros(w) => s + w,
            WindowWidth::Months(m) => month_start(month_index(s) + m as i64),
        }
    }

    /// The starts of the windows holding any timestamp in `[lo, hi]`, in
    /// order: the windows a write with that time range makes dirty.
    pub fn starts_between(&self, lo: i64, hi: i64) -> impl Iterator<Item = i64> + '_ {
        let last = self.start(hi);
        let mut next = (lo <= hi).then(|| self.start(lo));
        std::iter::from_fn(move || {
            let s = next?;
            next = if s < last { Some(self.end(s)) } else { None };
            Some(s)
        })
    }

    /// `column >= from AND column < to`, over the window's input column of
    /// type `ty` (timestamp or timestamptz), where `from` is the start of
    /// the window holding `first` and `to` the end of the one holding
    /// `last`: the filter that recomputes those windows from their rows.
    pub fn filter(&self, first: i64, last: i64, ty: SqlType) -> Expr {
        let column = Expr::Column { index: self.column, ty };
        let bound = |op, t| binary(op, column.clone(), lit(Value::Timestamp(t), ty), SqlType::Bool);
        binary(BinOp::And, bound(BinOp::GtEq, self.start(first)), bound(BinOp::Lt, self.end(last)), SqlType::Bool)
    }
}

/// Months since 0000-01 of the month holding `ts`.
fn month_index(ts: i64) -> i64 {
    let d = chrono::DateTime::from_timestamp_micros(ts).map(|d| d.naive_utc().date()).unwrap_or_default();
    d.year() as i64 * 12 + d.month0() as i64
}

/// Microseconds since the epoch of the first instant of a month index.
fn month_start(m: i64) -> i64 {
    NaiveDate::from_ymd_opt(m.div_euclid(12) as i32, m.rem_euclid(12) as u32 + 1, 1)
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_micros())
        .unwrap_or(i64::MAX)
}

const SECOND_US: i64 = 1_000_000;
const DAY_US: i64 = 86_400 * SECOND_US;

/// The time window `expr` computes over the time index, if it computes
/// one. `inputs` are the source columns of the expression's input (see
/// [`source_columns`]); only a column with the `TimeIndex` role counts.
pub fn time_window(expr: &Expr, inputs: &[Option<SourceColumn>]) -> Option<TimeWindow> {
    let is_ti = |i: usize| matches!(inputs.get(i), Some(Some(SourceColumn { role: ColumnRole::TimeIndex, .. })));
    // A cast of the bucket between timestamp types changes nothing.
    let e = match expr {
        Expr::Cast { expr, ty } if is_timestamp(*ty) && is_timestamp(expr.ty()) => expr.as_ref(),
        e => e,
    };
    if let Some(w) = bucket_function(e) {
        return is_ti(w.column).then_some(w);
    }
    let w = epoch_math(e)?;
    is_ti(w.column).then_some(w)
}

/// A hopping window over a time index column (`hop(ts, slide, size[,
/// origin])` as a GROUP BY key): windows `[s, s + size)` start at every
/// `origin + n·slide`, so a timestamp belongs to up to ceil(size / slide)
/// of them. Microseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopWindow {
    /// The input column holding the time index.
    pub column: usize,
    pub slide: i64,
    pub size: i64,
    pub origin: i64,
}

impl HopWindow {
    /// The windows `[start, end)` holding `ts`, newest first.
    pub fn windows(&self, ts: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
        let newest = self.origin.saturating_add((ts.saturating_sub(self.origin)).div_euclid(self.slide).saturating_mul(self.slide));
        (0i64..)
            .map(move |k| newest.saturating_sub(k.saturating_mul(self.slide)))
            .take_while(move |s| ts < s.saturating_add(self.size))
            .map(move |s| (s, s.saturating_add(self.size)))
    }
}

/// The hop window of a GROUP BY key as the binder expands it:
/// `hop(ts, slide, size, origin, k)` with constant slide, size and origin
/// over the time index (see `planner::hop`).
pub fn hop_window(expr: &Expr, inputs: &[Option<SourceColumn>]) -> Option<HopWindow> {
    let Expr::Func { name, args, .. } = expr else { return None };
    let [ts, slide, size, origin, _k] = args.as_slice() else { return None };
    if name != "hop" {
        return None;
    }
    let column = column_of(ts)?;
    if !matches!(inputs.get(column), Some(Some(SourceColumn { role: ColumnRole::TimeIndex, .. }))) {
        return None;
    }
    let micros = |e: &Expr| match const_value(e)? {
        Value::Interval(iv) if iv.months == 0 && iv.approx_micros() > 0 => Some(iv.approx_micros()),
        Value::Text(s) => crate::types::parse_interval(&s).filter(|us| *us > 0),
        _ => None,
    };
    let origin = match const_value(origin)? {
        Value::Timestamp(t) => t,
        Value::Date(d) => d as i64 * DAY_US,
        _ => return None,
    };
    Some(HopWindow { column, slide: micros(slide)?, size: micros(size)?, origin })
}

/// `date_bin`, `date_trunc`, `time_bucket` and `tumble*` over a column,
/// with constant stride and origin, mirroring how exec evaluates them.
fn bucket_function(e: &Expr) -> Option<TimeWindow> {
    let Expr::Func { name, args, .. } = e else { return None };
    let (kind, stride, ts, origin) = match (name.as_str(), args.as_slice()) {
        ("date_bin", [s, t]) => (WindowKind::DateBin, s, t, None),
        ("date_bin", [s, t, o]) => (WindowKind::DateBin, s, t, Some(o)),
        ("time_bucket", [s, t]) => (WindowKind::TimeBucket, s, t, None),
        ("tumble" | "tumble_start" | "tumble_end", [t, s]) => (WindowKind::Tumble, s, t, None),
        ("tumble" | "tumble_start" | "tumble_end", [t, s, o]) => (WindowKind::Tumble, s, t, Some(o)),
        ("date_trunc", [unit, t]) => {
            let Value::Text(unit) = const_value(unit)? else { return None };
            let (width, origin) = trunc_width(&unit.to_ascii_lowercase())?;
            return Some(TimeWindow { column: column_of(t)?, width, origin, kind: WindowKind::DateTrunc });
        }
        _ => return None,
    };
    let width = match const_value(stride)? {
        // exec refuses strides with months (0A000).
        Value::Interval(iv) if iv.months == 0 && iv.approx_micros() > 0 => iv.approx_micros(),
        Value::Text(s) => crate::types::parse_interval(&s).filter(|us| *us > 0)?,
        // exec reads a bare number as seconds.
        Value::Int(s) if s > 0 => s.checked_mul(SECOND_US)?,
        _ => return None,
    };
    let origin = match origin.map(const_value) {
        None => 0,
        Some(Some(Value::Timestamp(t))) => t,
        Some(Some(Value::Date(d))) => d as i64 * DAY_US,
        // exec treats a NULL origin as the epoch.
        Some(Some(Value::Null)) => 0,
        Some(_) => return None,
    };
    Some(TimeWindow { column: column_of(ts)?, width: WindowWidth::Micros(width), origin, kind })
}

/// date_trunc's unit as a window: width and a boundary (weir's timestamps
/// are UTC, so days are fixed; weeks start on Monday; centuries in 1901).
fn trunc_width(unit: &str) -> Option<(WindowWidth, i64)> {
    use WindowWidth::*;
    Some(match unit {
        "microsecond" | "microseconds" => (Micros(1), 0),
        "millisecond" | "milliseconds" => (Micros(1_000), 0),
        "second" | "seconds" => (Micros(SECOND_US), 0),
        "minute" | "minutes" => (Micros(60 * SECOND_US), 0),
        "hour" | "hours" => (Micros(3600 * SECOND_US), 0),
        "day" | "days" => (Micros(DAY_US), 0),
        // 1970-01-05 was a Monday.
        "week" | "weeks" => (Micros(7 * DAY_US), 4 * DAY_US),
        "month" | "months" => (Months(1), 0),
        "quarter" => (Months(3), 0),
        "year" | "years" => (Months(12), 0),
        "decade" => (Months(120), 0),
        "century" => (Months(1200), month_start(1901 * 12)),
        _ => return None,
    })
}

/// A constant: a literal, or a cast or negation of one.
fn const_value(e: &Expr) -> Option<Value> {
    match e {
        Expr::Literal { value, .. } => Some(value.clone()),
        Expr::Cast { expr, ty } => {
            let inner = const_value(expr)?;
            let a = scalar_array(&inner, expr.ty(), 1).ok()?;
            let c = cast_array(&a, expr.ty(), *ty).ok()?;
            Some(value_at(c.as_ref(), 0))
        }
        Expr::Neg(x) => match const_value(x)? {
            Value::Int(i) => i.checked_neg().map(Value::Int),
            Value::Float(f) => Some(Value::Float(-f)),
            _ => None,
        },
        _ => None,
    }
}

fn const_f64(e: &Expr) -> Option<f64> {
    match const_value(e)? {
        Value::Int(i) => Some(i as f64),
        Value::Float(f) => Some(f),
        // A numeric constant travels as its text.
        Value::Text(t) if e.ty() == SqlType::Numeric => t.parse().ok(),
        _ => None,
    }
}

/// `extract(epoch from ts)` times constant factors: (column, microseconds
/// per unit of the result).
fn epoch_units(e: &Expr) -> Option<(usize, f64)> {
    match e {
        Expr::Func { name, args, .. } if (name == "extract" || name == "date_part") && args.len() == 2 => match const_value(&args[0])? {
            Value::Text(f) if f.eq_ignore_ascii_case("epoch") => Some((column_of(&args[1])?, SECOND_US as f64)),
            _ => None,
        },
        Expr::Binary { op: BinOp::Mul, left, right, .. } => {
            let (inner, k) = match (epoch_units(left), epoch_units(right)) {
                (Some(u), None) => (u, const_f64(right)?),
                (None, Some(u)) => (u, const_f64(left)?),
                _ => return None,
            };
            (k > 0.0).then(|| (inner.0, inner.1 / k))
        }
        Expr::Cast { expr, ty } if ty.is_float() || *ty == SqlType::Numeric => epoch_units(expr),
        _ => None,
    }
}

/// The scaled epoch, possibly rounded to an integer by a cast (PostgreSQL
/// rounds float to integer casts, which moves boundaries by half a unit).
fn epoch_value(e: &Expr) -> Option<(usize, f64, bool)> {
    match e {
        Expr::Cast { expr, ty } if ty.is_integer() && (expr.ty().is_float() || expr.ty() == SqlType::Numeric) => {
            let (c, u) = epoch_units(expr)?;
            Some((c, u, true))
        }
        _ => epoch_units(e).map(|(c, u)| (c, u, false)),
    }
}

/// `floor(e / n) * n`, `floor(e / n)`, `(e::int / n) * n` and `e::int / n`.
/// Integer division truncates toward zero, so before 1970 those buckets are
/// not these windows; a rounded epoch exactly half a unit before a
/// boundary rounds to even, which can put it in either window.
fn epoch_math(e: &Expr) -> Option<TimeWindow> {
    let (bucket, n) = match e {
        Expr::Binary { op: BinOp::Mul, left, right, .. } => {
            let n = const_f64(right)?;
            (left.as_ref(), Some(n))
        }
        other => (other, None),
    };
    let (div, integer) = match bucket {
        Expr::Func { name, args, .. } if name == "floor" && args.len() == 1 => (&args[0], false),
        Expr::Binary { op: BinOp::Div, ty, .. } if ty.is_integer() => (bucket, true),
        _ => return None,
    };
    let Expr::Binary { op: BinOp::Div, left, right, .. } = div else { return None };
    let d = const_f64(right)?;
    if n.is_some_and(|n| n != d) || d <= 0.0 {
        return None;
    }
    // Integer division needs the epoch cast to an integer; floor() the epoch itself.
    let (column, unit_us, rounded) = if integer {
        epoch_value(left).filter(|v| v.2)?
    } else {
        let (c, u) = epoch_units(left)?;
        (c, u, false)
    };
    let width = d * unit_us;
    if width < 1.0 || width.fract() != 0.0 {
        return None;
    }
    let origin = if rounded && unit_us >= 2.0 { -(unit_us / 2.0) as i64 } else { 0 };
    Some(TimeWindow { column, width: WindowWidth::Micros(width as i64), origin, kind: WindowKind::EpochMath })
}

// ---------------------------------------------------------------------------
// Group keys and aggregate decomposition

/// What a GROUP BY key is.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupKeyKind {
    /// A time window over the time index.
    TimeWindow(TimeWindow),
    /// A hopping window over the time index (a row is in several).
    HopWindow(HopWindow),
    /// A tag (primary-key) column as is.
    Tag(SourceColumn),
    /// Another table column as is (a field, or the time index itself).
    Column(SourceColumn),
    /// Anything else.
    Expr,
}

#[derive(Debug, Clone)]
pub struct GroupKey {
    /// Position among the GROUP BY keys (and the aggregate's output columns).
    pub index: usize,
    pub expr: Expr,
    pub kind: GroupKeyKind,
}

/// An aggregate split so it can be computed in pieces: `partial` runs over
/// input rows (per chunk, per region, per window delta) and yields the
/// state columns; `merge` combines state columns from several partial
/// results (each is an aggregate over its own state column); `finish`
/// computes the aggregate's value from merged states, where
/// `Column { index: i }` is state column i.
#[derive(Debug, Clone)]
pub struct Decomposition {
    pub partial: Vec<AggCall>,
    pub merge: Vec<AggFunc>,
    pub finish: Expr,
}

impl Decomposition {
    /// The merge step as aggregate calls over state columns that start at
    /// `first` in the merge input.
    pub fn merge_calls(&self, first: usize) -> Vec<AggCall> {
        self.merge
            .iter()
            .zip(&self.partial)
            .enumerate()
            .map(|(i, (f, p))| AggCall {
                func: *f,
                args: vec![Expr::Column { index: first + i, ty: p.ty }],
                distinct: false,
                filter: None,
                ty: p.ty,
            })
            .collect()
    }

    /// `finish` with state column i read from column `first + i`.
    pub fn finish_at(&self, first: usize) -> Expr {
        self.finish.map(0, &|e, d| match e {
            Expr::Column { index, ty } if d == 0 => Some(Expr::Column { index: first + index, ty: *ty }),
            _ => None,
        })
    }
}

/// Why an aggregate cannot be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDecomposable {
    pub reason: String,
}

fn col(index: usize, ty: SqlType) -> Expr {
    Expr::Column { index, ty }
}

fn lit(v: Value, ty: SqlType) -> Expr {
    Expr::Literal { value: v, ty }
}

fn binary(op: BinOp, left: Expr, right: Expr, ty: SqlType) -> Expr {
    Expr::Binary { op, left: Box::new(left), right: Box::new(right), ty }
}

fn cast(e: Expr, ty: SqlType) -> Expr {
    if e.ty() == ty {
        e
    } else {
        Expr::Cast { expr: Box::new(e), ty }
    }
}

/// CASE WHEN cond THEN NULL ELSE value END.
fn null_if(cond: Expr, value: Expr) -> Expr {
    let ty = value.ty();
    Expr::Case { operand: None, whens: vec![(cond, lit(Value::Null, ty))], else_expr: Some(Box::new(value)), ty }
}

/// Split one aggregate call into partial / merge / final.
///
/// `count` → partial count, merged by sum (0 when there was no state);
/// `sum`, `min`, `max`, `bool_and`, `bool_or` → themselves; `avg` → (sum
/// as float8, count), final sum / count; `var_*` / `stddev_*` → (count,
/// sum, sum of squares), final (sumsq - sum²/n) / (n or n - 1), square
/// rooted for stddev, NULL below the minimum count. weir's avg and
/// variance return float8 (PostgreSQL answers numeric for integer input;
/// weir has no numeric type). DISTINCT is fine where duplicates do not
/// matter (min, max, bool_and, bool_or); FILTER stays on the partial step.
pub fn decompose(call: &AggCall) -> std::result::Result<Decomposition, NotDecomposable> {
    let no = |reason: &str| Err(NotDecomposable { reason: reason.to_string() });
    use AggFunc::*;
    let idempotent = matches!(call.func, Min | Max | BoolAnd | BoolOr);
    if call.distinct && !idempotent {
        return no("DISTINCT needs every value seen so far, not a partial state");
    }
    let part = |func: AggFunc, args: Vec<Expr>, ty: SqlType| AggCall { func, args, distinct: false, filter: call.filter.clone(), ty };
    let f8 = SqlType::Float8;
    let arg = || call.args.first().cloned().map(|a| cast(a, f8));
    Ok(match call.func {
        CountStar | Count => Decomposition {
            partial: vec![part(call.func, call.args.clone(), SqlType::Int8)],
            merge: vec![Sum],
            // No partial rows at all: the count is 0, not NULL.
            finish: Expr::Case {
                operand: None,
                whens: vec![(Expr::IsNull { expr: Box::new(col(0, SqlType::Int8)), negated: false }, lit(Value::Int(0), SqlType::Int8))],
                else_expr: Some(Box::new(col(0, SqlType::Int8))),
                ty: call.ty,
            },
        },
        Sum | Min | Max | BoolAnd | BoolOr => {
            let merge = if call.func == Sum { Sum } else { call.func };
            Decomposition { partial: vec![part(call.func, call.args.clone(), call.ty)], merge: vec![merge], finish: col(0, call.ty) }
        }
        Avg => {
            let Some(x) = arg() else { return no("avg needs an argument") };
            let (s, n) = (col(0, f8), col(1, SqlType::Int8));
            let zero = binary(BinOp::Eq, n.clone(), lit(Value::Int(0), SqlType::Int8), SqlType::Bool);
            Decomposition {
                partial: vec![part(Sum, vec![x], f8), part(Count, call.args.clone(), SqlType::Int8)],
                merge: vec![Sum, Sum],
                finish: cast(null_if(zero, binary(BinOp::Div, s, cast(n, f8), f8)), call.ty),
            }
        }
        VarPop | VarSamp | StddevPop | StddevSamp => {
            let Some(x) = arg() else { return no("variance needs an argument") };
            let (n, s, sq) = (cast(col(0, SqlType::Int8), f8), col(1, f8), col(2, f8));
            let sample = matches!(call.func, VarSamp | StddevSamp);
            // (sumsq - sum * sum / n), clamped at 0 against rounding.
            let m2 = binary(BinOp::Sub, sq, binary(BinOp::Div, binary(BinOp::Mul, s.clone(), s, f8), n.clone(), f8), f8);
            let m2 = Expr::Case {
                operand: None,
                whens: vec![(binary(BinOp::Lt, m2.clone(), lit(Value::Float(0.0), f8), SqlType::Bool), lit(Value::Float(0.0), f8))],
                else_expr: Some(Box::new(m2)),
                ty: f8,
            };
            let denom = if sample { binary(BinOp::Sub, n.clone(), lit(Value::Float(1.0), f8), f8) } else { n.clone() };
            let var = binary(BinOp::Div, m2, denom, f8);
            let value =
                if matches!(call.func, StddevPop | StddevSamp) { Expr::Func { name: "sqrt".into(), args: vec![var], ty: f8 } } else { var };
            let min = if sample { 2.0 } else { 1.0 };
            let too_few = binary(BinOp::Lt, n, lit(Value::Float(min), f8), SqlType::Bool);
            Decomposition {
                partial: vec![
                    part(Count, call.args.clone(), SqlType::Int8),
                    part(Sum, vec![x.clone()], f8),
                    part(Sum, vec![binary(BinOp::Mul, x.clone(), x, f8)], f8),
                ],
                merge: vec![Sum, Sum, Sum],
                finish: cast(null_if(too_few, value), call.ty),
            }
        }
        StringAgg => return no("string_agg concatenates in input order; partial strings cannot be merged in that order"),
        User(_) => return no("a user-defined aggregate has no partial state weir can merge"),
        ArrayAgg => return no("array_agg collects in input order; partial arrays cannot be merged in that order"),
        First | Last => return no("first / last merge (time, value) pairs, which no single merge aggregate keeps"),
        MinCount | MaxCount | SumExact => return no("an internal aggregate of incremental flows"),
        OrderedSet(_) => return no("an ordered-set aggregate sorts all of its group's rows; partial sorts are not merged"),
        Regr(_) => return no("the regression aggregates keep a six-value state no single merge aggregate keeps"),
    })
}

/// An aggregation as later stages see it.
#[derive(Debug, Clone)]
pub struct AggregateShape {
    pub group_keys: Vec<GroupKey>,
    /// Each aggregate call with its decomposition (or why there is none).
    pub aggregates: Vec<(AggCall, std::result::Result<Decomposition, NotDecomposable>)>,
    /// Source columns of the aggregation's input.
    pub input_columns: Vec<Option<SourceColumn>>,
}

impl AggregateShape {
    /// The time window key, if exactly one key is a window.
    pub fn time_window(&self) -> Option<&TimeWindow> {
        let mut w = self.group_keys.iter().filter_map(|k| match &k.kind {
            GroupKeyKind::TimeWindow(w) => Some(w),
            _ => None,
        });
        let first = w.next();
        if w.next().is_some() {
            None
        } else {
            first
        }
    }

    /// Every aggregate can be split into partial and merge steps.
    pub fn decomposable(&self) -> bool {
        self.aggregates.iter().all(|(_, d)| d.is_ok())
    }
}

/// The aggregation of a query: the first Aggregate node under the
/// projections, filters (HAVING), windows, sorts, limits and DISTINCT on
/// top of the plan. None when there is none, or a join or set operation
/// comes first. Works on the logical plan (what flows rewrite) and on the
/// physical plan.
pub fn analyze_aggregate<P: PlanNode + ?Sized>(plan: &P) -> Option<AggregateShape> {
    match plan.node() {
        Node::Aggregate(input, group_by, aggs) => {
            let inputs = source_columns(input);
            let group_keys = group_by
                .iter()
                .enumerate()
                .map(|(index, e)| {
                    let kind = if let Some(w) = time_window(e, &inputs) {
                        GroupKeyKind::TimeWindow(w)
                    } else if let Some(h) = hop_window(e, &inputs) {
                        GroupKeyKind::HopWindow(h)
                    } else if let Some(s) = column_of(e).and_then(|i| inputs.get(i).cloned().flatten()) {
                        if s.role == ColumnRole::Tag {
                            GroupKeyKind::Tag(s)
                        } else {
                            GroupKeyKind::Column(s)
                        }
                    } else {
                        GroupKeyKind::Expr
                    };
                    GroupKey { index, expr: e.clone(), kind }
                })
                .collect();
            let aggregates = aggs.iter().map(|a| (a.clone(), decompose(a))).collect();
            Some(AggregateShape { group_keys, aggregates, input_columns: inputs })
        }
        Node::Project(input, _)
        | Node::Filter(input)
        | Node::Sort(input, _)
        | Node::Limit(input)
        | Node::Distinct(input)
        | Node::DistinctOn(input)
        | Node::Window(input, _) => analyze_aggregate(input),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Append-only and volatility

/// Why a plan is not append-only: the first node found that can change or
/// retract rows it produced before when new input rows arrive.
pub fn not_append_only<P: PlanNode + ?Sized>(plan: &P) -> Option<String> {
    let here = match plan.node() {
        Node::Aggregate(..) => Some("an aggregate updates its groups"),
        Node::Distinct(_) | Node::DistinctOn(_) => Some("DISTINCT depends on the rows seen so far"),
        Node::Window(..) => Some("a window function depends on other rows of its partition"),
        Node::Limit(_) => Some("LIMIT / OFFSET depend on the rows seen so far"),
        Node::Sort(_, true) => Some("a top-k sort (ORDER BY … LIMIT) can replace rows it returned"),
        Node::Join(_, _, JoinKind::Left | JoinKind::Right | JoinKind::Full) => {
            Some("an outer join retracts its NULL-padded rows when a match arrives")
        }
        Node::Join(_, _, JoinKind::Semi) => Some("a semi join can emit a row again when a new match arrives"),
        Node::Join(_, _, JoinKind::Anti) => Some("an anti join retracts rows when a match arrives"),
        Node::SetOp(_, _, SetOpKind::Union, true) => None,
        Node::SetOp(..) => Some("UNION, INTERSECT and EXCEPT depend on the rows seen so far"),
        Node::Recursive(..) => Some("a recursive query's rows depend on the rows it produced before"),
        _ => None,
    };
    if let Some(r) = here {
        return Some(r.to_string());
    }
    if plan.own_exprs().iter().any(|e| has_subquery(e)) {
        return Some("a subquery's result can change with its own input".to_string());
    }
    inputs(plan).into_iter().find_map(|p| not_append_only(p))
}

/// New input rows only ever add output rows: no aggregation, DISTINCT,
/// window, LIMIT or top-k, outer / semi / anti join, set operation other
/// than UNION ALL, or subquery.
pub fn is_append_only<P: PlanNode + ?Sized>(plan: &P) -> bool {
    not_append_only(plan).is_none()
}

/// PostgreSQL's function volatility classes, least volatile first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Volatility {
    /// Same arguments, same result, forever.
    Immutable,
    /// Same result within one statement (`now()`, settings, the user).
    Stable,
    /// May differ on every call (`random()`, `clock_timestamp()`).
    Volatile,
}

/// The volatility of a scalar function by name, from the function
/// registry (names it does not know, such as placeholders, are immutable).
pub fn function_volatility(name: &str) -> Volatility {
    use crate::exec::functions::registry::Volatility as V;
    match crate::exec::functions::registry().volatility(name) {
        Some(V::Volatile) => Volatility::Volatile,
        Some(V::Stable) => Volatility::Stable,
        Some(V::Immutable) | None => Volatility::Immutable,
    }
}

/// The most volatile function anywhere in the plan (subqueries included).
pub fn volatility<P: PlanNode + ?Sized>(plan: &P) -> Volatility {
    let mut v = Volatility::Immutable;
    for e in plan.own_exprs() {
        v = v.max(expr_volatility(e));
    }
    for c in inputs(plan) {
        v = v.max(volatility(c));
    }
    v
}

/// The most volatile function in an expression, subquery plans included
/// (logical or physical).
pub fn expr_volatility(e: &Expr) -> Volatility {
    let mut v = Volatility::Immutable;
    e.walk(&mut |x| match x {
        Expr::Func { name, .. } => v = v.max(function_volatility(name)),
        Expr::Subquery { plan, .. } => {
            let any = plan.0.as_any();
            v = v.max(if let Some(p) = any.downcast_ref::<Plan>() {
                volatility(p)
            } else if let Some(p) = any.downcast_ref::<LogicalPlan>() {
                volatility(p)
            } else {
                // A plan of a kind not known here: assume the worst.
                Volatility::Volatile
            })
        }
        _ => {}
    });
    v
}

/// Does the plan call a volatile function?
pub fn has_volatile<P: PlanNode + ?Sized>(plan: &P) -> bool {
    volatility(plan) == Volatility::Volatile
}

/// Whether a result of `plan` may be computed on another thread than the
/// session's (`RowStream::pipelined`): only immutable functions (stable
/// ones read the session's time and settings; volatile ones its order of
/// calls) and no subquery anywhere.
pub fn may_run_elsewhere<P: PlanNode + ?Sized>(plan: &P) -> bool {
    fn no_subquery<P: PlanNode + ?Sized>(p: &P) -> bool {
        !p.own_exprs().into_iter().any(has_subquery) && inputs(p).into_iter().all(no_subquery)
    }
    volatility(plan) == Volatility::Immutable && no_subquery(plan)
}

pub fn has_subquery(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if matches!(x, Expr::Subquery { .. }) {
            found = true
        }
    });
    found
}

pub(crate) fn inputs<P: PlanNode + ?Sized>(plan: &P) -> Vec<&P> {
    match plan.node() {
        Node::Scan(_) | Node::Rows => vec![],
        Node::Filter(i)
        | Node::Project(i, _)
        | Node::Aggregate(i, _, _)
        | Node::Window(i, _)
        | Node::Sort(i, _)
        | Node::Limit(i)
        | Node::Distinct(i)
        | Node::DistinctOn(i) => vec![i],
        Node::Join(l, r, _) | Node::SetOp(l, r, _, _) | Node::Recursive(l, r) => vec![l, r],
    }
}

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;
