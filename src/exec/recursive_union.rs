//! `RecursiveUnionExecutor`: WITH RECURSIVE. It emits the anchor's rows,
//! then runs the recursive term over the rows the previous run added (the
//! working table, put into the term's plan as a `Memory` node) until a run
//! adds none, as PostgreSQL's RecursiveUnion does.
//!
//! Rows stream out as each run produces them, so a LIMIT above ends an
//! unbounded recursion early. Without one, each run checks cancellation and
//! the statement timeout, and every row a run adds stays charged to the
//! query's memory budget, so a runaway recursion ends with 53200 (out of
//! memory) instead of running forever. UNION (not ALL) keeps the row
//! encoding of every row produced and drops repeats.

use std::collections::HashSet;

use arrow::array::{RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::keys::normalize_keys;
use super::plan::{arrow_schema, Plan, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

/// What each run of the recursive term is charged besides its rows: the
/// plan copy and operator tree built for it (a rough size, not measured
/// per plan), so that even a recursion adding one small row per run meets
/// the budget in bounded time.
const RUN_OVERHEAD_BYTES: usize = 4096;

pub struct RecursiveUnionExecutor {
    /// The anchor first, then the current run of the recursive term.
    current: Box<dyn BatchExecutor>,
    recursive: Plan,
    id: usize,
    schema: SchemaRef,
    ctx: ExecCtx,
    /// Rows the current run has added: the next run's working table.
    next_work: Vec<RecordBatch>,
    /// UNION: the rows seen so far, row-encoded.
    seen: Option<(RowConverter, HashSet<Vec<u8>>)>,
    done: bool,
}

impl RecursiveUnionExecutor {
    pub fn new(
        anchor: Box<dyn BatchExecutor>,
        recursive: Plan,
        id: usize,
        all: bool,
        columns: &[PlanColumn],
        ctx: ExecCtx,
    ) -> Result<Self> {
        let schema = arrow_schema(columns);
        let seen = if all {
            None
        } else {
            let fields = schema.fields().iter().map(|f| SortField::new(f.data_type().clone())).collect();
            Some((RowConverter::new(fields)?, HashSet::new()))
        };
        Ok(RecursiveUnionExecutor { current: anchor, recursive, id, schema, ctx, next_work: Vec::new(), seen, done: false })
    }

    /// The batch under this node's schema (names and types of the CTE),
    /// without the rows UNION saw before.
    fn new_rows(&mut self, b: RecordBatch) -> Result<RecordBatch> {
        let b = RecordBatch::try_new_with_options(
            self.schema.clone(),
            b.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )?;
        let Some((conv, seen)) = self.seen.as_mut() else { return Ok(b) };
        if b.num_rows() == 0 {
            return Ok(b);
        }
        let rows = conv.convert_columns(&normalize_keys(b.columns()))?;
        let mut keep = Vec::new();
        let mut bytes = 0;
        for i in 0..b.num_rows() {
            let r = rows.row(i);
            if !seen.contains(r.as_ref()) {
                bytes += r.as_ref().len() + 48;
                seen.insert(r.as_ref().to_vec());
                keep.push(i as u32);
            }
        }
        self.ctx.charge(bytes, "a recursive query's seen rows")?;
        if keep.len() == b.num_rows() {
            return Ok(b);
        }
        super::take_batch(&b, &UInt32Array::from(keep))
    }
}

impl BatchExecutor for RecursiveUnionExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        loop {
            if self.done {
                return Ok(BatchResult { batch: super::empty_batch(&self.schema), logical_rows: None, is_drained: true });
            }
            self.ctx.check()?;
            let r = self.current.next_batch(max_rows)?;
            let drained = r.is_drained;
            let b = self.new_rows(r.into_dense()?)?;
            if b.num_rows() > 0 {
                self.ctx.charge(super::memory::batch_bytes(&b), "a recursive query's working table")?;
                self.next_work.push(b.clone());
            }
            if drained {
                if self.next_work.is_empty() {
                    self.done = true;
                } else {
                    self.ctx.charge(RUN_OVERHEAD_BYTES, "a recursive query's runs")?;
                    let work = std::mem::take(&mut self.next_work);
                    self.current = super::build(&self.recursive.with_work_table(self.id, &work), &self.ctx)?;
                }
            }
            if b.num_rows() > 0 || self.done {
                return Ok(BatchResult { batch: b, logical_rows: None, is_drained: self.done });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, Int64Array};
    use arrow::datatypes::Int64Type;

    use super::*;
    use crate::exec::expr::{BinOp, Expr};
    use crate::exec::mock::ctx as test_ctx;
    use crate::types::{SqlType, Value};

    fn n_col() -> Vec<PlanColumn> {
        vec![PlanColumn::new("n", SqlType::Int8)]
    }

    /// `VALUES (1) UNION [ALL] SELECT f(n) FROM t WHERE n < stop`.
    fn run(all: bool, step: Expr, stop: i64, ctx: &ExecCtx) -> Result<Vec<i64>> {
        let cols = n_col();
        let one = RecordBatch::try_new(arrow_schema(&cols), vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
        let anchor = Plan::Memory { batches: vec![one], columns: cols.clone() };
        let n = Expr::Column { index: 0, ty: SqlType::Int8 };
        let lt = Expr::Binary {
            op: BinOp::Lt,
            left: Box::new(n.clone()),
            right: Box::new(Expr::Literal { value: Value::Int(stop), ty: SqlType::Int8 }),
            ty: SqlType::Bool,
        };
        let recursive = Plan::Project {
            input: Box::new(Plan::Filter { input: Box::new(Plan::WorkTable { id: 7, columns: cols.clone() }), predicate: lt }),
            exprs: vec![step],
            columns: cols.clone(),
        };
        let plan = Plan::RecursiveUnion { anchor: Box::new(anchor), recursive: Box::new(recursive), id: 7, all, columns: cols };
        let batches = super::super::collect(&plan, ctx)?;
        Ok(batches.iter().flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec()).collect())
    }

    fn plus_one() -> Expr {
        Expr::Binary {
            op: BinOp::Add,
            left: Box::new(Expr::Column { index: 0, ty: SqlType::Int8 }),
            right: Box::new(Expr::Literal { value: Value::Int(1), ty: SqlType::Int8 }),
            ty: SqlType::Int8,
        }
    }

    #[test]
    fn union_all_iterates_until_a_run_adds_nothing() {
        assert_eq!(run(true, plus_one(), 5, &test_ctx()).unwrap(), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn union_drops_rows_seen_before_so_a_cycle_ends() {
        // 10 - n alternates 1, 9, 1, ...: UNION stops after the second run.
        let ten_minus = Expr::Binary {
            op: BinOp::Sub,
            left: Box::new(Expr::Literal { value: Value::Int(10), ty: SqlType::Int8 }),
            right: Box::new(Expr::Column { index: 0, ty: SqlType::Int8 }),
            ty: SqlType::Int8,
        };
        assert_eq!(run(false, ten_minus, 100, &test_ctx()).unwrap(), vec![1, 9]);
    }

    #[test]
    fn a_runaway_recursion_meets_the_memory_budget() {
        let mut ctx = test_ctx();
        ctx.memory = Arc::new(crate::exec::memory::MemoryBudget::new(1 << 20));
        let e = run(true, plus_one(), i64::MAX, &ctx).unwrap_err();
        assert_eq!(e.sqlstate(), "53200", "{e}");
        assert!(ctx.memory.used_bytes() <= 1 << 20);
    }
}
