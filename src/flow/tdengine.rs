//! TDengine streams: a trigger over a trigger table decides *when* (which
//! windows of which group closed), the stream's query decides *what* (run
//! once per window with the placeholders bound), and the rows go to the
//! output table (a supertable with one subtable per group, or a plain
//! table), upserted on their first column, a timestamp.
//!
//! Window kinds: `Interval` (with SLIDING, epoch-aligned), `Sliding`
//! (event-time ticks), `Period` (wall-clock ticks), `Session`, `State`,
//! `Event` and `Count`. Unlike `flow::window::Window`, whose windows come
//! from one timestamp, session, state, event and count windows depend on
//! the rows around a row, so each evaluation reads the trigger rows of a
//! group in time order (`read_trigger`) and cuts them into windows
//! (`cut_windows`). A stream's progress (`catalog::StreamState`) is, per
//! group, the windows computed with the row count and a digest of their
//! rows: a closed window that is new is computed; one whose rows changed
//! (late rows, updates; deletes with DELETE_RECALC) is recomputed unless
//! IGNORE_DISORDER says otherwise; WATERMARK holds back the newest rows;
//! EXPIRED_TIME ignores old windows. RECALCULATE recomputes the computed
//! windows of a range.
//!
//! May import `planner`, `exec`, `storage`, `catalog`, `parser`, `types`,
//! `error` (as the rest of `flow`); never `sql` or `server`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use sqlparser::ast;

use super::tdengine_cache::TriggerCache;
use super::tdengine_notify::Event;
use crate::catalog::{Catalog, ColumnDef, GroupProgress, StreamDef, StreamState, SuperTableDef, TableDef, WindowMark};
use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::exec::ExecCtx;
use crate::notify::{Hub, Note};
use crate::parser::{CreateStream, StreamOption, StreamTrigger, TdStatement};
use crate::planner::{Params, Planner};
use crate::types::{SqlType, Value};
use crate::{bail, err};

use super::Env;

/// The column of a supertable that names the child table of each row.
pub const TBNAME: &str = "tbname";
/// The default output tag when a stream is partitioned by tbname.
pub const TAG_TBNAME: &str = "tag_tbname";

/// What kind of table a trigger (or output) name is.
#[derive(Debug, Clone, PartialEq)]
pub enum TableKind {
    /// A supertable (the weir table holding every child's rows).
    Stable(SuperTableDef),
    /// A child table of this supertable with these tag values.
    Child { stable: SuperTableDef, tags: Vec<Option<String>> },
    /// A plain weir table.
    Normal,
}

/// A trigger table resolved.
#[derive(Debug, Clone)]
pub struct TriggerTable {
    pub database: String,
    pub name: String,
    pub kind: TableKind,
    /// The weir table the rows live in (the supertable for a child).
    pub table: TableDef,
    pub ts_column: String,
}

/// What kind of table `database.name` is.
pub fn table_kind(catalog: &Catalog, database: &str, name: &str) -> Option<(TableKind, TableDef)> {
    if let Some(c) = catalog.child_table(database, name) {
        let stable = catalog.stable(database, &c.stable)?;
        let t = catalog.table(database, &c.stable)?;
        return Some((TableKind::Child { stable, tags: c.tags }, t));
    }
    let t = catalog.table(database, name)?;
    match catalog.stable(database, name) {
        Some(s) => Some((TableKind::Stable(s), t)),
        None => Some((TableKind::Normal, t)),
    }
}

pub fn resolve_trigger(catalog: &Catalog, database: &str, name: &str) -> Result<TriggerTable> {
    let (kind, table) =
        table_kind(catalog, database, name).ok_or_else(|| err!(UndefinedTable, "Table does not exist: {database}.{name}"))?;
    let ts_column = match table.time_index {
        Some(i) => table.columns[i].name.clone(),
        None => table.columns[0].name.clone(),
    };
    Ok(TriggerTable { database: database.to_string(), name: name.to_string(), kind, table, ts_column })
}

/// A stream ready to evaluate.
pub struct Compiled {
    pub def: StreamDef,
    pub cs: CreateStream,
    pub trigger: Option<TriggerTable>,
    /// The output table (database, name) and whether it is a supertable.
    pub output: Option<(String, String)>,
    pub watermark_us: i64,
    pub expired_us: Option<i64>,
    pub ignore_disorder: bool,
    pub delete_recalc: bool,
    pub ignore_nodata: bool,
    pub calc_notify_only: bool,
    pub fill_history: Option<Option<i64>>,
    pub pre_filter: Option<ast::Expr>,
    /// FORCE_OUTPUT: a computation without rows writes one row.
    pub force_output: bool,
    /// LOW_LATENCY_CALC: the runner evaluates right after a write.
    pub low_latency: bool,
    /// MAX_DELAY: open windows are computed every this often.
    pub max_delay_us: Option<i64>,
    /// EVENT_TYPE: compute at window open / close (default close only).
    pub on_open: bool,
    pub on_close: bool,
    /// IDLE_TIMEOUT: processing time without new rows after which a group
    /// is idle; EVENT_TYPE(IDLE / RESUME): compute when a group goes idle /
    /// gets rows again.
    pub idle_timeout_us: Option<i64>,
    pub on_idle: bool,
    pub on_resume: bool,
    /// NOTIFY(…): where events go and which.
    pub notify: Option<NotifyCfg>,
}

/// A stream's NOTIFY clause.
#[derive(Debug, Clone)]
pub struct NotifyCfg {
    pub urls: Vec<String>,
    /// ON (WINDOW_OPEN): window triggers only.
    pub on_open: bool,
    pub on_close: bool,
    /// ON (IDLE), ON (RESUME): with IDLE_TIMEOUT.
    pub on_idle: bool,
    pub on_resume: bool,
    /// NOTIFY_HISTORY: also for the history FILL_HISTORY computes.
    pub history: bool,
    /// ON_FAILURE_PAUSE: an undelivered message fails the evaluation (it is
    /// retried, with backoff); by default it is dropped and counted.
    pub pause: bool,
    /// WHERE: over the result columns; a close event per row it holds for.
    pub condition: Option<ast::Expr>,
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn quote_lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn ts_literal(us: i64) -> String {
    format!("TIMESTAMP {}", quote_lit(&crate::types::format_value(&Value::Timestamp(us))))
}

/// A constant (a FILL_HISTORY start, a RECALCULATE bound) as microseconds:
/// a timestamp string or an integer epoch in milliseconds.
pub fn time_value(planner: &Planner, e: &ast::Expr) -> Result<i64> {
    let scope = crate::planner::Scope::new(vec![], None);
    let bound = planner.bind_expr(e, &scope, None)?;
    Ok(match planner.eval_const(&bound)? {
        Value::Int(ms) => ms.saturating_mul(1000),
        Value::Timestamp(us) => us,
        Value::Text(t) => match crate::types::parse_timestamp(&t) {
            Some(us) => us,
            None => bail!(InvalidDatetime, "invalid timestamp: \"{t}\""),
        },
        other => bail!(DatatypeMismatch, "expected a timestamp, found {}", crate::types::format_value(&other)),
    })
}

pub fn exec_ctx(database: &str, now_us: i64) -> ExecCtx {
    ExecCtx {
        statement_ts: now_us,
        statement_start_ts: now_us,
        database: database.to_string(),
        user: "stream".into(),
        settings: Arc::new(HashMap::new()),
        deadline: None,
        cancel: Arc::new(AtomicBool::new(false)),
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

pub fn now_us() -> i64 {
    super::batching::now_ms() * 1000
}

/// Parse a stored stream definition.
pub fn parse_def(def: &StreamDef) -> Result<CreateStream> {
    match crate::parser::parse(&def.sql)?.pop() {
        Some(crate::parser::Statement::Tdengine(t)) => match *t {
            TdStatement::CreateStream(c) => Ok(*c),
            _ => bail!(Internal, "stream {} is not a CREATE STREAM", def.name),
        },
        _ => bail!(Internal, "stream {} is not a CREATE STREAM", def.name),
    }
}

/// `db.name` (or `name` in `current`) as (database, table).
pub fn qualified(current: &str, n: &ast::ObjectName) -> Result<(String, String)> {
    crate::planner::object_name(n).map(|(d, t)| (d.unwrap_or_else(|| current.to_string()), t))
}

pub fn compile(env: &Env, def: &StreamDef) -> Result<Compiled> {
    let cs = parse_def(def)?;
    let trigger = match &cs.from {
        Some(n) => {
            let (d, t) = qualified(&def.database, n)?;
            Some(resolve_trigger(env.catalog, &d, &t)?)
        }
        None => None,
    };
    let output = cs.into.as_ref().map(|n| qualified(&def.database, n)).transpose()?;
    let planner = Planner::new(env.catalog, env.storage, &def.database, exec_ctx(&def.database, now_us()), Params::default());
    let mut c = Compiled {
        def: def.clone(),
        trigger,
        output,
        watermark_us: 0,
        expired_us: None,
        ignore_disorder: false,
        delete_recalc: false,
        ignore_nodata: false,
        calc_notify_only: false,
        fill_history: None,
        pre_filter: None,
        force_output: false,
        low_latency: false,
        max_delay_us: None,
        on_open: false,
        on_close: true,
        idle_timeout_us: None,
        on_idle: false,
        on_resume: false,
        notify: cs.notify.as_ref().map(|n| {
            let has = |v: &[String], w: &str| v.iter().any(|x| x.eq_ignore_ascii_case(w));
            NotifyCfg {
                urls: n.urls.clone(),
                on_open: has(&n.events, "WINDOW_OPEN") && time_or_data_windows(&cs.trigger),
                on_close: n.events.is_empty() || has(&n.events, "WINDOW_CLOSE") || !time_or_data_windows(&cs.trigger),
                on_idle: has(&n.events, "IDLE"),
                on_resume: has(&n.events, "RESUME"),
                history: has(&n.options, "NOTIFY_HISTORY"),
                pause: has(&n.options, "ON_FAILURE_PAUSE"),
                condition: n.condition.clone(),
            }
        }),
        cs: cs.clone(),
    };
    for o in &cs.options {
        match o {
            StreamOption::Watermark(d) => c.watermark_us = d.micros.unwrap_or(0),
            StreamOption::ExpiredTime(d) => c.expired_us = d.micros,
            StreamOption::IgnoreDisorder => c.ignore_disorder = true,
            StreamOption::DeleteRecalc => c.delete_recalc = true,
            StreamOption::IgnoreNodataTrigger => c.ignore_nodata = true,
            StreamOption::CalcNotifyOnly => c.calc_notify_only = true,
            StreamOption::FillHistory(e) | StreamOption::FillHistoryFirst(e) => {
                c.fill_history = Some(e.as_ref().map(|e| time_value(&planner, e)).transpose()?)
            }
            StreamOption::PreFilter(e) => c.pre_filter = Some(e.clone()),
            StreamOption::ForceOutput => c.force_output = true,
            StreamOption::LowLatencyCalc => c.low_latency = true,
            StreamOption::MaxDelay(d) => c.max_delay_us = d.micros,
            StreamOption::IdleTimeout(d) => c.idle_timeout_us = d.micros,
            StreamOption::EventType(t) => {
                let has = |w: &str| t.iter().any(|x| x.eq_ignore_ascii_case(w));
                c.on_idle = has("IDLE");
                c.on_resume = has("RESUME");
                if time_or_data_windows(&cs.trigger) {
                    c.on_open = has("WINDOW_OPEN");
                    c.on_close = has("WINDOW_CLOSE");
                } else if !has("WINDOW_OPEN") && !has("WINDOW_CLOSE") {
                    // PERIOD and plain SLIDING have no windows to open or
                    // close; IDLE / RESUME alone: their ticks compute nothing.
                    c.on_close = false;
                }
            }
            _ => {}
        }
    }
    Ok(c)
}

/// Whether the trigger has windows (not PERIOD, not plain SLIDING).
fn time_or_data_windows(t: &StreamTrigger) -> bool {
    !matches!(t, StreamTrigger::Period { .. } | StreamTrigger::Sliding { .. })
}

/// One group's trigger rows, in time order.
#[derive(Debug, Default, Clone)]
pub struct GroupRows {
    /// The partition values, as text (None: NULL), in PARTITION BY order.
    pub values: Vec<Option<String>>,
    pub ts: Vec<i64>,
    /// STATE_WINDOW: the state as text; EVENT_WINDOW: start / end flags;
    /// COUNT_WINDOW with columns: whether the row counts.
    pub state: Vec<Option<String>>,
    pub start: Vec<bool>,
    pub end: Vec<bool>,
    pub valid: Vec<bool>,
    pub digest: Vec<u64>,
    /// Where each row is in the stream's `TriggerCache` (chunk, row), when
    /// the rows were read for it (else empty).
    pub at: Vec<(u32, u32)>,
}

/// The group key of partition values.
pub fn group_key(values: &[Option<String>]) -> String {
    values.iter().map(|v| v.clone().unwrap_or_else(|| "\u{0}".into())).collect::<Vec<_>>().join("\u{1}")
}

/// The digests of a batch's rows (their values in arrow's row format,
/// hashed): columnar, where formatting every value as text per row was
/// most of a window's evaluation. Falls back to `row_digest` for types
/// the row format does not take.
pub(super) fn batch_digests(cols: &[ArrayRef], n: usize, out: &mut Vec<u64>) -> Result<()> {
    out.clear();
    let fields: Vec<arrow::row::SortField> = cols.iter().map(|c| arrow::row::SortField::new(c.data_type().clone())).collect();
    if let Ok(conv) = arrow::row::RowConverter::new(fields) {
        if let Ok(rows) = conv.convert_columns(cols) {
            out.extend((0..n).map(|i| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                rows.row(i).as_ref().hash(&mut h);
                h.finish()
            }));
            return Ok(());
        }
    }
    out.extend((0..n).map(|i| row_digest(&cols.iter().map(|a| crate::types::value_at(a.as_ref(), i)).collect::<Vec<_>>())));
    Ok(())
}

fn row_digest(row: &[Value]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for v in row {
        crate::types::format_value(v).hash(&mut h);
        matches!(v, Value::Null).hash(&mut h);
    }
    h.finish()
}

/// A partition column's expression over the trigger table: a column of a
/// supertable; for a child or plain table `tbname` is its name and a tag
/// its value.
fn partition_expr(t: &TriggerTable, col: &str) -> Result<String> {
    match &t.kind {
        TableKind::Stable(s) => {
            if col == TBNAME || s.tags.iter().any(|x| x == col) {
                Ok(format!("CAST({} AS TEXT)", quote_ident(col)))
            } else {
                bail!(InvalidParameterValue, "Invalid stream query: PARTITION BY column \"{col}\" is not tbname or a tag")
            }
        }
        TableKind::Child { stable, tags } => {
            if col == TBNAME {
                Ok(quote_lit(&t.name))
            } else if let Some(i) = stable.tags.iter().position(|x| x == col) {
                Ok(tags[i].as_ref().map(|v| quote_lit(v)).unwrap_or_else(|| "CAST(NULL AS TEXT)".into()))
            } else {
                bail!(InvalidParameterValue, "Invalid stream query: PARTITION BY column \"{col}\" is not tbname or a tag")
            }
        }
        TableKind::Normal if col == TBNAME => Ok(quote_lit(&t.name)),
        TableKind::Normal => bail!(InvalidParameterValue, "Invalid stream query: a normal table can only be partitioned by tbname"),
    }
}

/// The relation of the trigger table's rows (a child table reads its
/// supertable's rows of its name).
fn trigger_relation(t: &TriggerTable) -> String {
    match &t.kind {
        TableKind::Child { stable, .. } => format!(
            "(SELECT * FROM {}.{} WHERE {} = {}) AS {}",
            quote_ident(&t.database),
            quote_ident(&stable.name),
            TBNAME,
            quote_lit(&t.name),
            quote_ident(&t.name)
        ),
        _ => format!("{}.{}", quote_ident(&t.database), quote_ident(&t.name)),
    }
}

/// The groups an evaluation reads and from where: group key → (partition
/// values, first row time read; None: the group's every row).
pub type Selection = BTreeMap<String, (Vec<Option<String>>, Option<i64>)>;

/// Read the trigger rows, grouped, in time order: every group, or (`sel`)
/// the groups selected from their start times on.
pub fn read_trigger(env: &Env, c: &Compiled, sel: Option<&Selection>) -> Result<BTreeMap<String, GroupRows>> {
    read_trigger_into(env, c, sel, None)
}

/// `read_trigger`; with a cache, the rows read are kept in it as chunks
/// and each group's `at` says where.
fn read_trigger_into(
    env: &Env,
    c: &Compiled,
    sel: Option<&Selection>,
    mut cache: Option<&mut TriggerCache>,
) -> Result<BTreeMap<String, GroupRows>> {
    let Some(t) = &c.trigger else { return Ok(BTreeMap::new()) };
    let partition: Vec<String> = c.cs.partition.iter().map(crate::planner::ident).collect();
    let mut select: Vec<String> = partition.iter().map(|p| partition_expr(t, p)).collect::<Result<_>>()?;
    let np = select.len();
    select.push(format!("CAST({} AS TIMESTAMP)", quote_ident(&t.ts_column)));
    match &c.cs.trigger {
        StreamTrigger::State { expr, .. } => select.push(format!("CAST(({expr}) AS TEXT)")),
        StreamTrigger::Event { start, end, .. } => {
            select.push(format!("COALESCE(({start}), false)"));
            select.push(format!("COALESCE(({end}), false)"));
        }
        StreamTrigger::Count { columns, .. } if !columns.is_empty() => {
            let c: Vec<String> = columns.iter().map(|c| format!("{c} IS NOT NULL")).collect();
            select.push(format!("({})", c.join(" OR ")));
        }
        _ => {}
    }
    let extra = select.len();
    select.push("*".into());
    let mut sql = format!("SELECT {} FROM {}", select.join(", "), trigger_relation(t));
    let mut cond = Vec::new();
    if let Some(f) = &c.pre_filter {
        cond.push(format!("({f})"));
    }
    if let Some(sel) = sel {
        if sel.is_empty() {
            return Ok(BTreeMap::new());
        }
        // Rows from the earliest start any selected group needs.
        if let Some(lo) = sel.values().map(|(_, a)| *a).try_fold(i64::MAX, |m, a| a.map(|a| m.min(a))) {
            cond.push(format!("{} >= {}", quote_ident(&t.ts_column), ts_literal(lo)));
        }
        // A few child tables: their tag sets only.
        if let (TableKind::Stable(_), Some(i)) = (&t.kind, partition.iter().position(|p| p == TBNAME)) {
            if sel.len() <= 256 && sel.values().all(|(v, _)| v[i].is_some()) {
                let names: Vec<String> = sel.values().map(|(v, _)| quote_lit(v[i].as_deref().unwrap_or_default())).collect();
                cond.push(format!("{TBNAME} IN ({})", names.join(", ")));
            }
        }
    }
    if !cond.is_empty() {
        sql.push_str(&format!(" WHERE {}", cond.join(" AND ")));
    }
    let q = crate::parser::parse_query(&sql)?;
    let planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, now_us()), Params::default());
    let plan = planner.physical(planner.plan_query(&q, None)?)?;
    // Batch by batch into the groups' columns (a row's values are only
    // held while it is read: the rows of a day of 1,000 children as values
    // were gigabytes), then each group in time order.
    let text = |v: &Value| match v {
        Value::Null => None,
        Value::Text(s) => Some(s.clone()),
        other => Some(crate::types::format_value(other)),
    };
    let mut out: BTreeMap<String, GroupRows> = BTreeMap::new();
    let mut exec = crate::exec::build(&plan, &planner.ctx)?;
    let mut key_vals: Vec<Option<String>> = Vec::with_capacity(np);
    // The group of the row before (rows come in key order, so a run of
    // rows of one group costs one key and one lookup).
    let mut last: Option<(Vec<Option<String>>, String, bool)> = None;
    let mut digests: Vec<u64> = Vec::new();
    loop {
        planner.ctx.check()?;
        let r = exec.next_batch(crate::exec::BATCH_ROWS)?;
        let drained = r.is_drained;
        let b = r.into_dense()?;
        let cols = b.columns();
        // Kept in the cache: the digests are the chunk's (its columns as
        // `%%trows` has them).
        let chunk = match cache.as_deref_mut() {
            Some(k) => {
                let fields: Vec<arrow::datatypes::FieldRef> = b.schema().fields()[extra..].to_vec();
                let rows = RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), cols[extra..].to_vec())?;
                match k.add_chunk(&rows)? {
                    Some((id, d)) => {
                        digests = d;
                        Some(id)
                    }
                    None => None,
                }
            }
            None => None,
        };
        if chunk.is_none() {
            batch_digests(&cols[extra..], b.num_rows(), &mut digests)?;
        }
        let ts_col = cols[np].as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>();
        let texts: Vec<Option<&arrow::array::StringArray>> = cols[..np].iter().map(|a| a.as_any().downcast_ref()).collect();
        for i in 0..b.num_rows() {
            let ts = match ts_col {
                Some(a) if a.is_null(i) => continue,
                Some(a) => a.value(i),
                None => match crate::types::value_at(cols[np].as_ref(), i) {
                    Value::Timestamp(ts) => ts,
                    _ => continue,
                },
            };
            let value = |k: usize| -> Option<std::borrow::Cow<'_, str>> {
                match texts[k] {
                    Some(t) if t.is_null(i) => None,
                    Some(t) => Some(std::borrow::Cow::Borrowed(t.value(i))),
                    None => text(&crate::types::value_at(cols[k].as_ref(), i)).map(std::borrow::Cow::Owned),
                }
            };
            let same = last.as_ref().is_some_and(|(v, _, _)| (0..np).all(|k| v[k].as_deref() == value(k).as_deref()));
            if !same {
                key_vals.clear();
                key_vals.extend((0..np).map(|k| value(k).map(|v| v.into_owned())));
                let key = group_key(&key_vals);
                let wanted = match sel {
                    None => true,
                    Some(sel) => sel.contains_key(&key),
                };
                last = Some((key_vals.clone(), key, wanted));
            }
            let Some((values, key, true)) = &last else { continue };
            if let Some((_, Some(lo))) = sel.and_then(|sel| sel.get(key)) {
                if ts < *lo {
                    continue;
                }
            }
            let g = match out.get_mut(key) {
                Some(g) => g,
                None => out.entry(key.clone()).or_insert_with(|| GroupRows { values: values.clone(), ..Default::default() }),
            };
            g.ts.push(ts);
            g.digest.push(digests[i]);
            if let Some(id) = chunk {
                g.at.push((id, i as u32));
            }
            let at = |k: usize| crate::types::value_at(cols[np + k].as_ref(), i);
            match &c.cs.trigger {
                StreamTrigger::State { .. } => g.state.push(text(&at(1))),
                StreamTrigger::Event { .. } => {
                    g.start.push(matches!(at(1), Value::Bool(true)));
                    g.end.push(matches!(at(2), Value::Bool(true)));
                }
                StreamTrigger::Count { columns, .. } if !columns.is_empty() => g.valid.push(matches!(at(1), Value::Bool(true))),
                _ => {}
            }
        }
        if drained {
            break;
        }
    }
    for g in out.values_mut() {
        sort_group(g);
    }
    Ok(out)
}

