//! Opening a sled database that this process may have closed a moment ago.
//!
//! sled 0.34 releases a database's file lock only when its background
//! flusher thread exits, which `Drop` does not wait for (spacejam/sled#1234,
//! #1289). Reopening right after a close (a restart in the same process, as
//! the storage model tests do) can then fail with `WouldBlock` while the old
//! thread is still being scheduled; under load that gap reaches tens of
//! milliseconds. So a lock conflict is retried with backoff for a bounded
//! time; any other error, or a lock still held after the deadline (another
//! process really owns the directory), is returned as it is.
//!
//! Imports nothing from the crate: `storage` and `catalog` both use it.

use std::time::{Duration, Instant};

/// How long a lock conflict is retried before it is reported.
const LOCK_WAIT_MAX: Duration = Duration::from_secs(5);

/// `config.open()`, retrying while another handle's flusher still holds the lock.
pub fn open(config: &sled::Config) -> sled::Result<sled::Db> {
    let deadline = Instant::now() + LOCK_WAIT_MAX;
    let mut backoff = Duration::from_millis(5);
    loop {
        match config.open() {
            Err(sled::Error::Io(e)) if is_lock_conflict(&e) && Instant::now() < deadline => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// sled reports a held lock as an `Other` io error whose only trace of the
/// `WouldBlock` from `flock` is its text (sled 0.34 `config.rs`, `try_lock`).
fn is_lock_conflict(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock
        || (e.kind() == std::io::ErrorKind::Other && e.to_string().starts_with("could not acquire lock"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_lock_released_soon_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let config = sled::Config::new().path(dir.path().join("db"));
        let held = super::open(&config).unwrap();
        // Released after 100 ms by another thread: the second open waits for it.
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            drop(held);
        });
        let again = super::open(&config).unwrap();
        t.join().unwrap();
        drop(again);
    }
}
