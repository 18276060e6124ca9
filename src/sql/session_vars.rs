//! SET / SHOW / RESET of session settings, with the values drivers expect.

use std::collections::HashMap;

use arrow::array::{RecordBatch, StringArray};
use sqlparser::ast::{self, Statement};

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
        ("idle_in_transaction_session_timeout", "0"),
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
        ("escape_string_warning", "on"),
        ("restrict_nonsystem_relation_kind", ""),
    ]
    .into_iter()
    .chain(PLANNER_SETTINGS.iter().copied())
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// PostgreSQL's planner and parallelism settings, at PostgreSQL 15's defaults. weir's
/// planner has no such knobs: they are accepted (SET, SHOW, RESET) and change nothing,
/// so scripts written for PostgreSQL (its regression tests among them) run.
const PLANNER_SETTINGS: &[(&str, &str)] = &[
    ("enable_async_append", "on"),
    ("enable_bitmapscan", "on"),
    ("enable_gathermerge", "on"),
    ("enable_hashagg", "on"),
    ("enable_hashjoin", "on"),
    ("enable_incremental_sort", "on"),
    ("enable_indexonlyscan", "on"),
    ("enable_indexscan", "on"),
    ("enable_material", "on"),
    ("enable_memoize", "on"),
    ("enable_mergejoin", "on"),
    ("enable_nestloop", "on"),
    ("enable_parallel_append", "on"),
    ("enable_parallel_hash", "on"),
    ("enable_partition_pruning", "on"),
    ("enable_partitionwise_aggregate", "off"),
    ("enable_partitionwise_join", "off"),
    ("enable_seqscan", "on"),
    ("enable_sort", "on"),
    ("enable_tidscan", "on"),
    ("geqo", "on"),
    ("geqo_threshold", "12"),
    ("jit", "on"),
    ("jit_above_cost", "100000"),
    ("jit_inline_above_cost", "500000"),
    ("jit_optimize_above_cost", "500000"),
    ("force_parallel_mode", "off"),
    ("parallel_leader_participation", "on"),
    ("parallel_setup_cost", "1000"),
    ("parallel_tuple_cost", "0.1"),
    ("max_parallel_workers", "8"),
    ("max_parallel_workers_per_gather", "2"),
    ("min_parallel_index_scan_size", "512kB"),
    ("min_parallel_table_scan_size", "8MB"),
    ("random_page_cost", "4"),
    ("seq_page_cost", "1"),
    ("cpu_tuple_cost", "0.01"),
    ("cpu_index_tuple_cost", "0.005"),
    ("cpu_operator_cost", "0.0025"),
    ("effective_cache_size", "4GB"),
    ("from_collapse_limit", "8"),
    ("join_collapse_limit", "8"),
    ("constraint_exclusion", "partition"),
    ("default_statistics_target", "100"),
    ("hash_mem_multiplier", "2"),
    ("maintenance_work_mem", "64MB"),
    ("plan_cache_mode", "auto"),
];

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
        Statement::Reset(r) => {
            match &r.reset {
                ast::Reset::ALL => {
                    s.settings = defaults();
                    s.settings.extend(s.startup_settings.clone());
                }
                ast::Reset::SessionAuthorization => {
                    s.settings.remove("session_authorization");
                    s.session_user = s.auth_user.clone();
                    s.user = s.auth_user.clone();
                }
                ast::Reset::ConfigurationParameter(name) if setting_name(name) == "role" => {
                    s.user = s.session_user.clone();
                }
                ast::Reset::ConfigurationParameter(name) => {
                    let name = setting_name(name);
                    match s.startup_settings.get(&name).or(defaults().get(&name)) {
                        Some(v) => {
                            s.settings.insert(name, v.clone());
                        }
                        None => {
                            s.settings.remove(&name);
                        }
                    }
                }
            }
            Ok(QueryResult::Command("RESET".into()))
        }
        Statement::Set(set) => {
            set_statement(s, set)?;
            Ok(QueryResult::Command("SET".into()))
        }
        _ => bail!(Internal, "not a session statement"),
    }
}

/// A setting's name from its (possibly dotted) object name.
fn setting_name(name: &ast::ObjectName) -> String {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) if i.quote_style.is_some() => i.value.clone(),
            Some(i) => i.value.to_lowercase(),
            None => p.to_string().to_lowercase(),
        })
        .collect();
    canonical(&parts.join("."))
}

/// The text of one SET value as PostgreSQL keeps it: strings and numbers
/// as written, identifiers folded (a quoted one keeps its quotes in a list
/// setting such as search_path), `DEFAULT` as None.
fn value_text(e: &ast::Expr, list: bool) -> Result<Option<String>> {
    Ok(Some(match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(t) | ast::Value::DoubleQuotedString(t) | ast::Value::EscapedStringLiteral(t) => t.clone(),
            ast::Value::Number(n, _) => n.to_string(),
            ast::Value::Boolean(b) => b.to_string(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default") => return Ok(None),
        ast::Expr::Identifier(i) if i.quote_style.is_some() && list => format!("\"{}\"", i.value),
        ast::Expr::Identifier(i) if i.quote_style.is_some() => i.value.clone(),
        ast::Expr::Identifier(i) => i.value.to_lowercase(),
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match value_text(expr, list)? {
            Some(t) => format!("-{t}"),
            None => bail!(Syntax, "syntax error at or near \"DEFAULT\""),
        },
        other => bail!(Syntax, "syntax error at or near \"{other}\""),
    }))
}

