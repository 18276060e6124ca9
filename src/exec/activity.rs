//! What every session is doing, for `pg_stat_activity` and
//! `information_schema.processlist`. Sessions write their row; system
//! tables read a copy.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// One session's row.
#[derive(Debug, Clone)]
pub struct ActivityRow {
    pub pid: i32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    /// `active` while a statement runs, else `idle` / `idle in transaction`.
    pub state: String,
    pub query: String,
    /// Microseconds since the epoch.
    pub backend_start: i64,
    pub query_start: Option<i64>,
    /// The connection's TLS facts (pg_stat_ssl); None when not encrypted.
    pub ssl: Option<SslInfo>,
    /// The server's end of the connection (`inet_server_addr()` /
    /// `inet_server_port()`); None for sessions without a socket.
    pub server_addr: Option<std::net::SocketAddr>,
    /// The channels the session listens on (committed LISTENs), sorted:
    /// `pg_listening_channels()`.
    pub listening: Vec<String>,
}

/// A TLS session as pg_stat_ssl shows it (OpenSSL's names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslInfo {
    /// `TLSv1.3`, `TLSv1.2`.
    pub version: String,
    /// e.g. `TLS_AES_256_GCM_SHA384`.
    pub cipher: String,
    /// Key bits of the cipher.
    pub bits: i32,
}

/// The registry of sessions, shared by the process.
#[derive(Debug, Clone, Default)]
pub struct Activity(Arc<Mutex<BTreeMap<i32, ActivityRow>>>);

impl Activity {
    pub fn set(&self, row: ActivityRow) {
        self.0.lock().insert(row.pid, row);
    }

    pub fn update(&self, pid: i32, f: impl FnOnce(&mut ActivityRow)) {
        if let Some(r) = self.0.lock().get_mut(&pid) {
            f(r);
        }
    }

    pub fn remove(&self, pid: i32) {
        self.0.lock().remove(&pid);
    }

    /// One session's row.
    pub fn get(&self, pid: i32) -> Option<ActivityRow> {
        self.0.lock().get(&pid).cloned()
    }

    pub fn rows(&self) -> Vec<ActivityRow> {
        self.0.lock().values().cloned().collect()
    }
}
