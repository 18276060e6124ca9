//! Results that are computed while the client reads them.
//!
//! A [`RowStream`] owns a statement's executor tree and its `ExecCtx` and
//! hands out one dense batch at a time, so the server can encode and send
//! rows as they are produced: memory is bounded by the operators' own state
//! and one batch, not by the size of the result. Errors surface at the batch
//! where they happen (the client has already received the rows before it).
//!
//! A large result of a plan that may run on another thread (see
//! [`RowStream::pipelined`]) moves its executor to a producer thread after
//! its first [`PIPELINE_AFTER_ROWS`] rows: the next batches are computed
//! while the session thread encodes and sends the ones before, through a
//! channel of [`PIPELINE_DEPTH`] batches (memory stays bounded; rows keep
//! their order). Imports exec only; the server drives it.

use arrow::array::RecordBatch;

use crate::error::Result;
use crate::exec::{BatchExecutor, ExecCtx, BATCH_ROWS};

/// Rows a stream hands out itself before it moves its executor to a
/// producer thread (small results never pay for a thread).
pub const PIPELINE_AFTER_ROWS: usize = 64 * 1024;

/// Batches a producer thread may compute ahead of the session.
const PIPELINE_DEPTH: usize = 8;

/// A producer thread's batches (None: the end), and the result's schema.
type Piped = (std::sync::mpsc::Receiver<Result<Option<RecordBatch>>>, arrow::datatypes::SchemaRef);

pub struct RowStream {
    /// The executor, until it moves to a producer thread (then `piped`).
    exec: Option<Box<dyn BatchExecutor>>,
    piped: Option<Piped>,
    /// Whether the executor may move to a producer thread.
    pipeline: bool,
    /// Rows handed out so far.
    rows: usize,
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
        RowStream { exec: Some(exec), piped: None, pipeline: false, rows: 0, ctx, done: false, started, dt }
    }

    /// Let a large result be computed on a producer thread while the
    /// session sends it. Only for a plan that reads no session state a
    /// thread does not carry (the caller checks: no subquery, no volatile
    /// or stable function); the date/time settings go with it.
    pub fn pipelined(mut self, ok: bool) -> RowStream {
        self.pipeline = ok;
        self
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
            if self.pipeline && self.piped.is_none() && self.rows >= PIPELINE_AFTER_ROWS {
                self.start_pipeline();
            }
            let r = match (&self.piped, self.exec.as_mut()) {
                (Some((rx, schema)), _) => match rx.recv() {
                    Ok(Ok(Some(b))) => Ok((b, false)),
                    Ok(Ok(None)) => Ok((crate::exec::empty_batch(schema), true)),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(crate::err!(Internal, "the result's producer thread stopped")),
                },
                (None, Some(exec)) => pull(&self.ctx, exec.as_mut()),
                (None, None) => Err(crate::err!(Internal, "a result stream has no executor")),
            };
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
                self.rows += batch.num_rows();
                return Ok(Some(batch));
            }
        }
        self.end_activity();
        Ok(None)
    }

    /// Move the executor to a producer thread (it stops when the stream is
    /// dropped: its next send fails). Without a thread the stream goes on
    /// by itself.
    fn start_pipeline(&mut self) {
        self.pipeline = false;
        let Some(exec) = self.exec.take() else { return };
        let schema = exec.schema();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Option<RecordBatch>>>(PIPELINE_DEPTH);
        // The executor goes to the thread once it runs (so a thread that
        // cannot start leaves it here).
        let (give, take) = std::sync::mpsc::sync_channel::<Box<dyn BatchExecutor>>(1);
        let (ctx, dt) = (self.ctx.clone(), self.dt);
        let spawned = std::thread::Builder::new().name("weir-result".into()).spawn(move || {
            let Ok(mut exec) = take.recv() else { return };
            crate::types::zone::with_dt_ctx(dt, || loop {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pull(&ctx, exec.as_mut())))
                    .unwrap_or_else(|_| Err(crate::err!(Internal, "the result's producer thread panicked")));
                match r {
                    Ok((b, drained)) => {
                        if b.num_rows() > 0 && tx.send(Ok(Some(b))).is_err() {
                            return;
                        }
                        if drained {
                            let _ = tx.send(Ok(None));
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            })
        });
        match spawned {
            Ok(_) => {
                let _ = give.send(exec);
                self.piped = Some((rx, schema));
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a result producer thread; computing on the session thread");
                self.exec = Some(exec);
            }
        }
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

/// One dense batch from `exec` and whether it is the last.
fn pull(ctx: &ExecCtx, exec: &mut dyn BatchExecutor) -> Result<(RecordBatch, bool)> {
    ctx.check()?;
    let r = exec.next_batch(BATCH_ROWS)?;
    let drained = r.is_drained;
    Ok((r.into_dense()?, drained))
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