/// `SET` in each of its forms.
fn set_statement(s: &mut Session, set: &ast::Set) -> Result<()> {
    match set {
        ast::Set::SingleAssignment { variable, values, .. } => {
            let name = setting_name(variable);
            let list = name == "search_path";
            let mut texts = Vec::new();
            for v in values {
                match value_text(v, list)? {
                    Some(t) => texts.push(t),
                    None if values.len() == 1 => return assign(s, name.clone(), None),
                    None => bail!(Syntax, "syntax error at or near \"DEFAULT\""),
                }
            }
            assign(s, name, Some(texts.join(", ")))
        }
        ast::Set::MultipleAssignments { assignments } => {
            for a in assignments {
                let name = a.name.to_string().to_lowercase();
                let v = value_text(&a.value, false)?;
                assign(s, canonical(&name), v)?;
            }
            Ok(())
        }
        ast::Set::SetTimeZone { value, .. } => assign(s, "timezone".into(), value_text(value, false)?),
        ast::Set::SetTransaction { modes, .. } => {
            for m in modes {
                match m {
                    ast::TransactionMode::IsolationLevel(l) => {
                        s.settings.insert("transaction_isolation".into(), l.to_string().to_lowercase());
                    }
                    ast::TransactionMode::AccessMode(a) => {
                        let ro = matches!(a, ast::TransactionAccessMode::ReadOnly);
                        s.settings.insert("transaction_read_only".into(), if ro { "on" } else { "off" }.into());
                    }
                }
            }
            Ok(())
        }
        ast::Set::SetNames { charset_name, .. } => assign(s, "client_encoding".into(), Some(charset_name.value.clone())),
        ast::Set::SetNamesDefault {} => assign(s, "client_encoding".into(), None),
        // The session user becomes another role: only for a superuser who logged in.
        ast::Set::SetSessionAuthorization(p) => {
            let role = match &p.kind {
                ast::SetSessionAuthorizationParamKind::Default => s.auth_user.clone(),
                ast::SetSessionAuthorizationParamKind::User(u) => crate::planner::ident(u),
            };
            if role != s.auth_user && !s.engine.catalog.is_superuser(&s.auth_user) {
                bail!(InsufficientPrivilege, "permission denied to set session authorization");
            }
            if s.engine.catalog.role(&role).is_none() && !s.engine.catalog.is_superuser(&role) {
                bail!(UndefinedObject, "role \"{role}\" does not exist");
            }
            s.settings.insert("session_authorization".into(), role.clone());
            s.session_user = role.clone();
            s.user = role;
            Ok(())
        }
        // The current user becomes a role the session user is a member of (NONE: itself).
        ast::Set::SetRole { role_name, .. } => {
            let role = match role_name {
                None => s.session_user.clone(),
                Some(r) => crate::planner::ident(r),
            };
            if s.engine.catalog.role(&role).is_none() && !s.engine.catalog.is_superuser(&role) {
                bail!(UndefinedObject, "role \"{role}\" does not exist");
            }
            let cat = &s.engine.catalog;
            if role != s.session_user && !cat.is_superuser(&s.session_user) && !cat.role_closure(&s.session_user, false).contains(&role) {
                bail!(InsufficientPrivilege, "permission denied to set role \"{role}\"");
            }
            s.user = role;
            Ok(())
        }
        other => bail!(FeatureNotSupported, "{other} is not supported"),
    }
}

/// Apply the `set_config` calls made since the last statement: a session
/// value stays; a local one (`is_local`) lasts until the transaction block
/// ends, and outside a block only for the statement that set it.
pub fn apply_set_configs(s: &mut Session) {
    let calls = std::mem::take(&mut *s.set_configs.lock().unwrap_or_else(|e| e.into_inner()));
    for (name, value, local) in calls {
        if local {
            if s.block.is_none() {
                continue;
            }
            if !s.local_settings.iter().any(|(n, _)| *n == name) {
                s.local_settings.push((name.clone(), s.settings.get(&name).cloned()));
            }
        } else {
            // A session value outlives the block, as after SET.
            s.local_settings.retain(|(n, _)| *n != name);
        }
        // set_config checked the name when it ran; a value assign refuses
        // (a bad timeout, say) leaves the setting as it was.
        let _ = assign(s, name, Some(value));
    }
}

/// The block ended: put back what `set_config(…, true)` changed in it.
pub fn restore_local_settings(s: &mut Session) {
    for (name, old) in std::mem::take(&mut s.local_settings).into_iter().rev() {
        match old {
            Some(v) => s.settings.insert(name, v),
            None => s.settings.remove(&name),
        };
    }
}

