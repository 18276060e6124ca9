//! `HashAggExecutor`: GROUP BY through a `GroupTable` (packed fixed-width
//! keys, or arrow's row format for the rest); with no GROUP BY it is the
//! simple aggregation (one output row always).

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;

use super::aggregate::Accumulator;
use super::expr::{cast_array, Expr};
use super::group_keys::GroupTable;
use super::plan::{arrow_schema, AggCall, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct HashAggExecutor {
    child: Box<dyn BatchExecutor>,
    /// The second part of the input (see `partition.rs`), folded on a
    /// thread of its own; None: `child` is all of it.
    second: Option<Box<dyn BatchExecutor>>,
    group_by: Vec<Expr>,
    aggs: Vec<AggCall>,
    columns: Vec<PlanColumn>,
    schema: SchemaRef,
    ctx: ExecCtx,
    output: Option<RecordBatch>,
    pos: usize,
}

impl HashAggExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, group_by: Vec<Expr>, aggs: Vec<AggCall>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        HashAggExecutor {
            child,
            second: None,
            group_by,
            aggs,
            columns: columns.to_vec(),
            schema: arrow_schema(columns),
            ctx,
            output: None,
            pos: 0,
        }
    }

    /// Read `second` too: the input's second part.
    pub fn with_second_half(mut self, second: Box<dyn BatchExecutor>) -> Self {
        self.second = Some(second);
        self
    }

    /// Whether partial states of these aggregates can be merged: not
    /// string_agg (its order is the input's) nor DISTINCT, and no subquery
    /// to evaluate on another thread.
    fn parallel_safe(&self) -> bool {
        self.aggs.iter().all(|a| {
            !a.distinct
                && !matches!(
                    a.func,
                    super::plan::AggFunc::StringAgg
                        | super::plan::AggFunc::ArrayAgg
                        | super::plan::AggFunc::User(_)
                        | super::plan::AggFunc::OrderedSet(_)
                        | super::plan::AggFunc::Regr(_)
                )
                && !a.args.iter().chain(a.filter.as_ref()).any(|e| e.has_subquery())
        }) && !self.group_by.iter().any(|e| e.has_subquery())
    }

    fn aggregate(&mut self) -> Result<RecordBatch> {
        let key_types: Vec<_> = self.group_by.iter().map(|e| e.ty().to_arrow()).collect();
        let spec = Spec { group_by: &self.group_by, aggs: &self.aggs, key_types: &key_types, ctx: &self.ctx };
        let mut main = Partial::new(&spec)?;
        let parallel = self.parallel_safe() && self.ctx.settings.get("weir.agg_parallel").is_none_or(|v| v != "off");
        let mut seq: u64 = 0;
        let mut rows = 0usize;
        let mut drained = false;
        let mut helped = false;
        if let Some(mut second) = self.second.take() {
            if parallel {
                // Each half scanned and folded on its own thread; the later
                // half's batches numbered after any of the first's.
                helped = true;
                let child = &mut self.child;
                let ctx = &self.ctx;
                let spec = &spec;
                let (mine, theirs) = std::thread::scope(|scope| -> Result<(Partial, Partial)> {
                    let h = scope.spawn(move || fold_all(&mut second, spec, ctx, 1 << 31));
                    let mine = fold_all(child, spec, ctx, 0);
                    let theirs = h.join().unwrap_or_else(|_| Err(crate::err!(Internal, "aggregation helper panicked")));
                    Ok((mine?, theirs?))
                })?;
                main = mine;
                main.merge(theirs)?;
                drained = true;
            } else {
                // One thread: the first half, then the second.
                let mut first = std::mem::replace(&mut self.child, second);
                loop {
                    self.ctx.check()?;
                    let r = first.next_batch(INPUT_ROWS)?;
                    let done = r.is_drained;
                    main.fold(&spec, &r.into_dense()?, seq)?;
                    seq += 1;
                    if done {
                        break;
                    }
                }
            }
        }
        // Alone until the input proves large, then with a helper thread
        // folding every batch it has room for into its own partial state.
        while !drained && !(parallel && rows >= PARALLEL_AFTER_ROWS) {
            self.ctx.check()?;
            let r = self.child.next_batch(INPUT_ROWS)?;
            drained = r.is_drained;
            let batch = r.into_dense()?;
            rows += batch.num_rows();
            main.fold(&spec, &batch, seq)?;
            seq += 1;
        }
        if !drained {
            helped = true;
            let child = &mut self.child;
            let ctx = &self.ctx;
            let helper = std::thread::scope(|scope| -> Result<Partial> {
                let (tx, rx) = std::sync::mpsc::sync_channel::<(RecordBatch, u64)>(2);
                let spec = &spec;
                let h = scope.spawn(move || -> Result<Partial> {
                    let mut p = Partial::new(spec)?;
                    for (batch, seq) in rx {
                        ctx.check()?;
                        p.fold(spec, &batch, seq)?;
                    }
                    Ok(p)
                });
                let mut tx = Some(tx);
                let r = (|| -> Result<()> {
                    while !drained {
                        ctx.check()?;
                        let r = child.next_batch(INPUT_ROWS)?;
                        drained = r.is_drained;
                        let batch = r.into_dense()?;
                        let batch = match tx.as_ref().map(|t| t.try_send((batch, seq))) {
                            None | Some(Ok(())) => None,
                            Some(Err(std::sync::mpsc::TrySendError::Full((b, _)))) => Some(b),
                            // The helper stopped (an error): it says why below.
                            Some(Err(std::sync::mpsc::TrySendError::Disconnected((b, _)))) => {
                                tx = None;
                                Some(b)
                            }
                        };
                        if let Some(b) = batch {
                            main.fold(spec, &b, seq)?;
                        }
                        seq += 1;
                    }
                    Ok(())
                })();
                drop(tx);
                let helper = h.join().unwrap_or_else(|_| Err(crate::err!(Internal, "aggregation helper panicked")));
                r?;
                helper
            })?;
            main.merge(helper)?;
        }
        let Partial { groups, accs, first, .. } = main;
        let ngroups = groups.as_ref().map(|g| g.len()).unwrap_or(1);
        let mut cols: Vec<ArrayRef> = match &groups {
            Some(g) => g.keys()?,
            None => vec![],
        };
        for a in &accs {
            cols.push(a.finish_in(&self.ctx)?);
        }
        if helped && ngroups > 1 {
            // Groups in order of first sight in the input, as without help.
            let mut order: Vec<u32> = (0..ngroups as u32).collect();
            order.sort_by_key(|&g| first[g as usize]);
            let idx = arrow::array::UInt32Array::from(order);
            cols = cols.iter().map(|c| arrow::compute::take(c.as_ref(), &idx, None)).collect::<std::result::Result<_, _>>()?;
        }
        // Coerce to declared output types (e.g. sum over int4 is int8).
        let cols: Vec<ArrayRef> = cols
            .into_iter()
            .zip(&self.columns)
            .map(|(c, pc)| {
                if c.data_type() != &pc.ty.to_arrow() {
                    cast_array(&c, crate::types::SqlType::from_arrow(c.data_type()), pc.ty)
                } else {
                    Ok(c)
                }
            })
            .collect::<Result<_>>()?;
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(ngroups)))?)
    }
}

