//! LISTEN, UNLISTEN and NOTIFY (and `pg_notify`) as PostgreSQL runs them:
//! a transaction queues its notifications (an identical channel and
//! payload once, the first time's place kept) and its LISTEN / UNLISTEN
//! actions; COMMIT (or the end of a statement outside a block) applies the
//! actions and publishes the notifications to the process's hub
//! (`crate::notify`); ROLLBACK, ROLLBACK TO SAVEPOINT and a failed
//! statement outside a block discard them.
//!
//! Part of `sql`: may import `exec`, `notify`, `error`.

use std::collections::HashSet;

use sqlparser::ast::Statement;

use super::{QueryResult, Session};
use crate::error::Result;
use crate::notify::Note;

/// A LISTEN or UNLISTEN waiting for its transaction to commit.
#[derive(Debug, Clone)]
enum Action {
    Listen(String),
    /// None: UNLISTEN *.
    Unlisten(Option<String>),
}

/// What the open transaction (or the statement running outside one) has
/// queued.
#[derive(Debug, Default)]
pub struct TxNotify {
    notes: Vec<(String, String)>,
    seen: HashSet<(String, String)>,
    actions: Vec<Action>,
}

impl TxNotify {
    /// How much is queued (a savepoint's mark).
    pub fn mark(&self) -> (usize, usize) {
        (self.notes.len(), self.actions.len())
    }

    /// ROLLBACK TO SAVEPOINT: what came after `mark` goes.
    pub fn truncate(&mut self, mark: (usize, usize)) {
        for n in self.notes.drain(mark.0.min(self.notes.len())..) {
            self.seen.remove(&n);
        }
        self.actions.truncate(mark.1);
    }

    fn queue(&mut self, channel: String, payload: String) {
        let k = (channel, payload);
        if self.seen.insert(k.clone()) {
            self.notes.push(k);
        }
    }
}

/// A channel is an identifier: sqlparser also takes a string literal there,
/// which PostgreSQL's grammar refuses.
fn channel_name(channel: &sqlparser::ast::Ident) -> Result<String> {
    if channel.quote_style == Some('\'') {
        crate::bail!(Syntax, "syntax error at or near \"'{}'\"", channel.value);
    }
    Ok(crate::planner::ident(channel))
}

/// LISTEN / UNLISTEN / NOTIFY.
pub fn execute(s: &mut Session, stmt: &Statement) -> Result<QueryResult> {
    match stmt {
        Statement::LISTEN { channel } => {
            s.listen_tx.actions.push(Action::Listen(channel_name(channel)?));
            Ok(QueryResult::Command("LISTEN".into()))
        }
        Statement::UNLISTEN { channel } => {
            let c = if channel.quote_style.is_none() && channel.value == "*" { None } else { Some(channel_name(channel)?) };
            s.listen_tx.actions.push(Action::Unlisten(c));
            Ok(QueryResult::Command("UNLISTEN".into()))
        }
        Statement::NOTIFY { channel, payload } => {
            let payload = payload.clone().unwrap_or_default();
            let channel = channel_name(channel)?;
            crate::notify::check(&channel, &payload).map(|()| {
                s.listen_tx.queue(channel, payload);
                QueryResult::Command("NOTIFY".into())
            })
        }
        other => Err(crate::err!(Internal, "not a LISTEN, UNLISTEN or NOTIFY: {other}")),
    }
}

/// After each statement: `pg_notify` calls join the transaction's queue
/// (if the statement succeeded); outside a block the transaction is over,
/// so its queue is published (committed) or dropped (failed).
pub fn statement_end(s: &mut Session, ok: bool) {
    let called = std::mem::take(&mut *s.notifies.lock().unwrap_or_else(|e| e.into_inner()));
    if ok {
        for (c, p) in called {
            s.listen_tx.queue(c, p);
        }
    }
    if s.block.is_some() {
        return;
    }
    if ok {
        commit(s);
    } else {
        discard(s);
    }
}

/// A block ended without committing.
pub fn discard(s: &mut Session) {
    s.listen_tx = TxNotify::default();
}

/// The transaction committed: LISTEN / UNLISTEN take effect, then the
/// notifications go out (the session's own included when it listens).
fn commit(s: &mut Session) {
    let tx = std::mem::take(&mut s.listen_tx);
    let hub = &s.engine.notify;
    // A session without a connection (pid 0) has no mailbox to fill.
    let changed = !tx.actions.is_empty() && s.pid != 0;
    for a in tx.actions.into_iter().filter(|_| s.pid != 0) {
        match a {
            Action::Listen(c) => hub.listen(s.pid, &c),
            Action::Unlisten(c) => hub.unlisten(s.pid, c.as_deref()),
        }
    }
    // pg_listening_channels() reads them from the session's activity row.
    if changed {
        let channels = hub.channels(s.pid);
        s.engine.activity.update(s.pid, |r| r.listening = channels);
    }
    let notes: Vec<Note> = tx.notes.into_iter().map(|(channel, payload)| Note { pid: s.pid, channel, payload }).collect();
    hub.publish(&notes);
}

/// `pg_notify` calls of a streamed result, made after its statement
/// returned: published when no block is open (else they wait for it).
pub fn flush_late(s: &mut Session) {
    let pending = !s.notifies.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
    if pending {
        statement_end(s, true);
    }
}