/// Store one setting after PostgreSQL's checks; None is `DEFAULT`.
fn assign(s: &mut Session, name: String, value: Option<String>) -> Result<()> {
    let value = match value {
        Some(v) => v,
        None => defaults().get(&name).cloned().unwrap_or_default(),
    };
    if name == "timezone" {
        let v = timezone_value(&value)?;
        s.settings.insert(name, v);
        return Ok(());
    }
    if name == "datestyle" {
        let current = s.settings.get("datestyle").cloned().unwrap_or_else(|| "ISO, MDY".into());
        let v = datestyle_value(&current, &value)?;
        s.settings.insert(name, v);
        return Ok(());
    }
    if name == "intervalstyle" {
        if crate::types::zone::interval_style(&value).is_none() {
            return Err(crate::err!(InvalidParameterValue, "invalid value for parameter \"intervalstyle\": \"{value}\"")
                .with_hint("Available values: postgres, postgres_verbose, sql_standard, iso_8601."));
        }
        s.settings.insert(name, value.trim().to_ascii_lowercase());
        return Ok(());
    }
    if name == QUERY_MEMORY_SETTING && value.parse::<u64>().map_or(true, |n| n == 0) {
        bail!(InvalidParameterValue, "invalid value for parameter \"{name}\": \"{value}\"")
    }
    if (name == "statement_timeout" || name == "idle_in_transaction_session_timeout") && parse_ms(&value).is_none() {
        bail!(InvalidParameterValue, "invalid value for parameter \"{name}\": \"{value}\"");
    }
    // Custom settings need a dot (PostgreSQL's rule); flow.* are weir's.
    if !name.contains('.') && !defaults().contains_key(&name) && !matches!(name.as_str(), "session_authorization" | "role") {
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
    Ok(())
}

/// A setting sent in the start-up packet, checked as SET checks it.
pub fn set_startup(s: &mut Session, name: &str, value: &str) -> Result<()> {
    let name = canonical(name);
    assign(s, name.clone(), Some(value.to_string()))?;
    if let Some(v) = s.settings.get(&name).cloned() {
        s.startup_settings.insert(name, v);
    }
    Ok(())
}

/// The `timezone` setting as PostgreSQL shows it: an IANA name in its
/// canonical spelling, a number of hours as a POSIX zone (`<-08>+08`).
fn timezone_value(value: &str) -> Result<String> {
    use crate::types::zone::{format_offset, Zone};
    let v = value.trim();
    if v.eq_ignore_ascii_case("local") {
        return Ok("UTC".into());
    }
    match Zone::parse(v) {
        Some(Zone::Named(tz)) => Ok(tz.name().to_string()),
        Some(Zone::Fixed(east)) if v.parse::<f64>().is_ok() => Ok(format!("<{}>{}", format_offset(east), format_offset(-east))),
        Some(Zone::Fixed(_) | Zone::Abbrev(..) | Zone::Posix(_)) => Ok(v.to_string()),
        None => bail!(InvalidParameterValue, "invalid value for parameter \"TimeZone\": \"{value}\""),
    }
}

/// DateStyle after a SET: its output style and field order, each kept
/// from `current` unless the value names one (German implies DMY).
fn datestyle_value(current: &str, value: &str) -> Result<String> {
    let cur = current.to_ascii_uppercase();
    let mut style = ["ISO", "POSTGRES", "SQL", "GERMAN"].into_iter().find(|k| cur.contains(k)).unwrap_or("ISO");
    let mut order = ["MDY", "DMY", "YMD"].into_iter().find(|k| cur.contains(k)).unwrap_or("MDY");
    let mut style_set = false;
    let mut order_set = false;
    for tok in value.split([',', ' ']).map(str::trim).filter(|t| !t.is_empty()) {
        match tok.to_ascii_uppercase().as_str() {
            t @ ("ISO" | "POSTGRES" | "SQL" | "GERMAN") => {
                style = match t {
                    "ISO" => "ISO",
                    "POSTGRES" => "POSTGRES",
                    "SQL" => "SQL",
                    _ => "GERMAN",
                };
                style_set = true;
            }
            "YMD" => (order, order_set) = ("YMD", true),
            "DMY" | "EURO" | "EUROPEAN" => (order, order_set) = ("DMY", true),
            "MDY" | "US" | "NONEURO" | "NONEUROPEAN" => (order, order_set) = ("MDY", true),
            "DEFAULT" => (style, order, style_set, order_set) = ("ISO", "MDY", true, true),
            _ => {
                return Err(crate::err!(InvalidParameterValue, "invalid value for parameter \"DateStyle\": \"{value}\"")
                    .with_detail(format!("Unrecognized key word: \"{}\".", tok.to_ascii_lowercase())))
            }
        }
    }
    if style_set && style == "GERMAN" && !order_set {
        order = "DMY";
    }
    let style = match style {
        "POSTGRES" => "Postgres",
        "GERMAN" => "German",
        s => s,
    };
    Ok(format!("{style}, {order}"))
}
