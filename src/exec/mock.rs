//! Test support for operator unit tests (TiKV's `MockExecutor`): a child
//! that replays prepared batches, each with optional live rows, at batch
//! boundaries the test chooses (empty batches included), plus helpers to
//! build batches, expressions and an `ExecCtx`, and to run an operator to
//! the end as rows of PostgreSQL text.
//!
//! `shapes` turns one list of rows into several inputs that must all give
//! the same answer: one batch; one row per batch with empty batches
//! between; and batches padded with junk rows that only `logical_rows`
//! hides. An operator that ignores `logical_rows` sees the junk and fails.
//!
//! Test-only (`#[cfg(test)]` in `exec/mod.rs`); imports only `exec`,
//! `types` and `error`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::datatypes::SchemaRef;

use super::expr::{BinOp, Expr};
use super::plan::{arrow_schema, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;
use crate::types::{format_value, value_at, values_to_array, SqlType, Value};

/// One prepared pull: the rows of the batch and, optionally, which of them
/// are live.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub rows: Vec<Vec<Value>>,
    pub logical_rows: Option<Vec<u32>>,
}

impl Step {
    pub fn dense(rows: Vec<Vec<Value>>) -> Step {
        Step { rows, logical_rows: None }
    }

    pub fn live(rows: Vec<Vec<Value>>, live: Vec<u32>) -> Step {
        Step { rows, logical_rows: Some(live) }
    }
}

/// Replays its steps one per `next_batch`; the last one is drained. Pulling
/// again after that is a bug in the parent and panics.
pub(crate) struct MockExecutor {
    columns: Vec<PlanColumn>,
    schema: SchemaRef,
    steps: VecDeque<Step>,
    drained: bool,
    pulls: Arc<AtomicUsize>,
}

impl MockExecutor {
    pub fn new(columns: &[PlanColumn], steps: Vec<Step>) -> MockExecutor {
        MockExecutor {
            columns: columns.to_vec(),
            schema: arrow_schema(columns),
            steps: steps.into(),
            drained: false,
            pulls: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A counter of the pulls this child has served.
    pub fn pulls(&self) -> Arc<AtomicUsize> {
        self.pulls.clone()
    }

    pub fn boxed(self) -> Box<dyn BatchExecutor> {
        Box::new(self)
    }
}

impl BatchExecutor for MockExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, _max_rows: usize) -> Result<BatchResult> {
        assert!(!self.drained, "a drained child was pulled again");
        self.pulls.fetch_add(1, Ordering::Relaxed);
        let step = self.steps.pop_front().unwrap_or(Step::dense(vec![]));
        self.drained = self.steps.is_empty();
        Ok(BatchResult {
            batch: batch(&self.columns, &step.rows),
            logical_rows: step.logical_rows.map(UInt32Array::from),
            is_drained: self.drained,
        })
    }
}

/// Plan columns from (name, type) pairs.
pub(crate) fn columns(spec: &[(&str, SqlType)]) -> Vec<PlanColumn> {
    spec.iter().map(|(n, t)| PlanColumn::new(*n, *t)).collect()
}

/// A batch from rows of values (values must fit the column types).
pub(crate) fn batch(columns: &[PlanColumn], rows: &[Vec<Value>]) -> RecordBatch {
    let cols: Vec<ArrayRef> = columns
        .iter()
        .enumerate()
        .map(|(c, pc)| {
            let vals: Vec<Value> = rows.iter().map(|r| r[c].clone()).collect();
            values_to_array(&vals, pc.ty).expect("test values fit their columns")
        })
        .collect();
    RecordBatch::try_new_with_options(arrow_schema(columns), cols, &RecordBatchOptions::new().with_row_count(Some(rows.len())))
        .expect("test batch")
}

