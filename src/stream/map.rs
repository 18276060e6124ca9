//! Stateless operators: a source (the changes of one table, through the
//! scan's pushed filters and projection), filter, project, union and
//! constant relations (VALUES, generate_series: emitted once, in the first
//! epoch, as insertions).

use arrow::array::{Array, AsArray, RecordBatch, RecordBatchOptions};

use super::state_table::StateTable;
use super::{schema, Changes, Inputs, OpStats, Operator};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::exec::ExecCtx;
use crate::planner::logical::{LogicalPlan, Scan};

/// Keep the rows where `pred` is true (NULL is false).
fn filter_by(ch: &Changes, pred: &Expr, ctx: &ExecCtx) -> Result<Changes> {
    if ch.is_empty() {
        return Ok(ch.clone());
    }
    let mask = pred.eval(&ch.batch, ctx)?;
    let mask = mask.as_boolean();
    let mask = if mask.null_count() > 0 { arrow::compute::prep_null_mask_filter(mask) } else { mask.clone() };
    ch.filter(&mask)
}

/// The changes of one source table.
pub struct Source {
    table_id: u32,
    width: usize,
    filters: Vec<Expr>,
    projection: Option<Vec<usize>>,
    columns: Vec<PlanColumn>,
    stats: OpStats,
}

impl Source {
    pub fn new(s: &Scan) -> Source {
        Source {
            table_id: s.table.id,
            width: s.table.columns.len(),
            filters: s.filters.clone(),
            projection: s.projection.clone(),
            columns: s.columns.clone(),
            stats: OpStats { name: "source", ..Default::default() },
        }
    }
}

impl Operator for Source {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let mut parts = Vec::new();
        for ch in inputs.get(&self.table_id).into_iter().flatten() {
            self.stats.rows_in += ch.len() as u64;
            // The table's columns (trailing internal columns dropped).
            let keep: Vec<usize> = (0..self.width).collect();
            let mut c = Changes { batch: ch.batch.project(&keep)?, diff: ch.diff.clone() };
            for f in &self.filters {
                c = filter_by(&c, f, ctx)?;
            }
            if let Some(p) = &self.projection {
                c.batch = c.batch.project(p)?;
            }
            parts.push(c);
        }
        let out = concat(&self.columns, parts)?;
        self.stats.rows_out += out.len() as u64;
        Ok(out)
    }
    fn tables<'a>(&'a mut self, _out: &mut Vec<&'a mut StateTable>) {}
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.clone());
    }
}

/// Concatenate changes of the same columns (cast to `columns`' types).
pub fn concat(columns: &[PlanColumn], parts: Vec<Changes>) -> Result<Changes> {
    let schema = schema(columns);
    let mut batches = Vec::new();
    let mut diff = Vec::new();
    for p in parts {
        if p.is_empty() {
            continue;
        }
        let cols = p
            .batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c.clone()) } else { arrow::compute::cast(c, f.data_type()) })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        batches.push(RecordBatch::try_new_with_options(schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(p.len())))?);
        diff.extend(p.diff);
    }
    let batch = match batches.len() {
        0 => RecordBatch::new_empty(schema),
        1 => batches.pop().unwrap(),
        _ => arrow::compute::concat_batches(&schema, &batches)?,
    };
    Ok(Changes { batch, diff })
}

pub struct Filter {
    pub input: Box<dyn Operator>,
    pub predicate: Expr,
    pub stats: OpStats,
}

impl Operator for Filter {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let ch = self.input.step(inputs, ctx)?;
        self.stats.name = "filter";
        self.stats.rows_in += ch.len() as u64;
        let out = filter_by(&ch, &self.predicate, ctx)?;
        self.stats.rows_out += out.len() as u64;
        Ok(out)
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        self.input.tables(out)
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.clone());
        self.input.stats(out);
    }
}

pub struct Project {
    pub input: Box<dyn Operator>,
    pub exprs: Vec<Expr>,
    pub columns: Vec<PlanColumn>,
    pub stats: OpStats,
}

impl Operator for Project {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let ch = self.input.step(inputs, ctx)?;
        self.stats.name = "project";
        self.stats.rows_in += ch.len() as u64;
        if ch.is_empty() {
            return Ok(Changes::empty(&self.columns));
        }
        let cols = self.exprs.iter().map(|e| e.eval(&ch.batch, ctx)).collect::<Result<Vec<_>>>()?;
        let schema = schema(&self.columns);
        let cols = cols
            .into_iter()
            .zip(schema.fields())
            .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c) } else { arrow::compute::cast(&c, f.data_type()) })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let batch = RecordBatch::try_new_with_options(schema, cols, &RecordBatchOptions::new().with_row_count(Some(ch.len())))?;
        self.stats.rows_out += ch.len() as u64;
        Ok(Changes { batch, diff: ch.diff })
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        self.input.tables(out)
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.clone());
        self.input.stats(out);
    }
}

/// UNION ALL: both inputs' changes.
pub struct Union {
    pub left: Box<dyn Operator>,
    pub right: Box<dyn Operator>,
    pub columns: Vec<PlanColumn>,
}

impl Operator for Union {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let l = self.left.step(inputs, ctx)?;
        let r = self.right.step(inputs, ctx)?;
        concat(&self.columns, vec![l, r])
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        self.left.tables(out);
        self.right.tables(out);
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        self.left.stats(out);
        self.right.stats(out);
    }
}

/// A relation computed once (VALUES, generate_series): its rows are
/// inserted in the dataflow's first epoch.
pub struct Const {
    rows: Option<Changes>,
}

impl Const {
    pub fn new(plan: &LogicalPlan, ctx: &ExecCtx, first_epoch: bool) -> Result<Const> {
        if !first_epoch {
            return Ok(Const { rows: Some(Changes::empty(plan.columns())) });
        }
        let physical = crate::planner::physical::physical_plan(plan, ctx)?;
        let batches = crate::exec::collect(&physical, ctx)?;
        let parts = batches.into_iter().map(|b| Changes { diff: vec![1; b.num_rows()], batch: b }).collect();
        Ok(Const { rows: Some(concat(plan.columns(), parts)?) })
    }
}

impl Operator for Const {
    fn step(&mut self, _inputs: &Inputs, _ctx: &ExecCtx) -> Result<Changes> {
        let rows = self.rows.as_ref().expect("const rows");
        let out = rows.clone();
        self.rows = Some(Changes { batch: rows.batch.slice(0, 0), diff: vec![] });
        Ok(out)
    }
    fn tables<'a>(&'a mut self, _out: &mut Vec<&'a mut StateTable>) {}
    fn stats(&self, _out: &mut Vec<OpStats>) {}
}
