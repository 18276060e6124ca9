//! `TableScanExecutor`: reads the regions of a table through storage scans.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;

use super::plan::{arrow_schema, PlanColumn};
use super::{BatchExecutor, BatchResult};
use crate::error::Result;
use crate::storage::{Region, RegionScan, ScanRequest};

pub struct TableScanExecutor {
    regions: Vec<Arc<Region>>,
    /// Per-region sequence bounds (incremental reads); empty = the request's.
    seqs: Vec<crate::storage::SeqBounds>,
    request: ScanRequest,
    schema: SchemaRef,
    /// The region being read (index) and its scan.
    current: Option<(usize, RegionScan)>,
    /// The rest of a batch larger than the caller asked for.
    pending: Option<RecordBatch>,
    next_region: usize,
    view: Option<Arc<crate::storage::ReadView>>,
}

impl TableScanExecutor {
    pub fn new(regions: Vec<Arc<Region>>, seqs: Vec<crate::storage::SeqBounds>, request: ScanRequest, columns: &[PlanColumn]) -> Self {
        TableScanExecutor {
            regions,
            seqs,
            request,
            schema: arrow_schema(columns),
            current: None,
            pending: None,
            next_region: 0,
            view: None,
        }
    }

    /// Read through a statement's view: its snapshot and its transaction's
    /// own writes.
    pub fn with_view(mut self, view: Option<Arc<crate::storage::ReadView>>) -> Self {
        self.view = view;
        self
    }

    /// Start the scan of region `i` (its snapshot is taken now).
    fn open(&self, i: usize) -> Result<RegionScan> {
        match (self.seqs.get(i), &self.view) {
            (None, None) => self.regions[i].scan_stream(&self.request),
            (seq, view) => {
                let mut req = ScanRequest { seq: seq.copied().unwrap_or(self.request.seq), ..self.request.clone() };
                if let Some(v) = view {
                    v.apply(self.regions[i].id, &mut req);
                }
                self.regions[i].scan_stream(&req)
            }
        }
    }
}

impl BatchExecutor for TableScanExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Pulls the regions' scans a batch at a time: memory holds what one
    /// region scan reads at once (see `RegionScan`), not the table.
    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        let b = loop {
            if let Some(b) = self.pending.take() {
                break b;
            }
            if let Some((i, scan)) = self.current.as_mut() {
                match scan.next_batch(&self.regions[*i])? {
                    Some(b) => {
                        self.pending = Some(b);
                        continue;
                    }
                    None => self.current = None,
                }
            }
            if self.next_region >= self.regions.len() {
                return Ok(BatchResult { batch: super::empty_batch(&self.schema), logical_rows: None, is_drained: true });
            }
            let i = self.next_region;
            self.current = Some((i, self.open(i)?));
            self.next_region += 1;
        };
        let b = if b.num_rows() > max_rows {
            self.pending = Some(b.slice(max_rows, b.num_rows() - max_rows));
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
        let drained = self.pending.is_none() && self.current.is_none() && self.next_region >= self.regions.len();
        Ok(BatchResult { batch, logical_rows: None, is_drained: drained })
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
