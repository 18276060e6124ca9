//! PostgreSQL's LISTEN / NOTIFY between sessions (and from TDengine
//! streams): the process's hub of listeners. Each connection has a
//! `Mailbox` (its pid, the channels it listens on, the notifications
//! queued for it and a wake-up for its socket task); `publish` hands a
//! committed transaction's notifications to every mailbox listening on
//! their channel, the sender's own included, as PostgreSQL does. The
//! server sends a mailbox's queue as NotificationResponse messages when
//! its session is idle (at once, or after the statement that was running).
//!
//! What a transaction queues, its deduplication and its delivery at commit
//! are the session's (`sql`); this module only routes. Imports nothing of
//! weir's but `error`, so every layer may use it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::bail;
use crate::error::Result;

/// PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH (BLCKSZ - NAMEDATALEN - 128): a
/// payload must be shorter.
pub const PAYLOAD_MAX: usize = 8000;
/// NAMEDATALEN: a channel name must be shorter.
pub const CHANNEL_MAX: usize = 64;
/// Notifications a mailbox holds for a session that does not read them
/// (PostgreSQL's queue is 8 GB on disk; past this the oldest are dropped).
pub const MAILBOX_MAX: usize = 100_000;

/// One notification: the sending backend's pid (0: a TDengine stream),
/// the channel and the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub pid: i32,
    pub channel: String,
    pub payload: String,
}

/// PostgreSQL's checks of `NOTIFY channel, 'payload'` / `pg_notify`.
pub fn check(channel: &str, payload: &str) -> Result<()> {
    if channel.is_empty() {
        bail!(InvalidParameterValue, "channel name cannot be empty");
    }
    if channel.len() >= CHANNEL_MAX {
        bail!(InvalidParameterValue, "channel name too long");
    }
    if payload.len() >= PAYLOAD_MAX {
        bail!(InvalidParameterValue, "payload string too long");
    }
    Ok(())
}

/// One connection's listening state and undelivered notifications.
#[derive(Default)]
pub struct Mailbox {
    channels: Mutex<HashSet<String>>,
    queue: Mutex<VecDeque<Note>>,
    /// Woken when a notification is queued.
    pub wake: tokio::sync::Notify,
}

impl Mailbox {
    /// Everything queued, oldest first.
    pub fn take(&self) -> Vec<Note> {
        self.queue.lock().drain(..).collect()
    }

    fn push(&self, n: &Note) {
        let mut q = self.queue.lock();
        if q.len() >= MAILBOX_MAX {
            q.pop_front();
        }
        q.push_back(n.clone());
    }
}

/// The listeners of one process.
#[derive(Default)]
pub struct Hub {
    boxes: Mutex<HashMap<i32, Arc<Mailbox>>>,
}

impl Hub {
    /// The mailbox of connection `pid` (made on first use).
    pub fn mailbox(&self, pid: i32) -> Arc<Mailbox> {
        self.boxes.lock().entry(pid).or_default().clone()
    }

    /// The connection ended: it listens no more.
    pub fn remove(&self, pid: i32) {
        self.boxes.lock().remove(&pid);
    }

    /// LISTEN (committed).
    pub fn listen(&self, pid: i32, channel: &str) {
        self.mailbox(pid).channels.lock().insert(channel.to_string());
    }

    /// UNLISTEN channel; None: UNLISTEN *.
    pub fn unlisten(&self, pid: i32, channel: Option<&str>) {
        let Some(b) = self.boxes.lock().get(&pid).cloned() else { return };
        match channel {
            Some(c) => {
                b.channels.lock().remove(c);
            }
            None => b.channels.lock().clear(),
        }
    }

    /// The channels `pid` listens on, sorted (pg_listening_channels).
    pub fn channels(&self, pid: i32) -> Vec<String> {
        let Some(b) = self.boxes.lock().get(&pid).cloned() else { return vec![] };
        let mut v: Vec<String> = b.channels.lock().iter().cloned().collect();
        v.sort();
        v
    }

    /// Deliver `notes` (in order) to every mailbox listening on their
    /// channel; returns how many deliveries were queued.
    pub fn publish(&self, notes: &[Note]) -> usize {
        if notes.is_empty() {
            return 0;
        }
        let boxes: Vec<Arc<Mailbox>> = self.boxes.lock().values().cloned().collect();
        let mut n = 0;
        for b in boxes {
            let mut any = false;
            {
                let chans = b.channels.lock();
                for note in notes.iter().filter(|x| chans.contains(&x.channel)) {
                    b.push(note);
                    any = true;
                    n += 1;
                }
            }
            if any {
                b.wake.notify_one();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(pid: i32, c: &str, p: &str) -> Note {
        Note { pid, channel: c.into(), payload: p.into() }
    }

    #[test]
    fn routes_to_listeners_of_the_channel_only() {
        let hub = Hub::default();
        let (a, b) = (hub.mailbox(1), hub.mailbox(2));
        hub.listen(1, "x");
        hub.listen(2, "y");
        assert_eq!(hub.publish(&[note(1, "x", "1"), note(1, "y", "2"), note(1, "z", "3")]), 2);
        assert_eq!(a.take(), vec![note(1, "x", "1")]);
        assert_eq!(b.take(), vec![note(1, "y", "2")]);
        hub.unlisten(2, None);
        hub.publish(&[note(3, "y", "")]);
        assert!(b.take().is_empty());
        assert_eq!(hub.channels(1), vec!["x".to_string()]);
        hub.remove(1);
        assert!(hub.channels(1).is_empty());
    }

    #[test]
    fn postgres_limits() {
        assert!(check("c", &"x".repeat(7999)).is_ok());
        assert_eq!(check("c", &"x".repeat(8000)).unwrap_err().message, "payload string too long");
        assert_eq!(check("", "").unwrap_err().message, "channel name cannot be empty");
        assert_eq!(check(&"c".repeat(64), "").unwrap_err().message, "channel name too long");
    }
}