/// A group's rows in time order (a stable sort: rows of one time keep
/// the order they were read in).
pub(super) fn sort_group(g: &mut GroupRows) {
    if g.ts.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    let mut idx: Vec<usize> = (0..g.ts.len()).collect();
    idx.sort_by_key(|&i| g.ts[i]);
    fn permute<T: Clone>(v: &mut Vec<T>, idx: &[usize]) {
        if !v.is_empty() {
            *v = idx.iter().map(|&i| v[i].clone()).collect();
        }
    }
    permute(&mut g.ts, &idx);
    permute(&mut g.digest, &idx);
    permute(&mut g.state, &idx);
    permute(&mut g.start, &idx);
    permute(&mut g.end, &idx);
    permute(&mut g.valid, &idx);
    permute(&mut g.at, &idx);
}

/// One window of a group: `[start, end)` on event time for INTERVAL and
/// SLIDING; first and last row (end = last + 1) for the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Win {
    pub start: i64,
    pub end: i64,
    /// `_twend` as TDengine shows it (the window's end for INTERVAL, the
    /// last row for data-defined windows).
    pub shown_end: i64,
    pub rows: u64,
    pub digest: u64,
    /// Rows `[lo, hi)` of the group.
    pub lo: usize,
    pub hi: usize,
    /// SLIDING: the tick (`_tcurrent_ts`).
    pub tick: Option<i64>,
}

fn floor_to(ts: i64, step: i64, offset: i64) -> i64 {
    (ts - offset).div_euclid(step) * step + offset
}

fn mk(g: &GroupRows, lo: usize, hi: usize, start: i64, end: i64, shown_end: i64) -> Win {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for i in lo..hi {
        g.ts[i].hash(&mut h);
        g.digest[i].hash(&mut h);
    }
    Win { start, end, shown_end, rows: (hi - lo) as u64, digest: h.finish(), lo, hi, tick: None }
}

/// The closed windows of a group: rows after `max ts - watermark` are not
/// processed yet. `from` (INTERVAL and SLIDING): the group has rows before
/// it (not in `g`) and windows start from it on (a window start); the
/// data-defined windows start from `g`'s first row, a window's start.
pub fn cut_windows(trigger: &StreamTrigger, g: &GroupRows, watermark_us: i64, ignore_nodata: bool, from: Option<i64>) -> Result<Vec<Win>> {
    Ok(cut(trigger, g, watermark_us, ignore_nodata, from, None)?.0)
}

/// The closed windows of a group and its open ones: windows holding
/// processed rows (at or before the watermark) that have not closed yet
/// (EVENT_TYPE(WINDOW_OPEN) and MAX_DELAY compute them).
pub fn cut(
    trigger: &StreamTrigger,
    g: &GroupRows,
    watermark_us: i64,
    ignore_nodata: bool,
    from: Option<i64>,
    wm_floor: Option<i64>,
) -> Result<(Vec<Win>, Vec<Win>)> {
    let Some(&max_ts) = g.ts.last() else { return Ok((vec![], vec![])) };
    // Deletes do not move a group's progress back: windows closed stay closed.
    let wm = max_ts.saturating_sub(watermark_us).max(wm_floor.unwrap_or(i64::MIN));
    // Processed rows: [0, n).
    let n = g.ts.partition_point(|&t| t <= wm);
    let mut out = Vec::new();
    let mut open = Vec::new();
    let micros = |d: &crate::parser::Duration| -> Result<i64> {
        match d.micros {
            Some(m) if m > 0 => Ok(m),
            _ => bail!(FeatureNotSupported, "calendar durations ({d}) are not supported by weir's streams"),
        }
    };
    match trigger {
        StreamTrigger::Interval { interval, offset, sliding, .. } => {
            let iv = micros(interval)?;
            let sl = micros(sliding)?;
            let off = offset.as_ref().map(&micros).transpose()?.unwrap_or(0);
            if n == 0 && from.is_none() {
                return Ok((out, open));
            }
            // Every window start from the first row's earliest window on
            // (or from `from`, rows before it).
            let mut s = match from {
                Some(f) => f,
                None => floor_to(g.ts[0], sl, off) - ((iv - 1) / sl) * sl,
            };
            while s.saturating_add(iv) <= wm {
                let e = s + iv;
                let lo = g.ts.partition_point(|&t| t < s);
                let hi = g.ts.partition_point(|&t| t < e);
                if hi > lo || (!ignore_nodata && (from.is_some() || s >= floor_to(g.ts[0], sl, off))) {
                    if hi > lo || lo > 0 || from.is_some() {
                        out.push(mk(g, lo, hi, s, e, e));
                    }
                }
                s += sl;
            }
            // Open: the later windows holding processed rows.
            while n > 0 && s <= g.ts[n - 1] {
                let lo = g.ts.partition_point(|&t| t < s);
                let hi = g.ts.partition_point(|&t| t < s + iv).min(n);
                if hi > lo {
                    open.push(mk(g, lo, hi, s, s + iv, s + iv));
                }
                s += sl;
            }
        }
        StreamTrigger::Sliding { sliding, offset } => {
            let sl = micros(sliding)?;
            let off = offset.as_ref().map(&micros).transpose()?.unwrap_or(0);
            if n == 0 && from.is_none() {
                return Ok((out, open));
            }
            // Ticks after the first row (or `from`), up to the watermark.
            let mut t = from.unwrap_or_else(|| floor_to(g.ts[0], sl, off)) + sl;
            while t <= wm {
                let lo = g.ts.partition_point(|&x| x < t - sl);
                let hi = g.ts.partition_point(|&x| x < t);
                if hi > lo || !ignore_nodata {
                    let mut w = mk(g, lo, hi, t - sl, t, t);
                    w.tick = Some(t);
                    out.push(w);
                }
                t += sl;
            }
            if n > 0 && t - sl <= g.ts[n - 1] {
                let lo = g.ts.partition_point(|&x| x < t - sl);
                let mut w = mk(g, lo, n, t - sl, t, t);
                w.tick = Some(t);
                open.push(w);
            }
        }
        StreamTrigger::Period { .. } => {}
        StreamTrigger::Session { gap, .. } => {
            let gap = micros(gap)?;
            let mut lo = 0;
            while lo < n {
                let mut hi = lo + 1;
                while hi < n && g.ts[hi] - g.ts[hi - 1] <= gap {
                    hi += 1;
                }
                // Closed when the watermark is more than gap past its last row.
                if wm - g.ts[hi - 1] > gap {
                    out.push(mk(g, lo, hi, g.ts[lo], g.ts[hi - 1] + 1, g.ts[hi - 1]));
                } else {
                    open.push(mk(g, lo, hi, g.ts[lo], g.ts[hi - 1] + 1, g.ts[hi - 1]));
                }
                lo = hi;
            }
        }
        StreamTrigger::State { true_for, extend, .. } => {
            let tf = true_for.as_ref().map(&micros).transpose()?.unwrap_or(0);
            // The runs of equal states (first, last row); NULL states
            // belong to no run.
            let mut runs: Vec<(usize, usize)> = Vec::new();
            let mut cur: Option<(usize, usize, &String)> = None;
            for i in 0..n {
                let Some(st) = &g.state[i] else { continue };
                match &mut cur {
                    Some((_, last, s)) if *s == st => *last = i,
                    _ => {
                        if let Some((f, l, _)) = cur.take() {
                            runs.push((f, l));
                        }
                        cur = Some((i, i, st));
                    }
                }
            }
            let extend = extend.unwrap_or(0);
            // extend 2 reads its start from the run before: cut from a
            // later row (`from`), the first run is that context only.
            let skip = usize::from(extend == 2 && from.is_some());
            for (k, &(f, l)) in runs.iter().enumerate().skip(skip) {
                if g.ts[l] - g.ts[f] < tf {
                    continue;
                }
                // extend 1: the end reaches just before the next window;
                // extend 2: the start just after the previous one.
                let (start, end) = match extend {
                    1 => (g.ts[f], runs.get(k + 1).map(|r| g.ts[r.0]).or(cur.map(|c| g.ts[c.0])).unwrap_or(g.ts[l] + 1)),
                    2 => (k.checked_sub(1).map(|p| g.ts[runs[p].1] + 1).unwrap_or(g.ts[f]), g.ts[l] + 1),
                    _ => (g.ts[f], g.ts[l] + 1),
                };
                out.push(mk(g, f, l + 1, start, end, end - 1));
            }
            if let Some((f, l, _)) = cur {
                if runs.len() >= skip {
                    let start = match (extend, runs.last()) {
                        (2, Some(p)) => g.ts[p.1] + 1,
                        _ => g.ts[f],
                    };
                    open.push(mk(g, f, l + 1, start, g.ts[l] + 1, g.ts[l]));
                }
            }
        }
        StreamTrigger::Event { true_for, .. } => {
            let tf = true_for.as_ref().map(&micros).transpose()?.unwrap_or(0);
            let mut at: Option<usize> = None;
            for i in 0..n {
                if at.is_none() && g.start[i] {
                    at = Some(i);
                }
                if let Some(f) = at {
                    if g.end[i] {
                        if g.ts[i] - g.ts[f] >= tf {
                            out.push(mk(g, f, i + 1, g.ts[f], g.ts[i] + 1, g.ts[i]));
                        }
                        at = None;
                    }
                }
            }
            if let Some(f) = at {
                open.push(mk(g, f, n, g.ts[f], g.ts[n - 1] + 1, g.ts[n - 1]));
            }
        }
        StreamTrigger::Count { count, slide, columns } => {
            let count = (*count).max(1) as usize;
            let slide = slide.unwrap_or(count as i64).max(1) as usize;
            let idx: Vec<usize> = (0..n).filter(|&i| columns.is_empty() || g.valid[i]).collect();
            let mut k = 0;
            while k + count <= idx.len() {
                let (f, l) = (idx[k], idx[k + count - 1]);
                out.push(mk(g, f, l + 1, g.ts[f], g.ts[l] + 1, g.ts[l]));
                k += slide;
            }
            if k < idx.len() {
                let (f, l) = (idx[k], idx[idx.len() - 1]);
                open.push(mk(g, f, l + 1, g.ts[f], g.ts[l] + 1, g.ts[l]));
            }
        }
    }
    Ok((out, open))
}

/// The values bound to a computation's placeholders.
#[derive(Debug, Clone, Default)]
pub struct Bindings {
    pub window: Option<Win>,
    pub group: Vec<Option<String>>,
    pub tbname: Option<String>,
    pub group_id: i64,
    pub local_us: i64,
    pub period_us: i64,
    /// `%%trows` as rows in memory (the stream's cache), not a read.
    pub trows: Option<Arc<TriggerRows>>,
    /// IDLE / RESUME: `_tidlestart`, `_tidleend` (processing times, ms).
    pub idle_ms: Option<(i64, i64)>,
}

/// A window's trigger rows in memory: the trigger table's columns.
#[derive(Debug)]
pub struct TriggerRows {
    pub columns: Vec<PlanColumn>,
    pub batch: RecordBatch,
}

/// The relation name `%%trows` reads when its rows are in memory.
const TROWS_MEMORY: &str = "__td_trows";

/// A planner for a computation: `%%trows`'s rows in memory when bound so.
fn trows_planner<'a>(env: &Env<'a>, c: &Compiled, b: &Bindings, now: i64) -> Planner<'a> {
    let mut planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, now), Params::default());
    if let Some(r) = &b.trows {
        planner.materialized.push((TROWS_MEMORY.to_string(), r.columns.clone(), vec![r.batch.clone()]));
    }
    planner
}

/// `%%trows`'s columns: the trigger table's (`SELECT *`).
fn trows_columns(t: &TriggerTable) -> Vec<PlanColumn> {
    t.table.columns.iter().map(|c| PlanColumn::new(c.name.clone(), c.ty)).collect()
}

/// Whether a stream keeps its open windows' trigger rows in memory
/// (`TriggerCache`): INTERVAL / SLIDING over a supertable, no PRE_FILTER.
fn cacheable(c: &Compiled) -> bool {
    matches!(c.trigger.as_ref().map(|t| &t.kind), Some(TableKind::Stable(_)))
        && c.pre_filter.is_none()
        && matches!(c.cs.trigger, StreamTrigger::Interval { .. } | StreamTrigger::Sliding { .. })
}

/// A selection's groups: those kept in the cache from their start on are
/// taken from there, the others read (and kept; `read` counts their rows).
fn read_cached(env: &Env, c: &Compiled, sel: &Selection, cache: &mut TriggerCache, read: &mut u64) -> Result<BTreeMap<String, GroupRows>> {
    let mut out = BTreeMap::new();
    let mut rest = Selection::new();
    for (key, (values, anchor)) in sel {
        match anchor.and_then(|a| cache.rows_from(key, a)) {
            Some(mut g) => {
                g.values = values.clone();
                // A group with no row from its start on is not one read.
                if !g.ts.is_empty() {
                    out.insert(key.clone(), g);
                }
            }
            None => {
                rest.insert(key.clone(), (values.clone(), *anchor));
            }
        }
    }
    if !rest.is_empty() {
        let groups = read_trigger_into(env, c, Some(&rest), Some(cache))?;
        *read += groups.values().map(|g| g.ts.len() as u64).sum::<u64>();
        out.extend(groups);
    }
    Ok(out)
}