/// The same rows as differently shaped inputs that must give one answer:
/// one dense batch; one row per batch with an empty batch first, between
/// and last; pairs of rows with a `junk` row between them, hidden by
/// `logical_rows`; and everything hidden but the rows, in one batch with
/// junk first and last.
pub(crate) fn shapes(rows: &[Vec<Value>], junk: &[Value]) -> Vec<Vec<Step>> {
    let mut out = vec![vec![Step::dense(rows.to_vec())]];
    let mut single = vec![Step::dense(vec![])];
    for r in rows {
        single.push(Step::dense(vec![r.clone()]));
        single.push(Step::dense(vec![]));
    }
    out.push(single);
    let mut padded = Vec::new();
    for pair in rows.chunks(2) {
        let mut b = Vec::new();
        let mut live = Vec::new();
        for r in pair {
            b.push(junk.to_vec());
            live.push(b.len() as u32);
            b.push(r.clone());
        }
        padded.push(Step::live(b, live));
    }
    // A batch whose rows are all dead.
    padded.push(Step::live(vec![junk.to_vec(), junk.to_vec()], vec![]));
    out.push(padded);
    let mut one = vec![junk.to_vec()];
    one.extend(rows.iter().cloned());
    one.push(junk.to_vec());
    out.push(vec![Step::live(one, (1..=rows.len() as u32).collect())]);
    out
}

/// A context with no deadline and no cancel request.
pub(crate) fn ctx() -> ExecCtx {
    ExecCtx {
        statement_ts: 1_700_000_000_000_000,
        statement_start_ts: 1_700_000_000_000_000,
        database: "test".into(),
        user: "test".into(),
        settings: Arc::new(Default::default()),
        deadline: None,
        cancel: Arc::new(AtomicBool::new(false)),
        pid: 1,
        activity: Default::default(),
        memory: Arc::new(super::memory::MemoryBudget::new(usize::MAX)),
        view: None,
        set_configs: Default::default(),
        sequences: None,
        routines: None,
        notifies: Default::default(),
    }
}

/// Pull an operator until it is drained, with `max_rows` per pull; the live
/// rows in order, each value as PostgreSQL prints it ("NULL" for null).
/// Fails if the operator does not drain within a generous number of pulls.
pub(crate) fn run(exec: &mut dyn BatchExecutor, max_rows: usize) -> Result<Vec<Vec<String>>> {
    let schema = exec.schema();
    let mut out = Vec::new();
    for _ in 0..10_000 {
        let r = exec.next_batch(max_rows)?;
        assert_eq!(r.batch.num_columns(), schema.fields().len(), "batch width matches the schema");
        for (f, c) in schema.fields().iter().zip(r.batch.columns()) {
            assert_eq!(f.data_type(), c.data_type(), "column {} has the schema's type", f.name());
        }
        let drained = r.is_drained;
        let b = r.into_dense()?;
        for i in 0..b.num_rows() {
            out.push(b.columns().iter().map(|c| text(&value_at(c.as_ref(), i))).collect());
        }
        if drained {
            return Ok(out);
        }
    }
    panic!("operator did not drain");
}

/// Rows as PostgreSQL text, sorted (for operators without an order).
pub(crate) fn sorted(mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.sort();
    rows
}

/// Expected rows from string slices.
pub(crate) fn rows(expected: &[&[&str]]) -> Vec<Vec<String>> {
    expected.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect()
}

fn text(v: &Value) -> String {
    if v.is_null() {
        "NULL".into()
    } else {
        format_value(v)
    }
}

pub(crate) fn col(index: usize, ty: SqlType) -> Expr {
    Expr::Column { index, ty }
}

pub(crate) fn int(v: i64) -> Value {
    Value::Int(v)
}

pub(crate) fn txt(s: &str) -> Value {
    Value::Text(s.into())
}

pub(crate) fn null() -> Value {
    Value::Null
}

pub(crate) fn lit_int(v: i64) -> Expr {
    Expr::lit(Value::Int(v), SqlType::Int8)
}

pub(crate) fn bin(op: BinOp, left: Expr, right: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) { SqlType::Bool } else { left.ty() };
    Expr::Binary { op, left: Box::new(left), right: Box::new(right), ty }
}
