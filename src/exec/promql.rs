//! PromQL's series operators (GreptimeDB's SeriesNormalize, SeriesDivide,
//! InstantManipulate, RangeManipulate), run over a table scan's rows.
//!
//! Input rows are `(time, tag columns…, field columns…)`: one series per
//! distinct tag tuple, one value per field (a NULL field value is a
//! staleness marker). `SeriesNormalize` sorts the rows by series, then
//! time, and moves each sample by the selector's `offset`; the manipulate
//! nodes cut the sorted rows into series where the tags change (series
//! divide) and answer at each step of an evaluation grid: the latest sample
//! within the lookback (instant) or a range function over the window
//! `(t - range, t]` (range). Their output is `(step time, tags…, float8
//! value per field)`, a row where any field has a value. Semantics are
//! Prometheus's (v3).
//!
//! May import `storage`, `types`, `error` (like all of `exec`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, TimestampMicrosecondArray, UInt32Array};
use arrow::compute::SortColumn;
use arrow::datatypes::{DataType, Float64Type, Int64Type, SchemaRef};

use super::plan::{arrow_schema, PlanColumn};
#[path = "promql_ops.rs"]
mod ops;
use super::{BatchExecutor, BatchResult, ExecCtx, BATCH_ROWS};
use crate::error::Result;
use ops::{absent, aggregate, binary, empty_metric, histogram_quantile, relabel, scalar};
pub use ops::{format_value, relabel_regex};

/// Prometheus's staleness marker (a NaN with this payload).
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

pub fn is_stale(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// The evaluation steps: `start + i * step` for `i < steps` (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid {
    pub start_ms: i64,
    pub step_ms: i64,
    pub steps: usize,
}

impl Grid {
    pub fn ts(&self, i: usize) -> i64 {
        self.start_ms + i as i64 * self.step_ms
    }
}

/// A range function: one value from a window's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RangeFn {
    Rate,
    Increase,
    Delta,
    Irate,
    Idelta,
    Deriv,
    AvgOverTime,
    SumOverTime,
    MinOverTime,
    MaxOverTime,
    CountOverTime,
    LastOverTime,
    StddevOverTime,
    StdvarOverTime,
    PresentOverTime,
    Resets,
    Changes,
    /// `quantile_over_time(q, …)` (q as its bits).
    QuantileOverTime(u64),
    /// `predict_linear(…, seconds)` (as its bits).
    PredictLinear(u64),
    /// `double_exponential_smoothing(…, sf, tf)` (holt_winters before v3).
    DoubleExponentialSmoothing(u64, u64),
    MadOverTime,
}

const RANGE_FNS: [(&str, RangeFn); 17] = [
    ("rate", RangeFn::Rate),
    ("increase", RangeFn::Increase),
    ("delta", RangeFn::Delta),
    ("irate", RangeFn::Irate),
    ("idelta", RangeFn::Idelta),
    ("deriv", RangeFn::Deriv),
    ("avg_over_time", RangeFn::AvgOverTime),
    ("sum_over_time", RangeFn::SumOverTime),
    ("min_over_time", RangeFn::MinOverTime),
    ("max_over_time", RangeFn::MaxOverTime),
    ("count_over_time", RangeFn::CountOverTime),
    ("last_over_time", RangeFn::LastOverTime),
    ("stddev_over_time", RangeFn::StddevOverTime),
    ("stdvar_over_time", RangeFn::StdvarOverTime),
    ("present_over_time", RangeFn::PresentOverTime),
    ("resets", RangeFn::Resets),
    ("changes", RangeFn::Changes),
];

impl RangeFn {
    pub fn from_name(name: &str) -> Option<RangeFn> {
        by_name(&RANGE_FNS, name)
    }