/// Bind a stream query's placeholders: `_twstart`… and `%%n` become
/// literals, `%%trows` the trigger rows of the window and `%%tbname` the
/// trigger child table.
pub fn bind_query(c: &Compiled, q: &ast::Query, b: &Bindings) -> Result<ast::Query> {
    struct Binder<'a> {
        c: &'a Compiled,
        b: &'a Bindings,
        err: Option<crate::error::WeirError>,
    }
    impl Binder<'_> {
        fn literal(&self, name: &str) -> Option<Result<String>> {
            let w = self.b.window.as_ref();
            let text = |v: &Option<String>| v.as_ref().map(|s| quote_lit(s)).unwrap_or_else(|| "NULL".into());
            Some(Ok(match name {
                "_twstart" => ts_literal(w.map(|w| w.start).unwrap_or(0)),
                "_twend" => ts_literal(w.map(|w| w.shown_end).unwrap_or(0)),
                "_twduration" => format!("CAST({} AS BIGINT)", w.map(|w| (w.shown_end - w.start) / 1000).unwrap_or(0)),
                "_twrownum" => format!("CAST({} AS BIGINT)", w.map(|w| w.rows).unwrap_or(0)),
                "_tcurrent_ts" => ts_literal(w.and_then(|w| w.tick).unwrap_or(0)),
                "_tprev_ts" => ts_literal(w.map(|w| w.start).unwrap_or(0)),
                "_tnext_ts" => ts_literal(w.and_then(|w| w.tick).map(|t| 2 * t - w.map(|w| w.start).unwrap_or(0)).unwrap_or(0)),
                "_tgrpid" => format!("CAST({} AS BIGINT)", self.b.group_id),
                // Nanoseconds, as TDengine gives them.
                "_tidlestart" => format!("CAST({} AS BIGINT)", self.b.idle_ms.map_or(0, |i| i.0).saturating_mul(1_000_000)),
                "_tidleend" => format!("CAST({} AS BIGINT)", self.b.idle_ms.map_or(0, |i| i.1).saturating_mul(1_000_000)),
                "_tlocaltime" => format!("CAST({} AS BIGINT)", self.b.local_us.saturating_mul(1000)),
                "_tprev_localtime" => format!("CAST({} AS BIGINT)", (self.b.local_us - self.b.period_us).saturating_mul(1000)),
                "_tnext_localtime" => format!("CAST({} AS BIGINT)", (self.b.local_us + self.b.period_us).saturating_mul(1000)),
                "%%tbname" => match &self.b.tbname {
                    Some(t) => quote_lit(t),
                    None => return Some(Err(err!(InvalidParameterValue, "%%tbname needs PARTITION BY tbname"))),
                },
                n if n.starts_with("%%") => {
                    let k: usize = match n[2..].parse() {
                        Ok(k) => k,
                        Err(_) => return None,
                    };
                    match self.b.group.get(k.wrapping_sub(1)) {
                        Some(v) => text(v),
                        None => return Some(Err(err!(InvalidParameterValue, "%%{k} has no PARTITION BY column"))),
                    }
                }
                _ => return None,
            }))
        }
    }
    impl ast::VisitorMut for Binder<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            let name = match e {
                ast::Expr::Identifier(i) if i.quote_style.is_none() => i.value.to_lowercase(),
                ast::Expr::Identifier(i) if i.value.starts_with("%%") => i.value.clone(),
                _ => return ControlFlow::Continue(()),
            };
            match self.literal(&name) {
                Some(Ok(lit)) => match crate::parser::parse_expr(&lit) {
                    Ok(x) => *e = ast::Expr::Nested(Box::new(x)),
                    Err(x) => {
                        self.err = Some(x);
                        return ControlFlow::Break(());
                    }
                },
                Some(Err(x)) => {
                    self.err = Some(x);
                    return ControlFlow::Break(());
                }
                None => {}
            }
            ControlFlow::Continue(())
        }
        fn post_visit_table_factor(&mut self, f: &mut ast::TableFactor) -> ControlFlow<()> {
            let ast::TableFactor::Table { name, alias, .. } = f else { return ControlFlow::Continue(()) };
            let [ast::ObjectNamePart::Identifier(i)] = name.0.as_slice() else { return ControlFlow::Continue(()) };
            let alias = alias.as_ref().map(|a| a.to_string()).unwrap_or_else(|| quote_ident(&i.value));
            let rel = match i.value.as_str() {
                "%%trows" if self.b.trows.is_some() => match &self.c.pre_filter {
                    Some(f) => format!("(SELECT * FROM {} WHERE ({f})) AS {alias}", quote_ident(TROWS_MEMORY)),
                    None => format!("{} AS {alias}", quote_ident(TROWS_MEMORY)),
                },
                "%%trows" => {
                    let (Some(t), Some(w)) = (&self.c.trigger, &self.b.window) else {
                        self.err = Some(err!(InvalidParameterValue, "%%trows needs a trigger table and a window"));
                        return ControlFlow::Break(());
                    };
                    let mut cond = vec![format!("{} >= {}", quote_ident(&t.ts_column), ts_literal(w.start))];
                    cond.push(format!("{} < {}", quote_ident(&t.ts_column), ts_literal(w.end)));
                    if matches!(t.kind, TableKind::Stable(_)) {
                        for (p, v) in self.c.cs.partition.iter().zip(&self.b.group) {
                            let name = crate::planner::ident(p);
                            let col = quote_ident(&name);
                            // The literal takes the column's type, so the
                            // equality becomes the scan's tag set.
                            let ty = t.table.column_index(&name).map(|i| t.table.columns[i].type_name()).unwrap_or_else(|| "text".into());
                            match v {
                                Some(v) => cond.push(format!("{col} = CAST({} AS {ty})", quote_lit(v))),
                                None => cond.push(format!("{col} IS NULL")),
                            }
                        }
                    }
                    if let Some(f) = &self.c.pre_filter {
                        cond.push(format!("({f})"));
                    }
                    format!("(SELECT * FROM {} WHERE {}) AS {alias}", trigger_relation(t), cond.join(" AND "))
                }
                "%%tbname" => match (&self.c.trigger, &self.b.tbname) {
                    (Some(t), Some(n)) => format!("{}.{} AS {alias}", quote_ident(&t.database), quote_ident(n)),
                    _ => {
                        self.err = Some(err!(InvalidParameterValue, "%%tbname needs PARTITION BY tbname"));
                        return ControlFlow::Break(());
                    }
                },
                _ => return ControlFlow::Continue(()),
            };
            match crate::parser::parse_query(&format!("SELECT * FROM {rel}")) {
                Ok(q) => {
                    if let ast::SetExpr::Select(s) = *q.body {
                        if let Some(tw) = s.from.into_iter().next() {
                            *f = tw.relation;
                        }
                    }
                }
                Err(e) => {
                    self.err = Some(e);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut q = q.clone();
    let mut binder = Binder { c, b, err: None };
    let _ = ast::VisitMut::visit(&mut q, &mut binder);
    match binder.err {
        Some(e) => Err(e),
        None => Ok(q),
    }
}

/// Run the stream's query for one window: its columns and rows.
pub fn compute(env: &Env, c: &Compiled, b: &Bindings) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let Some(q) = &c.cs.query else { return Ok((vec![], vec![])) };
    let q = bind_query(c, q, b)?;
    let planner = trows_planner(env, c, b, b.local_us);
    let logical = planner.plan_query(&q, None)?;
    let columns = crate::planner::output_columns(&logical);
    let plan = planner.physical(logical)?;
    Ok((columns, crate::exec::collect(&plan, &planner.ctx)?))
}

/// `compute`, with FORCE_OUTPUT's row when the query gave none.
fn compute_out(env: &Env, c: &Compiled, b: &Bindings) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let (cols, batches) = compute(env, c, b)?;
    if c.force_output && batches.iter().all(|x| x.num_rows() == 0) {
        let forced = forced_row(env, c, b, &cols)?;
        return Ok((cols, forced));
    }
    Ok((cols, batches))
}

/// FORCE_OUTPUT's row (TDengine: non-constant columns NULL): each result
/// column whose expression reads no column and no aggregate (placeholders
/// are constants by now) keeps its value, the others are NULL.
fn forced_row(env: &Env, c: &Compiled, b: &Bindings, cols: &[PlanColumn]) -> Result<Vec<RecordBatch>> {
    let Some(q) = &c.cs.query else { return Ok(vec![]) };
    let q = bind_query(c, q, b)?;
    let projection = match q.body.as_ref() {
        ast::SetExpr::Select(s) if s.projection.len() == cols.len() => s.projection.clone(),
        _ => vec![],
    };
    let registry = crate::exec::functions::registry::registry();
    let constant = |e: &ast::Expr| {
        let mut reads = false;
        let _ = ast::visit_expressions(e, |x| {
            match x {
                ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) | ast::Expr::Subquery(_) | ast::Expr::Exists { .. } => {
                    reads = true
                }
                ast::Expr::Function(f) if registry.is_aggregate(&f.name.to_string().to_lowercase()) || f.over.is_some() => reads = true,
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        !reads
    };
    let mut items = Vec::with_capacity(cols.len());
    for (i, col) in cols.iter().enumerate() {
        let ty = if col.ty == SqlType::Unknown { SqlType::Text } else { col.ty };
        let e = match projection.get(i) {
            Some(ast::SelectItem::UnnamedExpr(e)) | Some(ast::SelectItem::ExprWithAlias { expr: e, .. }) if constant(e) => Some(e),
            _ => None,
        };
        items.push(match e {
            Some(e) => format!("CAST(({e}) AS {}) AS {}", ty.sql_name(), quote_ident(&col.name)),
            None => format!("CAST(NULL AS {}) AS {}", ty.sql_name(), quote_ident(&col.name)),
        });
    }
    let q = crate::parser::parse_query(&format!("SELECT {}", items.join(", ")))?;
    let planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, b.local_us), Params::default());
    let plan = planner.physical(planner.plan_query(&q, None)?)?;
    crate::exec::collect(&plan, &planner.ctx)
}

/// The output table's data columns for the stream's query (planned with
/// placeholder values): names from the column list, else the query's.
pub fn output_columns(env: &Env, c: &Compiled) -> Result<Vec<PlanColumn>> {
    let b = Bindings {
        window: Some(Win { start: 0, end: 1, shown_end: 0, rows: 0, digest: 0, lo: 0, hi: 0, tick: Some(0) }),
        group: c.cs.partition.iter().map(|_| None).collect(),
        tbname: Some(match &c.trigger {
            Some(t) => match &t.kind {
                TableKind::Stable(_) => {
                    env.catalog.child_tables(&t.database).into_iter().find(|x| x.stable == t.name).map(|x| x.name).unwrap_or(t.name.clone())
                }
                _ => t.name.clone(),
            },
            None => String::new(),
        }),
        ..Default::default()
    };
    let Some(q) = &c.cs.query else { return Ok(vec![]) };
    let q = bind_query(c, q, &b)?;
    let planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, now_us()), Params::default());
    let logical = planner.plan_query(&q, None)?;
    let mut cols = crate::planner::output_columns(&logical);
    if !c.cs.columns.is_empty() {
        if c.cs.columns.len() != cols.len() {
            bail!(
                InvalidParameterValue,
                "Out table cols count mismatch: {} column names for {} query columns",
                c.cs.columns.len(),
                cols.len()
            );
        }
        for (col, n) in cols.iter_mut().zip(&c.cs.columns) {
            col.name = crate::planner::ident(n);
        }
    }
    match cols.first() {
        Some(f) if f.ty.is_timestamp() => {}
        _ => bail!(InvalidParameterValue, "Invalid stream query: the first column of the result must be a timestamp"),
    }
    Ok(cols)
}

/// The output subtable of a group and its tag values.
pub struct GroupOut {
    pub subtable: String,
    pub tags: Vec<Option<String>>,
}

/// Evaluate an expression over a group's partition values (`tbname` and
/// tag names, `%%n`) to text.
fn group_value(env: &Env, c: &Compiled, e: &ast::Expr, group: &[Option<String>]) -> Result<Option<String>> {
    let mut cols = Vec::new();
    for (p, v) in c.cs.partition.iter().zip(group) {
        cols.push(format!(
            "{} AS {}",
            v.as_ref().map(|v| quote_lit(v)).unwrap_or_else(|| "CAST(NULL AS TEXT)".into()),
            quote_ident(&crate::planner::ident(p))
        ));
    }
    let inner = if cols.is_empty() { "SELECT 1 AS \"?one\"".to_string() } else { format!("SELECT {}", cols.join(", ")) };
    let q = crate::parser::parse_query(&format!("SELECT CAST(({e}) AS TEXT) FROM ({inner}) AS g"))?;
    let b = Bindings { group: group.to_vec(), ..Default::default() };
    let q = bind_query(c, &q, &b)?;
    let planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, now_us()), Params::default());
    let plan = planner.physical(planner.plan_query(&q, None)?)?;
    let rows = crate::exec::collect_rows(&plan, &planner.ctx, Some(1))?;
    Ok(match rows.first().and_then(|r| r.first()) {
        Some(Value::Text(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(crate::types::format_value(other)),
    })
}

pub fn group_out(env: &Env, c: &Compiled, group: &[Option<String>]) -> Result<GroupOut> {
    let (_, out) = c.output.clone().ok_or_else(|| err!(Internal, "stream has no output table"))?;
    let subtable = match &c.cs.output_subtable {
        Some(e) => group_value(env, c, e, group)?.ok_or_else(|| err!(InvalidParameterValue, "OUTPUT_SUBTABLE gave NULL"))?,
        None => {
            let parts: Vec<String> = group.iter().map(|v| v.clone().unwrap_or_else(|| "null".into())).collect();
            format!("{out}_{}", parts.join("_"))
        }
    };
    let tags = if c.cs.tags.is_empty() {
        group.to_vec()
    } else {
        c.cs.tags.iter().map(|t| group_value(env, c, &t.expr, group)).collect::<Result<_>>()?
    };
    Ok(GroupOut { subtable, tags })
}

/// Write a window's result rows to the output (upsert on the first column).
/// Output rows not written yet: an evaluation's windows go to storage in
/// one commit, not one per window (a group's second window first flushes
/// the buffer, so its rows upsert over the first's in order).
#[derive(Default)]
struct OutBuf {
    table: Option<(TableDef, Vec<Arc<crate::storage::Region>>)>,
    /// The output table, its supertable and regions, looked up once per
    /// evaluation (not once per group).
    defs: Option<(TableDef, Option<SuperTableDef>, Vec<Arc<crate::storage::Region>>)>,
    batches: Vec<RecordBatch>,
    keys: std::collections::HashSet<String>,
    rows: usize,
}

/// Rows buffered before a commit.
const OUT_BUF_ROWS: usize = 100_000;

/// An evaluation's output writes not committed yet, per region: the last
/// ones go in one commit with the stream's state as its annex.
type Staged = Vec<(Arc<crate::storage::Region>, crate::storage::RegionWrites)>;

fn flush_output(env: &Env, buf: &mut OutBuf) -> Result<()> {
    let parts = stage_buf(buf)?;
    env.storage.commit(parts)
}

/// The buffered rows as a commit's parts (upserts on their key); the
/// buffer is emptied.
fn stage_buf(buf: &mut OutBuf) -> Result<Staged> {
    let mut parts = Staged::new();
    if let (Some((t, regions)), false) = (&buf.table, buf.batches.is_empty()) {
        let batch = arrow::compute::concat_batches(&buf.batches[0].schema(), &buf.batches)?;
        parts = regions.iter().cloned().zip(super::sink::upsert_parts(t, regions, &batch)?).collect();
    }
    buf.batches.clear();
    buf.keys.clear();
    buf.rows = 0;
    Ok(parts)
}

/// Add `more` to `parts`, region by region (deletes are tombstones at the
/// commit's first sequence, rows at its second: no row of `more` deletes
/// one of `parts`).
fn merge_parts(parts: &mut Staged, more: Staged) {
    for (r, w) in more {
        match parts.iter_mut().find(|(x, _)| x.id == r.id) {
            Some((_, p)) => {
                p.deletes.extend(w.deletes);
                p.puts.extend(w.puts);
            }
            None => parts.push((r, w)),
        }
    }
}

fn write_output(
    env: &Env,
    c: &Compiled,
    batches: &[RecordBatch],
    cols: &[PlanColumn],
    go: Option<&GroupOut>,
    buf: &mut OutBuf,
    key: &str,
) -> Result<u64> {
    let Some((db, name)) = &c.output else { return Ok(0) };
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows == 0 || c.calc_notify_only {
        return Ok(0);
    }
    if buf.keys.contains(key) || buf.rows >= OUT_BUF_ROWS {
        flush_output(env, buf)?;
    }
    if buf.defs.is_none() {
        let t = env
            .catalog
            .table(db, name)
            .ok_or_else(|| err!(UndefinedTable, "output table \"{db}.{name}\" of stream \"{}\" does not exist", c.def.name))?;
        let regions = super::batching::table_regions(env, &t)?;
        buf.defs = Some((t, env.catalog.stable(db, name), regions));
    }
    let Some((t, stable, regions)) = buf.defs.clone() else { bail!(Internal, "output table not looked up") };
    let data_cols = match &stable {
        Some(s) => s.columns.len(),
        None => t.columns.len(),
    };
    if cols.len() != data_cols {
        bail!(DatatypeMismatch, "stream \"{}\" gives {} columns for the {} columns of \"{name}\"", c.def.name, cols.len(), data_cols);
    }
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(t.columns.len());
    for col in &t.columns {
        let a: ArrayRef = if let Some(i) = stable
            .as_ref()
            .and_then(|s| s.columns.iter().position(|x| *x == col.name))
            .or(if stable.is_none() { t.column_index(&col.name) } else { None })
        {
            let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
            let joined = arrow::compute::concat(&parts)?;
            let from = SqlType::from_arrow(joined.data_type());
            if joined.data_type() == &col.ty.to_arrow() {
                joined
            } else {
                crate::exec::expr::cast_array(&joined, from, col.ty)?
            }
        } else {
            let go = go.ok_or_else(|| err!(Internal, "output supertable without a group"))?;
            let text = if col.name == TBNAME {
                Some(go.subtable.clone())
            } else {
                let s = stable.as_ref().expect("a tag column is a supertable's");
                let k = s.tags.iter().position(|x| *x == col.name).ok_or_else(|| err!(Internal, "unknown output column {}", col.name))?;
                go.tags.get(k).cloned().flatten()
            };
            let v = match text {
                Some(t) => Value::Text(t),
                None => Value::Null,
            };
            let a = crate::types::values_to_array(&vec![v; rows], SqlType::Text)?;
            crate::exec::expr::cast_array(&a, SqlType::Text, col.ty)?
        };
        arrays.push(a);
    }
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "output table has no region"))?;
    let batch = RecordBatch::try_new(schema, arrays)?;
    if let (Some(go), Some(s)) = (go, &stable) {
        ensure_child(env.catalog, db, s, &go.subtable, &go.tags)?;
    }
    buf.table = Some((t, regions));
    buf.batches.push(batch);
    buf.keys.insert(key.to_string());
    buf.rows += rows;
    Ok(rows as u64)
}

