//! TDengine's system tables in `information_schema`: `ins_snodes`,
//! `ins_dnodes`, `ins_streams`, `ins_stream_tasks` and
//! `ins_stream_recalculates`, built from the catalog at plan time (see
//! `catalog::tdengine`). One process is one dnode (id 1).

use super::logical::LogicalPlan;
use super::Planner;
use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::types::{SqlType, Value};

fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn ts(ms: i64) -> Value {
    Value::Timestamp(ms * 1000)
}

/// The process's one dnode.
pub const DNODE_ID: i64 = 1;

/// Whether `information_schema.<name>` is one of TDengine's tables.
pub fn is_system_table(name: &str) -> bool {
    matches!(name, "ins_snodes" | "ins_dnodes" | "ins_streams" | "ins_stream_tasks" | "ins_stream_recalculates")
}

fn status(p: &Planner, d: &crate::catalog::StreamDef) -> String {
    if d.status == "Stopped" {
        return d.status.clone();
    }
    match p.catalog.stream_state_header(&d.database, &d.name).last_error {
        Some(_) => "Failed".into(),
        None => d.status.clone(),
    }
}

/// A stream's progress as TDengine 3.4.2.7 shows it (None: NULL).
struct Metrics {
    /// Processing-time lag: 0 when every write to the trigger table is
    /// processed, else how long ago the last catch-up that succeeded began
    /// (an upper bound on the age of the oldest write not processed). None
    /// for PERIOD and before the first catch-up.
    lag_ms: Option<i64>,
    /// Trigger rows taken in and output rows written per second, and the
    /// mean time of the evaluations that wrote rows, over the last minute.
    input: Option<f64>,
    output: Option<f64>,
    latency: Option<f64>,
}

fn metrics(p: &Planner, st: &crate::catalog::StreamState) -> Metrics {
    let now_ms = crate::exec::functions::now_micros().div_euclid(1000);
    let lag_ms = st.caught_up_ms.filter(|_| !st.seqs.is_empty()).map(|began| {
        let pending = st.seqs.iter().any(|(id, seq)| p.storage.region(*id).is_some_and(|r| r.last_seq() > *seq));
        if pending {
            (now_ms - began).max(0)
        } else {
            0
        }
    });
    let (input, output, latency) = match st.rates_1m(now_ms) {
        Some((i, o, l)) => (Some(i), Some(o), l),
        None => (None, None, None),
    };
    Metrics { lag_ms, input, output, latency }
}