    pub fn name(self) -> &'static str {
        match self {
            RangeFn::QuantileOverTime(_) => "quantile_over_time",
            RangeFn::PredictLinear(_) => "predict_linear",
            RangeFn::DoubleExponentialSmoothing(..) => "double_exponential_smoothing",
            RangeFn::MadOverTime => "mad_over_time",
            f => name_of(&RANGE_FNS, f),
        }
    }

    /// The function over a non-empty window ending at `end` of `range_ms`:
    /// times (ms, ascending) and values.
    pub fn apply(self, range_ms: i64, end: i64, ts: &[i64], vs: &[f64]) -> Option<f64> {
        let k = vs.len();
        match self {
            RangeFn::Rate => extrapolated_rate(range_ms, end, ts, vs, true, true),
            RangeFn::Increase => extrapolated_rate(range_ms, end, ts, vs, true, false),
            RangeFn::Delta => extrapolated_rate(range_ms, end, ts, vs, false, false),
            RangeFn::Irate | RangeFn::Idelta => {
                if k < 2 {
                    return None;
                }
                let irate = self == RangeFn::Irate;
                let (last, prev) = (vs[k - 1], vs[k - 2]);
                let mut r = if irate && last < prev { last } else { last - prev };
                let dt = ts[k - 1] - ts[k - 2];
                if dt == 0 {
                    return None;
                }
                if irate {
                    r /= dt as f64 / 1000.0;
                }
                Some(r)
            }
            RangeFn::Deriv => {
                if k < 2 {
                    return None;
                }
                Some(linear_regression(ts, vs, ts[0]).0)
            }
            RangeFn::AvgOverTime => Some(vs.iter().sum::<f64>() / k as f64),
            RangeFn::SumOverTime => Some(vs.iter().sum()),
            RangeFn::MinOverTime => Some(vs.iter().copied().fold(f64::NAN, |a, x| if a.is_nan() || x < a { x } else { a })),
            RangeFn::MaxOverTime => Some(vs.iter().copied().fold(f64::NAN, |a, x| if a.is_nan() || x > a { x } else { a })),
            RangeFn::CountOverTime => Some(k as f64),
            RangeFn::PresentOverTime => Some(1.0),
            RangeFn::LastOverTime => vs.last().copied(),
            RangeFn::StddevOverTime => Some(variance(vs).sqrt()),
            RangeFn::StdvarOverTime => Some(variance(vs)),
            RangeFn::Resets => Some(vs.windows(2).filter(|w| w[1] < w[0]).count() as f64),
            RangeFn::Changes => Some(vs.windows(2).filter(|w| w[1] != w[0] && !(w[0].is_nan() && w[1].is_nan())).count() as f64),
            RangeFn::QuantileOverTime(q) => Some(quantile(f64::from_bits(q), &mut vs.to_vec())),
            RangeFn::PredictLinear(d) => {
                if k < 2 {
                    return None;
                }
                let (slope, intercept) = linear_regression(ts, vs, end);
                Some(intercept + slope * f64::from_bits(d))
            }
            RangeFn::DoubleExponentialSmoothing(sf, tf) => double_exponential_smoothing(vs, f64::from_bits(sf), f64::from_bits(tf)),
            RangeFn::MadOverTime => {
                let mut buf = vs.to_vec();
                let median = quantile(0.5, &mut buf);
                let mut dev: Vec<f64> = vs.iter().map(|v| (v - median).abs()).collect();
                Some(quantile(0.5, &mut dev))
            }
        }
    }
}

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