/// Drain `input`, folding every batch into a new partial state; batches
/// numbered from `seq`.
fn fold_all(input: &mut Box<dyn BatchExecutor>, spec: &Spec, ctx: &ExecCtx, mut seq: u64) -> Result<Partial> {
    let mut p = Partial::new(spec)?;
    loop {
        ctx.check()?;
        let r = input.next_batch(INPUT_ROWS)?;
        let done = r.is_drained;
        p.fold(spec, &r.into_dense()?, seq)?;
        seq += 1;
        if done {
            return Ok(p);
        }
    }
}

/// Rows asked of the input per batch: larger than `BATCH_ROWS`, so the
/// per-batch work (key and argument evaluation, run finding) is spread
/// over more rows; the states do not depend on batch boundaries.
const INPUT_ROWS: usize = 8 * super::BATCH_ROWS;

/// Rows folded on the calling thread before a helper joins in.
const PARALLEL_AFTER_ROWS: usize = 64 * 1024;

/// What every partial aggregation evaluates.
struct Spec<'a> {
    group_by: &'a [Expr],
    aggs: &'a [AggCall],
    key_types: &'a [arrow::datatypes::DataType],
    ctx: &'a ExecCtx,
}

/// Groups and aggregate states over part of the input.
struct Partial {
    /// None: no GROUP BY, one group.
    groups: Option<GroupTable>,
    accs: Vec<Accumulator>,
    /// Per group, where it was first seen: batch number << 32 | row.
    first: Vec<u64>,
    group_idx: Vec<usize>,
    /// Scratch: this batch's runs of one group, (start, end, group).
    runs: Vec<(usize, usize, usize)>,
    charged: usize,
}

impl Partial {
    fn new(spec: &Spec) -> Result<Partial> {
        let mut accs: Vec<Accumulator> = spec.aggs.iter().map(Accumulator::new).collect();
        let groups = if spec.group_by.is_empty() {
            for a in accs.iter_mut() {
                a.resize(1);
            }
            None
        } else {
            Some(GroupTable::new(spec.key_types)?)
        };
        Ok(Partial { groups, accs, first: vec![], group_idx: vec![], runs: vec![], charged: 0 })
    }

