//! Flows: continuous queries whose sink table always equals their query
//! evaluated over the source tables (GreptimeDB's CREATE FLOW surface,
//! with exact batching, backfill and durable progress).
//!
//! `FlowManager` owns the running flows: it listens to storage's write
//! notices (`WriteListener`), schedules evaluations (EVAL INTERVAL ticks,
//! epoch-aligned, or adaptively soon after writes) on one scheduler
//! thread, and serves ADMIN FLUSH_FLOW. `shape` reads a flow's plan (mode,
//! window, sink keys), `window` assigns timestamps to windows, `batching`
//! evaluates dirty windows, `sink` creates, checks and replaces the sink,
//! `tql` runs flows whose body is `TQL EVAL`.
//!
//! May import `planner`, `exec`, `storage`, `catalog`, `parser`, `types`,
//! `error`; never `sql` or `server`. Storage never imports flow.

pub mod batching;
pub mod incremental;
pub mod shape;
pub mod sink;
pub mod streaming;
pub mod tdengine;
pub mod tdengine_cache;
pub mod tdengine_notify;
pub mod tql;
pub mod window;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::catalog::{Catalog, FlowDef, FlowProgress};
use crate::error::Result;
use crate::storage::{StorageEngine, WriteListener, WriteNotice};
use crate::{bail, err};

use batching::{TaskState, Trigger};

/// How soon after a write a flow without EVAL INTERVAL evaluates, at
/// least: the debounce that coalesces a burst of writes into one run.
pub const ADAPTIVE_DELAY_MS: u64 = 50;
/// Under a steady write load a flow's runs start at least
/// `ADAPTIVE_COST_FACTOR` times its CPU cost per run apart (counted from
/// the previous run's start, so a flow spends at most about 1/20 of a core
/// on maintenance) and at most this far apart, which bounds the staleness a
/// busy flow adds (freshness goal: p99 ≤ 1 s).
pub const ADAPTIVE_MAX_MS: u64 = 900;
pub const ADAPTIVE_COST_FACTOR: u32 = 20;
/// Retry backoff after a failed evaluation: doubles up to this.
pub const RETRY_MAX_MS: u64 = 10_000;

/// What an evaluation reads and writes.
pub struct Env<'a> {
    pub catalog: &'a Catalog,
    pub storage: &'a StorageEngine,
}

/// One registered flow.
pub struct FlowTask {
    pub def: RwLock<FlowDef>,
    /// The execution lock: the scheduler and FLUSH_FLOW take turns.
    state: Mutex<TaskState>,
    /// Adaptive: evaluate at this instant.
    due: Mutex<Option<Instant>>,
    /// Someone else wrote into the sink of an incremental EVAL INTERVAL
    /// flow: repair it at this instant, not at its next tick.
    repair_due: Mutex<Option<Instant>>,
    /// The flow is incremental and knows up to where the sink holds only
    /// its own writes: a write by others into the sink schedules a repair
    /// (`incremental::repairs_sink`).
    repairs_sink: std::sync::atomic::AtomicBool,
    /// When the oldest write not yet picked up by an evaluation was
    /// noticed (the start of the freshness lag the flow adds).
    noticed: Mutex<Option<Instant>>,
    /// EVAL INTERVAL: the next tick (ms since the epoch).
    next_tick_ms: Mutex<Option<i64>>,
    /// Rows written to an instant source since the last evaluation.
    /// (table id, rows): the table is told by the region id, as two
    /// databases may hold tables of one name; with the (region, seq) of
    /// each write (its entry in the streaming flow's inbox).
    instant_rows: Mutex<(Vec<(u32, arrow::array::RecordBatch)>, Vec<(u64, u64)>)>,
    /// The CPU time of the flow's scheduled evaluations, averaged (the
    /// spacing of its runs follows it; waiting for fsyncs costs no CPU and
    /// does not lengthen it).
    last_cost: Mutex<Duration>,
    /// When the last scheduled evaluation started.
    last_start: Mutex<Option<Instant>>,
    /// The flow runs a streaming dataflow (issue 11): after a write it runs
    /// at the next barrier (`barrier_interval_ms` after the last epoch
    /// started), not adaptively.
    epochs: std::sync::atomic::AtomicBool,
    /// Set (under the execution lock) when DROP FLOW or CREATE OR
    /// REPLACE took the flow out: a run that picked the task up before
    /// must neither evaluate nor write anything of the flow back.
    removed: std::sync::atomic::AtomicBool,
}