/// Register a child table of a supertable (its catalog entry and the view
/// that reads its rows) when it does not exist yet.
pub fn ensure_child(catalog: &Catalog, db: &str, s: &SuperTableDef, name: &str, tags: &[Option<String>]) -> Result<bool> {
    if catalog.child_table(db, name).is_some() {
        return Ok(false);
    }
    let cols: Vec<String> = s.columns.iter().map(|c| quote_ident(c)).collect();
    let sql = format!("SELECT {} FROM {}.{} WHERE {TBNAME} = {}", cols.join(", "), quote_ident(db), quote_ident(&s.name), quote_lit(name));
    // The view without its entry: a crash between the two writes (an
    // evaluation flushes the catalog once, at its end).
    let half_made = catalog.view(db, name).is_some_and(|v| v.sql == sql && v.columns == s.columns);
    if catalog.table(db, name).is_some() || (catalog.view(db, name).is_some() && !half_made) {
        bail!(DuplicateTable, "Table already exists: \"{name}\" is not a child table of \"{}\"", s.name);
    }
    if !half_made {
        catalog.create_view(
            crate::catalog::ViewDef {
                database: db.to_string(),
                name: name.to_string(),
                sql,
                columns: s.columns.clone(),
                id: 0,
                security_invoker: false,
                definition: None,
                options: Vec::new(),
            },
            false,
        )?;
    }
    catalog.put_child_table(&crate::catalog::ChildTableDef {
        database: db.to_string(),
        name: name.to_string(),
        stable: s.name.clone(),
        tags: tags.to_vec(),
        created_ms: super::batching::now_ms(),
    })?;
    Ok(true)
}

/// How an evaluation treats windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// New closed windows and (per the options) changed ones.
    CatchUp,
    /// The first evaluation: without FILL_HISTORY the closed windows of the
    /// history are recorded, not computed.
    Init,
    /// START STREAM IGNORE UNTREATED: the rows written while stopped are
    /// skipped: closed windows recorded as they are (never computed, with
    /// FILL_HISTORY neither), data-defined windows cut again only from the
    /// rows after them, PERIOD's `%%trows` from now on.
    Skip,
    /// RECALCULATE: every window of the range that was computed.
    Recalc { from: i64, to: Option<i64> },
}

/// Evaluate a stream: returns the result rows written.
///
/// A failed evaluation keeps none of its progress (the windows it marked
/// are computed again): the error, the failure count and the time of the
/// retry are recorded (status Failed in `ins_streams`), and the runner
/// retries after `retry_delay_ms`. What it wrote is rewritten by the retry.
/// `cache`: the stream's trigger rows of open windows (a catch-up keeps
/// and uses them; a failure drops them).
pub fn run(env: &Env, hub: &Hub, def: &StreamDef, mode: Mode, cache: Option<&mut TriggerCache>) -> Result<u64> {
    let mut st = env.catalog.stream_state(&def.database, &def.name);
    // One catalog flush for the output subtables the evaluation creates
    // (if any), not one per write; the progress is not flushed (below).
    env.catalog.with_one_flush(|| run_evaluation(env, hub, def, mode, &mut st, cache))
}

/// The WAL hold of the streams on their output regions: from an
/// evaluation's annexed commit until the catalog is flushed after it
/// (`StreamRunner::settle`).
pub const WAL_HOLDER: &str = "tdengine streams";

/// Commit an evaluation's last output writes with its progress as their
/// annex, then the progress into the catalog, unflushed: one fsync (the
/// output's WAL) for both; a crash after the commit finds the progress in
/// the WAL (`recover`). Without output writes the progress is only applied
/// (a crash loses it: the evaluation runs again and writes what it wrote).
fn commit_evaluation(env: &Env, def: &StreamDef, st: &mut StreamState, mut staged: Staged) -> Result<()> {
    let w = env.catalog.stage_stream_state(&def.database, &def.name, st)?;
    if staged.is_empty() {
        return env.catalog.apply_stream_state(w, false);
    }
    let w = env.catalog.with_annex(w, def.id, st.eval_no);
    let (region, part) = &mut staged[0];
    part.annex = w.annex.clone();
    region.hold_wal(WAL_HOLDER, region.last_seq() + 1);
    env.storage.commit(staged)?;
    env.catalog.apply_stream_state(w, false)
}

/// At open, before any stream runs: put back the stream progress that a
/// crash took from the catalog (unflushed) from the annexes of the output
/// regions' WALs, flush, and let those WAL records go.
pub fn recover(env: &Env) -> Result<usize> {
    let regions = env.storage.regions();
    let mut annexes = Vec::new();
    for r in &regions {
        annexes.extend(r.take_annexes().into_iter().map(|(_, a)| a));
    }
    let n = env.catalog.apply_stream_annexes(&annexes, |db, name| env.catalog.stream(db, name).map(|d| d.id))?;
    for r in &regions {
        r.release_wal(crate::storage::RECOVERED_ANNEXES);
    }
    if n > 0 {
        tracing::info!(annexes = n, "stream progress recovered from the output WALs");
    }
    Ok(n)
}

fn run_evaluation(
    env: &Env,
    hub: &Hub,
    def: &StreamDef,
    mode: Mode,
    st: &mut StreamState,
    mut cache: Option<&mut TriggerCache>,
) -> Result<u64> {
    let began = super::batching::now_ms();
    let mut staged = Staged::new();
    let mut r = compile(env, def).and_then(|c| run_compiled(env, hub, &c, st, mode, cache.as_deref_mut(), &mut staged));
    if r.is_ok() {
        st.last_error = None;
        st.failures = 0;
        st.retry_at_ms = None;
        let ended = super::batching::now_ms();
        if mode == Mode::CatchUp {
            st.caught_up_ms = Some(began);
        }
        st.last_run_ms = Some(ended);
        st.sample(ended, ended - began);
        match commit_evaluation(env, def, st, std::mem::take(&mut staged)) {
            Ok(()) => return r,
            Err(e) => r = Err(e),
        }
    }
    if r.is_ok() {
        return r;
    }
    let msg = r.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    if let Some(k) = cache {
        k.clear();
    }
    // What was computed is written (the progress is not).
    let written = env.storage.commit(staged);
    *st = env.catalog.stream_state(&def.database, &def.name);
    st.last_error = Some(msg);
    st.failures = st.failures.saturating_add(1);
    st.retry_at_ms = Some(super::batching::now_ms() + retry_delay_ms(st.failures));
    env.catalog.put_stream_state(&def.database, &def.name, st)?;
    written?;
    r
}

/// The wait before the retry after `failures` failed evaluations in a
/// row: 1 s, doubling, at most a minute.
pub fn retry_delay_ms(failures: u32) -> i64 {
    1000i64.saturating_mul(1 << failures.saturating_sub(1).min(6)).min(60_000)
}

fn run_compiled(
    env: &Env,
    hub: &Hub,
    c: &Compiled,
    st: &mut StreamState,
    mode: Mode,
    cache: Option<&mut TriggerCache>,
    staged: &mut Staged,
) -> Result<u64> {
    let now = now_us();
    // The trigger rows of open windows in memory: a catch-up of a stream
    // whose windows need times and digests only.
    let mut cache = match (&c.trigger, cache) {
        (Some(t), Some(k)) if mode == Mode::CatchUp && cacheable(c) => {
            k.begin(u64::from(t.table.id), &trows_columns(t), &st.seqs);
            Some(k)
        }
        _ => None,
    };
    if let StreamTrigger::Period { period, offset } = &c.cs.trigger {
        let (period, offset) = (period.micros.unwrap_or(0), offset.as_ref().and_then(|o| o.micros).unwrap_or(0));
        return run_period(env, hub, c, st, mode, (period, offset), now, staged);
    }
    // The trigger regions' sequences now: the rows read below reflect at
    // least these (later writes show up in the next change log again).
    let regions = match &c.trigger {
        Some(t) => super::batching::table_regions(env, &t.table)?,
        None => vec![],
    };
    let upto: BTreeMap<u64, u64> = regions.iter().map(|r| (r.id, r.last_seq())).collect();
    // Catching up reads the change log since the checkpoint and then only
    // the groups it touched, from where their windows can change; the
    // first evaluation, a recalculation or a change log that is gone read
    // every group.
    // Groups whose changes delete rows (a window with fewer rows is a
    // delete there, else late rows split it).
    let mut deleted = std::collections::HashSet::new();
    // Groups with new rows (IDLE_TIMEOUT): the change log's, or with a
    // full read the groups whose newest row moved.
    let mut fresh = std::collections::HashSet::new();
    // The passes: a catch-up reads what the change log selects (or every
    // group); a recalculation reads its groups a few at a time, each from
    // its first window the range reaches, so memory holds a few groups'
    // rows (one day of 1,000 children at once was 5.8 GB).
    let passes = match mode {
        Mode::CatchUp => vec![selection(c, st, &regions, &upto, now, &mut deleted, &mut fresh, cache.as_deref_mut())?],
        Mode::Recalc { from, .. } => recalc_passes(c, st, from)?,
        Mode::Init | Mode::Skip => vec![None],
    };
    let mut written = 0u64;
    for sel in passes {
        // RECALCULATE: each pass's rows in a cache of its own, so its
        // windows are computed from the rows read once (only its groups'),
        // dropped when the pass ends.
        let mut own = TriggerCache::default();
        let mut pass_cache = match (cache.as_deref_mut(), &c.trigger) {
            (Some(k), _) => Some(k),
            (None, Some(t)) if matches!(mode, Mode::Recalc { .. }) && cacheable(c) => {
                own.begin(u64::from(t.table.id), &trows_columns(t), &BTreeMap::new());
                Some(&mut own)
            }
            _ => None,
        };
        // (Rows from the cache are not counted as read.)
        let groups = match (pass_cache.as_deref_mut(), &sel) {
            (Some(k), Some(sel)) => read_cached(env, c, sel, k, &mut st.trigger_rows_read)?,
            _ => {
                let groups = read_trigger(env, c, sel.as_ref())?;
                st.trigger_rows_read += groups.values().map(|g| g.ts.len() as u64).sum::<u64>();
                groups
            }
        };
        // The computations, run after the cutting (batched across groups).
        let mut jobs: Vec<Job> = Vec::new();
        let mut outs: HashMap<String, Option<GroupOut>> = HashMap::new();
        // Per group, output times whose rows may have to go (windows merged,
        // split or recomputed with other times).
        let mut fx = Effects::default();
        for (key, g) in groups.iter() {
            let anchor = sel.as_ref().and_then(|s| s.get(key)).and_then(|(_, a)| *a);
            let prev = st.groups.get(key).copied();
            // INTERVAL / SLIDING windows start at the anchor when the group has
            // rows before it.
            let from = match (&c.cs.trigger, anchor, prev) {
                // INTERVAL: from the anchor, and never after the window of the
                // group's first row ever (when that row went, its windows are
                // still windows: a delete recounts them).
                (StreamTrigger::Interval { .. }, Some(a), Some(p)) => {
                    let (iv, sl, off) = time_windows(&c.cs.trigger)?.unwrap_or((1, 1, 0));
                    let first = g.ts.first().map_or(p.first_ts, |&t| t.min(p.first_ts));
                    Some(a.max(floor_to(first, sl, off) - ((iv - 1) / sl) * sl))
                }
                (StreamTrigger::Sliding { .. } | StreamTrigger::State { extend: Some(2), .. }, Some(a), Some(p)) if p.first_ts < a => {
                    Some(a)
                }
                _ => None,
            };
            // INTERVAL: the newest closed window's end is a floor for the
            // watermark (deleting the newest rows does not reopen windows).
            let wm_floor = match &c.cs.trigger {
                StreamTrigger::Interval { .. } => st.windows.get(key).and_then(|m| m.values().next_back()).map(|m| m.end),
                _ => None,
            };
            let (wins, opens) = cut(&c.cs.trigger, g, c.watermark_us, c.ignore_nodata, from, wm_floor)?;
            let max_ts = g.ts.last().copied().unwrap_or(i64::MIN);
            if sel.is_none() && mode == Mode::CatchUp && prev.is_none_or(|p| p.max_ts != max_ts) {
                fresh.insert(key.clone());
            }
            let recalc = matches!(mode, Mode::Recalc { .. });
            if !recalc {
                let next_id = st.groups.len() as i64;
                let first = g.ts.first().copied().unwrap_or(max_ts);
                let p = st.groups.entry(key.clone()).or_insert(GroupProgress {
                    id: next_id,
                    first_ts: first,
                    max_ts,
                    resume_us: first,
                    horizon_us: None,
                    seen_ms: 0,
                    idle_ms: None,
                });
                p.first_ts = p.first_ts.min(first);
                p.max_ts = max_ts;
                let wm = max_ts.saturating_sub(c.watermark_us).max(wm_floor.unwrap_or(i64::MIN));
                p.resume_us = resume_after(&c.cs.trigger, g, &wins, wm, anchor.unwrap_or(first))?;
                // IGNORE UNTREATED: data-defined windows start after the
                // rows written while stopped.
                if mode == Mode::Skip && time_windows(&c.cs.trigger)?.is_none() {
                    p.resume_us = max_ts.saturating_add(1);
                }
                // The rows of the windows still open stay in memory.
                if let Some(k) = pass_cache.as_deref_mut() {
                    k.keep(key, g, p.resume_us);
                }
            }
            let gi = st.groups.get(key).map(|p| p.id).unwrap_or(0);
            let horizon = st.groups.get(key).and_then(|p| p.horizon_us);
            let below = |w: &Win| horizon.is_some_and(|h| w.start < h);
            let marks = st.windows.entry(key.clone()).or_default();
            if !recalc && time_windows(&c.cs.trigger)?.is_none() {
                // Data-defined windows were cut again from where the read began
                // (every row after it is read): marks there that start no
                // closed window any more (late rows or deletes merged or split
                // them, or joined them to the open window) are stale.
                // (STATE_WINDOW extend 2 cut from `from`: the first run was
                // context only.)
                let lo = if from.is_some() { wins.first().map(|w| w.start) } else { Some(anchor.unwrap_or(i64::MIN)) };
                if let Some(lo) = lo {
                    let starts: std::collections::HashSet<i64> = wins.iter().map(|w| w.start).collect();
                    let gone: Vec<i64> = marks.range(lo..).map(|(k, _)| *k).filter(|k| !starts.contains(k)).collect();
                    for k in gone {
                        let m = marks.remove(&k);
                        // Their rows go unless late rows leave windows alone.
                        if let Some(ts) = st.outputs.get_mut(key).and_then(|o| o.remove(&k)) {
                            if !c.ignore_disorder && disorder_recalcs(&c.cs.trigger) {
                                fx.stale.entry(key.clone()).or_default().extend(ts);
                                if let Some(m) = m {
                                    invalidated(c, key, gi, k, &m, now, &mut fx);
                                }
                            }
                        }
                    }
                }
            }
            // INTERVAL with IGNORE_NODATA_TRIGGER: a closed window that lost all
            // its rows is no window any more (cutting skips it), so its output
            // goes — on a delete with DELETE_RECALC, or when RECALCULATE covers it.
            if let (StreamTrigger::Interval { .. }, true, Some((iv, _, _))) = (&c.cs.trigger, c.ignore_nodata, time_windows(&c.cs.trigger)?)
            {
                let range = match mode {
                    Mode::Recalc { from: f, to } => Some((f, to)),
                    Mode::CatchUp if c.delete_recalc => Some((i64::MIN, None)),
                    _ => None,
                };
                if let Some((f, to)) = range {
                    let wm = max_ts.saturating_sub(c.watermark_us).max(wm_floor.unwrap_or(i64::MIN));
                    let lo = from.or(anchor).unwrap_or(i64::MIN);
                    let starts: std::collections::HashSet<i64> = wins.iter().map(|w| w.start).collect();
                    let expired_before = c.expired_us.map(|e| max_ts.saturating_sub(e));
                    let gone: Vec<i64> = marks
                        .range(lo..)
                        .filter(|(k, m)| {
                            !starts.contains(k)
                                && k.saturating_add(iv) <= wm
                                && m.end > f
                                && to.is_none_or(|t| **k < t)
                                && expired_before.is_none_or(|e| m.end >= e)
                                && horizon.is_none_or(|h| **k >= h)
                        })
                        .map(|(k, _)| *k)
                        .collect();
                    for k in gone {
                        let m = marks.remove(&k);
                        if let Some(ts) = st.outputs.get_mut(key).and_then(|o| o.remove(&k)) {
                            fx.stale.entry(key.clone()).or_default().extend(ts);
                            if let Some(m) = m {
                                invalidated(c, key, gi, k, &m, now, &mut fx);
                            }
                        }
                    }
                }
            }
            let frontier = marks.keys().next_back().copied();
            let mut todo: Vec<&Win> = Vec::new();
            for w in &wins {
                let old = marks.get(&w.start).copied();
                let mark = WindowMark { end: w.end, rows: w.rows, digest: w.digest };
                // Behind the records kept (`prune_records`): as if expired.
                let expired = c.expired_us.is_some_and(|e| w.end < max_ts.saturating_sub(e)) || below(w);
                let compute = match mode {
                    Mode::Skip => false,
                    Mode::Init => match c.fill_history {
                        Some(from) => c.on_close && w.start >= from.unwrap_or(i64::MIN),
                        None => false,
                    },
                    // EVENT_TYPE without WINDOW_CLOSE: closing computes nothing.
                    Mode::CatchUp if !c.on_close => false,
                    Mode::Recalc { from, to } => {
                        old.is_some() && w.end > from && to.is_none_or(|t| w.start < t)
                            || (old.is_none() && frontier.is_some_and(|f| w.start <= f) && w.end > from && to.is_none_or(|t| w.start < t))
                    }
                    Mode::CatchUp => match old {
                        None if frontier.is_some_and(|f| w.start < f) => {
                            // A window that appeared behind the progress: late rows.
                            !expired && !c.ignore_disorder && disorder_recalcs(&c.cs.trigger)
                        }
                        // Past the progress: rows in order, which never expire.
                        None => !below(w),
                        Some(o) if o == mark => false,
                        Some(o) if w.rows < o.rows && deleted.contains(key) => {
                            !expired && c.delete_recalc && disorder_recalcs(&c.cs.trigger)
                        }
                        Some(_) => !expired && !c.ignore_disorder && disorder_recalcs(&c.cs.trigger),
                    },
                };
                if compute {
                    // Opened and closed since the last evaluation: its open
                    // event first.
                    let announced = st.open.get(key).is_some_and(|f| f.contains_key(&w.start));
                    if mode == Mode::CatchUp && old.is_none() && notify_open(c) && !announced {
                        fx.events.push((key.clone(), window_event(c, gi, Some(w), "WINDOW_OPEN", now)));
                    }
                    todo.push(w);
                }
                // A recalculation marks what it computed only: new windows are
                // the catch-up's.
                if compute || (!recalc && !below(w)) {
                    marks.insert(w.start, mark);
                }
            }
            if !recalc {
                prune_records(c, st, key, max_ts);
            }
            // Open windows: computed when they open (WINDOW_OPEN) and every
            // MAX_DELAY of processing time while they stay open.
            let mut todo_open: Vec<&Win> = Vec::new();
            if mode == Mode::CatchUp && (c.on_open || c.max_delay_us.is_some() || notify_open(c)) {
                let fired = st.open.entry(key.clone()).or_default();
                fired.retain(|s, _| opens.iter().any(|w| w.start == *s));
                for w in &opens {
                    match fired.get(&w.start).copied() {
                        None => {
                            if c.on_open {
                                todo_open.push(w);
                            }
                            if notify_open(c) {
                                fx.events.push((key.clone(), window_event(c, gi, Some(w), "WINDOW_OPEN", now)));
                            }
                            fired.insert(w.start, now);
                        }
                        Some(at) if c.max_delay_us.is_some_and(|d| now - at >= d) => {
                            todo_open.push(w);
                            fired.insert(w.start, now);
                        }
                        Some(_) => {}
                    }
                }
                if fired.is_empty() {
                    st.open.remove(key);
                }
            }
            if todo.is_empty() && todo_open.is_empty() {
                // An open event only: its table name is the group's subtable.
                if fx.events.last().is_some_and(|(k, _)| k == key) && c.output.is_some() && is_grouped(c) {
                    cached_group_out(env, c, st, key, &g.values)?;
                }
                continue;
            }
            let go = if c.output.is_some() && is_grouped(c) { Some(cached_group_out(env, c, st, key, &g.values)?) } else { None };
            outs.insert(key.clone(), go);
            let tbname = tbname_of(c, g);
            for (open, w) in todo_open.into_iter().map(|w| (true, w)).chain(todo.into_iter().map(|w| (false, w))) {
                // The window's rows in the cache, when the group's rows
                // there reach back to its start.
                let trows = (g.at.len() == g.ts.len() && anchor.is_none_or(|a| w.start >= a)).then(|| {
                    let lo = g.ts.partition_point(|&t| t < w.start);
                    let hi = g.ts.partition_point(|&t| t < w.end);
                    g.at[lo..hi].to_vec()
                });
                jobs.push(Job { open, key: key.clone(), values: g.values.clone(), tbname: tbname.clone(), gi, win: w.clone(), trows });
            }
        }
        let mut buf = OutBuf::default();
        written += run_jobs(env, c, &jobs, &outs, now, st, &mut fx, pass_cache.as_deref(), &mut buf)?;
        if matches!(mode, Mode::Recalc { .. }) {
            // The records of the windows recomputed are kept as a catch-up
            // keeps them (at most `WINDOW_RECORDS_PER_GROUP` a group): the
            // state is bounded by the groups, not by the range.
            for key in groups.keys() {
                let max_ts = st.groups.get(key).map_or(i64::MIN, |p| p.max_ts);
                prune_records(c, st, key, max_ts);
            }
        }
        // This pass's last rows and deletes wait (for the state's annex);
        // the previous pass's go now.
        let mut parts = stage_buf(&mut buf)?;
        merge_parts(&mut parts, delete_parts(env, c, st, &fx.stale)?);
        env.storage.commit(std::mem::replace(staged, parts))?;
        deliver(hub, c, st, std::mem::take(&mut fx.events), mode, now)?;
    }
    if let (Mode::CatchUp, Some(timeout)) = (mode, c.idle_timeout_us) {
        written += run_idle(env, hub, c, st, &fresh, timeout, now, staged)?;
    }
    if !matches!(mode, Mode::Recalc { .. }) {
        checkpoint(c, st, &regions, &upto);
        if let Some(k) = cache {
            k.finish(&st.seqs);
        }
    }
    st.rows_written += written;
    Ok(written)
}

