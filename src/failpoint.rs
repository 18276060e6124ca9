//! Failpoints for tests: named places where a test can make weir fail on
//! purpose (a panic in the background storage thread, a panic while
//! encoding results) to check that the failure is contained, or where a
//! unit test runs its own code at an exact point (a TRUNCATE between two
//! steps of a flow's evaluation) to pin down a race.
//!
//! Off unless named in the `WEIR_FAILPOINTS` environment variable
//! (comma-separated, read once) or enabled by a unit test. Imports nothing
//! of weir's, so every layer may use it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
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

type Hook = Box<dyn FnOnce() + Send>;

/// Whether any hook is set: the places that run hooks cost one load.
static HOOKED: AtomicBool = AtomicBool::new(false);

fn hooks() -> &'static Mutex<HashMap<String, Hook>> {
    static HOOKS: OnceLock<Mutex<HashMap<String, Hook>>> = OnceLock::new();
    HOOKS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Run `f` the next time code reaches the hook `name` (unit tests).
pub fn set_hook(name: &str, f: impl FnOnce() + Send + 'static) {
    hooks().lock().insert(name.to_string(), Box::new(f));
    HOOKED.store(true, Ordering::SeqCst);
}

/// Whether a hook is set (cheap): callers that build `name` check first.
pub fn any_hook() -> bool {
    HOOKED.load(Ordering::Relaxed)
}

/// Run the hook set for `name`, once, on the calling thread.
pub fn run_hook(name: &str) {
    let f = hooks().lock().remove(name);
    if let Some(f) = f {
        f();
    }
}