/// Prometheus's double exponential smoothing (holt_winters before v3).
fn double_exponential_smoothing(vs: &[f64], sf: f64, tf: f64) -> Option<f64> {
    if vs.len() < 2 {
        return None;
    }
    let (mut s0, mut s1) = (0.0, vs[0]);
    let mut b = vs[1] - vs[0];
    for (i, &v) in vs.iter().enumerate().skip(1) {
        let x = sf * v;
        if i > 1 {
            b = tf * (s1 - s0) + (1.0 - tf) * b;
        }
        let y = (1.0 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
    }
    Some(s1)
}

/// Prometheus's bucketQuantile over classic buckets `(upper bound, count)`.
pub fn bucket_quantile(q: f64, b: &mut [(f64, f64)]) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    b.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    if !(b[b.len() - 1].0.is_infinite() && b[b.len() - 1].0 > 0.0) {
        return f64::NAN;
    }
    // Coalesce equal upper bounds, then force the counts monotonic.
    let mut c: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for &(u, n) in b.iter() {
        match c.last_mut() {
            Some(last) if last.0 == u => last.1 += n,
            _ => c.push((u, n)),
        }
    }
    let mut max = f64::NEG_INFINITY;
    for x in c.iter_mut() {
        if x.1 < max {
            x.1 = max;
        }
        max = x.1;
    }
    if c.len() < 2 {
        return f64::NAN;
    }
    let observations = c[c.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let b_i = c[..c.len() - 1].partition_point(|x| x.1 < rank);
    if b_i == c.len() - 1 {
        return c[c.len() - 2].0;
    }
    if b_i == 0 && c[0].0 <= 0.0 {
        return c[0].0;
    }
    let (mut start, end, mut count) = (0.0, c[b_i].0, c[b_i].1);
    if b_i > 0 {
        start = c[b_i - 1].0;
        count -= c[b_i - 1].1;
        rank -= c[b_i - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// Population variance.
pub fn variance(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n
}

/// Prometheus's extrapolatedRate: the change over the window (counter
/// resets added back for counters), extrapolated to the window's edges when
/// the first and last samples are within 1.1 average intervals of them
/// (else by half an interval), never below a counter's zero point.
fn extrapolated_rate(range_ms: i64, end: i64, ts: &[i64], vs: &[f64], counter: bool, rate: bool) -> Option<f64> {
    let k = vs.len();
    if k < 2 {
        return None;
    }
    let range_start = end - range_ms;
    let range_end = end;
    let mut result = vs[k - 1] - vs[0];
    if counter {
        let mut last = 0.0;
        for &v in vs {
            if v < last {
                result += last;
            }
            last = v;
        }
    }
    let first_t = ts[0];
    let last_t = ts[k - 1];
    let mut to_start = (first_t - range_start) as f64 / 1000.0;
    let mut to_end = (range_end - last_t) as f64 / 1000.0;
    let sampled = (last_t - first_t) as f64 / 1000.0;
    let avg = sampled / (k - 1) as f64;
    let threshold = avg * 1.1;
    let mut extrapolate_to = sampled;
    if to_start >= threshold {
        to_start = avg / 2.0;
    }
    if counter && result > 0.0 && vs[0] >= 0.0 {
        let to_zero = sampled * (vs[0] / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    extrapolate_to += to_start;
    if to_end >= threshold {
        to_end = avg / 2.0;
    }
    extrapolate_to += to_end;
    let mut factor = extrapolate_to / sampled;
    if rate {
        factor /= range_ms as f64 / 1000.0;
    }
    Some(result * factor)
}

/// Least squares fit of the samples against time (seconds from
/// `intercept_t`): (slope, intercept), as Prometheus computes deriv.
pub fn linear_regression(ts: &[i64], vs: &[f64], intercept_t: i64) -> (f64, f64) {
    let n = vs.len() as f64;
    let init = vs[0];
    if vs.iter().all(|&v| v == init) {
        if init.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, init);
    }
    let (mut sx, mut sy, mut sxy, mut sx2) = (0.0, 0.0, 0.0, 0.0);
    for (&t, &y) in ts.iter().zip(vs) {
        let x = (t - intercept_t) as f64 / 1000.0;
        sx += x;
        sy += y;
        sxy += x * y;
        sx2 += x * x;
    }
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

/// One PromQL series operator; its input's first column is the time, the
/// next `tags` the series' tags, the rest the fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PromNode {
    /// Rows sorted by series, then time; each sample's time moved forward
    /// by `offset_ms` (a selector's `offset`); rows without a time dropped.
    SeriesNormalize { tags: usize, offset_ms: i64 },
    /// At each step, each series' latest sample within `lookback_ms`
    /// (none if it is a staleness marker), read at `at_ms` instead of the
    /// step's time for an `@` modifier; with `timestamps` (`timestamp()`),
    /// the sample's time in seconds less the given offset instead of its value.
    InstantManipulate { tags: usize, grid: Grid, lookback_ms: i64, at_ms: Option<i64>, timestamps: Option<i64> },
    /// At each step, `func` over each series' samples in `(t - range, t]`
    /// (staleness markers dropped), `t` the step's time or `at_ms`.
    RangeManipulate { tags: usize, grid: Grid, range_ms: i64, func: RangeFn, at_ms: Option<i64> },
    /// Each value mapped (an instant function, arithmetic or a comparison
    /// with a number); a row none of whose values is kept is dropped.
    Map { tags: usize, map: ValueMap },
    /// No input series: one row `(step time, value)` per step (numbers,
    /// `time()`).
    EmptyMetric { grid: Grid, value: Generated },
    /// Two sides' values joined on their matching labels: input `(time,
    /// result tags…, left values…, right values…, check columns…)`, output
    /// `(time, tags…, op(left, right) per field)`; a comparison keeps the
    /// left value where it holds (the right one with `keep_right`: a
    /// scalar on the left), with `bool` answers 1 or 0. Each check's
    /// columns must be unique per time (Prometheus's matching errors).
    Binary { tags: usize, fields: usize, op: ValueOp, bool_result: bool, keep_right: bool, checks: Vec<Check> },
    /// An aggregation by the step time and the `group` labels (None: a
    /// `by` label the input lacks, absent) that plain SQL aggregates do not
    /// give; topk / bottomk keep the input's columns.
    Aggregate { tags: usize, group: Vec<Option<usize>>, func: PromAgg },
    /// `histogram_quantile(q, buckets)`: the rows grouped by time and every
    /// label but `le` (tag index), Prometheus's bucketQuantile per group.
    HistogramQuantile { tags: usize, le: usize, q: u64 },
    /// `label_replace` / `label_join` into tag `dst` (`tags` for a new
    /// last one); an empty result is an absent label.
    Relabel { tags: usize, dst: usize, how: Relabel },
    /// `absent()`: `(time, labels…, 1)` at each step without an input row.
    Absent { grid: Grid, labels: Vec<(String, String)> },
    /// `scalar()`: at each step the one sample's value, NaN for none or
    /// several.
    Scalar { tags: usize, grid: Grid },
}

/// The value of an `EmptyMetric` at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generated {
    /// A number (its bits).
    Const(u64),
    /// The step's time in seconds.
    Time,
}

/// Columns whose values must not repeat at one time, and the error if they do.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Check {
    pub cols: Vec<usize>,
    /// Checked over the rows a comparison keeps (else over all).
    pub kept_only: bool,
    pub message: String,
}

/// The aggregations `PromNode::Aggregate` runs (parameters as bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromAgg {
    TopK(u64),
    BottomK(u64),
    Quantile(u64),
    Stddev,
    Stdvar,
    Group,
    /// `count_values`: one row per distinct value (a new last label).
    CountValues,
}

/// How `PromNode::Relabel` makes the new label value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Relabel {
    /// `label_replace`: where `regex` (anchored) matches the source tag's
    /// value, its expansion of `replacement`.
    Replace { src: Option<usize>, regex: String, replacement: String },
    /// `label_join`: the source tags' values joined by `sep`.
    Join { srcs: Vec<Option<usize>>, sep: String },
}

impl PromNode {
    /// EXPLAIN's line.
    pub fn describe(&self) -> String {
        let at = |a: &Option<i64>| a.map(|a| format!(" at: {a} ms")).unwrap_or_default();
        match self {
            PromNode::SeriesNormalize { offset_ms, .. } => format!("PromSeriesNormalize offset: {offset_ms} ms"),
            PromNode::InstantManipulate { grid, lookback_ms, at_ms, timestamps, .. } => {
                format!(
                    "PromInstantManipulate steps: {} step: {} ms lookback: {lookback_ms} ms{}{}",
                    grid.steps,
                    grid.step_ms,
                    at(at_ms),
                    if timestamps.is_some() { " timestamps" } else { "" }
                )
            }
            PromNode::RangeManipulate { grid, range_ms, func, at_ms, .. } => {
                format!(
                    "PromRangeManipulate {} steps: {} step: {} ms range: {range_ms} ms{}",
                    func.name(),
                    grid.steps,
                    grid.step_ms,
                    at(at_ms)
                )
            }
            PromNode::Map { map, .. } => format!("PromMap {}", map.describe()),
            PromNode::EmptyMetric { grid, value } => format!("PromEmptyMetric {value:?} steps: {} step: {} ms", grid.steps, grid.step_ms),
            PromNode::Binary { op, bool_result, .. } => format!("PromBinary {op:?}{}", if *bool_result { " bool" } else { "" }),
            PromNode::Aggregate { func, .. } => format!("PromAggregate {}", func.describe()),
            PromNode::HistogramQuantile { q, .. } => format!("PromHistogramQuantile {}", f64::from_bits(*q)),
            PromNode::Relabel { how, .. } => match how {
                Relabel::Replace { regex, replacement, .. } => format!("PromLabelReplace {regex:?} -> {replacement:?}"),
                Relabel::Join { sep, .. } => format!("PromLabelJoin {sep:?}"),
            },
            PromNode::Absent { .. } => "PromAbsent".into(),
            PromNode::Scalar { .. } => "PromScalar".into(),
        }
    }

    /// The output columns over an input's (the nodes with one shape: the
    /// others' columns are given by whoever plans them).
    pub fn columns(&self, input: &[PlanColumn]) -> Vec<PlanColumn> {
        match self {
            PromNode::SeriesNormalize { .. } => input.to_vec(),
            PromNode::InstantManipulate { tags, .. } | PromNode::RangeManipulate { tags, .. } | PromNode::Map { tags, .. } => input
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let ty = if i == 0 {
                        crate::types::SqlType::Timestamp
                    } else if i <= *tags {
                        c.ty
                    } else {
                        crate::types::SqlType::Float8
                    };
                    PlanColumn { name: c.name.clone(), qualifier: c.qualifier.clone(), ty }
                })
                .collect(),
            _ => input.to_vec(),
        }
    }
}

