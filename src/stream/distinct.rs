//! DISTINCT (and UNION without ALL): each row's multiplicity in a state
//! table; a row is emitted when its count becomes positive and retracted
//! when it drops to zero.

use super::state_table::{Row, StateTable};
use super::{consolidate, Changes, Inputs, OpStats, Operator, Renderer};
use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::exec::ExecCtx;
use crate::types::Value;

pub struct Distinct {
    input: Box<dyn Operator>,
    columns: Vec<PlanColumn>,
    counts: StateTable,
    stats: OpStats,
}

impl Distinct {
    pub fn new(input: Box<dyn Operator>, columns: Vec<PlanColumn>, r: &mut Renderer) -> Distinct {
        let w = columns.len();
        let counts = r.table((0..w).collect(), vec![false; w]);
        Distinct { input, columns, counts, stats: OpStats { name: "distinct", ..Default::default() } }
    }
}

impl Operator for Distinct {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let ch = self.input.step(inputs, ctx)?;
        self.stats.rows_in += ch.len() as u64;
        let w = self.columns.len();
        let mut out: Vec<(Row, i64)> = Vec::new();
        for (row, d) in consolidate(ch.rows().into_iter().zip(ch.diff.iter().copied())) {
            let before = match self.counts.get_row(&row)? {
                Some(r) => match r[w] {
                    Value::Int(n) => n,
                    _ => 0,
                },
                None => 0,
            };
            let after = before + d;
            if after == 0 {
                self.counts.delete_row(&row);
            } else {
                let mut r = row.clone();
                r.push(Value::Int(after));
                self.counts.insert_row(r);
            }
            match (before > 0, after > 0) {
                (false, true) => out.push((row, 1)),
                (true, false) => out.push((row, -1)),
                _ => {}
            }
        }
        self.stats.rows_out += out.len() as u64;
        Changes::from_rows(&self.columns, out)
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        out.push(&mut self.counts);
        self.input.tables(out);
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.with_tables([&self.counts]));
        self.input.stats(out);
    }
}