/// IDLE_TIMEOUT: a group whose new rows were last seen `timeout_us` ago
/// (processing time) goes idle, and its next rows resume it. Each is an
/// event, computed with EVENT_TYPE(IDLE) / (RESUME) and sent with NOTIFY ON
/// (IDLE) / (RESUME). `_tidlestart` / `_tidleend`: for IDLE the quiet span
/// (rows last seen, now), for RESUME the idle span (went idle, now).
#[allow(clippy::too_many_arguments)]
fn run_idle(
    env: &Env,
    hub: &Hub,
    c: &Compiled,
    st: &mut StreamState,
    fresh: &std::collections::HashSet<String>,
    timeout_us: i64,
    now: i64,
    staged: &mut Staged,
) -> Result<u64> {
    let now_ms = now.div_euclid(1000);
    let mut due: Vec<(String, &'static str, i64)> = Vec::new();
    for (key, p) in st.groups.iter_mut() {
        if fresh.contains(key) {
            if let Some(since) = p.idle_ms.take() {
                due.push((key.clone(), "RESUME", since));
            }
            p.seen_ms = now_ms;
        } else if p.idle_ms.is_none() && p.seen_ms > 0 && now_ms - p.seen_ms >= timeout_us.div_euclid(1000) {
            p.idle_ms = Some(now_ms);
            due.push((key.clone(), "IDLE", p.seen_ms));
        }
    }
    let mut written = 0;
    let mut events = Vec::new();
    // One event per group: one buffer, one commit.
    let mut buf = OutBuf::default();
    for (key, kind, start_ms) in due {
        let idle = kind == "IDLE";
        let computes = if idle { c.on_idle } else { c.on_resume };
        let notifies = c.notify.as_ref().is_some_and(|n| if idle { n.on_idle } else { n.on_resume });
        let Some(values) = group_values(&key, c.cs.partition.len()).filter(|_| computes || notifies) else { continue };
        let gi = st.groups.get(&key).map_or(0, |p| p.id);
        let mut e = Event {
            table_name: String::new(),
            event_type: kind,
            event_time_ms: now_ms,
            trigger_id: format!("{}-{gi}-idle-{start_ms}", c.def.id),
            trigger_type: trigger_type(&c.cs.trigger),
            group_id: gi.to_string(),
            window_start_ms: Some(start_ms),
            window_end_ms: Some(now_ms),
            result: None,
        };
        if computes && c.cs.query.is_some() {
            let tbname = c.cs.partition.iter().position(|p| crate::planner::ident(p) == TBNAME).and_then(|i| values[i].clone());
            let b = Bindings {
                group: values.clone(),
                tbname,
                group_id: gi,
                local_us: now,
                idle_ms: Some((start_ms, now_ms)),
                ..Default::default()
            };
            let (cols, batches) = match compute_out(env, c, &b) {
                Ok(r) => r,
                Err(err) => {
                    flush_output(env, &mut buf)?;
                    return Err(err);
                }
            };
            let go = if c.output.is_some() && is_grouped(c) { Some(cached_group_out(env, c, st, &key, &values)?) } else { None };
            written += write_output(env, c, &batches, &cols, go.as_ref(), &mut buf, &key)?;
            let names = result_names(c, &cols);
            e.result = batches.iter().find(|b| b.num_rows() > 0).map(|b| row_json(&names, b, 0));
        }
        if notifies {
            events.push((key, e));
        }
    }
    // The windows' writes first (an idle row may have a window row's time).
    let parts = stage_buf(&mut buf)?;
    if !parts.is_empty() {
        env.storage.commit(std::mem::replace(staged, parts))?;
    }
    deliver(hub, c, st, events, Mode::CatchUp, now)?;
    Ok(written)
}

/// Closed windows a group keeps records of (marks and output times):
/// older ones are expired, like windows behind EXPIRED_TIME, which also
/// expires records. Late rows and deletes behind the oldest record kept
/// trigger nothing; RECALCULATE still recomputes any range.
pub const WINDOW_RECORDS_PER_GROUP: usize = 256;

/// Expire a group's oldest window records beyond `WINDOW_RECORDS_PER_GROUP`
/// and those EXPIRED_TIME puts out of reach; the newest is always kept (it
/// anchors where cutting resumes). Sets the group's horizon.
fn prune_records(c: &Compiled, st: &mut StreamState, key: &str, max_ts: i64) {
    let Some(marks) = st.windows.get_mut(key) else { return };
    let mut n = marks.len().saturating_sub(WINDOW_RECORDS_PER_GROUP);
    if let Some(e) = c.expired_us {
        let limit = max_ts.saturating_sub(e);
        n = n.max(marks.values().take_while(|m| m.end < limit).count());
    }
    let n = n.min(marks.len().saturating_sub(1));
    if n == 0 {
        return;
    }
    let Some(&h) = marks.keys().nth(n) else { return };
    *marks = marks.split_off(&h);
    if let Some(o) = st.outputs.get_mut(key) {
        *o = o.split_off(&h);
    }
    if let Some(p) = st.groups.get_mut(key) {
        p.horizon_us = Some(p.horizon_us.map_or(h, |x| x.max(h)));
    }
}

/// Record the output times a window's computation wrote; the times its
/// previous computation wrote and this one did not are stale.
fn record_output(
    c: &Compiled,
    st: &mut StreamState,
    key: &str,
    start: i64,
    batches: &[RecordBatch],
    stale: &mut BTreeMap<String, BTreeSet<i64>>,
) -> Result<()> {
    if c.output.is_none() || c.calc_notify_only {
        return Ok(());
    }
    let mut ts = Vec::new();
    for b in batches.iter().filter(|b| b.num_columns() > 0 && b.num_rows() > 0) {
        let a = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None))?;
        let a = a.as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>().expect("cast to timestamp µs");
        ts.extend(a.iter().flatten());
    }
    ts.sort_unstable();
    ts.dedup();
    let per = st.outputs.entry(key.to_string()).or_default();
    let old = if ts.is_empty() { per.remove(&start) } else { per.insert(start, ts.clone()) };
    if per.is_empty() {
        st.outputs.remove(key);
    }
    let gone: Vec<i64> = old.unwrap_or_default().into_iter().filter(|t| ts.binary_search(t).is_err()).collect();
    if !gone.is_empty() {
        stale.entry(key.to_string()).or_default().extend(gone);
    }
    Ok(())
}

/// The deletes of the output rows of stale times no window of their group
/// gives any more (a later window may give the same time: that row
/// stays), as a commit's parts.
fn delete_parts(env: &Env, c: &Compiled, st: &StreamState, stale: &BTreeMap<String, BTreeSet<i64>>) -> Result<Staged> {
    let Some((db, name)) = &c.output else { return Ok(vec![]) };
    if stale.is_empty() || c.calc_notify_only {
        return Ok(vec![]);
    }
    let Some(t) = env.catalog.table(db, name) else { return Ok(vec![]) };
    let regions = super::batching::table_regions(env, &t)?;
    let ti = t.time_index.unwrap_or(0);
    let tb = if is_grouped(c) { t.column_index(TBNAME) } else { None };
    let mut parts: Vec<crate::storage::RegionWrites> = vec![Default::default(); regions.len()];
    for (key, times) in stale {
        let live: std::collections::HashSet<i64> = st.outputs.get(key).map(|o| o.values().flatten().copied().collect()).unwrap_or_default();
        let gone: BTreeSet<i64> = times.iter().copied().filter(|t| !live.contains(t)).collect();
        let (Some(&lo), Some(&hi)) = (gone.first(), gone.last()) else { continue };
        let sub = match tb {
            Some(_) => match st.subtables.get(key) {
                Some(s) => Some(s.as_str()),
                None => continue,
            },
            None => None,
        };
        for (r, region) in regions.iter().enumerate() {
            let req = crate::storage::ScanRequest { time_range: Some((lo, hi.saturating_add(1))), with_rowid: true, ..Default::default() };
            for b in region.scan(&req)? {
                if b.num_rows() == 0 {
                    continue;
                }
                let ts = arrow::compute::cast(
                    b.column(ti),
                    &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None),
                )?;
                let ts = ts.as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>().expect("cast to timestamp µs");
                let names = match tb {
                    Some(i) => {
                        Some(crate::exec::expr::cast_array(b.column(i), SqlType::from_arrow(b.column(i).data_type()), SqlType::Text)?)
                    }
                    None => None,
                };
                let names = names.as_ref().map(|a| a.as_any().downcast_ref::<arrow::array::StringArray>().cloned());
                let hit = arrow::array::BooleanArray::from_iter((0..b.num_rows()).map(|i| {
                    let at = !ts.is_null(i) && gone.contains(&ts.value(i));
                    let mine = match (&names, sub) {
                        (Some(Some(n)), Some(s)) => n.is_valid(i) && n.value(i) == s,
                        (None, _) => true,
                        _ => false,
                    };
                    Some(at && mine)
                }));
                if hit.true_count() > 0 {
                    parts[r].deletes.push(arrow::compute::filter_record_batch(&b, &hit)?);
                }
            }
        }
    }
    Ok(regions.into_iter().zip(parts).filter(|(_, p)| !p.is_empty()).collect())
}

/// What an evaluation does besides writing rows: output times that may
/// have to go, and the notifications (group key, event) to deliver.
#[derive(Default)]
struct Effects {
    stale: BTreeMap<String, BTreeSet<i64>>,
    events: Vec<(String, Event)>,
}

/// Whether the stream notifies window opens.
fn notify_open(c: &Compiled) -> bool {
    c.notify.as_ref().is_some_and(|n| n.on_open)
}

/// TDengine's `triggerType` of a trigger.
fn trigger_type(t: &StreamTrigger) -> &'static str {
    match t {
        StreamTrigger::Period { .. } => "Period",
        StreamTrigger::Sliding { .. } => "Sliding",
        StreamTrigger::Interval { .. } => "Interval",
        StreamTrigger::Session { .. } => "Session",
        StreamTrigger::State { .. } => "State",
        StreamTrigger::Event { .. } => "Event",
        StreamTrigger::Count { .. } => "Count",
    }
}

/// An event of a window of group `gi` (the table name is filled in at
/// delivery).
fn window_event(c: &Compiled, gi: i64, w: Option<&Win>, event_type: &'static str, now: i64) -> Event {
    let ms = |us: i64| us.div_euclid(1000);
    Event {
        table_name: String::new(),
        event_type,
        event_time_ms: ms(now),
        trigger_id: format!("{}-{gi}-{}", c.def.id, w.map(|w| w.start).unwrap_or(now)),
        trigger_type: trigger_type(&c.cs.trigger),
        group_id: gi.to_string(),
        window_start_ms: w.map(|w| ms(w.start)),
        window_end_ms: w.filter(|_| event_type != "WINDOW_OPEN").map(|w| ms(w.shown_end)),
        result: None,
    }
}

/// TDengine's WINDOW_INVALIDATION event: a closed window whose result was
/// written is no window any more (late rows or deletes merged, split or
/// emptied it); its output rows are deleted.
fn invalidated(c: &Compiled, key: &str, gi: i64, start: i64, m: &WindowMark, now: i64, fx: &mut Effects) {
    let Some(n) = &c.notify else { return };
    if !n.on_close && !n.on_open {
        return;
    }
    // `_twend` as shown: the window's end (INTERVAL), its last row (the others).
    let shown_end = if matches!(c.cs.trigger, StreamTrigger::Interval { .. }) { m.end } else { m.end - 1 };
    let w = Win { start, end: m.end, shown_end, rows: m.rows, digest: m.digest, lo: 0, hi: 0, tick: None };
    fx.events.push((key.to_string(), window_event(c, gi, Some(&w), "WINDOW_INVALIDATION", now)));
}

