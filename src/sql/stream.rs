//! Results that are computed while the client reads them.
//!
//! A [`RowStream`] owns a statement's executor tree and its `ExecCtx` and
//! hands out one dense batch at a time, so the server can encode and send
//! rows as they are produced: memory is bounded by the operators' own state
//! and one batch, not by the size of the result. Errors surface at the batch
//! where they happen (the client has already received the rows before it).
//! Imports exec only; the server drives it.

use arrow::array::RecordBatch;

use crate::error::Result;
use crate::exec::{BatchExecutor, ExecCtx, BATCH_ROWS};

pub struct RowStream {
    exec: Box<dyn BatchExecutor>,
    ctx: ExecCtx,
    done: bool,
    /// The statement's `query_start` in pg_stat_activity: it shows as
    /// active until its rows are out (see `Drop`).
    started: Option<i64>,
    /// The session's date/time settings when the statement ran (casts to
    /// text and date/time functions read them while rows are computed).
    dt: crate::types::zone::DtCtx,
}

impl RowStream {
    pub fn new(exec: Box<dyn BatchExecutor>, ctx: ExecCtx) -> RowStream {
        let mut started = None;
        ctx.activity.update(ctx.pid, |r| started = r.query_start);
        let dt = crate::types::zone::DtCtx::from_settings(&ctx.settings);
        RowStream { exec, ctx, done: false, started, dt }
    }

    /// Is this a streamed result (the statement stays active while it is
    /// read)?
    pub(super) fn ends_activity(r: &super::QueryResult) -> bool {
        match r {
            super::QueryResult::Stream { .. } | super::QueryResult::CopyOutStream { .. } => true,
            super::QueryResult::CopyOutBinary { batches } => batches.is_streamed(),
            _ => false,
        }
    }

    /// The next non-empty batch, or None when the result is complete. After
    /// an error the stream is over.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let dt = self.dt;
        crate::types::zone::with_dt_ctx(dt, || self.next_batch_inner())
    }

    fn next_batch_inner(&mut self) -> Result<Option<RecordBatch>> {
        while !self.done {
            let r = self.ctx.check().and_then(|_| self.exec.next_batch(BATCH_ROWS)).and_then(|r| {
                let drained = r.is_drained;
                Ok((r.into_dense()?, drained))
            });
            let (batch, drained) = match r {
                Ok(x) => x,
                Err(e) => {
                    self.done = true;
                    self.end_activity();
                    // The statement failed: its pg_notify calls are not sent.
                    self.ctx.notifies.lock().unwrap_or_else(|e| e.into_inner()).clear();
                    return Err(e);
                }
            };
            self.done = drained;
            if batch.num_rows() > 0 {
                return Ok(Some(batch));
            }
        }
        self.end_activity();
        Ok(None)
    }

    /// The statement is over: idle in pg_stat_activity, unless another
    /// statement has started since.
    fn end_activity(&mut self) {
        if let Some(started) = self.started.take() {
            self.ctx.activity.update(self.ctx.pid, |r| {
                if r.query_start == Some(started) && r.state == "active" {
                    r.state = "idle".into();
                }
            });
        }
    }

    /// Pull everything (callers that want the whole result).
    pub fn collect(mut self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        while let Some(b) = self.next_batch()? {
            self.ctx.charge(crate::exec::memory::batch_bytes(&b), "buffered rows")?;
            out.push(b);
        }
        Ok(out)
    }
}

impl Drop for RowStream {
    fn drop(&mut self) {
        self.end_activity();
    }
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowStream")
    }
}
