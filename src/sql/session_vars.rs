//! SET / SHOW / RESET of session settings, with the values drivers expect.

use std::collections::HashMap;

use arrow::array::{RecordBatch, StringArray};
use sqlparser::ast::Statement;

use super::{QueryResult, Session};
use crate::bail;
use crate::error::Result;
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::types::SqlType;

pub fn defaults() -> HashMap<String, String> {
    [
        ("server_version", "15.0"),
        ("server_version_num", "150000"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("timezone", "UTC"),
        ("intervalstyle", "postgres"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("transaction_isolation", "read committed"),
        ("default_transaction_isolation", "read committed"),
        ("transaction_read_only", "off"),
        ("search_path", "\"$user\", public"),
        ("application_name", ""),
        ("extra_float_digits", "1"),
        ("statement_timeout", "0"),
        ("lock_timeout", "0"),
        ("is_superuser", "on"),
        ("max_identifier_length", "63"),
        ("max_connections", "100"),
        ("lc_messages", "C"),
        ("lc_collate", "C"),
        ("lc_ctype", "C"),
        ("lc_monetary", "C"),
        ("lc_numeric", "C"),
        ("lc_time", "C"),
        ("bytea_output", "hex"),
        ("client_min_messages", "notice"),
        ("default_transaction_read_only", "off"),
        ("in_hot_standby", "off"),
        ("row_security", "on"),
        ("synchronous_commit", "on"),
        ("work_mem", "4MB"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The session's own memory budget per query, in bytes; it can only lower
/// the server's `query_memory_bytes_max`.
pub const QUERY_MEMORY_SETTING: &str = "weir.query_memory_bytes_max";

/// Milliseconds from a setting such as `5000`, `5s`, `1min`.
pub fn parse_ms(s: &str) -> Option<u64> {
    let s = s.trim().trim_matches('\'');
    if let Ok(n) = s.parse::<u64>() {
        return Some(n);
    }
    crate::types::parse_interval(s).map(|us| (us / 1000).max(0) as u64)
}

fn canonical(name: &str) -> String {
    let n = name.trim().trim_matches('"').to_lowercase();
    match n.as_str() {
        "time zone" | "time_zone" => "timezone".into(),
        "transaction isolation level" => "transaction_isolation".into(),
        "session authorization" => "session_authorization".into(),
        _ => n,
    }
}

fn show(s: &Session, name: &str) -> Result<QueryResult> {
    let key = canonical(name);
    if key == "all" {
        let mut keys: Vec<_> = s.settings.keys().cloned().collect();
        keys.sort();
        let vals: Vec<String> = keys.iter().map(|k| s.settings[k].clone()).collect();
        let cols = vec![PlanColumn::new("name", SqlType::Text), PlanColumn::new("setting", SqlType::Text)];
        let b = RecordBatch::try_new(
            arrow_schema(&cols),
            vec![std::sync::Arc::new(StringArray::from(keys)), std::sync::Arc::new(StringArray::from(vals))],
        )?;
        return Ok(QueryResult::Rows { columns: cols, batches: vec![b] });
    }
    let v = match s.settings.get(&key) {
        Some(v) => v.clone(),
        None if key.starts_with("flow.") => String::new(),
        None => bail!(UndefinedObject, "unrecognized configuration parameter \"{name}\""),
    };
    let display = match key.as_str() {
        "datestyle" => "DateStyle",
        "timezone" => "TimeZone",
        "intervalstyle" => "IntervalStyle",
        _ => key.as_str(),
    };
    let cols = vec![PlanColumn::new(display, SqlType::Text)];
    let b = RecordBatch::try_new(arrow_schema(&cols), vec![std::sync::Arc::new(StringArray::from(vec![v]))])?;
    Ok(QueryResult::Rows { columns: cols, batches: vec![b] })
}

pub fn execute(s: &mut Session, stmt: &Statement) -> Result<QueryResult> {
    match stmt {
        Statement::ShowVariable { variable } => {
            // `SHOW a.b` arrives as two identifiers; multi-word names
            // (`transaction isolation level`, `time zone`) keep spaces.
            let first = variable.first().map(|i| i.value.to_lowercase()).unwrap_or_default();
            let sep = if variable.len() == 2 && !matches!(first.as_str(), "time" | "transaction" | "session") { "." } else { " " };
            let name = variable.iter().map(|i| i.value.clone()).collect::<Vec<_>>().join(sep);
            show(s, &name)
        }
        Statement::ShowVariables { .. } => show(s, "all"),
        _ if stmt.to_string().to_ascii_uppercase().starts_with("RESET") => set_from_text(s, &stmt.to_string()),
        Statement::Set(_) => {
            let text = stmt.to_string();
            set_from_text(s, &text)
        }
        _ => bail!(Internal, "not a session statement"),
    }
}

/// SET in its textual forms: `SET [SESSION|LOCAL] name {TO|=} value`,
/// `SET TIME ZONE v`, `SET TRANSACTION ...`, `RESET name`.
fn set_from_text(s: &mut Session, text: &str) -> Result<QueryResult> {
    let t = text.trim();
    let lower = t.to_lowercase();
    if lower.starts_with("reset") {
        let name = canonical(&t[5..]);
        if name == "all" {
            s.settings = defaults();
        } else if let Some(v) = defaults().get(&name) {
            s.settings.insert(name, v.clone());
        } else {
            s.settings.remove(&name);
        }
        return Ok(QueryResult::Command("RESET".into()));
    }
    let mut rest = t[3..].trim_start();
    for kw in ["SESSION ", "LOCAL "] {
        if rest.len() >= kw.len()
            && rest[..kw.len()].eq_ignore_ascii_case(kw)
            && !rest.to_lowercase().starts_with("session characteristics")
            && !rest.to_lowercase().starts_with("session authorization")
        {
            rest = rest[kw.len()..].trim_start();
        }
    }
    let rl = rest.to_lowercase();
    if rl.starts_with("transaction") || rl.starts_with("session characteristics") {
        if let Some(p) = rl.find("isolation level") {
            let lvl = rest[p + "isolation level".len()..].trim().to_lowercase();
            let lvl = lvl.split(',').next().unwrap_or("").trim().to_string();
            s.settings.insert("transaction_isolation".into(), lvl);
        }
        return Ok(QueryResult::Command("SET".into()));
    }
    let (name, value) = if rl.starts_with("time zone") {
        ("timezone".to_string(), rest[9..].trim().to_string())
    } else if let Some(p) = rest.find(['=']).filter(|&p| !rest[..p].contains(' ')) {
        (canonical(&rest[..p]), rest[p + 1..].trim().to_string())
    } else if let Some(p) = rl.find(" to ") {
        (canonical(&rest[..p]), rest[p + 4..].trim().to_string())
    } else if let Some(p) = rest.find('=') {
        (canonical(&rest[..p]), rest[p + 1..].trim().to_string())
    } else {
        bail!(Syntax, "syntax error at or near \"{rest}\"");
    };
    let value = value.trim_end_matches(';').trim();
    let value = if value.eq_ignore_ascii_case("default") {
        defaults().get(&name).cloned().unwrap_or_default()
    } else {
        // 'a', 'b' lists keep their commas; quotes come off.
        value.split(',').map(|p| p.trim().trim_matches('\'').to_string()).collect::<Vec<_>>().join(", ")
    };
    if name == "timezone" {
        let v = value.to_lowercase();
        if !(v == "utc"
            || v == "gmt"
            || v == "etc/utc"
            || v == "z"
            || v == "0"
            || v == "+00"
            || v == "+00:00"
            || v == "local"
            || v == "zulu"
            || v == "universal")
        {
            bail!(FeatureNotSupported, "time zone \"{value}\" is not supported; weir prints timestamps in UTC");
        }
        s.settings.insert(name, "UTC".into());
        return Ok(QueryResult::Command("SET".into()));
    }
    if name == "datestyle" {
        let v = value.to_uppercase();
        let v = if v.contains(',') {
            v
        } else if v == "ISO" || v == "POSTGRES" || v == "SQL" || v == "GERMAN" {
            format!("{v}, MDY")
        } else {
            format!("ISO, {v}")
        };
        s.settings.insert(name, v);
        return Ok(QueryResult::Command("SET".into()));
    }
    if name == QUERY_MEMORY_SETTING && value.parse::<u64>().map_or(true, |n| n == 0) {
        bail!(InvalidParameterValue, "invalid value for parameter \"{name}\": \"{value}\"")
    }
    if name == "statement_timeout" && parse_ms(&value).is_none() {
        bail!(InvalidParameterValue, "invalid value for parameter \"statement_timeout\": \"{value}\"");
    }
    // Custom settings need a dot (PostgreSQL's rule); flow.* are weir's.
    if !name.contains('.')
        && !defaults().contains_key(&name)
        && !matches!(
            name.as_str(),
            "session_authorization"
                | "role"
                | "geqo"
                | "jit"
                | "enable_seqscan"
                | "enable_indexscan"
                | "enable_hashjoin"
                | "enable_mergejoin"
                | "enable_nestloop"
        )
    {
        bail!(UndefinedObject, "unrecognized configuration parameter \"{name}\"");
    }
    if name.starts_with("flow.") {
        // Validate the seed 001 keys as they are set (the mode may come
        // before the map, so that one pairing is checked at query time).
        let mut probe = s.settings.clone();
        probe.insert(name.clone(), value.clone());
        if let Err(e) = crate::planner::incremental::IncrementalKeys::from_settings(&probe) {
            if !e.message.contains("needs a non-empty") {
                return Err(e);
            }
        }
    }
    s.settings.insert(name, value);
    Ok(QueryResult::Command("SET".into()))
}