    /// Fold batch number `seq` in.
    fn fold(&mut self, spec: &Spec, batch: &RecordBatch, seq: u64) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let ctx = spec.ctx;
        if let Some(groups) = self.groups.as_mut() {
            let keys: Vec<ArrayRef> = spec
                .group_by
                .iter()
                .zip(spec.key_types)
                .map(|(e, t)| {
                    let a = e.eval(batch, ctx)?;
                    if a.data_type() != t {
                        cast_array(&a, crate::types::SqlType::from_arrow(a.data_type()), e.ty())
                    } else {
                        Ok(a)
                    }
                })
                .collect::<Result<_>>()?;
            let before = groups.len();
            groups.assign_runs(&keys, &mut self.group_idx, &mut self.runs)?;
            // New groups are numbered in order of first sight (a run's
            // group is first seen at its start).
            let mut next = before;
            if self.runs.is_empty() {
                for (i, &g) in self.group_idx.iter().enumerate() {
                    if g == next {
                        self.first.push(seq << 32 | i as u64);
                        next += 1;
                    }
                }
            } else {
                for &(s, _, g) in &self.runs {
                    if g == next {
                        self.first.push(seq << 32 | s as u64);
                        next += 1;
                    }
                }
            }
            // Keys, map slots and a state slot per aggregate.
            let held = groups.bytes() + groups.len() * 32 * self.accs.len();
            if held > self.charged {
                ctx.charge(held - self.charged, "hash aggregation groups")?;
                self.charged = held;
            }
            for a in self.accs.iter_mut() {
                a.resize(groups.len());
            }
        }
        // Runs of one group; worth folding run by run when they are long
        // (a series' rows in time order, grouped by a time bucket). The
        // group table found them when they are.
        if self.groups.is_none() {
            self.runs.clear();
        } else if self.runs.is_empty() {
            let idx = &self.group_idx;
            let mut start = 0;
            for i in 1..=n {
                if i == n || idx[i] != idx[start] {
                    self.runs.push((start, i, idx[start]));
                    start = i;
                }
            }
        }
        let use_runs = self.runs.len() * 4 <= n;
        for a in self.accs.iter_mut() {
            let filter = a.call.filter.as_ref().map(|f| f.eval(batch, ctx)).transpose()?;
            let filter = filter.as_ref().map(|f| f.as_any().downcast_ref::<BooleanArray>().expect("filter is boolean"));
            // FILTER comes first, as in PostgreSQL: the arguments are
            // evaluated over the rows it keeps only (`sum(1/x) FILTER
            // (WHERE x > 0)` divides by no zero).
            if let Some(f) = filter.filter(|f| f.true_count() < n) {
                let mask = if arrow::array::Array::null_count(f) > 0 { arrow::compute::prep_null_mask_filter(f) } else { f.clone() };
                let kept = arrow::compute::filter_record_batch(batch, &mask)?;
                if kept.num_rows() == 0 {
                    continue;
                }
                let args: Vec<ArrayRef> = a.call.args.iter().map(|e| e.eval(&kept, ctx)).collect::<Result<_>>()?;
                if keeps_values(a.call.func) {
                    ctx.charge(args.iter().map(|x| super::memory::array_bytes(x.as_ref())).sum(), "string_agg")?;
                }
                if self.groups.is_none() {
                    a.update_single(&args, None, kept.num_rows())?;
                } else {
                    let groups: Vec<usize> = self.group_idx.iter().zip(mask.values().iter()).filter(|(_, k)| *k).map(|(g, _)| *g).collect();
                    a.update(&groups, &args, None)?;
                }
                continue;
            }
            let args: Vec<ArrayRef> = a.call.args.iter().map(|e| e.eval(batch, ctx)).collect::<Result<_>>()?;
            if keeps_values(a.call.func) {
                // string_agg and array_agg keep every value they fold in.
                ctx.charge(args.iter().map(|x| super::memory::array_bytes(x.as_ref())).sum(), "string_agg")?;
            }
            if self.groups.is_none() {
                a.update_single(&args, filter, n)?;
            } else if !(use_runs && a.update_runs(&self.runs, &args, filter)?) {
                a.update(&self.group_idx, &args, filter)?;
            }
        }
        Ok(())
    }

    /// Fold another partial's groups and states into this one.
    fn merge(&mut self, other: Partial) -> Result<()> {
        let map: Vec<usize> = match (self.groups.as_mut(), &other.groups) {
            (Some(mine), Some(theirs)) => {
                if theirs.len() == 0 {
                    return Ok(());
                }
                let mut map = vec![];
                mine.assign(&theirs.keys()?, &mut map)?;
                self.first.resize(mine.len(), u64::MAX);
                for (g, &m) in map.iter().enumerate() {
                    self.first[m] = self.first[m].min(other.first[g]);
                }
                for a in self.accs.iter_mut() {
                    a.resize(mine.len());
                }
                map
            }
            _ => vec![0],
        };
        for (a, b) in self.accs.iter_mut().zip(&other.accs) {
            a.merge(b, &map)?;
        }
        Ok(())
    }
}

impl BatchExecutor for HashAggExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.output.is_none() {
            self.output = Some(self.aggregate()?);
        }
        Ok(super::next_slice(self.output.as_ref().unwrap(), &mut self.pos, max_rows))
    }
}

#[cfg(test)]
#[path = "hash_agg_tests.rs"]
mod tests;

/// Aggregates that keep every value they fold in (charged to the
/// statement's memory): string_agg, array_agg, user-defined and
/// ordered-set aggregates.
fn keeps_values(f: super::plan::AggFunc) -> bool {
    use super::plan::AggFunc;
    matches!(f, AggFunc::StringAgg | AggFunc::ArrayAgg | AggFunc::User(_) | AggFunc::OrderedSet(_))
}