impl PromAgg {
    fn describe(&self) -> String {
        match self {
            PromAgg::TopK(k) => format!("topk({})", f64::from_bits(*k)),
            PromAgg::BottomK(k) => format!("bottomk({})", f64::from_bits(*k)),
            PromAgg::Quantile(q) => format!("quantile({})", f64::from_bits(*q)),
            other => format!("{other:?}").to_lowercase(),
        }
    }
}

/// Runs a `PromNode`: drains its input on the first pull (every node needs
/// whole series), then hands out the result a batch at a time.
pub struct PromExecutor {
    input: Option<Box<dyn BatchExecutor>>,
    node: PromNode,
    schema: SchemaRef,
    ctx: ExecCtx,
    out: Option<RecordBatch>,
    at: usize,
}

impl PromExecutor {
    pub fn new(input: Box<dyn BatchExecutor>, node: PromNode, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        PromExecutor { input: Some(input), node, schema: arrow_schema(columns), ctx, out: None, at: 0 }
    }

    fn run(&mut self) -> Result<RecordBatch> {
        let mut input = self.input.take().expect("run once");
        let in_schema = input.schema();
        let mut batches = Vec::new();
        loop {
            let r = input.next_batch(BATCH_ROWS)?;
            let drained = r.is_drained;
            let b = r.into_dense()?;
            if b.num_rows() > 0 {
                batches.push(b);
            }
            if drained {
                break;
            }
            self.ctx.check()?;
        }
        let all = super::concat(&self.ctx, &in_schema, &batches)?;
        drop(batches);
        let out = match &self.node {
            PromNode::SeriesNormalize { tags, offset_ms } => normalize(&all, *tags, *offset_ms, &self.schema),
            PromNode::InstantManipulate { tags, grid, lookback_ms, at_ms, timestamps } => {
                manipulate(&all, *tags, grid, *at_ms, &self.schema, &self.ctx, Window::Instant(*lookback_ms, *timestamps))
            }
            PromNode::RangeManipulate { tags, grid, range_ms, func, at_ms } => {
                manipulate(&all, *tags, grid, *at_ms, &self.schema, &self.ctx, Window::Range(*range_ms, *func))
            }
            PromNode::Map { tags, map } => map_values(&all, *tags, *map, &self.schema),
            PromNode::EmptyMetric { grid, value } => empty_metric(grid, *value, &self.schema),
            PromNode::Binary { tags, fields, op, bool_result, keep_right, checks } => {
                binary(&all, *tags, *fields, *op, *bool_result, *keep_right, checks, &self.schema)
            }
            PromNode::Aggregate { tags, group, func } => aggregate(&all, *tags, group, *func, &self.schema),
            PromNode::HistogramQuantile { tags, le, q } => histogram_quantile(&all, *tags, *le, f64::from_bits(*q), &self.schema),
            PromNode::Relabel { tags, dst, how } => relabel(&all, *tags, *dst, how, &self.schema),
            PromNode::Absent { grid, labels } => absent(&all, grid, labels, &self.schema),
            PromNode::Scalar { tags, grid } => scalar(&all, *tags, grid, &self.schema),
        }?;
        self.ctx.check_alloc(out.get_array_memory_size(), "PromQL operator")?;
        Ok(out)
    }
}