/// The WINDOW_CLOSE (ON_TIME for PERIOD and plain SLIDING) events of a
/// computation: one per result row (the row as `result`) that NOTIFY's
/// WHERE holds for, one without a result when the query gave no row.
#[allow(clippy::too_many_arguments)]
fn close_events(
    env: &Env,
    c: &Compiled,
    key: &str,
    gi: i64,
    w: Option<&Win>,
    cols: &[PlanColumn],
    batches: &[RecordBatch],
    now: i64,
    fx: &mut Effects,
) -> Result<()> {
    let Some(n) = c.notify.as_ref().filter(|n| n.on_close) else { return Ok(()) };
    let kind = if time_or_data_windows(&c.cs.trigger) { "WINDOW_CLOSE" } else { "ON_TIME" };
    let names = result_names(c, cols);
    let mut any = false;
    for b in batches {
        let keep = match &n.condition {
            Some(cond) if b.num_rows() > 0 => Some(notify_where(env, c, cond, &names, cols, b, now)?),
            _ => None,
        };
        for r in 0..b.num_rows() {
            any = true;
            if keep.as_ref().is_some_and(|k| !k[r]) {
                continue;
            }
            let mut e = window_event(c, gi, w, kind, now);
            e.result = Some(row_json(&names, b, r));
            fx.events.push((key.to_string(), e));
        }
    }
    if !any && n.condition.is_none() {
        fx.events.push((key.to_string(), window_event(c, gi, w, kind, now)));
    }
    Ok(())
}

/// The names of a result's columns in events (the stream's column list,
/// when it names them all).
fn result_names(c: &Compiled, cols: &[PlanColumn]) -> Vec<String> {
    if c.cs.columns.len() == cols.len() {
        c.cs.columns.iter().map(crate::planner::ident).collect()
    } else {
        cols.iter().map(|x| x.name.clone()).collect()
    }
}

/// Row `r` of a result as an event's `result` object.
fn row_json(names: &[String], b: &RecordBatch, r: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    for (i, n) in names.iter().enumerate().take(b.num_columns()) {
        m.insert(n.clone(), super::tdengine_notify::json_value(&crate::types::value_at(b.column(i).as_ref(), r)));
    }
    m
}