pub fn system_table(p: &Planner, name: &str) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
    use SqlType::*;
    let endpoint = "localhost:6030";
    match name {
        "ins_snodes" => {
            let snodes = p.catalog.snodes();
            let mut rows = Vec::new();
            for (i, s) in snodes.iter().enumerate() {
                // With two or more snodes each one's replica is the next one.
                let (replica, of) = if snodes.len() >= 2 {
                    let next = &snodes[(i + 1) % snodes.len()];
                    let prev = &snodes[(i + snodes.len() - 1) % snodes.len()];
                    (Value::Int(next.id), t(&prev.id.to_string()))
                } else {
                    (Value::Int(0), t("None"))
                };
                rows.push(vec![Value::Int(s.id), t(endpoint), ts(s.created_ms), replica, of]);
            }
            super::system::table(
                &[("id", Int4), ("endpoint", Varchar), ("create_time", Timestamp), ("replicaid", Int4), ("asreplicaof", Varchar)],
                rows,
            )
        }
        "ins_dnodes" => {
            let vnodes = p.catalog.databases().len() as i64;
            let rows = vec![vec![
                Value::Int(DNODE_ID),
                t(endpoint),
                Value::Int(vnodes),
                Value::Int(std::thread::available_parallelism().map(|n| n.get() as i64 * 2).unwrap_or(2)),
                t("ready"),
                ts(0),
                ts(0),
                t(""),
            ]];
            super::system::table(
                &[
                    ("id", Int4),
                    ("endpoint", Varchar),
                    ("vnodes", Int4),
                    ("support_vnodes", Int4),
                    ("status", Varchar),
                    ("create_time", Timestamp),
                    ("reboot_time", Timestamp),
                    ("note", Varchar),
                ],
                rows,
            )
        }
        "ins_streams" => {
            let mut v = p.catalog.streams();
            v.sort_by(|a, b| (&a.database, &a.name).cmp(&(&b.database, &b.name)));
            let snodes = p.catalog.snodes();
            let rows = v
                .iter()
                .map(|d| {
                    let st = p.catalog.stream_state(&d.database, &d.name);
                    let replica = snodes.iter().map(|s| s.id).find(|&id| id != d.snode).unwrap_or(0);
                    let m = metrics(p, &st);
                    vec![
                        t(&d.name),
                        t(&d.database),
                        ts(d.created_ms),
                        t(&d.id.to_string()),
                        t(&d.sql),
                        t(&status(p, d)),
                        Value::Int(d.snode),
                        Value::Int(replica),
                        st.last_error.clone().map(Value::Text).unwrap_or(t("")),
                        m.lag_ms.map(Value::Int).unwrap_or(Value::Null),
                        m.input.map(Value::Float).unwrap_or(Value::Null),
                        m.output.map(Value::Float).unwrap_or(Value::Null),
                        m.latency.map(Value::Float).unwrap_or(Value::Null),
                        st.last_run_ms.map(|_| Value::Int(100)).unwrap_or(Value::Null),
                        Value::Int(st.windows_done as i64),
                        Value::Int(st.rows_written as i64),
                        Value::Int(st.trigger_rows_read as i64),
                        Value::Int(st.windows.values().map(|m| m.len() as i64).sum()),
                        Value::Int(st.failures as i64),
                        st.retry_at_ms.map(ts).unwrap_or(Value::Null),
                        Value::Int(st.notify_sent as i64),
                        Value::Int(st.notify_dropped as i64),
                    ]
                })
                .collect();
            super::system::table(
                &[
                    ("stream_name", Varchar),
                    ("db_name", Varchar),
                    ("create_time", Timestamp),
                    ("stream_id", Varchar),
                    ("sql", Varchar),
                    ("status", Varchar),
                    ("snodeleader", Int4),
                    ("snodereplica", Int4),
                    ("message", Varchar),
                    // TDengine 3.4.2.7's progress columns (`metrics`).
                    ("realtime_lag_ms", Int8),
                    ("input_rows_per_sec_1m", Float8),
                    ("output_rows_per_sec_1m", Float8),
                    ("runner_result_latency_avg_1m_ms", Float8),
                    ("history_progress_pct", Int4),
                    ("windows_done", Int8),
                    ("rows_written", Int8),
                    ("trigger_rows_read", Int8),
                    // Closed windows recorded (bounded per group), failed
                    // evaluations in a row and when the next try is due.
                    ("window_records", Int8),
                    ("failures", Int4),
                    ("retry_at", Timestamp),
                    // NOTIFY events delivered and dropped.
                    ("notify_sent", Int8),
                    ("notify_dropped", Int8),
                ],
                rows,
            )
        }
        "ins_stream_tasks" => {
            // One Trigger and one Runner task per stream, on its snode.
            let mut rows = Vec::new();
            for d in p.catalog.streams() {
                let st = status(p, &d);
                let m = metrics(p, &p.catalog.stream_state_header(&d.database, &d.name));
                let f = |v: Option<f64>| v.map(Value::Float).unwrap_or(Value::Null);
                for (i, kind) in ["Trigger", "Runner"].iter().enumerate() {
                    // The trigger task takes the input; the runner computes
                    // and writes the output.
                    let (input, output, latency) =
                        if i == 0 { (f(m.input), Value::Null, Value::Null) } else { (Value::Null, f(m.output), f(m.latency)) };
                    rows.push(vec![
                        t(&d.name),
                        t(&d.id.to_string()),
                        t(&format!("{}", d.id * 2 + i as u64)),
                        t(kind),
                        t("snode"),
                        Value::Int(d.snode),
                        t(&st),
                        ts(d.created_ms),
                        input,
                        output,
                        latency,
                    ]);
                }
            }
            super::system::table(
                &[
                    ("stream_name", Varchar),
                    ("stream_id", Varchar),
                    ("task_id", Varchar),
                    ("type", Varchar),
                    ("node_type", Varchar),
                    ("node_id", Int4),
                    ("status", Varchar),
                    ("start_time", Timestamp),
                    ("input_rows_per_sec_1m", Float8),
                    ("output_rows_per_sec_1m", Float8),
                    ("runner_result_latency_avg_1m_ms", Float8),
                ],
                rows,
            )
        }
        _ => {
            let mut rows = Vec::new();
            for d in p.catalog.streams() {
                for r in p.catalog.stream_state_header(&d.database, &d.name).recalcs {
                    rows.push(vec![
                        t(&d.name),
                        t(&d.id.to_string()),
                        t(&r.id.to_string()),
                        Value::Timestamp(r.start_us),
                        r.end_us.map(Value::Timestamp).unwrap_or(Value::Null),
                        t(if r.status == "Finished" { "100%" } else { "0%" }),
                        t(&r.status),
                        ts(r.request_ms),
                        t(&r.message),
                    ]);
                }
            }
            super::system::table(
                &[
                    ("stream_name", Varchar),
                    ("stream_id", Varchar),
                    ("recalc_id", Varchar),
                    ("start", Timestamp),
                    ("end", Timestamp),
                    ("progress", Varchar),
                    ("status", Varchar),
                    ("request_time", Timestamp),
                    ("message", Varchar),
                ],
                rows,
            )
        }
    }
}