impl BatchExecutor for PromExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.out.is_none() {
            self.out = Some(self.run()?);
        }
        let out = self.out.as_ref().expect("computed");
        let n = max_rows.max(1).min(out.num_rows() - self.at);
        let batch = out.slice(self.at, n);
        self.at += n;
        Ok(BatchResult { batch, logical_rows: None, is_drained: self.at >= out.num_rows() })
    }
}

/// The time column as milliseconds.
fn millis(a: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let t = arrow::compute::cast(a, &DataType::Int64)?;
    let t = t.as_primitive::<Int64Type>();
    Ok((0..t.len()).map(|i| (!t.is_null(i)).then(|| t.value(i).div_euclid(1000))).collect())
}

fn normalize(all: &RecordBatch, tags: usize, offset_ms: i64, schema: &SchemaRef) -> Result<RecordBatch> {
    let t = millis(all.column(0))?;
    let keep: Vec<u32> = (0..all.num_rows()).filter(|&i| t[i].is_some()).map(|i| i as u32).collect();
    let mut cols: Vec<ArrayRef> = all.columns().to_vec();
    let moved: TimestampMicrosecondArray = keep.iter().map(|&i| t[i as usize].map(|x| (x + offset_ms) * 1000)).collect();
    let keep = UInt32Array::from(keep);
    for c in cols.iter_mut().skip(1) {
        *c = arrow::compute::take(c.as_ref(), &keep, None)?;
    }
    cols[0] = arrow::compute::cast(&(Arc::new(moved) as ArrayRef), all.column(0).data_type())?;
    let mut keys: Vec<SortColumn> = (1..=tags)
        .map(|i| SortColumn {
            values: cols[i].clone(),
            options: Some(arrow::compute::SortOptions { descending: false, nulls_first: true }),
        })
        .collect();
    keys.push(SortColumn { values: cols[0].clone(), options: None });
    let order = arrow::compute::lexsort_to_indices(&keys, None)?;
    let cols: Vec<ArrayRef> = cols.iter().map(|c| arrow::compute::take(c.as_ref(), &order, None)).collect::<std::result::Result<_, _>>()?;
    Ok(RecordBatch::try_new_with_options(schema.clone(), cols, &arrow::array::RecordBatchOptions::new().with_row_count(Some(order.len())))?)
}

enum Window {
    /// Lookback; with Some(offset) the sample's time (less the offset) in seconds.
    Instant(i64, Option<i64>),
    Range(i64, RangeFn),
}

/// The series of sorted rows: ranges of rows with equal tags.
fn series_ranges(all: &RecordBatch, tags: usize) -> Result<Vec<std::ops::Range<usize>>> {
    if all.num_rows() == 0 {
        return Ok(vec![]);
    }
    if tags == 0 {
        return Ok(vec![0..all.num_rows()]);
    }
    Ok(arrow::compute::partition(&all.columns()[1..=tags])?.ranges())
}

