//! `NarrowedAggExecutor`: an aggregation under a top-k on its time-bucket
//! group key (`GROUP BY date_trunc('minute', ts) … ORDER BY 1 DESC LIMIT 5`)
//! reads only the newest (oldest, ascending) stretch of time, widening it
//! until the answer is provably the one of the whole range.
//!
//! Why it is exact: the bucket is a non-decreasing function of the time
//! index. Aggregating only the rows of `[c, hi)` gives every group whose
//! bucket is above `bucket(c)` whole (a row before `c` has a bucket at most
//! `bucket(c)`); only the groups of the lowest bucket seen may be partial,
//! and the groups left out have buckets at most that one. So when at least
//! `k` groups have a bucket above the lowest one seen, the top-k above
//! (sorted by the bucket first) takes them and never a partial group.
//! Otherwise the stretch grows eightfold, and past the scan's own range
//! the aggregation runs over all of it. Each attempt reads one snapshot.
//!
//! The planner (`planner/narrow.rs`) proves the shape: the sort's first key
//! is the group key, a time window over the time index of the one scan
//! under the aggregation (through filters and projections only).
//!
//! Imports `exec` and `error` only.

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Int64Type, SchemaRef};

use super::plan::{arrow_schema, Narrow, Plan};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct NarrowedAggExecutor {
    /// The aggregation (a `Plan::Aggregate`).
    plan: Plan,
    narrow: Narrow,
    ctx: ExecCtx,
    schema: SchemaRef,
    output: Option<RecordBatch>,
    pos: usize,
}

/// Attempts over a narrowed range before the whole range is read.
const ATTEMPTS: usize = 6;

impl NarrowedAggExecutor {
    pub fn new(plan: Plan, narrow: Narrow, ctx: ExecCtx) -> Self {
        let schema = arrow_schema(plan.columns());
        NarrowedAggExecutor { plan, narrow, ctx, schema, output: None, pos: 0 }
    }

    fn run(&self) -> Result<Vec<RecordBatch>> {
        let (lo, hi) = scan_range(&self.plan).unwrap_or((i64::MIN, i64::MAX));
        let n = &self.narrow;
        // Without a bound on the side the top-k reads from, there is no
        // place to start: the whole range.
        let bounded = if n.desc { hi != i64::MAX } else { lo != i64::MIN };
        if bounded {
            let mut span = n.step.max(1).saturating_mul(n.k as i64 + 1);
            for _ in 0..ATTEMPTS {
                let range = if n.desc { (hi.saturating_sub(span), hi) } else { (lo, lo.saturating_add(span)) };
                // Past the scan's own range: read all of it.
                if (n.desc && range.0 <= lo) || (!n.desc && range.1 >= hi) {
                    break;
                }
                let out = super::collect(&with_range(&self.plan, range), &self.ctx)?;
                if proves_top_k(&out, n)? {
                    return Ok(out);
                }
                span = span.saturating_mul(8);
            }
        }
        super::collect(&self.plan, &self.ctx)
    }
}

/// Whether at least `k` groups have a bucket strictly beyond the least
/// complete one (the lowest bucket descending, the highest ascending).
/// NULL buckets (never from a time index) prove nothing.
fn proves_top_k(out: &[RecordBatch], n: &Narrow) -> Result<bool> {
    let mut keys: Vec<i64> = Vec::new();
    for b in out {
        let c = arrow::compute::cast(b.column(n.key), &arrow::datatypes::DataType::Int64)?;
        if c.null_count() > 0 {
            return Ok(false);
        }
        keys.extend(c.as_primitive::<Int64Type>().values().iter());
    }
    let edge = if n.desc { keys.iter().min() } else { keys.iter().max() };
    let Some(&edge) = edge else { return Ok(false) };
    let beyond = keys.iter().filter(|&&v| if n.desc { v > edge } else { v < edge }).count();
    Ok(beyond >= n.k)
}

/// The time range of the scan under the aggregation (through filters and
/// projections), [lo, hi).
fn scan_range(plan: &Plan) -> Option<(i64, i64)> {
    match plan {
        Plan::Scan { request, .. } => Some(request.time_range.unwrap_or((i64::MIN, i64::MAX))),
        Plan::Aggregate { input, .. } | Plan::Filter { input, .. } | Plan::Project { input, .. } => scan_range(input),
        _ => None,
    }
}

/// `plan` with its scan's time range narrowed to `range` (intersected).
fn with_range(plan: &Plan, range: (i64, i64)) -> Plan {
    let mut p = plan.clone();
    fn walk(p: &mut Plan, range: (i64, i64)) {
        match p {
            Plan::Scan { request, .. } => {
                let (lo, hi) = request.time_range.unwrap_or((i64::MIN, i64::MAX));
                request.time_range = Some((lo.max(range.0), hi.min(range.1)));
            }
            Plan::Aggregate { input, .. } | Plan::Filter { input, .. } | Plan::Project { input, .. } => walk(input, range),
            _ => {}
        }
    }
    walk(&mut p, range);
    p
}

impl BatchExecutor for NarrowedAggExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.output.is_none() {
            let out = self.run()?;
            self.output = Some(arrow::compute::concat_batches(&self.schema, &out)?);
        }
        Ok(super::next_slice(self.output.as_ref().unwrap(), &mut self.pos, max_rows))
    }
}
