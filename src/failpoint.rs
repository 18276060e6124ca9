//! Failpoints for tests: named places where a test can make weir fail on
//! purpose (a panic in the background storage thread, a panic while
//! encoding results) to check that the failure is contained.
//!
//! Off unless named in the `WEIR_FAILPOINTS` environment variable
//! (comma-separated, read once) or enabled by a unit test. Imports nothing
//! of weir's, so every layer may use it.

use std::collections::HashSet;
use std::sync::OnceLock;

use parking_lot::Mutex;

fn armed() -> &'static Mutex<HashSet<String>> {
    static ARMED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    ARMED.get_or_init(|| {
        let names = std::env::var("WEIR_FAILPOINTS").unwrap_or_default();
        Mutex::new(names.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
    })
}

/// Is the failpoint armed? It stays armed.
pub fn armed_now(name: &str) -> bool {
    armed().lock().contains(name)
}

/// Fire the failpoint once: true the first time it is reached while armed,
/// and it is disarmed by that.
pub fn fire_once(name: &str) -> bool {
    armed().lock().remove(name)
}

/// Arm a failpoint (unit tests).
pub fn arm(name: &str) {
    armed().lock().insert(name.to_string());
}