fn manipulate(
    all: &RecordBatch,
    tags: usize,
    grid: &Grid,
    at_ms: Option<i64>,
    schema: &SchemaRef,
    ctx: &ExecCtx,
    w: Window,
) -> Result<RecordBatch> {
    let ts: Vec<i64> = millis(all.column(0))?.into_iter().map(|t| t.unwrap_or(i64::MIN)).collect();
    let fields: Vec<ArrayRef> =
        all.columns()[1 + tags..].iter().map(|c| arrow::compute::cast(c, &DataType::Float64)).collect::<std::result::Result<_, _>>()?;
    let fields: Vec<&Float64Array> = fields.iter().map(|a| a.as_primitive::<Float64Type>()).collect();
    let nf = fields.len();
    let mut out_ts: Vec<i64> = Vec::new();
    let mut out_row: Vec<u32> = Vec::new();
    let mut out_vals: Vec<Vec<Option<f64>>> = vec![Vec::new(); nf];
    let mut row: Vec<Option<f64>> = vec![None; nf];
    // Per field: the series' samples without staleness markers.
    let mut fts: Vec<Vec<i64>> = vec![Vec::new(); nf];
    let mut fvs: Vec<Vec<f64>> = vec![Vec::new(); nf];
    let mut lo: Vec<usize> = vec![0; nf];
    let mut hi: Vec<usize> = vec![0; nf];
    for (n, r) in series_ranges(all, tags)?.into_iter().enumerate() {
        if n % 64 == 0 {
            ctx.check()?;
        }
        let sts = &ts[r.clone()];
        match w {
            Window::Instant(lookback, timestamps) => {
                let mut j = 0usize; // samples at or before the step
                for i in 0..grid.steps {
                    let out_t = grid.ts(i);
                    let t = at_ms.unwrap_or(out_t);
                    while j < sts.len() && sts[j] <= t {
                        j += 1;
                    }
                    if j == 0 || sts[j - 1] <= t - lookback {
                        continue;
                    }
                    let at = r.start + j - 1;
                    let mut any = false;
                    for (f, a) in fields.iter().enumerate() {
                        row[f] = (!a.is_null(at) && !is_stale(a.value(at))).then(|| match timestamps {
                            Some(offset) => (ts[at] - offset) as f64 / 1000.0,
                            None => a.value(at),
                        });
                        any |= row[f].is_some();
                    }
                    if any {
                        out_ts.push(out_t);
                        out_row.push(r.start as u32);
                        for f in 0..nf {
                            out_vals[f].push(row[f]);
                        }
                    }
                }
            }
            Window::Range(range_ms, func) => {
                for f in 0..nf {
                    fts[f].clear();
                    fvs[f].clear();
                    for k in r.clone() {
                        let a = fields[f];
                        if !a.is_null(k) && !is_stale(a.value(k)) {
                            fts[f].push(ts[k]);
                            fvs[f].push(a.value(k));
                        }
                    }
                    lo[f] = 0;
                    hi[f] = 0;
                }
                for i in 0..grid.steps {
                    let out_t = grid.ts(i);
                    let t = at_ms.unwrap_or(out_t);
                    let mut any = false;
                    for f in 0..nf {
                        let st = &fts[f];
                        while hi[f] < st.len() && st[hi[f]] <= t {
                            hi[f] += 1;
                        }
                        while lo[f] < hi[f] && st[lo[f]] <= t - range_ms {
                            lo[f] += 1;
                        }
                        row[f] = if lo[f] < hi[f] { func.apply(range_ms, t, &st[lo[f]..hi[f]], &fvs[f][lo[f]..hi[f]]) } else { None };
                        any |= row[f].is_some();
                    }
                    if any {
                        out_ts.push(out_t);
                        out_row.push(r.start as u32);
                        for f in 0..nf {
                            out_vals[f].push(row[f]);
                        }
                    }
                }
            }
        }
    }
    ctx.check_alloc(out_ts.len() * (16 + 9 * nf), "PromQL manipulate")?;
    let rows = UInt32Array::from(out_row);
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(1 + tags + nf);
    let times: TimestampMicrosecondArray = out_ts.iter().map(|&t| t.checked_mul(1000)).collect();
    cols.push(Arc::new(times));
    for c in &all.columns()[1..=tags] {
        cols.push(arrow::compute::take(c.as_ref(), &rows, None)?);
    }
    for v in out_vals {
        cols.push(Arc::new(Float64Array::from(v)));
    }
    Ok(RecordBatch::try_new_with_options(schema.clone(), cols, &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len())))?)
}

/// PromQL's arithmetic and comparison operators over two sample values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Atan2,
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    /// `and` of one field of several: the left value where the right one
    /// (a count of the other side's samples) is not 0.
    IfPresent,
    /// `unless` / `or`'s right side: the left value where the count is 0.
    IfAbsent,
}

impl ValueOp {
    pub fn is_comparison(self) -> bool {
        matches!(self, ValueOp::Eq | ValueOp::Ne | ValueOp::Gt | ValueOp::Lt | ValueOp::Ge | ValueOp::Le)
    }

    /// Prometheus's vectorElemBinop: the value and, for comparisons,
    /// whether the sample is kept.
    pub fn apply(self, l: f64, r: f64) -> (f64, bool) {
        match self {
            ValueOp::Add => (l + r, true),
            ValueOp::Sub => (l - r, true),
            ValueOp::Mul => (l * r, true),
            ValueOp::Div => (l / r, true),
            ValueOp::Mod => (l % r, true),
            ValueOp::Pow => (l.powf(r), true),
            ValueOp::Atan2 => (l.atan2(r), true),
            ValueOp::Eq => (l, l == r),
            ValueOp::Ne => (l, l != r),
            ValueOp::Gt => (l, l > r),
            ValueOp::Lt => (l, l < r),
            ValueOp::Ge => (l, l >= r),
            ValueOp::Le => (l, l <= r),
            ValueOp::IfPresent => (l, r != 0.0),
            ValueOp::IfAbsent => (l, r == 0.0),
        }
    }
}

/// An instant function of one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstantFn {
    Abs,
    Ceil,
    Floor,
    Exp,
    Sqrt,
    Ln,
    Log2,
    Log10,
    Sgn,
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Cos,
    Cosh,
    Sin,
    Sinh,
    Tan,
    Tanh,
    Deg,
    Rad,
    /// Calendar parts of a value read as seconds since the epoch (UTC).
    Year,
    Month,
    DayOfMonth,
    DayOfWeek,
    DayOfYear,
    DaysInMonth,
    Hour,
    Minute,
}

