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
        HashAggExecutor { child, group_by, aggs, columns: columns.to_vec(), schema: arrow_schema(columns), ctx, output: None, pos: 0 }
    }

    fn aggregate(&mut self) -> Result<RecordBatch> {
        let mut accs: Vec<Accumulator> = self.aggs.iter().map(Accumulator::new).collect();
        let key_types: Vec<_> = self.group_by.iter().map(|e| e.ty().to_arrow()).collect();
        let simple = self.group_by.is_empty();
        let mut groups = if simple { None } else { Some(GroupTable::new(&key_types)?) };
        if simple {
            for a in accs.iter_mut() {
                a.resize(1);
            }
        }
        let mut group_idx: Vec<usize> = Vec::new();
        let mut charged = 0usize;
        loop {
            self.ctx.check()?;
            let r = self.child.next_batch(super::BATCH_ROWS)?;
            let drained = r.is_drained;
            let batch = r.into_dense()?;
            let n = batch.num_rows();
            if n > 0 {
                group_idx.clear();
                if let Some(groups) = groups.as_mut() {
                    let keys: Vec<ArrayRef> = self
                        .group_by
                        .iter()
                        .zip(&key_types)
                        .map(|(e, t)| {
                            let a = e.eval(&batch, &self.ctx)?;
                            if a.data_type() != t {
                                cast_array(&a, crate::types::SqlType::from_arrow(a.data_type()), e.ty())
                            } else {
                                Ok(a)
                            }
                        })
                        .collect::<Result<_>>()?;
                    groups.assign(&keys, &mut group_idx)?;
                    // Keys, map slots and a state slot per aggregate.
                    let held = groups.bytes() + groups.len() * 32 * accs.len();
                    if held > charged {
                        self.ctx.charge(held - charged, "hash aggregation groups")?;
                        charged = held;
                    }
                    for a in accs.iter_mut() {
                        a.resize(groups.len());
                    }
                }
                for a in accs.iter_mut() {
                    let args: Vec<ArrayRef> = a.call.args.iter().map(|e| e.eval(&batch, &self.ctx)).collect::<Result<_>>()?;
                    if a.call.func == super::plan::AggFunc::StringAgg {
                        // string_agg keeps every value it folds in.
                        self.ctx.charge(args.iter().map(|x| super::memory::array_bytes(x.as_ref())).sum(), "string_agg")?;
                    }
                    let filter = a.call.filter.as_ref().map(|f| f.eval(&batch, &self.ctx)).transpose()?;
                    let filter = filter.as_ref().map(|f| f.as_any().downcast_ref::<BooleanArray>().expect("filter is boolean"));
                    if simple {
                        a.update_single(&args, filter, n)?;
                    } else {
                        a.update(&group_idx, &args, filter)?;
                    }
                }
            }
            if drained {
                break;
            }
        }
        let ngroups = groups.as_ref().map(|g| g.len()).unwrap_or(1);
        let mut cols: Vec<ArrayRef> = match &groups {
            Some(g) => g.keys()?,
            None => vec![],
        };
        for a in &accs {
            cols.push(a.finish()?);
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
