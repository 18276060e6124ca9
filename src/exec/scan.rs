//! `TableScanExecutor`: reads the regions of a table through storage scans.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;

use super::plan::{arrow_schema, PlanColumn};
use super::{BatchExecutor, BatchResult};
use crate::error::Result;
use crate::storage::{Region, ScanRequest};

pub struct TableScanExecutor {
    regions: Vec<Arc<Region>>,
    /// Per-region sequence bounds (incremental reads); empty = the request's.
    seqs: Vec<crate::storage::SeqBounds>,
    request: ScanRequest,
    schema: SchemaRef,
    pending: Vec<RecordBatch>,
    next_region: usize,
    view: Option<Arc<crate::storage::ReadView>>,
}

impl TableScanExecutor {
    pub fn new(regions: Vec<Arc<Region>>, seqs: Vec<crate::storage::SeqBounds>, request: ScanRequest, columns: &[PlanColumn]) -> Self {
        TableScanExecutor { regions, seqs, request, schema: arrow_schema(columns), pending: Vec::new(), next_region: 0, view: None }
    }

    /// Read through a statement's view: its snapshot and its transaction's
    /// own writes.
    pub fn with_view(mut self, view: Option<Arc<crate::storage::ReadView>>) -> Self {
        self.view = view;
        self
    }
}

impl BatchExecutor for TableScanExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        while self.pending.is_empty() && self.next_region < self.regions.len() {
            let i = self.next_region;
            let mut batches = match (self.seqs.get(i), &self.view) {
                (None, None) => self.regions[i].scan(&self.request)?,
                (seq, view) => {
                    let mut req = ScanRequest { seq: seq.copied().unwrap_or(self.request.seq), ..self.request.clone() };
                    if let Some(v) = view {
                        v.apply(self.regions[i].id, &mut req);
                    }
                    self.regions[i].scan(&req)?
                }
            };
            self.next_region += 1;
            batches.reverse();
            self.pending = batches;
        }
        let Some(b) = self.pending.pop() else {
            return Ok(BatchResult { batch: super::empty_batch(&self.schema), logical_rows: None, is_drained: true });
        };
        let b = if b.num_rows() > max_rows {
            let rest = b.slice(max_rows, b.num_rows() - max_rows);
            self.pending.push(rest);
            b.slice(0, max_rows)
        } else {
            b
        };
        // Re-label with the plan's schema (names and nullability).
        let batch = RecordBatch::try_new_with_options(
            self.schema.clone(),
            b.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )?;
        let drained = self.pending.is_empty() && self.next_region >= self.regions.len();
        Ok(BatchResult { batch, logical_rows: None, is_drained: drained })
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