/// The function named `name` in a table of PromQL function names.
fn by_name<F: Copy>(table: &[(&'static str, F)], name: &str) -> Option<F> {
    table.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The PromQL name of `f` in its table (every variant is listed).
fn name_of<F: Copy + PartialEq>(table: &[(&'static str, F)], f: F) -> &'static str {
    table.iter().find(|(_, g)| *g == f).map(|(n, _)| *n).expect("every function is listed")
}

const INSTANT_FNS: [(&str, InstantFn); 31] = [
    ("acos", InstantFn::Acos),
    ("acosh", InstantFn::Acosh),
    ("asin", InstantFn::Asin),
    ("asinh", InstantFn::Asinh),
    ("atan", InstantFn::Atan),
    ("atanh", InstantFn::Atanh),
    ("cos", InstantFn::Cos),
    ("cosh", InstantFn::Cosh),
    ("sin", InstantFn::Sin),
    ("sinh", InstantFn::Sinh),
    ("tan", InstantFn::Tan),
    ("tanh", InstantFn::Tanh),
    ("deg", InstantFn::Deg),
    ("rad", InstantFn::Rad),
    ("year", InstantFn::Year),
    ("month", InstantFn::Month),
    ("day_of_month", InstantFn::DayOfMonth),
    ("day_of_week", InstantFn::DayOfWeek),
    ("day_of_year", InstantFn::DayOfYear),
    ("days_in_month", InstantFn::DaysInMonth),
    ("hour", InstantFn::Hour),
    ("minute", InstantFn::Minute),
    ("abs", InstantFn::Abs),
    ("ceil", InstantFn::Ceil),
    ("floor", InstantFn::Floor),
    ("exp", InstantFn::Exp),
    ("sqrt", InstantFn::Sqrt),
    ("ln", InstantFn::Ln),
    ("log2", InstantFn::Log2),
    ("log10", InstantFn::Log10),
    ("sgn", InstantFn::Sgn),
];

impl InstantFn {
    pub fn from_name(name: &str) -> Option<InstantFn> {
        by_name(&INSTANT_FNS, name)
    }

    pub fn name(self) -> &'static str {
        name_of(&INSTANT_FNS, self)
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            InstantFn::Abs => x.abs(),
            InstantFn::Ceil => x.ceil(),
            InstantFn::Floor => x.floor(),
            InstantFn::Exp => x.exp(),
            InstantFn::Sqrt => x.sqrt(),
            InstantFn::Ln => x.ln(),
            InstantFn::Log2 => x.log2(),
            InstantFn::Log10 => x.log10(),
            InstantFn::Sgn => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            }
            InstantFn::Acos => x.acos(),
            InstantFn::Acosh => x.acosh(),
            InstantFn::Asin => x.asin(),
            InstantFn::Asinh => x.asinh(),
            InstantFn::Atan => x.atan(),
            InstantFn::Atanh => x.atanh(),
            InstantFn::Cos => x.cos(),
            InstantFn::Cosh => x.cosh(),
            InstantFn::Sin => x.sin(),
            InstantFn::Sinh => x.sinh(),
            InstantFn::Tan => x.tan(),
            InstantFn::Tanh => x.tanh(),
            InstantFn::Deg => x.to_degrees(),
            InstantFn::Rad => x.to_radians(),
            _ => date_part(self, x).unwrap_or(f64::NAN),
        }
    }

    /// Whether the function reads its value as a time (`year()` …: without
    /// an argument, of each step's time).
    pub fn is_date(self) -> bool {
        matches!(
            self,
            InstantFn::Year
                | InstantFn::Month
                | InstantFn::DayOfMonth
                | InstantFn::DayOfWeek
                | InstantFn::DayOfYear
                | InstantFn::DaysInMonth
                | InstantFn::Hour
                | InstantFn::Minute
        )
    }
}

/// A calendar part of a time in seconds since the epoch, UTC.
fn date_part(f: InstantFn, secs: f64) -> Option<f64> {
    use chrono::{Datelike, Timelike};
    if !secs.is_finite() {
        return Some(f64::NAN);
    }
    let t = chrono::DateTime::from_timestamp(secs.floor() as i64, 0)?;
    Some(match f {
        InstantFn::Year => t.year() as f64,
        InstantFn::Month => t.month() as f64,
        InstantFn::DayOfMonth => t.day() as f64,
        InstantFn::DayOfWeek => t.weekday().num_days_from_sunday() as f64,
        InstantFn::DayOfYear => t.ordinal() as f64,
        InstantFn::Hour => t.hour() as f64,
        InstantFn::Minute => t.minute() as f64,
        _ => {
            let (y, m) = (t.year(), t.month());
            let next = if m == 12 { chrono::NaiveDate::from_ymd_opt(y + 1, 1, 1) } else { chrono::NaiveDate::from_ymd_opt(y, m + 1, 1) }?;
            (next - chrono::NaiveDate::from_ymd_opt(y, m, 1)?).num_days() as f64
        }
    })
}

/// What a `Map` node does to each value (float operands as their bits, so
/// plans stay `Eq` and `Hash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueMap {
    Func(InstantFn),
    Neg,
    /// `round(x, to)`: to the nearest multiple of `to`, ties up.
    Round {
        to: u64,
    },
    /// `clamp(x, lo, hi)` (`both`), `clamp_min` (hi NaN), `clamp_max` (lo NaN).
    Clamp {
        lo: u64,
        hi: u64,
        both: bool,
    },
    /// `x op s`, or `s op x` with `scalar_left`; a comparison keeps x where
    /// it holds, or with `bool` answers 1 or 0.
    Scalar {
        op: ValueOp,
        scalar: u64,
        scalar_left: bool,
        bool_result: bool,
    },
    /// The row's time in seconds (`timestamp()` of a computed vector).
    Timestamp,
    /// 0 is no sample (`count` of one field of several: no value, no count).
    NullIfZero,
    /// Every value 1 (`group`).
    One,
}

impl ValueMap {
    /// The new value of `x` (of a row at `t_ms`), None to drop the sample.
    pub fn apply(self, x: f64, t_ms: i64) -> Option<f64> {
        match self {
            ValueMap::Timestamp => Some(t_ms as f64 / 1000.0),
            ValueMap::NullIfZero => (x != 0.0).then_some(x),
            ValueMap::One => Some(1.0),
            ValueMap::Func(f) => Some(f.apply(x)),
            ValueMap::Neg => Some(-x),
            ValueMap::Round { to } => {
                let inv = 1.0 / f64::from_bits(to);
                Some((x * inv + 0.5).floor() / inv)
            }
            ValueMap::Clamp { lo, hi, both } => {
                let (lo, hi) = (f64::from_bits(lo), f64::from_bits(hi));
                if both && hi < lo {
                    return None;
                }
                let mut y = x;
                if !lo.is_nan() {
                    y = lo.max(y);
                }
                if !hi.is_nan() {
                    y = hi.min(y);
                }
                if both && (lo.is_nan() || hi.is_nan()) {
                    y = f64::NAN;
                }
                Some(y)
            }
            ValueMap::Scalar { op, scalar, scalar_left, bool_result } => {
                let s = f64::from_bits(scalar);
                let (l, r) = if scalar_left { (s, x) } else { (x, s) };
                let (mut value, keep) = op.apply(l, r);
                if op.is_comparison() && scalar_left {
                    value = x;
                }
                if bool_result {
                    Some(if keep { 1.0 } else { 0.0 })
                } else {
                    keep.then_some(value)
                }
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            ValueMap::Func(f) => f.name().to_string(),
            ValueMap::Neg => "-x".into(),
            ValueMap::Timestamp => "timestamp".into(),
            ValueMap::NullIfZero => "nullif(x, 0)".into(),
            ValueMap::One => "1".into(),
            ValueMap::Round { to } => format!("round(x, {})", f64::from_bits(*to)),
            ValueMap::Clamp { lo, hi, .. } => format!("clamp(x, {}, {})", f64::from_bits(*lo), f64::from_bits(*hi)),
            ValueMap::Scalar { op, scalar, scalar_left, bool_result } => {
                let b = if *bool_result { " bool" } else { "" };
                let s = f64::from_bits(*scalar);
                if *scalar_left {
                    format!("{s} {op:?}{b} x")
                } else {
                    format!("x {op:?}{b} {s}")
                }
            }
        }
    }
}

/// Each field value of each row mapped; rows left without a value dropped.
fn map_values(all: &RecordBatch, tags: usize, m: ValueMap, schema: &SchemaRef) -> Result<RecordBatch> {
    let n = all.num_rows();
    let fields: Vec<ArrayRef> =
        all.columns()[1 + tags..].iter().map(|c| arrow::compute::cast(c, &DataType::Float64)).collect::<std::result::Result<_, _>>()?;
    let mut out: Vec<Vec<Option<f64>>> = vec![Vec::with_capacity(n); fields.len()];
    let mut keep: Vec<u32> = Vec::with_capacity(n);
    let fields: Vec<&Float64Array> = fields.iter().map(|a| a.as_primitive::<Float64Type>()).collect();
    let mut row: Vec<Option<f64>> = vec![None; fields.len()];
    let times = millis(all.column(0))?;
    for r in 0..n {
        let mut any = false;
        for (f, a) in fields.iter().enumerate() {
            row[f] = if a.is_null(r) { None } else { m.apply(a.value(r), times[r].unwrap_or(0)) };
            any |= row[f].is_some();
        }
        if any {
            keep.push(r as u32);
            for (f, v) in row.iter().enumerate() {
                out[f].push(*v);
            }
        }
    }
    let keep = UInt32Array::from(keep);
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(all.num_columns());
    for c in &all.columns()[..1 + tags] {
        cols.push(arrow::compute::take(c.as_ref(), &keep, None)?);
    }
    for v in out {
        cols.push(Arc::new(Float64Array::from(v)));
    }
    Ok(RecordBatch::try_new_with_options(schema.clone(), cols, &arrow::array::RecordBatchOptions::new().with_row_count(Some(keep.len())))?)
}

#[cfg(test)]
#[path = "promql_tests.rs"]
mod tests;