/// CREATE STREAM: each placeholder of the query where TDengine allows it
/// (docs: the placeholder table of CREATE STREAM).
pub fn check_placeholders(c: &Compiled) -> Result<()> {
    let Some(q) = &c.cs.query else { return Ok(()) };
    let t = &c.cs.trigger;
    let windowed = time_or_data_windows(t);
    let by_tbname = c.cs.partition.iter().any(|p| crate::planner::ident(p) == TBNAME);
    let check = |name: &str| -> Result<()> {
        let ok = match name {
            "_twstart" => windowed,
            "_twend" | "_twduration" | "_twrownum" => windowed && c.on_close,
            "_tprev_ts" | "_tcurrent_ts" | "_tnext_ts" => matches!(t, StreamTrigger::Sliding { .. }),
            "_tprev_localtime" | "_tnext_localtime" => matches!(t, StreamTrigger::Period { .. }),
            "_tidlestart" | "_tidleend" => c.on_idle || c.on_resume,
            "%%tbname" => {
                if !by_tbname {
                    bail!(InvalidParameterValue, "Invalid stream query: %%tbname needs PARTITION BY tbname");
                }
                true
            }
            "%%trows" => {
                if c.trigger.is_none() {
                    bail!(InvalidParameterValue, "Invalid stream query: %%trows needs a trigger table");
                }
                true
            }
            n if n.starts_with("%%") => match n[2..].parse::<usize>() {
                Ok(k) if k >= 1 && k <= c.cs.partition.len() => true,
                Ok(k) => bail!(InvalidParameterValue, "Invalid stream query: %%{k} has no PARTITION BY column"),
                Err(_) => true,
            },
            _ => true,
        };
        if !ok {
            bail!(
                InvalidParameterValue,
                "Invalid stream query: {name} is not valid for {} streams{}",
                t.kind(),
                if windowed { " with EVENT_TYPE(WINDOW_OPEN) only" } else { "" }
            );
        }
        Ok(())
    };
    let mut res = Ok(());
    let _ = ast::visit_expressions(q, |e| {
        let name = match e {
            ast::Expr::Identifier(i) if i.quote_style.is_none() => i.value.to_lowercase(),
            ast::Expr::Identifier(i) if i.value.starts_with("%%") => i.value.clone(),
            _ => return ControlFlow::Continue(()),
        };
        match check(&name) {
            Ok(()) => ControlFlow::Continue(()),
            Err(x) => {
                res = Err(x);
                ControlFlow::Break(())
            }
        }
    });
    res?;
    let mut res = Ok(());
    let _ = ast::visit_relations(q, |n| {
        if let [ast::ObjectNamePart::Identifier(i)] = n.0.as_slice() {
            if i.value.starts_with("%%") {
                if let Err(x) = check(&i.value) {
                    res = Err(x);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    res
}

/// CREATE STREAM: NOTIFY's WHERE must bind over the result columns.
pub fn check_notify_where(env: &Env, c: &Compiled) -> Result<()> {
    let Some(cond) = c.notify.as_ref().and_then(|n| n.condition.as_ref()) else { return Ok(()) };
    let cols = output_columns(env, c)?;
    let planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, now_us()), Params::default());
    let e = planner.bind_expr(cond, &crate::planner::Scope::new(cols, None), None)?;
    if e.ty() != SqlType::Bool && e.ty() != SqlType::Unknown {
        bail!(DatatypeMismatch, "argument of NOTIFY WHERE must be type boolean, not type {}", e.ty().sql_name());
    }
    Ok(())
}

/// NOTIFY's `WHERE cond` over result rows (TDengine: result columns and
/// constants only): which rows of `b` it holds for.
fn notify_where(
    env: &Env,
    c: &Compiled,
    cond: &ast::Expr,
    names: &[String],
    cols: &[PlanColumn],
    b: &RecordBatch,
    now: i64,
) -> Result<Vec<bool>> {
    let scope_cols: Vec<PlanColumn> =
        cols.iter().zip(names).map(|(col, n)| PlanColumn { name: n.clone(), qualifier: None, ty: col.ty }).collect();
    let planner = Planner::new(env.catalog, env.storage, &c.def.database, exec_ctx(&c.def.database, now), Params::default());
    let scope = crate::planner::Scope::new(scope_cols, None);
    let e = planner.bind_expr(cond, &scope, None)?;
    let e = crate::planner::physical::physical_expr(&e, &planner.ctx)?;
    let a = e.eval(b, &planner.ctx)?;
    Ok((0..b.num_rows()).map(|r| matches!(crate::types::value_at(a.as_ref(), r), Value::Bool(true))).collect())
}

/// Deliver an evaluation's events to every NOTIFY target: a `ws://` URL
/// in messages of at most 1,000 events, a `pg://channel` as NOTIFY
/// payloads (`channel_messages`) through the process's hub. Undelivered:
/// dropped and counted, or (with ON_FAILURE_PAUSE) the evaluation fails.
fn deliver(hub: &Hub, c: &Compiled, st: &mut StreamState, events: Vec<(String, Event)>, mode: Mode, now: i64) -> Result<()> {
    use super::tdengine_notify::{channel_messages, message, send, target, Target};
    let Some(n) = &c.notify else { return Ok(()) };
    if events.is_empty() || (mode == Mode::Init && !n.history) || mode == Mode::Skip {
        return Ok(());
    }
    let out = c.output.as_ref().map(|(_, t)| t.clone()).unwrap_or_default();
    let events: Vec<Event> = events
        .into_iter()
        .map(|(k, mut e)| {
            e.table_name = st.subtables.get(&k).cloned().unwrap_or_else(|| out.clone());
            e
        })
        .collect();
    let stream = format!("{}.{}", c.def.database, c.def.name);
    for chunk in events.chunks(1000) {
        st.notify_seq += 1;
        let id = format!("{}-{}", c.def.id, st.notify_seq);
        let msg = message(&id, now.div_euclid(1000), &stream, chunk);
        for url in &n.urls {
            let (sent, failure) = match target(url) {
                Ok(Target::Ws(url)) => match send(url, &msg) {
                    Ok(()) => (chunk.len(), None),
                    Err(e) => (0, Some(e)),
                },
                Ok(Target::Channel(channel)) => {
                    let (msgs, dropped) = channel_messages(&id, now.div_euclid(1000), &stream, chunk);
                    let notes: Vec<Note> = msgs.into_iter().map(|payload| Note { pid: 0, channel: channel.to_string(), payload }).collect();
                    hub.publish(&notes);
                    let e = (dropped > 0).then(|| {
                        err!(InvalidParameterValue, "NOTIFY {url}: {dropped} events longer than a PostgreSQL payload (8000 bytes)")
                    });
                    (chunk.len() - dropped, e)
                }
                Err(e) => (0, Some(e)),
            };
            st.notify_sent += sent as u64;
            if let Some(e) = failure {
                if n.pause {
                    return Err(e);
                }
                tracing::warn!(stream = %stream, error = %e, "stream notification dropped");
                st.notify_dropped += (chunk.len() - sent) as u64;
            }
        }
    }
    Ok(())
}

/// One window of one group to compute.
struct Job {
    /// An open window (EVENT_TYPE(WINDOW_OPEN), MAX_DELAY): no close event.
    open: bool,
    key: String,
    values: Vec<Option<String>>,
    tbname: Option<String>,
    gi: i64,
    win: Win,
    /// The window's trigger rows in the stream's cache, when all are there.
    trows: Option<Vec<(u32, u32)>>,
}

/// A group's output subtable: the one recorded for it unless TAGS(…)
/// asks for values (OUTPUT_SUBTABLE runs a query).
fn cached_group_out(env: &Env, c: &Compiled, st: &mut StreamState, key: &str, values: &[Option<String>]) -> Result<GroupOut> {
    if c.cs.tags.is_empty() {
        if let Some(name) = st.subtables.get(key) {
            return Ok(GroupOut { subtable: name.clone(), tags: values.to_vec() });
        }
    }
    let go = group_out(env, c, values)?;
    st.subtables.insert(key.to_string(), go.subtable.clone());
    Ok(go)
}

/// Run the computations: the groups closing the same window together in
/// one query when the stream's query allows it (`batchable`), the rest
/// (and any group the batch gave no row) one by one.
fn run_jobs(
    env: &Env,
    c: &Compiled,
    jobs: &[Job],
    outs: &HashMap<String, Option<GroupOut>>,
    now: i64,
    st: &mut StreamState,
    fx: &mut Effects,
    cache: Option<&TriggerCache>,
    buf: &mut OutBuf,
) -> Result<u64> {
    let r = run_jobs_into(env, c, jobs, outs, now, st, buf, fx, cache);
    // What was computed is written, also when a later window failed (on
    // success the caller commits the buffer).
    if r.is_err() {
        flush_output(env, buf)?;
    }
    r
}

fn run_jobs_into(
    env: &Env,
    c: &Compiled,
    jobs: &[Job],
    outs: &HashMap<String, Option<GroupOut>>,
    now: i64,
    st: &mut StreamState,
    buf: &mut OutBuf,
    fx: &mut Effects,
    cache: Option<&TriggerCache>,
) -> Result<u64> {
    let mut written = 0u64;
    // `%%trows` of the cached rows at `places`.
    let memory = |places: &mut dyn Iterator<Item = &(u32, u32)>| -> Result<Option<Arc<TriggerRows>>> {
        let Some(k) = cache else { return Ok(None) };
        let places: Vec<(u32, u32)> = places.copied().collect();
        Ok(Some(Arc::new(TriggerRows { columns: k.columns().to_vec(), batch: k.batch(&places)? })))
    };
    let mut done = vec![false; jobs.len()];
    if jobs.len() > 1 && batchable(c) {
        let mut by_win: BTreeMap<(i64, i64, Option<i64>), Vec<usize>> = BTreeMap::new();
        for (i, j) in jobs.iter().enumerate() {
            by_win.entry((j.win.start, j.win.end, j.win.tick)).or_default().push(i);
        }
        for idx in by_win.values().filter(|v| v.len() > 1) {
            // Every group's rows in memory: the query reads them there.
            let trows = match idx.iter().all(|&i| jobs[i].trows.is_some()) {
                true => memory(&mut idx.iter().flat_map(|&i| jobs[i].trows.iter().flatten()))?,
                false => None,
            };
            let (cols, per_group) = match compute_batch(env, c, &jobs[idx[0]].win, now, trows) {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(stream = %c.def.name, error = %e, "stream computes groups one by one");
                    continue;
                }
            };
            for &i in idx {
                let j = &jobs[i];
                if let Some(batches) = per_group.get(&j.key) {
                    written += write_output(env, c, batches, &cols, outs.get(&j.key).and_then(|o| o.as_ref()), buf, &j.key)?;
                    record_output(c, st, &j.key, j.win.start, batches, &mut fx.stale)?;
                    if !j.open {
                        close_events(env, c, &j.key, j.gi, Some(&j.win), &cols, batches, now, fx)?;
                    }
                    st.windows_done += 1;
                    done[i] = true;
                }
            }
        }
    }
    for (i, j) in jobs.iter().enumerate() {
        if done[i] {
            continue;
        }
        let b = Bindings {
            window: Some(j.win.clone()),
            group: j.values.clone(),
            tbname: j.tbname.clone(),
            group_id: j.gi,
            local_us: now,
            period_us: 0,
            trows: match &j.trows {
                Some(p) => memory(&mut p.iter())?,
                None => None,
            },
            idle_ms: None,
        };
        let (cols, batches) = compute_out(env, c, &b)?;
        written += write_output(env, c, &batches, &cols, outs.get(&j.key).and_then(|o| o.as_ref()), buf, &j.key)?;
        record_output(c, st, &j.key, j.win.start, &batches, &mut fx.stale)?;
        if !j.open {
            close_events(env, c, &j.key, j.gi, Some(&j.win), &cols, &batches, now, fx)?;
        }
        st.windows_done += 1;
    }
    Ok(written)
}

/// Whether one query can compute a window for many groups: a supertable
/// trigger, a query that is one SELECT over `%%trows` alone without GROUP
/// BY, HAVING, DISTINCT, ORDER BY or LIMIT, and no placeholder that
/// differs per group (`_twrownum`, `_tgrpid`, `%%n`, `%%tbname`). The
/// query then runs once, grouped by the partition columns.
fn batchable(c: &Compiled) -> bool {
    let (Some(t), Some(q)) = (&c.trigger, &c.cs.query) else { return false };
    if !matches!(t.kind, TableKind::Stable(_)) || c.cs.partition.is_empty() {
        return false;
    }
    if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return false;
    }
    let ast::SetExpr::Select(s) = q.body.as_ref() else { return false };
    let no_group = matches!(&s.group_by, ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if s.distinct.is_some() || s.having.is_some() || !no_group || s.from.len() != 1 || !s.from[0].joins.is_empty() {
        return false;
    }
    let ast::TableFactor::Table { name, .. } = &s.from[0].relation else { return false };
    if !matches!(name.0.as_slice(), [ast::ObjectNamePart::Identifier(i)] if i.value == "%%trows") {
        return false;
    }
    let mut per_group = false;
    let _ = ast::visit_expressions(q.as_ref(), |e| {
        if let ast::Expr::Identifier(i) = e {
            let n = i.value.to_lowercase();
            if n == "_twrownum" || n == "_tgrpid" || n.starts_with("%%") {
                per_group = true;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    !per_group
}

/// One window for every group at once: the query over the window's rows of
/// all groups, grouped by the partition columns; its rows by group key.
#[allow(clippy::type_complexity)]
fn compute_batch(
    env: &Env,
    c: &Compiled,
    w: &Win,
    now: i64,
    trows: Option<Arc<TriggerRows>>,
) -> Result<(Vec<PlanColumn>, HashMap<String, Vec<RecordBatch>>)> {
    let q = c.cs.query.as_ref().ok_or_else(|| err!(Internal, "stream has no query"))?;
    let b = Bindings { window: Some(w.clone()), local_us: now, trows, ..Default::default() };
    let mut q = bind_query(c, q, &b)?;
    let np = c.cs.partition.len();
    let exprs: Vec<String> = c.cs.partition.iter().map(|p| format!("CAST({} AS TEXT)", quote_ident(&crate::planner::ident(p)))).collect();
    let items: Vec<String> = exprs.iter().enumerate().map(|(i, e)| format!("{e} AS \"__td_part{i}\"")).collect();
    let tmpl = crate::parser::parse_query(&format!("SELECT {} FROM t GROUP BY {}", items.join(", "), exprs.join(", ")))?;
    let ast::SetExpr::Select(t) = *tmpl.body else { bail!(Internal, "GROUP BY template is not a SELECT") };
    let ast::SetExpr::Select(s) = q.body.as_mut() else { bail!(Internal, "stream query is not a SELECT") };
    s.projection.extend(t.projection);
    s.group_by = t.group_by;
    let planner = trows_planner(env, c, &b, now);
    let logical = planner.plan_query(&q, None)?;
    let mut cols = crate::planner::output_columns(&logical);
    let plan = planner.physical(logical)?;
    let batches = crate::exec::collect(&plan, &planner.ctx)?;
    let n = cols.len() - np;
    cols.truncate(n);
    let mut out: HashMap<String, Vec<RecordBatch>> = HashMap::new();
    for batch in batches {
        let mut rows: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for r in 0..batch.num_rows() {
            let vals: Vec<Option<String>> = (n..n + np)
                .map(|k| match crate::types::value_at(batch.column(k).as_ref(), r) {
                    Value::Null => None,
                    Value::Text(s) => Some(s),
                    other => Some(crate::types::format_value(&other)),
                })
                .collect();
            rows.entry(group_key(&vals)).or_default().push(r as u32);
        }
        let data = batch.project(&(0..n).collect::<Vec<_>>())?;
        for (key, idx) in rows {
            let idx = arrow::array::UInt32Array::from(idx);
            let cols: Vec<ArrayRef> =
                data.columns().iter().map(|a| arrow::compute::take(a.as_ref(), &idx, None)).collect::<std::result::Result<_, _>>()?;
            out.entry(key).or_default().push(RecordBatch::try_new(data.schema(), cols)?);
        }
    }
    Ok((cols, out))
}

/// The version-hold name of a stream on its trigger regions.
pub fn holder(def: &StreamDef) -> String {
    format!("stream:{}.{}", def.database, def.name)
}

/// Release a dropped stream's version holds.
pub fn release(env: &Env, def: &StreamDef) {
    let Ok(c) = compile(env, def) else { return };
    let Some(t) = &c.trigger else { return };
    if let Ok(regions) = super::batching::table_regions(env, &t.table) {
        for r in regions {
            r.release_versions(&holder(def));
        }
    }
}

/// A group's change since the checkpoint.
#[derive(Debug, Clone)]
struct GroupChange {
    values: Vec<Option<String>>,
    min_ts: i64,
    max_ts: i64,
    /// Times of rows retracted (deleted or replaced) and added: a retracted
    /// time not added again is a delete.
    retracted: BTreeSet<i64>,
    added: BTreeSet<i64>,
    /// With a cache: the rows (time, digest, place in the cache).
    rows: Vec<(i64, u64, (u32, u32))>,
}

/// The groups a catch-up reads and from where, from the change log since
/// the checkpoint; None when every group must be read (no checkpoint, a
/// region gone or new, versions gone).
fn selection(
    c: &Compiled,
    st: &mut StreamState,
    regions: &[Arc<crate::storage::Region>],
    upto: &BTreeMap<u64, u64>,
    now: i64,
    deleted: &mut std::collections::HashSet<String>,
    fresh: &mut std::collections::HashSet<String>,
    mut cache: Option<&mut TriggerCache>,
) -> Result<Option<Selection>> {
    let Some(t) = &c.trigger else { return Ok(Some(Selection::new())) };
    if st.seqs.is_empty() || st.seqs.len() != regions.len() || regions.iter().any(|r| !st.seqs.contains_key(&r.id)) {
        return Ok(None);
    }
    let batches = match change_log(st, regions, upto) {
        Ok(b) => b,
        Err(e) => {
            tracing::debug!(stream = %c.def.name, error = %e, "stream change log gone: reading every group");
            return Ok(None);
        }
    };
    let mut changed: BTreeMap<String, GroupChange> = BTreeMap::new();
    for batch in batches {
        // The rows go into the cache (the groups it keeps take theirs).
        let chunk = match cache.as_deref_mut() {
            Some(k) => k.add_chunk(&batch)?,
            None => None,
        };
        if chunk.is_none() {
            if let Some(k) = cache.take() {
                k.clear();
            }
        }
        if !collect_changes(c, t, &batch, &mut changed, chunk.as_ref())? {
            return Ok(None);
        }
    }
    if let Some(k) = cache {
        for (key, ch) in &changed {
            k.append(key, !ch.retracted.is_empty(), &ch.rows);
        }
    }
    let mut sel = Selection::new();
    fresh.extend(changed.keys().cloned());
    for (key, ch) in changed {
        if ch.retracted.iter().any(|t| !ch.added.contains(t)) {
            deleted.insert(key.clone());
        }
        let Some(p) = st.groups.get_mut(&key) else {
            // A new group: all of its rows.
            sel.insert(key, (ch.values, None));
            continue;
        };
        // Changes behind the records kept trigger nothing (as if expired).
        if p.horizon_us.is_some_and(|h| ch.max_ts < h) {
            continue;
        }
        let min_ts = ch.min_ts.max(p.horizon_us.unwrap_or(i64::MIN));
        // A change at the resume point itself (an update or delete of the
        // first row of the last closed data-defined window) can join that
        // window to the one before: late too.
        let late = min_ts < p.resume_us || (min_ts == p.resume_us && time_windows(&c.cs.trigger)?.is_none());
        let anchor = if late {
            // From the oldest window kept at the earliest.
            late_anchor(&c.cs.trigger, st.windows.get(&key), min_ts)?.or(p.horizon_us).map(|a| a.min(p.resume_us))
        } else {
            Some(p.resume_us)
        };
        let watches_open = c.on_open || c.max_delay_us.is_some() || notify_open(c);
        if !late && !watches_open && !closes(&c.cs.trigger, p.resume_us, ch.max_ts.max(p.max_ts).saturating_sub(c.watermark_us))? {
            // Rows after the open window's start and no window closes
            // yet: nothing to read.
            p.max_ts = p.max_ts.max(ch.max_ts);
            continue;
        }
        sel.insert(key, (ch.values, anchor));
    }
    // MAX_DELAY: groups with an open window due again, unchanged or not.
    if let Some(d) = c.max_delay_us {
        for (key, fired) in &st.open {
            if sel.contains_key(key) || !fired.values().any(|&at| now - at >= d) {
                continue;
            }
            let (Some(p), Some(values)) = (st.groups.get(key), group_values(key, c.cs.partition.len())) else { continue };
            sel.insert(key.clone(), (values, Some(p.resume_us)));
        }
    }
    Ok(Some(sel))
}

/// The partition values of a group key (the inverse of `group_key`).
fn group_values(key: &str, n: usize) -> Option<Vec<Option<String>>> {
    if n == 0 {
        return Some(vec![]);
    }
    let v: Vec<Option<String>> = key.split('\u{1}').map(|x| if x == "\u{0}" { None } else { Some(x.to_string()) }).collect();
    (v.len() == n).then_some(v)
}

/// Add a change-log batch's rows to their groups; false when a row's
/// group cannot be told (every group is read then).
fn collect_changes(
    c: &Compiled,
    t: &TriggerTable,
    batch: &RecordBatch,
    out: &mut BTreeMap<String, GroupChange>,
    chunk: Option<&(u32, Vec<u64>)>,
) -> Result<bool> {
    if batch.num_rows() == 0 {
        return Ok(true);
    }
    let schema = batch.schema();
    let col = |n: &str| schema.index_of(n).ok().map(|i| batch.column(i).clone());
    let Some(ts) = col(&t.ts_column) else { return Ok(false) };
    let diff = col("__diff");
    let diff = diff.as_ref().and_then(|d| d.as_any().downcast_ref::<arrow::array::Int64Array>());
    let ts = arrow::compute::cast(&ts, &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None))?;
    let ts = ts.as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>().expect("cast to timestamp µs");
    // A child table trigger: its rows only.
    let mine: Option<arrow::array::ArrayRef> = match &t.kind {
        TableKind::Child { .. } => match col(TBNAME) {
            Some(a) => Some(crate::exec::expr::cast_array(&a, SqlType::from_arrow(a.data_type()), SqlType::Text)?),
            None => return Ok(false),
        },
        _ => None,
    };
    // The partition values as the trigger read spells them (CAST AS TEXT).
    let mut parts: Vec<Result<ArrayRef, Option<String>>> = Vec::new();
    for p in &c.cs.partition {
        let name = crate::planner::ident(p);
        parts.push(match &t.kind {
            TableKind::Stable(_) => match col(&name) {
                Some(a) => Ok(crate::exec::expr::cast_array(&a, SqlType::from_arrow(a.data_type()), SqlType::Text)?),
                None => return Ok(false),
            },
            TableKind::Child { stable, tags } if name != TBNAME => {
                Err(stable.tags.iter().position(|x| *x == name).and_then(|i| tags[i].clone()))
            }
            _ => Err(Some(t.name.clone())),
        });
    }
    let text = |a: &dyn Array, i: usize| match crate::types::value_at(a, i) {
        Value::Null => None,
        Value::Text(s) => Some(s),
        other => Some(crate::types::format_value(&other)),
    };
    for i in 0..batch.num_rows() {
        if let Some(m) = &mine {
            if text(m.as_ref(), i).as_deref() != Some(t.name.as_str()) {
                continue;
            }
        }
        if ts.is_null(i) {
            continue;
        }
        let v = ts.value(i);
        let values: Vec<Option<String>> = parts
            .iter()
            .map(|p| match p {
                Ok(a) => text(a.as_ref(), i),
                Err(c) => c.clone(),
            })
            .collect();
        let key = group_key(&values);
        let e = out.entry(key).or_insert_with(|| GroupChange {
            values,
            min_ts: v,
            max_ts: v,
            retracted: BTreeSet::new(),
            added: BTreeSet::new(),
            rows: Vec::new(),
        });
        // Added rows only (a retraction drops a cached group anyway).
        match (chunk, diff.as_ref().map(|d| d.value(i))) {
            (_, Some(d)) if d < 0 => {}
            (Some((id, digests)), _) => e.rows.push((v, digests[i], (*id, i as u32))),
            (None, _) => {}
        }
        e.min_ts = e.min_ts.min(v);
        e.max_ts = e.max_ts.max(v);
        match diff.as_ref().map(|d| d.value(i)) {
            Some(d) if d < 0 => e.retracted.insert(v),
            _ => e.added.insert(v),
        };
    }
    Ok(true)
}

fn micros_of(d: &crate::parser::Duration) -> Result<i64> {
    match d.micros {
        Some(m) if m > 0 => Ok(m),
        _ => bail!(FeatureNotSupported, "calendar durations ({d}) are not supported by weir's streams"),
    }
}

/// INTERVAL / SLIDING: (window length, step, offset).
fn time_windows(t: &StreamTrigger) -> Result<Option<(i64, i64, i64)>> {
    Ok(match t {
        StreamTrigger::Interval { interval, offset, sliding, .. } => {
            Some((micros_of(interval)?, micros_of(sliding)?, offset.as_ref().map(micros_of).transpose()?.unwrap_or(0)))
        }
        StreamTrigger::Sliding { sliding, offset } => {
            let sl = micros_of(sliding)?;
            Some((sl, sl, offset.as_ref().map(micros_of).transpose()?.unwrap_or(0)))
        }
        _ => None,
    })
}

/// Where cutting resumes after an evaluation that closed `wins` up to the
/// watermark `wm`: INTERVAL / SLIDING at the first window not closed; the
/// data-defined windows at the last closed window's start (a boundary:
/// cutting from it gives the same windows), else where this read began.
fn resume_after(t: &StreamTrigger, g: &GroupRows, wins: &[Win], wm: i64, began: i64) -> Result<i64> {
    if let Some((iv, sl, off)) = time_windows(t)? {
        return Ok(floor_to(wm.saturating_sub(iv), sl, off) + sl);
    }
    // The window's first row (STATE_WINDOW's extend moves the start).
    Ok(wins.last().map(|w| g.ts[w.lo]).unwrap_or(began))
}

/// Whether a window starting at `resume` closes at watermark `wm`
/// (INTERVAL / SLIDING; the data-defined windows are always read).
fn closes(t: &StreamTrigger, resume: i64, wm: i64) -> Result<bool> {
    Ok(match time_windows(t)? {
        Some((iv, _, _)) => resume.saturating_add(iv) <= wm,
        None => true,
    })
}

/// Where a group's windows can change after a change at `ts` behind its
/// progress: the earliest window holding `ts` (INTERVAL / SLIDING), else
/// the computed window before the one holding it (a late row can join the
/// window before); None: from the group's first row.
/// Groups a recalculation reads per pass.
pub const RECALC_GROUPS_PER_PASS: usize = 64;

/// RECALCULATE's reads: the stream's groups in passes of
/// `RECALC_GROUPS_PER_PASS`, each group from the first window that can
/// reach `from` (its whole rows when no window record tells where that
/// is). Groups the stream never saw have no windows to recompute.
fn recalc_passes(c: &Compiled, st: &StreamState, from: i64) -> Result<Vec<Option<Selection>>> {
    let n = c.cs.partition.len();
    let mut passes = Vec::new();
    let mut cur = Selection::new();
    for key in st.groups.keys() {
        let Some(values) = group_values(key, n) else {
            // A key that cannot be split back into values: read every group.
            return Ok(vec![None]);
        };
        let anchor = late_anchor(&c.cs.trigger, st.windows.get(key), from)?;
        cur.insert(key.clone(), (values, anchor));
        if cur.len() == RECALC_GROUPS_PER_PASS {
            passes.push(Some(std::mem::take(&mut cur)));
        }
    }
    if !cur.is_empty() {
        passes.push(Some(cur));
    }
    Ok(passes)
}

fn late_anchor(t: &StreamTrigger, marks: Option<&BTreeMap<i64, WindowMark>>, ts: i64) -> Result<Option<i64>> {
    if let Some((iv, sl, off)) = time_windows(t)? {
        return Ok(Some(floor_to(ts.saturating_sub(iv), sl, off) + sl));
    }
    let Some(marks) = marks else { return Ok(None) };
    let Some((&at, _)) = marks.range(..=ts).next_back() else { return Ok(None) };
    let back = marks.range(..at).next_back().map(|(&s, _)| s);
    // extend 2: the window before is context only, one more back.
    match (t, back) {
        (StreamTrigger::State { extend: Some(2), .. }, Some(b)) => Ok(marks.range(..b).next_back().map(|(&s, _)| s)),
        _ => Ok(back),
    }
}

/// How often running streams are evaluated without writes (PERIOD ticks,
/// watermarks); a write to any table wakes the runner sooner: at once when
/// the last evaluation ended `WRITE_DEBOUNCE_MS` ago or more, else that
/// long after it ended (so a burst of writes is a few evaluations, and the
/// write that closes a window after a quiet spell is not held back).
pub const STREAM_POLL_MS: u64 = 1000;
pub const WRITE_DEBOUNCE_MS: u64 = 50;

/// Runs the streams: a background thread evaluates every running stream
/// after writes and every `STREAM_POLL_MS`; ADMIN FLUSH_STREAM runs one
/// now. One evaluation at a time (the lock), so the thread and ADMIN
/// never interleave on a stream's progress.
pub struct StreamRunner {
    run_lock: parking_lot::Mutex<()>,
    /// A running stream has LOW_LATENCY_CALC: no write debounce.
    low_latency: AtomicBool,
    wake: (parking_lot::Mutex<(bool, bool)>, parking_lot::Condvar),
    /// Where `pg://channel` notifications go (the process's LISTEN hub).
    notify: Arc<Hub>,
    /// Per stream id, the trigger rows of its open windows.
    caches: parking_lot::Mutex<HashMap<u64, TriggerCache>>,
    /// When the catalog was last flushed for the WAL holds (`settle`).
    settled: parking_lot::Mutex<std::time::Instant>,
}

/// How often the runner flushes the catalog so that the output WAL records
/// carrying stream progress as annexes can go (one fsync per interval,
/// not per evaluation).
pub const SETTLE_MS: u64 = 1000;

impl StreamRunner {
    pub fn new(notify: Arc<Hub>) -> Arc<StreamRunner> {
        Arc::new(StreamRunner {
            notify,
            run_lock: parking_lot::Mutex::new(()),
            low_latency: AtomicBool::new(false),
            wake: (parking_lot::Mutex::new((false, false)), parking_lot::Condvar::new()),
            caches: parking_lot::Mutex::new(HashMap::new()),
            settled: parking_lot::Mutex::new(std::time::Instant::now()),
        })
    }

    /// Every `SETTLE_MS`: flush the catalog (the progress evaluations
    /// applied becomes durable there) and release the streams' WAL holds
    /// (the annexes that carried it are not needed any more).
    pub fn settle(&self, env: &Env) {
        let mut last = self.settled.lock();
        if last.elapsed() < std::time::Duration::from_millis(SETTLE_MS) {
            return;
        }
        // No evaluation between its commit and its catalog write.
        let _g = self.run_lock.lock();
        if let Err(e) = env.catalog.flush() {
            tracing::warn!(error = %e, "cannot flush the catalog: stream WAL holds stay");
            return;
        }
        for r in env.storage.regions() {
            r.release_wal(WAL_HOLDER);
        }
        *last = std::time::Instant::now();
    }

    /// Run one stream now: its pending recalculations in request order,
    /// then new and changed windows. Returns the rows written.
    pub fn run_one(&self, env: &Env, def: &StreamDef) -> Result<u64> {
        self.run_stream(env, def, true)
    }

    /// `run_one`; unless `now`, a failed stream waits for its retry time.
    fn run_stream(&self, env: &Env, def: &StreamDef, now: bool) -> Result<u64> {
        let _g = self.run_lock.lock();
        // The definition may have changed (STOP) or gone since it was read.
        let Some(def) = env.catalog.stream(&def.database, &def.name) else { return Ok(0) };
        if def.status == "Stopped" {
            return Ok(0);
        }
        let mut rows = 0u64;
        let st = env.catalog.stream_state_header(&def.database, &def.name);
        if !now && st.retry_at_ms.is_some_and(|at| super::batching::now_ms() < at) {
            return Ok(0);
        }
        for r in st.recalcs.iter().filter(|r| r.status == "Pending") {
            let res = run(env, &self.notify, &def, Mode::Recalc { from: r.start_us, to: r.end_us }, None);
            let mut st = env.catalog.stream_state(&def.database, &def.name);
            if let Some(x) = st.recalcs.iter_mut().find(|x| x.id == r.id) {
                match &res {
                    Ok(_) => x.status = "Finished".into(),
                    Err(e) => {
                        x.status = "Failed".into();
                        x.message = e.to_string();
                    }
                }
            }
            env.catalog.put_stream_state(&def.database, &def.name, &st)?;
            rows += res?;
        }
        let mut caches = self.caches.lock();
        let cache = caches.entry(def.id).or_default();
        Ok(rows + run(env, &self.notify, &def, Mode::CatchUp, Some(cache))?)
    }

    /// Evaluate every running stream (errors are recorded in its state:
    /// status Failed until an evaluation succeeds).
    pub fn run_all(&self, env: &Env) {
        let defs = env.catalog.streams();
        let low = defs.iter().any(|d| {
            d.status != "Stopped" && parse_def(d).is_ok_and(|cs| cs.options.iter().any(|o| matches!(o, StreamOption::LowLatencyCalc)))
        });
        self.low_latency.store(low, std::sync::atomic::Ordering::Relaxed);
        self.caches.lock().retain(|id, _| defs.iter().any(|d| d.id == *id));
        for def in defs {
            if def.status != "Stopped" {
                if let Err(e) = self.run_stream(env, &def, false) {
                    tracing::debug!(stream = %def.name, error = %e, "stream evaluation failed");
                }
            }
        }
        self.settle(env);
    }

    /// Start the background thread; it ends when the owner is gone or
    /// `stop` is called.
    pub fn spawn<T: Send + Sync + 'static>(self: &Arc<Self>, owner: std::sync::Weak<T>, env: fn(&T) -> Env<'_>) {
        let me = Arc::downgrade(self);
        let now = std::time::Instant::now();
        let mut last_end = now.checked_sub(std::time::Duration::from_millis(WRITE_DEBOUNCE_MS)).unwrap_or(now);
        let spawned = std::thread::Builder::new().name("weir-streams".into()).spawn(move || loop {
            {
                let Some(r) = me.upgrade() else { return };
                let mut g = r.wake.0.lock();
                if g.1 {
                    return;
                }
                if !g.0 {
                    r.wake.1.wait_for(&mut g, std::time::Duration::from_millis(STREAM_POLL_MS));
                }
                if g.1 {
                    return;
                }
                let woke = std::mem::take(&mut g.0);
                drop(g);
                let debounce = std::time::Duration::from_millis(WRITE_DEBOUNCE_MS);
                if woke && !r.low_latency.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Some(wait) = debounce.checked_sub(last_end.elapsed()) {
                        std::thread::sleep(wait);
                    }
                }
            }
            let (Some(r), Some(o)) = (me.upgrade(), owner.upgrade()) else { return };
            if !has_streams(&env(&o)) {
                continue;
            }
            r.run_all(&env(&o));
            last_end = std::time::Instant::now();
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the stream runner");
        }
    }

    /// Hold off evaluations while a statement changes a stream's
    /// definition or progress (DROP, STOP / START, RECALCULATE, CREATE).
    pub fn exclusive(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.run_lock.lock()
    }

    pub fn stop(&self) {
        self.wake.0.lock().1 = true;
        self.wake.1.notify_all();
    }
}

fn has_streams(env: &Env) -> bool {
    !env.catalog.streams().is_empty()
}

impl crate::storage::WriteListener for StreamRunner {
    /// Cheap: wake the runner (the changes are read at evaluation).
    fn on_write(&self, _notice: &crate::storage::WriteNotice) {
        let mut g = self.wake.0.lock();
        if !g.0 {
            g.0 = true;
            self.wake.1.notify_all();
        }
    }
}

/// Whether late rows and updates recalculate windows of this trigger
/// (TDengine 3.3.7: not for PERIOD, SLIDING and COUNT_WINDOW).
fn disorder_recalcs(t: &StreamTrigger) -> bool {
    !matches!(t, StreamTrigger::Period { .. } | StreamTrigger::Sliding { .. } | StreamTrigger::Count { .. })
}

/// Whether the output is a supertable (one subtable per group).
pub fn is_grouped(c: &Compiled) -> bool {
    !c.cs.partition.is_empty()
}

/// The trigger child table of a group (`%%tbname`).
fn tbname_of(c: &Compiled, g: &GroupRows) -> Option<String> {
    match &c.trigger {
        Some(t) if !matches!(t.kind, TableKind::Stable(_)) => Some(t.name.clone()),
        _ => c.cs.partition.iter().position(|p| crate::planner::ident(p) == TBNAME).and_then(|i| g.values[i].clone()),
    }
}

/// PERIOD: wall-clock ticks (midnight-anchored below a day). Each
/// evaluation runs the latest tick due (missed ticks are not replayed),
/// once per group.
#[allow(clippy::too_many_arguments)]
fn run_period(
    env: &Env,
    hub: &Hub,
    c: &Compiled,
    st: &mut StreamState,
    mode: Mode,
    (period, offset): (i64, i64),
    now: i64,
    staged: &mut Staged,
) -> Result<u64> {
    if let Mode::Recalc { .. } = mode {
        bail!(FeatureNotSupported, "RECALCULATE is not supported for PERIOD streams");
    }
    if period <= 0 {
        bail!(InvalidParameterValue, "invalid PERIOD");
    }
    const DAY: i64 = 86_400_000_000;
    let tick = if period < DAY {
        let midnight = now.div_euclid(DAY) * DAY;
        midnight + offset + (now - midnight - offset).div_euclid(period) * period
    } else {
        floor_to(now, period, offset)
    };
    let groups: Vec<Vec<Option<String>>> = if c.trigger.is_some() && is_grouped(c) {
        read_trigger(env, c, None)?.into_values().map(|g| g.values).collect()
    } else {
        vec![vec![]]
    };
    // `%%trows`: the trigger rows written since the last tick (the change
    // log since the checkpoint, which only a tick moves), per group.
    // A group is due when its last tick is before this one; with `%%trows`
    // a new group's last tick is the others' (the rows since the checkpoint
    // go to the groups of one tick: a group new after it waits for the next).
    let trows = c.trigger.is_some() && uses_trows(c);
    let latest = st.last_tick_us.values().max().copied().filter(|_| trows);
    let due: HashMap<String, bool> = groups
        .iter()
        .map(|v| {
            let key = group_key(v);
            let last = st.last_tick_us.get(&key).copied().or(latest);
            (key, last.is_none_or(|t| t < tick))
        })
        .collect();
    let since = match &c.trigger {
        Some(t) if trows => Some(period_rows(env, c, t, st, mode == Mode::Init || (mode != Mode::Skip && !due.values().any(|&d| d)))?),
        _ => None,
    };
    let mut written = 0;
    let mut fx = Effects::default();
    // One buffer for every group (their keys differ): one commit.
    let mut buf = OutBuf::default();
    for (gi, values) in groups.iter().enumerate() {
        let key = group_key(values);
        if mode == Mode::Init {
            // The tick at or before creation runs at the first evaluation
            // (so a stream has output without waiting a whole period).
            st.last_tick_us.entry(key).or_insert(tick - 1);
            continue;
        }
        if mode == Mode::Skip {
            // Ticks while stopped are untreated: the next tick computes.
            st.last_tick_us.insert(key, tick);
            continue;
        }
        if !due.get(&key).copied().unwrap_or(false) {
            continue;
        }
        st.last_tick_us.insert(key.clone(), tick);
        let go = if c.output.is_some() && is_grouped(c) { Some(group_out(env, c, values)?) } else { None };
        let tbname = c.cs.partition.iter().position(|p| crate::planner::ident(p) == TBNAME).and_then(|i| values[i].clone());
        let trows = match &since {
            Some((k, rows)) => {
                let places = rows.get(&key).map(Vec::as_slice).unwrap_or_default();
                Some(Arc::new(TriggerRows { columns: k.columns().to_vec(), batch: k.batch(places)? }))
            }
            None => None,
        };
        let b = Bindings {
            window: None,
            group: values.clone(),
            tbname,
            group_id: gi as i64,
            local_us: tick,
            period_us: period,
            trows,
            idle_ms: None,
        };
        let (cols, batches) = match compute_out(env, c, &b) {
            Ok(r) => r,
            Err(e) => {
                flush_output(env, &mut buf)?;
                return Err(e);
            }
        };
        written += write_output(env, c, &batches, &cols, go.as_ref(), &mut buf, &key)?;
        if let Some(go) = &go {
            st.subtables.insert(key.clone(), go.subtable.clone());
        }
        close_events(env, c, &key, gi as i64, None, &cols, &batches, tick, &mut fx)?;
        st.windows_done += 1;
    }
    st.rows_written += written;
    *staged = stage_buf(&mut buf)?;
    deliver(hub, c, st, fx.events, mode, now)?;
    Ok(written)
}

/// Whether the stream's query reads `%%trows`.
fn uses_trows(c: &Compiled) -> bool {
    let Some(q) = &c.cs.query else { return false };
    let mut found = false;
    let _ = ast::visit_relations(q.as_ref(), |n| {
        found |= matches!(n.0.as_slice(), [ast::ObjectNamePart::Identifier(i)] if i.value == "%%trows");
        ControlFlow::<()>::Continue(())
    });
    found
}

/// PERIOD's `%%trows`: the trigger rows added since the checkpoint (the
/// last tick), in a cache of their own, by group key. `hold`: no tick is
/// due (or the first evaluation): the checkpoint stays, unless there is
/// none yet (then it is set now, so rows before the stream are not a
/// tick's). A tick moves it to now. Without a readable change log (no
/// checkpoint) a tick's `%%trows` is empty.
#[allow(clippy::type_complexity)]
fn period_rows(
    env: &Env,
    c: &Compiled,
    t: &TriggerTable,
    st: &mut StreamState,
    hold: bool,
) -> Result<(TriggerCache, HashMap<String, Vec<(u32, u32)>>)> {
    let regions = super::batching::table_regions(env, &t.table)?;
    let upto: BTreeMap<u64, u64> = regions.iter().map(|r| (r.id, r.last_seq())).collect();
    let mut cache = TriggerCache::default();
    cache.begin(u64::from(t.table.id), &trows_columns(t), &BTreeMap::new());
    let mut rows: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
    let known = !st.seqs.is_empty() && regions.iter().all(|r| st.seqs.contains_key(&r.id));
    if hold && known {
        return Ok((cache, rows));
    }
    if known {
        let batches = change_log(st, &regions, &upto).unwrap_or_else(|e| {
            tracing::debug!(stream = %c.def.name, error = %e, "stream change log gone: %%trows of this tick is empty");
            vec![]
        });
        let mut changed: BTreeMap<String, GroupChange> = BTreeMap::new();
        for batch in batches {
            let chunk = cache.add_chunk(&batch)?;
            collect_changes(c, t, &batch, &mut changed, chunk.as_ref())?;
        }
        for (key, ch) in changed {
            rows.insert(key, ch.rows.iter().map(|r| r.2).collect());
        }
    }
    // The next tick's rows come after these.
    checkpoint(c, st, &regions, &upto);
    Ok((cache, rows))
}

/// The trigger regions' change logs since the checkpoint `st.seqs` (every
/// region in it), up to `upto` (counted in the stream's input rows).
fn change_log(st: &mut StreamState, regions: &[Arc<crate::storage::Region>], upto: &BTreeMap<u64, u64>) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    for r in regions {
        let after = st.seqs[&r.id];
        if upto[&r.id] <= after {
            continue;
        }
        let batch = r.changes(after, upto[&r.id])?;
        st.input_rows += batch.num_rows() as u64;
        out.push(batch);
    }
    Ok(out)
}

/// The checkpoint: the change log is read from `upto` on; versions are
/// held so it stays readable (when they cannot be, no checkpoint: the
/// next evaluation reads every group).
fn checkpoint(c: &Compiled, st: &mut StreamState, regions: &[Arc<crate::storage::Region>], upto: &BTreeMap<u64, u64>) {
    for r in regions {
        if let Err(e) = r.hold_versions(&holder(&c.def), upto[&r.id]) {
            tracing::debug!(stream = %c.def.name, error = %e, "stream cannot hold versions: the next evaluation reads every group");
            st.seqs.clear();
            return;
        }
        st.seqs.insert(r.id, upto[&r.id]);
    }
    st.seqs.retain(|id, _| upto.contains_key(id));
}

/// The output supertable's or table's definition for a new stream.
pub fn output_table_def(
    c: &Compiled,
    cols: &[PlanColumn],
    tag_types: &[(String, SqlType)],
    db: &str,
    name: &str,
) -> Result<(TableDef, Option<SuperTableDef>)> {
    let mut columns: Vec<ColumnDef> = Vec::new();
    for col in cols {
        if columns.iter().any(|x| x.name == col.name) {
            bail!(DuplicateColumn, "Duplicated column names: \"{}\"", col.name);
        }
        let ty = if col.ty == SqlType::Unknown { SqlType::Text } else { col.ty };
        columns.push(ColumnDef {
            name: col.name.clone(),
            ty,
            nullable: true,
            default: None,
            precision: None,
            typmod: None,
            user_type: None,
        });
    }
    columns[0].nullable = false;
    let mut primary_key = Vec::new();
    let stable = if is_grouped(c) {
        columns.push(ColumnDef {
            name: TBNAME.into(),
            ty: SqlType::Varchar,
            nullable: false,
            default: None,
            precision: None,
            typmod: None,
            user_type: None,
        });
        primary_key.push(columns.len() - 1);
        for (n, ty) in tag_types {
            if columns.iter().any(|x| x.name == *n) {
                bail!(DuplicateColumn, "Duplicated column names: \"{n}\"");
            }
            columns.push(ColumnDef {
                name: n.clone(),
                ty: *ty,
                nullable: true,
                default: None,
                precision: None,
                typmod: None,
                user_type: None,
            });
            primary_key.push(columns.len() - 1);
        }
        Some(SuperTableDef {
            database: db.to_string(),
            name: name.to_string(),
            tags: tag_types.iter().map(|t| t.0.clone()).collect(),
            columns: cols.iter().map(|c| c.name.clone()).collect(),
        })
    } else {
        None
    };
    let t = TableDef::time_first(db, name, columns, primary_key);
    Ok((t, stable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::Duration;

    /// An evaluation flushes the catalog once, at its end: a crash can keep
    /// an output subtable's view without its child entry; the next
    /// evaluation completes it (it refused the name as taken before).
    #[test]
    fn a_half_made_output_subtable_is_completed() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        cat.create_database("d").unwrap();
        let st = SuperTableDef { database: "d".into(), name: "out".into(), tags: vec!["g".into()], columns: vec!["ts".into(), "c".into()] };
        cat.with_one_flush(|| ensure_child(&cat, "d", &st, "out_1", &[Some("1".into())])).unwrap();
        assert!(cat.child_table("d", "out_1").is_some());
        cat.drop_child_table("d", "out_1").unwrap();
        assert!(ensure_child(&cat, "d", &st, "out_1", &[Some("1".into())]).unwrap());
        assert_eq!(cat.child_table("d", "out_1").map(|c| c.tags), Some(vec![Some("1".to_string())]));
        // A view of another shape is a name taken.
        let other = SuperTableDef { columns: vec!["ts".into()], ..st.clone() };
        cat.drop_child_table("d", "out_1").unwrap();
        assert!(ensure_child(&cat, "d", &other, "out_1", &[None]).is_err());
    }

    fn g(ts: &[i64]) -> GroupRows {
        GroupRows { ts: ts.to_vec(), digest: vec![0; ts.len()], ..Default::default() }
    }

    fn dur(us: i64) -> Duration {
        Duration { text: format!("{us}u"), micros: Some(us) }
    }

    fn spans(w: &[Win]) -> Vec<(i64, i64, u64)> {
        w.iter().map(|w| (w.start, w.shown_end, w.rows)).collect()
    }

    #[test]
    fn interval_windows_close_when_event_time_passes_their_end() {
        let t = StreamTrigger::Interval { interval: dur(10), offset: None, sliding: dur(10), sliding_offset: None };
        let w = cut_windows(&t, &g(&[1, 5, 12, 25]), 0, false, None).unwrap();
        assert_eq!(spans(&w), vec![(0, 10, 2), (10, 20, 1)]);
        // An empty window between rows fires unless IGNORE_NODATA_TRIGGER.
        let w = cut_windows(&t, &g(&[1, 25, 31]), 0, false, None).unwrap();
        assert_eq!(spans(&w), vec![(0, 10, 1), (10, 20, 0), (20, 30, 1)]);
        let w = cut_windows(&t, &g(&[1, 25, 31]), 0, true, None).unwrap();
        assert_eq!(spans(&w), vec![(0, 10, 1), (20, 30, 1)]);
        // Watermark 10: rows after 31 - 10 wait.
        let w = cut_windows(&t, &g(&[1, 25, 31]), 10, false, None).unwrap();
        assert_eq!(spans(&w), vec![(0, 10, 1), (10, 20, 0)]);
    }

    #[test]
    fn state_windows_follow_the_anchor_watermark_scenario() {
        // Rows 0-9 s state 0, 10-19 state 1, 20-23 state 2, 25-29 state 3, 30 state 4; watermark 10 s.
        let s = 1_000_000;
        let mut ts = vec![];
        let mut state = vec![];
        for (range, v) in [(0..10, "0"), (10..20, "1"), (20..24, "2"), (25..30, "3"), (30..31, "4")] {
            for t in range {
                ts.push(t * s);
                state.push(Some(v.to_string()));
            }
        }
        let mut gr = g(&ts);
        gr.state = state;
        let t = StreamTrigger::State { expr: ast::Expr::Identifier(ast::Ident::new("x")), extend: None, true_for: None };
        let w = cut_windows(&t, &gr, 10 * s, false, None).unwrap();
        assert_eq!(spans(&w), vec![(0, 9 * s, 10), (10 * s, 19 * s, 10)]);
    }

    #[test]
    fn session_event_and_count_windows() {
        let t = StreamTrigger::Session { column: ast::Ident::new("ts"), gap: dur(5) };
        assert_eq!(spans(&cut_windows(&t, &g(&[0, 3, 6, 20, 22, 40]), 0, false, None).unwrap()), vec![(0, 6, 3), (20, 22, 2)]);
        let mut e = g(&[0, 1, 2, 3, 4, 5]);
        e.start = vec![false, true, false, false, true, false];
        e.end = vec![false, false, true, true, true, false];
        let t = StreamTrigger::Event {
            start: ast::Expr::Identifier(ast::Ident::new("a")),
            end: ast::Expr::Identifier(ast::Ident::new("b")),
            true_for: None,
        };
        assert_eq!(spans(&cut_windows(&t, &e, 0, false, None).unwrap()), vec![(1, 2, 2), (4, 4, 1)]);
        let t = StreamTrigger::Count { count: 2, slide: None, columns: vec![] };
        assert_eq!(spans(&cut_windows(&t, &g(&[0, 1, 2, 3, 4]), 0, false, None).unwrap()), vec![(0, 1, 2), (2, 3, 2)]);
        let t = StreamTrigger::Count { count: 3, slide: Some(1), columns: vec![] };
        assert_eq!(spans(&cut_windows(&t, &g(&[0, 1, 2, 3]), 0, false, None).unwrap()), vec![(0, 2, 3), (1, 3, 3)]);
    }
}