/// CPU time of the calling thread: its run time from
/// /proc/thread-self/schedstat (nanoseconds), else user + system from
/// /proc/thread-self/stat (clock ticks of 10 ms: callers average it); None
/// where neither file exists.
fn thread_cpu() -> Option<Duration> {
    if let Some(ns) = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
    {
        return Some(Duration::from_nanos(ns));
    }
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

impl FlowTask {
    /// When a flow without EVAL INTERVAL runs after a write noticed at
    /// `now`: after the debounce that makes a burst of writes one run, and
    /// not before its CPU budget allows (runs start `ADAPTIVE_COST_FACTOR`
    /// times their cost apart). The spacing counts from the previous run's
    /// start, not from the write: a write that arrives while a run waits
    /// for its fsyncs does not wait that time again.
    fn next_due(&self, now: Instant, barrier_interval: Duration) -> Instant {
        if self.epochs.load(std::sync::atomic::Ordering::Relaxed) {
            return match *self.last_start.lock() {
                Some(s) => now.max(s + barrier_interval),
                None => now,
            };
        }
        due_after(now, *self.last_start.lock(), *self.last_cost.lock())
    }
}

fn due_after(now: Instant, last_start: Option<Instant>, cost: Duration) -> Instant {
    let spacing = (cost * ADAPTIVE_COST_FACTOR).clamp(Duration::from_millis(ADAPTIVE_DELAY_MS), Duration::from_millis(ADAPTIVE_MAX_MS));
    let debounced = now + Duration::from_millis(ADAPTIVE_DELAY_MS);
    match last_start {
        Some(s) => debounced.max(s + spacing),
        None => debounced,
    }
}

pub struct FlowManager {
    flows: RwLock<BTreeMap<String, Arc<FlowTask>>>,
    /// Session settings the flows' queries run with.
    settings: Arc<HashMap<String, String>>,
    wake: Wake,
    /// When source writes happened, for the flows' lag (issue 9).
    clock: Arc<crate::catalog::WriteClock>,
    /// Streaming mode's options (barrier interval, state cache).
    stream: crate::stream::StreamTuning,
    /// Where streaming state lives (the storage root; set by `load`), for
    /// logging instant rows from write notices.
    stream_root: Mutex<Option<std::path::PathBuf>>,
    /// This manager's boot id: tells a streaming inbox's entries of this
    /// process (also in memory) from an earlier process's (leftovers).
    boot: u64,
}

/// How the scheduler thread sleeps and is woken. A kick (a flow became
/// due, or due sooner) that arrives while the scheduler is running flows
/// stays set until the scheduler next looks, so it is never lost: a lost
/// kick left writes waiting for the scheduler's longest sleep (1 s), which
/// was most of the flows' freshness lag under a steady write load.
#[derive(Default)]
struct Wake {
    /// (stop, kicked).
    state: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Wake {
    fn kick(&self) {
        self.state.lock().1 = true;
        self.cv.notify_all();
    }

    fn stop(&self) {
        self.state.lock().0 = true;
        self.cv.notify_all();
    }

    /// Before a round of looking at the flows: kicks from now on count.
    fn begin_round(&self) {
        self.state.lock().1 = false;
    }

    /// After a round: sleep up to `wait` unless kicked since the round
    /// began. False once stopped.
    fn sleep(&self, wait: Duration) -> bool {
        let mut g = self.state.lock();
        if !g.0 && !g.1 {
            self.cv.wait_for(&mut g, wait);
        }
        !g.0
    }
}

fn first_tick(now_ms: i64, interval_s: i64) -> i64 {
    let iv = interval_s * 1000;
    (now_ms + iv - 1).div_euclid(iv) * iv
}

impl FlowManager {
    pub fn new(
        settings: HashMap<String, String>,
        clock: Arc<crate::catalog::WriteClock>,
        stream: crate::stream::StreamTuning,
    ) -> Arc<FlowManager> {
        let boot = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
        Arc::new(FlowManager {
            flows: RwLock::new(BTreeMap::new()),
            settings: Arc::new(settings),
            wake: Wake::default(),
            clock,
            stream,
            stream_root: Mutex::new(None),
            boot,
        })
    }

    /// Start the flows stored in the catalog (at open): their holders are
    /// placed again at their durable progress before anything runs.
    pub fn load(&self, env: &Env) {
        *self.stream_root.lock() = Some(env.storage.root().to_path_buf());
        for def in env.catalog.flows() {
            let progress = env.catalog.flow_progress(&def.name).unwrap_or_default();
            self.start(env, def, progress);
        }
    }

    fn start(&self, env: &Env, def: FlowDef, progress: FlowProgress) {
        for (r, seq) in &progress.regions {
            if let Some(region) = env.storage.region(*r) {
                if let Err(e) = region.hold_versions(&batching::holder(&def.name), *seq) {
                    tracing::warn!(flow = %def.name, region = r, error = %e, "flow progress is older than the region's history; the flow recomputes its windows");
                }
            }
        }
        let next_tick = def.eval_interval_s.map(|iv| match progress.last_tick_ms {
            Some(t) => t + iv * 1000,
            None => first_tick(batching::now_ms(), iv),
        });
        // A catch-up that was running resumes where it stopped: its dirty
        // windows not yet done, the sequences they were read up to.
        let mut st = TaskState { full_dirty: progress.pending_full, ..Default::default() };
        // The sink versions an incremental flow reads past are held again
        // now, not at its first evaluation (a compaction before it would
        // force a whole-sink recompute).
        incremental::restore(env, &def, &progress, &mut st.incr);
        let repairs_sink = incremental::repairs_sink(&st.incr);
        if !progress.pending_upto.is_empty() {
            st.read_upto = progress.pending_upto.clone();
            st.dirty = env.catalog.flow_pending(&def.name).into_iter().filter(|(s, _)| *s >= progress.pending_from).collect();
        }
        st.progress = progress;
        let task = Arc::new(FlowTask {
            state: Mutex::new(st),
            // Catch up (backfill, or changes while stopped) right away.
            due: Mutex::new(if def.eval_interval_s.is_none() { Some(Instant::now()) } else { None }),
            repair_due: Mutex::new(None),
            repairs_sink: std::sync::atomic::AtomicBool::new(repairs_sink),
            noticed: Mutex::new(None),
            next_tick_ms: Mutex::new(next_tick),
            instant_rows: Mutex::new((Vec::new(), Vec::new())),
            last_cost: Mutex::new(Duration::ZERO),
            last_start: Mutex::new(None),
            epochs: Default::default(),
            removed: Default::default(),
            def: RwLock::new(def.clone()),
        });
        self.flows.write().insert(def.name.clone(), task);
        self.kick();
    }

    /// Register a new flow: its initial progress is nothing read (backfill)
    /// or, with `backfill = false`, each source region's current sequence.
    pub fn create(&self, env: &Env, def: FlowDef) -> Result<()> {
        let backfill = def.options.get("backfill").map(|v| v != "false").unwrap_or(true);
        let mut progress = FlowProgress { backfilling: backfill, ..Default::default() };
        if !backfill {
            for (d, t) in &def.sources {
                if let Some(src) = env.catalog.table(d, t) {
                    for r in batching::table_regions(env, &src)? {
                        progress.regions.insert(r.id, r.last_seq());
                    }
                }
            }
        }
        env.catalog.put_flow(&def)?;
        env.catalog.put_flow_progress(&def.name, &progress)?;
        self.start(env, def, progress);
        Ok(())
    }

    /// Stop a flow and release its holders (the catalog entry is the
    /// caller's).
    pub fn remove(&self, env: &Env, name: &str) {
        let task = self.flows.write().remove(name);
        if let Some(task) = task {
            // Wait for a running evaluation to end.
            let st = task.state.lock();
            task.removed.store(true, std::sync::atomic::Ordering::SeqCst);
            streaming::drop_state(env, &task.def.read(), &st.stream);
            let sinks = incremental::held_sink_regions(&st.incr);
            for r in st.progress.regions.keys().chain(st.read_upto.keys()).chain(sinks.iter()) {
                if let Some(region) = env.storage.region(*r) {
                    region.release_versions(&batching::holder(name));
                }
            }
        }
    }

    /// Update a running flow's comment (COMMENT ON FLOW): only the
    /// comment, so source ids the flow refreshed meanwhile stay.
    pub fn update_def(&self, def: &FlowDef) {
        if let Some(t) = self.flows.read().get(&def.name) {
            let mut cur = t.def.write();
            cur.comment = def.comment.clone();
            cur.updated_ms = def.updated_ms;
        }
    }

    /// TRUNCATE, or a source dropped and created again, gives a source a
    /// new table id. The flow already reads its sources by name (and sees
    /// the regions it read replaced); after a run that succeeded, the
    /// definition records the ids it read (information_schema.flows'
    /// source_table_ids). Called under the execution lock of a task that
    /// is not removed, so DROP FLOW (which waits for that lock) cannot
    /// race with it and have the flow written back after the drop.
    fn refresh_source_ids(env: &Env, task: &FlowTask) -> Result<()> {
        let (name, ids) = {
            let def = task.def.read();
            if def.pending {
                return Ok(());
            }
            let ids: Vec<u32> = def.sources.iter().filter_map(|(d, t)| env.catalog.table(d, t)).map(|t| t.id).collect();
            if ids.len() != def.sources.len() || ids == def.source_ids {
                return Ok(());
            }
            (def.name.clone(), ids)
        };
        // Only the ids change: a comment set meanwhile stays.
        if let Some(mut stored) = env.catalog.flow(&name) {
            stored.source_ids = ids.clone();
            env.catalog.put_flow(&stored)?;
        }
        task.def.write().source_ids = ids;
        Ok(())
    }

    /// Run `f` — TRUNCATE of `tables` (database, name: a table and its
    /// partitions), which gives them new regions — while no evaluation of
    /// a flow reading one of them runs: an evaluation that started before
    /// ends first, one due meanwhile waits for `f`. So no evaluation
    /// straddles the TRUNCATE and writes rows of the old table into a sink
    /// after it. Then the flows run soon (adaptive ones; EVAL INTERVAL ones
    /// at their tick), so their sinks lose the old rows without waiting for
    /// a write.
    pub fn excluding_readers<R>(&self, tables: &[(String, String)], f: impl FnOnce() -> R) -> R {
        // Name order (the map's), so two TRUNCATEs lock shared flows in
        // one order.
        let readers: Vec<Arc<FlowTask>> =
            self.flows.read().values().filter(|t| t.def.read().sources.iter().any(|s| tables.contains(s))).cloned().collect();
        if crate::failpoint::any_hook() {
            for (_, table) in tables {
                crate::failpoint::run_hook(&format!("flow_readers_excluded:{table}"));
            }
        }
        let guards: Vec<_> = readers.iter().map(|t| t.state.lock()).collect();
        let r = f();
        drop(guards);
        let mut woke = false;
        for task in &readers {
            if task.def.read().eval_interval_s.is_some() {
                continue;
            }
            let mut due = task.due.lock();
            if due.is_none() {
                *due = Some(task.next_due(Instant::now(), Duration::from_millis(self.stream.barrier_interval_ms)));
                woke = true;
            }
        }
        if woke {
            self.kick();
        }
        r
    }

    fn task(&self, name: &str) -> Option<Arc<FlowTask>> {
        self.flows.read().get(name).cloned()
    }

    /// ADMIN FLUSH_FLOW: bring the flow up to date with every write
    /// acknowledged before the call. Returns the rows written.
    pub fn flush(&self, env: &Env, name: &str) -> Result<u64> {
        let Some(task) = self.task(name) else { bail!(UndefinedObject, "flow \"{name}\" does not exist") };
        self.run_task(env, &task, Trigger::Flush)
    }

    fn run_task(&self, env: &Env, task: &FlowTask, trigger: Trigger) -> Result<u64> {
        let mut st = task.state.lock();
        let mut def = task.def.read().clone();
        if task.removed.load(std::sync::atomic::Ordering::SeqCst) {
            bail!(UndefinedObject, "flow \"{}\" does not exist", def.name);
        }
        if def.pending {
            if !def.sources.iter().all(|(d, t)| env.catalog.table(d, t).is_some()) {
                return Ok(0);
            }
            self.activate(env, &mut def)?;
            *task.def.write() = def.clone();
        }
        {
            let mut rows = task.instant_rows.lock();
            st.instant_rows.append(&mut rows.0);
            st.stream.instant_seqs.append(&mut rows.1);
        }
        st.stream.tuning = self.stream.clone();
        st.stream.boot = self.boot;
        let noticed = task.noticed.lock().take();
        let started = (Instant::now(), thread_cpu());
        if trigger != Trigger::Flush && task.epochs.load(std::sync::atomic::Ordering::Relaxed) {
            // A write noticed while this epoch runs waits for the barrier
            // after it (counted from this start), not for the end of it.
            *task.last_start.lock() = Some(started.0);
        }
        // Write notices of this thread's sink writes are the flow's own.
        let _own = OwnWrites::enter(&def.name);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| batching::run(env, &def, &mut st, trigger, &self.settings)))
            .unwrap_or_else(|p| {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                Err(err!(Internal, "flow \"{name}\" panicked: {msg}", name = def.name))
            });
        task.epochs.store(st.stream.is_rendered(), std::sync::atomic::Ordering::Relaxed);
        task.repairs_sink.store(incremental::repairs_sink(&st.incr), std::sync::atomic::Ordering::Relaxed);
        let wall = started.0.elapsed();
        let cpu = match (started.1, thread_cpu()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        // Where a flow's freshness lag goes: waiting to start (debounce,
        // other flows) and the evaluation itself (CPU and waiting on the
        // sink's and the checkpoint's fsyncs).
        tracing::debug!(
            target: "weir::flow::timing",
            flow = %def.name,
            ?trigger,
            waited_ms = noticed.map(|n| started.0.saturating_duration_since(n).as_secs_f64() * 1e3),
            wall_ms = wall.as_secs_f64() * 1e3,
            cpu_ms = cpu.map(|c| c.as_secs_f64() * 1e3),
            rows = r.as_ref().ok().copied(),
            "flow evaluated"
        );
        if trigger != Trigger::Flush {
            *task.last_start.lock() = Some(started.0);
            let cost = cpu.unwrap_or(wall);
            let mut avg = task.last_cost.lock();
            *avg = (*avg * 3 + cost) / 4;
        }
        if r.is_ok() {
            if let Err(e) = Self::refresh_source_ids(env, task) {
                tracing::warn!(flow = %def.name, error = %e, "cannot record the flow's current source table ids");
            }
        }
        match &r {
            Ok(_) if st.more => {
                // Batches left: run again right after the other flows.
                st.failures = 0;
                *task.due.lock() = Some(Instant::now());
                self.kick();
            }
            Ok(_) => st.failures = 0,
            Err(e) => {
                st.failures += 1;
                let backoff = (100u64 << st.failures.min(10)).min(RETRY_MAX_MS);
                tracing::warn!(flow = %def.name, error = %e, retry_ms = backoff, "flow evaluation failed; its dirty windows are kept");
                *task.due.lock() = Some(Instant::now() + Duration::from_millis(backoff));
            }
        }
        r
    }

    /// A pending flow whose sources appeared: decide its mode and sink.
    fn activate(&self, env: &Env, def: &mut FlowDef) -> Result<()> {
        if let Some(t) = tql::body(def)? {
            return tql::activate(env, def, &t, &self.settings);
        }
        let c = batching::compile(env, def, &self.settings, batching::now_ms() * 1000);
        // The sink may be missing: create it from the query's shape.
        let shape = match c {
            Ok(c) => c.shape,
            Err(_) if env.catalog.table(&def.sink_database, &def.sink_table).is_none() => {
                let planner = crate::planner::Planner::new(
                    env.catalog,
                    env.storage,
                    &def.database,
                    batching_ctx(def, &self.settings),
                    Default::default(),
                );
                let logical = planner.plan_query(&crate::parser::parse_query(&def.query)?, None)?;
                let instant = def.sources.iter().any(|(d, t)| env.catalog.table(d, t).is_some_and(|t| t.ttl_ms == Some(0)));
                let shape = shape::analyze(&logical, def.eval_interval_s.is_some(), instant)?;
                let mut t = sink::auto_sink(&shape, &def.sink_database, &def.sink_table)?;
                t.id = env.catalog.next_table_id()?;
                create_table(env, &t)?;
                shape
            }
            Err(e) => return Err(e),
        };
        def.pending = false;
        def.source_ids = def.sources.iter().filter_map(|(d, t)| env.catalog.table(d, t)).map(|t| t.id).collect();
        def.flow_type = shape.flow_type.to_string();
        def.updated_ms = batching::now_ms();
        env.catalog.put_flow(def)
    }

    fn kick(&self) {
        self.wake.kick();
    }

    /// Run the scheduler until the owner is gone. `env` gives the catalog
    /// and storage from the owner (the engine, which owns this manager).
    pub fn spawn_scheduler<T: Send + Sync + 'static>(self: &Arc<Self>, owner: Weak<T>, env: fn(&T) -> Env<'_>) {
        let me = Arc::downgrade(self);
        let spawned = std::thread::Builder::new().name("weir-flows".into()).spawn(move || loop {
            let Some(mgr) = me.upgrade() else { return };
            let Some(o) = owner.upgrade() else { return };
            mgr.wake.begin_round();
            let wait = mgr.run_due(&env(&o));
            drop(o);
            if !mgr.wake.sleep(wait) {
                return;
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the flow scheduler");
        }
    }

    /// Stop the scheduler thread.
    pub fn stop(&self) {
        self.wake.stop();
    }

    /// Run the flows that are due; returns how long to sleep.
    fn run_due(&self, env: &Env) -> Duration {
        let mut wait = Duration::from_millis(1000);
        // Tests that observe a flow behind its sources hold automatic runs
        // back; ADMIN FLUSH_FLOW still runs the flow.
        if crate::failpoint::armed_now("flow_scheduler_paused") {
            return wait;
        }
        let tasks: Vec<Arc<FlowTask>> = self.flows.read().values().cloned().collect();
        for task in tasks {
            let now = Instant::now();
            let pending = task.def.read().pending;
            // Adaptive.
            let due = { *task.due.lock() };
            if let Some(d) = due {
                if d <= now || pending {
                    *task.due.lock() = None;
                    let _ = self.run_task(env, &task, Trigger::Adaptive);
                } else {
                    wait = wait.min(d - now);
                }
            }
            if pending {
                continue;
            }
            // A repair of the sink others wrote into (EVAL INTERVAL flows;
            // the others run adaptively).
            let repair = { *task.repair_due.lock() };
            if let Some(d) = repair {
                if d <= now {
                    *task.repair_due.lock() = None;
                    let _ = self.run_task(env, &task, Trigger::Repair);
                } else {
                    wait = wait.min(d - now);
                }
            }
            // EVAL INTERVAL ticks: the latest tick due runs (missed ones
            // are not replayed one by one).
            let iv = task.def.read().eval_interval_s;
            if let Some(iv) = iv {
                let iv_ms = iv * 1000;
                let next = { *task.next_tick_ms.lock() };
                let now_ms = batching::now_ms();
                if let Some(t) = next {
                    if t <= now_ms {
                        let tick = t + (now_ms - t) / iv_ms * iv_ms;
                        *task.next_tick_ms.lock() = Some(tick + iv_ms);
                        let _ = self.run_task(env, &task, Trigger::Tick(tick));
                        wait = wait.min(Duration::from_millis((tick + iv_ms - batching::now_ms()).max(1) as u64));
                    } else {
                        wait = wait.min(Duration::from_millis((t - now_ms) as u64));
                    }
                }
            }
        }
        wait
    }
}

thread_local! {
    /// The flow whose evaluation runs on this thread (write notices are
    /// delivered on the writing thread).
    static OWN_WRITES: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Marks this thread as evaluating a flow while alive: the notices of the
/// sink writes it makes are not someone else's writes.
struct OwnWrites;

impl OwnWrites {
    fn enter(flow: &str) -> OwnWrites {
        OWN_WRITES.with(|o| *o.borrow_mut() = Some(flow.to_string()));
        OwnWrites
    }

    fn is(flow: &str) -> bool {
        OWN_WRITES.with(|o| o.borrow().as_deref() == Some(flow))
    }
}

impl Drop for OwnWrites {
    fn drop(&mut self) {
        OWN_WRITES.with(|o| *o.borrow_mut() = None);
    }
}

fn batching_ctx(def: &FlowDef, settings: &Arc<HashMap<String, String>>) -> crate::exec::ExecCtx {
    crate::exec::ExecCtx {
        statement_ts: batching::now_ms() * 1000,
        statement_start_ts: batching::now_ms() * 1000,
        database: def.database.clone(),
        user: "flow".into(),
        settings: settings.clone(),
        deadline: None,
        cancel: Default::default(),
        pid: 0,
        activity: Default::default(),
        view: None,
        set_configs: Default::default(),
        sequences: None,
        routines: None,
        notifies: Default::default(),
        memory: Arc::new(crate::exec::memory::MemoryBudget::new(crate::exec::memory::QUERY_MEMORY_BYTES_DEFAULT)),
    }
}

/// Create a table's regions, then its catalog entry (as CREATE TABLE does).
pub fn create_table(env: &Env, t: &crate::catalog::TableDef) -> Result<()> {
    let desc = crate::planner::region_descriptor(t);
    for n in 0..t.regions.max(1) {
        env.storage.open_region(crate::storage::region_id(t.id, n), desc.clone())?;
    }
    env.catalog.create_table(t.clone())
}

impl WriteListener for FlowManager {
    /// Cheap: note which flows read the written table and wake the
    /// scheduler for adaptive ones. The changes themselves are read from
    /// the change log at evaluation.
    fn on_write(&self, notice: &WriteNotice) {
        let flows = self.flows.read();
        let mut woke = false;
        let mut timed = false;
        // Rows of an instant source: logged in the streaming flows' inboxes
        // (durable before the write is acknowledged), then handed over.
        let mut logged: Vec<(Arc<FlowTask>, FlowDef)> = Vec::new();
        for task in flows.values() {
            let def = task.def.read();
            if def.sink_table == notice.table_name
                && task.repairs_sink.load(std::sync::atomic::Ordering::Relaxed)
                && !OwnWrites::is(&def.name)
            {
                // Someone else wrote into an incremental flow's sink: the
                // windows touched are replaced from the partial states soon.
                let (slot, at) = match def.eval_interval_s {
                    Some(_) => (&task.repair_due, Instant::now() + Duration::from_millis(ADAPTIVE_DELAY_MS)),
                    None => (&task.due, task.next_due(Instant::now(), Duration::from_millis(self.stream.barrier_interval_ms))),
                };
                let mut due = slot.lock();
                if due.is_none() {
                    *due = Some(at);
                    woke = true;
                }
            }
            if !def.sources.iter().any(|(_, t)| *t == notice.table_name) {
                continue;
            }
            if !timed {
                timed = true;
                self.clock.note(notice.region_id, notice.seq_range, batching::now_ms());
            }
            if !notice.instant_rows.is_empty() && !def.pending {
                logged.push((task.clone(), def.clone()));
            }
            if def.eval_interval_s.is_some() {
                continue;
            }
            task.noticed.lock().get_or_insert_with(Instant::now);
            let mut due = task.due.lock();
            if due.is_none() {
                *due = Some(task.next_due(Instant::now(), Duration::from_millis(self.stream.barrier_interval_ms)));
                woke = true;
            }
        }
        if !logged.is_empty() {
            let seq = notice.seq_range.1;
            if let Some(root) = self.stream_root.lock().clone() {
                let entries: Vec<_> = logged.iter().map(|(_, d)| (d, notice.region_id, seq, notice.instant_rows.as_slice())).collect();
                if let Err(e) = streaming::log_instant(&root, &self.stream, self.boot, &entries) {
                    tracing::error!(table = %notice.table_name, error = %e, "cannot log rows of an instant source for streaming flows; a crash before their epoch loses them");
                }
            }
            let table = (notice.region_id >> 32) as u32;
            for (task, _) in &logged {
                let mut rows = task.instant_rows.lock();
                rows.0.extend(notice.instant_rows.iter().map(|b| (table, b.clone())));
                rows.1.push((notice.region_id, seq));
            }
        }
        drop(flows);
        if woke {
            self.kick();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{due_after, first_tick, Wake, ADAPTIVE_DELAY_MS, ADAPTIVE_MAX_MS};
    use std::time::{Duration, Instant};

    #[test]
    fn runs_are_spaced_by_their_cost_from_the_previous_start() {
        let ms = Duration::from_millis;
        let t = Instant::now();
        let floor = ms(ADAPTIVE_DELAY_MS);
        // First run, or a cheap flow: the debounce after the write.
        assert_eq!(due_after(t, None, ms(30)), t + floor);
        assert_eq!(due_after(t + ms(500), Some(t), ms(1)), t + ms(500) + floor);
        // 20 ms of CPU a run: runs start 400 ms apart (1/20 of a core),
        // counted from the previous start, not from the write.
        assert_eq!(due_after(t + ms(150), Some(t), ms(20)), t + ms(400));
        // An expensive flow still runs within the freshness bound.
        assert_eq!(due_after(t + ms(10), Some(t), ms(500)), t + ms(ADAPTIVE_MAX_MS));
    }

    #[test]
    fn a_kick_during_a_round_is_not_lost() {
        let w = Wake::default();
        w.begin_round();
        // A write noticed while the scheduler runs flows.
        w.kick();
        let t = Instant::now();
        assert!(w.sleep(Duration::from_secs(30)));
        assert!(t.elapsed() < Duration::from_secs(10), "the scheduler slept through a kick");
        // The next round starts clean.
        w.begin_round();
        assert!(!w.state.lock().1);
        w.stop();
        assert!(!w.sleep(Duration::from_secs(30)));
    }

    #[test]
    fn thread_cpu_counts_this_threads_work() {
        let Some(a) = super::thread_cpu() else { return };
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut b = a;
        // Busy until the clock ticks (10 ms of CPU), at most 10 s on a loaded machine.
        while b == a && t.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            b = super::thread_cpu().unwrap();
        }
        assert!(b > a, "a busy thread's CPU time advances ({a:?} -> {b:?})");
    }

    #[test]
    fn ticks_are_epoch_aligned() {
        assert_eq!(first_tick(1_500, 1), 2_000);
        assert_eq!(first_tick(2_000, 1), 2_000);
        assert_eq!(first_tick(61_000, 60), 120_000);
    }
}
