//! System tables: `information_schema.*` and the parts of `pg_catalog`
//! that psql, drivers and Grafana read. Built at plan time from the catalog.

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};

use super::logical::LogicalPlan;
use super::Planner;
use crate::bail;
use crate::catalog::acl::{acl_text, AclObject};
use crate::error::Result;
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::types::{values_to_array, SqlType, Value};

pub(super) fn table(cols: &[(&str, SqlType)], rows: Vec<Vec<Value>>) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
    let columns: Vec<PlanColumn> = cols.iter().map(|(n, t)| PlanColumn::new(*n, *t)).collect();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, (_, t)) in cols.iter().enumerate() {
        let vals: Vec<Value> = rows.iter().map(|r| r[i].clone()).collect();
        arrays.push(values_to_array(&vals, *t)?);
    }
    let batch =
        RecordBatch::try_new_with_options(arrow_schema(&columns), arrays, &RecordBatchOptions::new().with_row_count(Some(rows.len())))?;
    Ok((LogicalPlan::Memory { name: String::new(), batches: vec![batch], columns: columns.clone() }, columns))
}

fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// The OID of a role by name (the bootstrap superuser's, 10, if it is gone).
fn role_oid(p: &Planner, name: &str) -> i64 {
    p.catalog.role(name).map(|r| r.oid as i64).unwrap_or(10)
}

/// May the planning user see relation `db.name` in information_schema:
/// does it own it or hold some privilege on it?
fn visible(p: &Planner, db: &str, name: &str) -> bool {
    let obj = AclObject::Relation(db.to_string(), name.to_string());
    p.catalog.privileges(&p.ctx.user, &obj).0 != 0 || p.catalog.is_owner(&p.ctx.user, &obj)
}

/// information_schema.table_privileges / role_table_grants: one row per
/// privilege of each ACL item whose grantor or grantee is an enabled role
/// of the user (or the grantee is PUBLIC), as PostgreSQL's view filters.
fn table_privilege_rows(p: &Planner, role_view: bool) -> Vec<Vec<Value>> {
    let db = p.database.as_str();
    let enabled = p.catalog.role_closure(&p.ctx.user, true);
    let su = p.catalog.is_superuser(&p.ctx.user);
    let mut rels: Vec<(String, String, String)> = Vec::new();
    for tdef in p.catalog.tables(db) {
        rels.push((db.to_string(), "public".into(), tdef.name));
    }
    for v in p.catalog.views(db) {
        rels.push((db.to_string(), "public".into(), v.name));
    }
    for other in p.catalog.databases().into_iter().filter(|d| d != db && !is_reserved_schema(d)) {
        for tdef in p.catalog.tables(&other) {
            rels.push((other.clone(), other.clone(), tdef.name));
        }
        for v in p.catalog.views(&other) {
            rels.push((other.clone(), other.clone(), v.name));
        }
    }
    let mut rows = Vec::new();
    for (rdb, schema, name) in rels {
        let obj = AclObject::Relation(rdb, name.clone());
        let (_, items, _) = p.catalog.object_acl(&obj);
        for i in items {
            let grantee = if i.grantee.is_empty() { "PUBLIC".to_string() } else { i.grantee.clone() };
            let mine = su || enabled.contains(&i.grantor) || enabled.contains(&i.grantee);
            let shown = if role_view { mine } else { mine || i.grantee.is_empty() };
            if !shown {
                continue;
            }
            for bit in [
                crate::catalog::acl::INSERT,
                crate::catalog::acl::SELECT,
                crate::catalog::acl::UPDATE,
                crate::catalog::acl::DELETE,
                crate::catalog::acl::TRUNCATE,
                crate::catalog::acl::REFERENCES,
                crate::catalog::acl::TRIGGER,
            ] {
                if i.privs & bit == 0 {
                    continue;
                }
                let yes_no = |b: bool| t(if b { "YES" } else { "NO" });
                // Ownership confers the grant option whether or not stored.
                let grantable = i.grant_options & bit != 0 || (!i.grantee.is_empty() && p.catalog.is_owner(&i.grantee, &obj));
                let hierarchy = bit == crate::catalog::acl::SELECT;
                rows.push(vec![
                    t(&i.grantor),
                    t(&grantee),
                    t(db),
                    t(&schema),
                    t(&name),
                    t(crate::catalog::acl::privilege_name(bit)),
                    yes_no(grantable),
                    yes_no(hierarchy),
                ]);
            }
        }
    }
    rows
}

/// OID of a table: its id offset past PostgreSQL's built-in range.
pub fn table_oid(id: u32) -> i64 {
    16384 + id as i64
}

/// OID of a table's primary-key index (time index + tags), as pg_class and
/// pg_index list it.
pub fn index_oid(id: u32) -> i64 {
    40000 + id as i64
}

/// OID of a table's i-th CHECK constraint.
pub fn check_oid(id: u32, i: usize) -> i64 {
    3_000_000 + id as i64 * 1000 + i as i64
}

/// Whether a CHECK expression (SQL text) reads a column.
fn check_reads(expr: &str, column: &str) -> bool {
    let Ok(e) = crate::parser::parse_expr(expr) else { return false };
    let mut hit = false;
    let _ = sqlparser::ast::visit_expressions(&e, |x| {
        match x {
            sqlparser::ast::Expr::Identifier(i) if super::ident(i) == column => hit = true,
            sqlparser::ast::Expr::CompoundIdentifier(parts) if parts.last().is_some_and(|i| super::ident(i) == column) => hit = true,
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    hit
}

/// OID of a CREATE INDEX index: its id (drawn with the tables') past
/// PostgreSQL's built-in range, as a table's.
pub fn user_index_oid(idx: &crate::catalog::IndexDef) -> i64 {
    table_oid(idx.id)
}

/// `pg_get_indexdef` of a CREATE INDEX index.
pub fn user_indexdef(idx: &crate::catalog::IndexDef) -> String {
    format!(
        "CREATE {}INDEX {} ON public.{} USING btree ({})",
        if idx.unique { "UNIQUE " } else { "" },
        quote_ident(&idx.name),
        quote_ident(&idx.table),
        idx.columns.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", ")
    )
}

/// OID of a view: its id past PostgreSQL's built-in range, as a table's.
pub fn view_oid(v: &crate::catalog::ViewDef) -> i64 {
    table_oid(v.id)
}

/// pg_catalog relations with their PostgreSQL OIDs, for `'pg_class'::regclass`.
pub const SYSTEM_RELATIONS: &[(i64, &str)] = &[
    (1247, "pg_type"),
    (1249, "pg_attribute"),
    (1255, "pg_proc"),
    (1259, "pg_class"),
    (1262, "pg_database"),
    (2601, "pg_am"),
    (2604, "pg_attrdef"),
    (2606, "pg_constraint"),
    (2609, "pg_description"),
    (2610, "pg_index"),
    (2616, "pg_opclass"),
    (826, "pg_default_acl"),
    (2615, "pg_namespace"),
    (3456, "pg_collation"),
    (2618, "pg_rewrite"),
];

/// The columns of a table's primary key as PostgreSQL tools see it: the
/// tags and the time index, which together identify a row (the last write
/// wins). Append-mode tables keep duplicates, so they have none.
pub fn pk_columns(tdef: &crate::catalog::TableDef) -> Option<Vec<usize>> {
    let ts = tdef.time_index?;
    if tdef.append_mode {
        return None;
    }
    let mut cols = tdef.primary_key.clone();
    cols.push(ts);
    Some(cols)
}

fn pk_names(tdef: &crate::catalog::TableDef, cols: &[usize]) -> String {
    cols.iter().map(|&i| quote_ident(&tdef.columns[i].name)).collect::<Vec<_>>().join(", ")
}

/// `pg_get_indexdef` of a table's primary-key index.
pub fn pk_indexdef(tdef: &crate::catalog::TableDef, cols: &[usize]) -> String {
    format!(
        "CREATE UNIQUE INDEX {} ON public.{} USING btree ({})",
        quote_ident(&format!("{}_pkey", tdef.name)),
        quote_ident(&tdef.name),
        pk_names(tdef, cols)
    )
}

/// `pg_get_constraintdef` of a table's primary key.
pub fn pk_constraintdef(tdef: &crate::catalog::TableDef, cols: &[usize]) -> String {
    format!("PRIMARY KEY ({})", pk_names(tdef, cols))
}

/// A name as PostgreSQL prints it: quoted when it needs to be.
pub fn quote_ident(n: &str) -> String {
    let plain = !n.is_empty()
        && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !n.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        n.to_string()
    } else {
        format!("\"{}\"", n.replace('"', "\"\""))
    }
}

/// `typlen` of a column type (-1: variable length).
fn type_len(ty: SqlType) -> i64 {
    use SqlType::*;
    match ty {
        Base { repr, .. } => type_len(repr.ty()),
        Bool => 1,
        Int2 => 2,
        Int4 | Float4 | Date | Oid => 4,
        Int8 | Float8 | Timestamp | TimestampTz | Time => 8,
        TimeTz => 12,
        Interval => 16,
        Geo(crate::types::geo::Geo::Point) => 16,
        Geo(crate::types::geo::Geo::Box) | Geo(crate::types::geo::Geo::Lseg) => 32,
        Text | Varchar | Unknown | Array(_) | Bytea | Numeric | Geo(_) => -1,
    }
}

/// A database whose name is also one of PostgreSQL's schemas (`public`
/// is always the connection's database): not listed as a schema.
pub fn is_reserved_schema(name: &str) -> bool {
    matches!(name, "public" | "pg_catalog" | "information_schema")
}

/// OID of the session's temporary schema (`pg_temp_<n>`): each session sees
/// only its own, so one OID serves them all.
pub const TEMP_NAMESPACE_OID: i64 = 13900;

/// The OID of a database's namespace (a database is a schema), from its
/// catalog slot: it stays while the database exists.
pub fn database_namespace_oid(slot: u32) -> i64 {
    14000 + slot as i64
}

/// The OID of a database in pg_database, from its catalog slot.
pub fn database_oid(slot: u32) -> i64 {
    16000 + slot as i64
}

/// A system table as a memory node named `schema.name`.
pub fn system_table(p: &Planner, schema: &str, name: &str) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
    let (mut plan, cols) = system_table_rows(p, schema, name)?;
    if let LogicalPlan::Memory { name: n, .. } = &mut plan {
        *n = format!("{schema}.{name}");
    }
    Ok((plan, cols))
}

fn system_table_rows(p: &Planner, schema: &str, name: &str) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
    use SqlType::*;
    let db = p.database.as_str();
    match (schema, name) {
        ("information_schema", "tables") => {
            // Only relations the user has some privilege on (or owns), as
            // PostgreSQL shows them.
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db).into_iter().filter(|x| visible(p, db, &x.name)) {
                rows.push(vec![t(db), t("public"), t(&tdef.name), t("BASE TABLE")]);
            }
            for v in p.catalog.views(db).into_iter().filter(|x| visible(p, db, &x.name)) {
                rows.push(vec![t(db), t("public"), t(&v.name), t("VIEW")]);
            }
            // Other databases' tables, under their database's schema name.
            for other in p.catalog.databases().into_iter().filter(|d| d != db && !is_reserved_schema(d)) {
                for tdef in p.catalog.tables(&other).into_iter().filter(|x| visible(p, &other, &x.name)) {
                    rows.push(vec![t(db), t(&other), t(&tdef.name), t("BASE TABLE")]);
                }
                for v in p.catalog.views(&other).into_iter().filter(|x| visible(p, &other, &x.name)) {
                    rows.push(vec![t(db), t(&other), t(&v.name), t("VIEW")]);
                }
            }
            table(&[("table_catalog", Text), ("table_schema", Text), ("table_name", Text), ("table_type", Text)], rows)
        }
        ("information_schema", "views") => {
            let mut rows = Vec::new();
            for v in p.catalog.views(db).into_iter().filter(|x| visible(p, db, &x.name)) {
                let def = super::viewdef::view_definition(&v, false);
                rows.push(vec![t(db), t("public"), t(&v.name), t(&def), t("NONE"), t("NO"), t("NO"), t("NO"), t("NO"), t("NO")]);
            }
            table(
                &[
                    ("table_catalog", Text),
                    ("table_schema", Text),
                    ("table_name", Text),
                    ("view_definition", Text),
                    ("check_option", Text),
                    ("is_updatable", Text),
                    ("is_insertable_into", Text),
                    ("is_trigger_updatable", Text),
                    ("is_trigger_deletable", Text),
                    ("is_trigger_insertable_into", Text),
                ],
                rows,
            )
        }
        ("information_schema", "table_privileges") | ("information_schema", "role_table_grants") => table(
            &[
                ("grantor", Text),
                ("grantee", Text),
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("privilege_type", Text),
                ("is_grantable", Text),
                ("with_hierarchy", Text),
            ],
            table_privilege_rows(p, name == "role_table_grants"),
        ),
        ("information_schema", "columns") => {
            let mut rows = Vec::new();
            // This database's tables under `public`, other databases' under
            // their database's name (as in information_schema.tables).
            let mut schemas = vec![(db.to_string(), "public".to_string())];
            schemas.extend(p.catalog.databases().into_iter().filter(|d| d != db && !is_reserved_schema(d)).map(|d| (d.clone(), d)));
            for (tdef, schema) in schemas
                .iter()
                .flat_map(|(d, schema)| p.catalog.tables(d).into_iter().map(move |t| (t, schema)))
                .filter(|(tdef, _)| visible(p, &tdef.database, &tdef.name))
            {
                for (i, c) in tdef.columns.iter().enumerate() {
                    let role = if tdef.time_index == Some(i) {
                        "TIMESTAMP"
                    } else if tdef.primary_key.contains(&i) {
                        "TAG"
                    } else {
                        "FIELD"
                    };
                    rows.push(vec![
                        t(db),
                        t(schema),
                        t(&tdef.name),
                        t(&c.name),
                        Value::Int(i as i64 + 1),
                        t(c.ty.pg_name()),
                        t(if c.nullable { "YES" } else { "NO" }),
                        c.default.clone().map(Value::Text).unwrap_or(Value::Null),
                        t(role),
                    ]);
                }
            }
            table(
                &[
                    ("table_catalog", Text),
                    ("table_schema", Text),
                    ("table_name", Text),
                    ("column_name", Text),
                    ("ordinal_position", Int4),
                    ("data_type", Text),
                    ("is_nullable", Text),
                    ("column_default", Text),
                    ("semantic_type", Text),
                ],
                rows,
            )
        }
        ("information_schema", "schemata") => {
            // The connection's database is `public`; every database is also
            // a schema of its own name (GreptimeDB's catalog.schema).
            let mut rows = vec![vec![t(db), t("public")], vec![t(db), t("information_schema")], vec![t(db), t("pg_catalog")]];
            for d in p.catalog.databases().into_iter().filter(|d| !is_reserved_schema(d)) {
                rows.push(vec![t(db), t(&d)]);
            }
            table(&[("catalog_name", Text), ("schema_name", Text)], rows)
        }
        ("information_schema", "flows") => {
            // GreptimeDB's columns (so their users' queries work), then
            // weir's progress columns.
            let mut rows = Vec::new();
            // Flows created in this database (GreptimeDB lists a catalog's).
            let mut flows: Vec<_> = p.catalog.flows().into_iter().filter(|f| f.database == db).collect();
            flows.sort_by(|a, b| a.name.cmp(&b.name));
            for f in flows {
                let prog = p.catalog.flow_progress(&f.name).unwrap_or_default();
                let mut options = serde_json::Map::new();
                for (k, v) in &f.options {
                    options.insert(k.clone(), serde_json::Value::from(v.clone()));
                }
                options.insert("flow_type".into(), serde_json::Value::from(f.flow_type.clone()));
                let ids = serde_json::Value::from(f.source_ids.clone()).to_string();
                let names: Vec<String> = f.sources.iter().map(|(d, n)| format!("greptime.{d}.{n}")).collect();
                let ts = |ms: i64| Value::Timestamp(ms * 1000);
                rows.push(vec![
                    t(&f.name),
                    Value::Int(f.id as i64),
                    Value::Null,
                    t("greptime"),
                    t(&f.create_text()),
                    f.comment.as_deref().map(t).unwrap_or(Value::Null),
                    f.expire_after_s.map(Value::Int).unwrap_or(Value::Null),
                    t(&ids),
                    t(&format!("greptime.{}.{}", f.sink_database, f.sink_table)),
                    t(if f.pending { "{}" } else { "{\"0\":0}" }),
                    t(&serde_json::Value::Object(options).to_string()),
                    ts(f.created_ms),
                    ts(f.updated_ms),
                    prog.last_execution_ms.map(ts).unwrap_or(Value::Null),
                    t(&names.join(",")),
                    Value::Null,
                    t(if f.pending { "pending" } else { "active" }),
                    f.eval_interval_s.map(Value::Int).unwrap_or(Value::Null),
                    Value::Int(prog.windows_done as i64),
                    Value::Int(prog.rows_written as i64),
                    Value::Int(prog.backfill_done as i64),
                    Value::Int(prog.backfill_total as i64),
                ]);
            }
            table(
                &[
                    ("flow_name", Text),
                    ("flow_id", Int8),
                    ("state_size", Int8),
                    ("table_catalog", Text),
                    ("flow_definition", Text),
                    ("comment", Text),
                    ("expire_after", Int8),
                    ("source_table_ids", Text),
                    ("sink_table_name", Text),
                    ("flownode_ids", Text),
                    ("options", Text),
                    ("created_time", Timestamp),
                    ("updated_time", Timestamp),
                    ("last_execution_time", Timestamp),
                    ("source_table_names", Text),
                    ("flownode_addrs", Text),
                    ("status", Text),
                    ("eval_interval", Int8),
                    ("windows_done", Int8),
                    ("rows_written", Int8),
                    // Backfill (flows): windows of the history written / found.
                    ("backfill_done", Int8),
                    ("backfill_total", Int8),
                ],
                rows,
            )
        }
        ("information_schema", "flow_statistics") => {
            // Incremental evaluation (issue 9): one row per flow of this
            // database, from the running flows' statistics.
            let mut rows = Vec::new();
            let mut flows: Vec<_> = p.catalog.flows().into_iter().filter(|f| f.database == db).collect();
            flows.sort_by(|a, b| a.name.cmp(&b.name));
            let board = p.catalog.flow_stats.read().clone();
            let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
            for f in flows {
                let prog = p.catalog.flow_progress(&f.name).unwrap_or_default();
                let st = board.get(&f.name).cloned().unwrap_or_default();
                let i = |v: u64| Value::Int(v as i64);
                // Lag: now − when the oldest change not yet reflected was
                // written (the write clock); for writes before a restart,
                // which have no time, the time since the flow last caught up.
                let mut pending = false;
                let mut oldest: Option<i64> = None;
                let mut untimed = false;
                for (d, n) in &f.sources {
                    if let Some(tdef) = p.catalog.table(d, n) {
                        for r in p.regions(&tdef)? {
                            let done = prog.regions.get(&r.id).copied().unwrap_or(0);
                            if done < r.last_seq() {
                                pending = true;
                                match p.catalog.write_clock.oldest_after(r.id, done) {
                                    Some(ms) => oldest = Some(oldest.map_or(ms, |o| o.min(ms))),
                                    None => untimed = true,
                                }
                            }
                        }
                    }
                }
                let lag = match (pending, untimed, oldest, prog.last_execution_ms) {
                    (false, ..) => Value::Int(0),
                    (true, false, Some(t), _) => Value::Int((now_ms - t).max(0)),
                    (true, true, o, Some(t)) => Value::Int((now_ms - o.map_or(t, |o| o.min(t))).max(0)),
                    _ => Value::Null,
                };
                let inc = st.incremental_evaluations;
                let hit = if inc + st.full_evaluations == 0 {
                    Value::Null
                } else {
                    Value::Float(inc as f64 / (inc + st.full_evaluations) as f64)
                };
                let fallbacks = serde_json::Value::from(
                    st.fallbacks.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(*v))).collect::<serde_json::Map<_, _>>(),
                );
                let checkpoints = serde_json::Value::from(
                    prog.regions.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect::<serde_json::Map<_, _>>(),
                );
                rows.push(vec![
                    t(&f.name),
                    if st.mode.is_empty() { t("not_started") } else { t(&st.mode) },
                    st.reason.as_deref().map(t).unwrap_or(Value::Null),
                    t(&checkpoints.to_string()),
                    i(st.evaluations),
                    i(st.incremental_evaluations),
                    i(st.full_evaluations),
                    hit,
                    t(&fallbacks.to_string()),
                    i(st.fallback_windows),
                    i(st.extreme_recomputes),
                    i(st.rows_read),
                    i(st.rows_written),
                    i(st.state_windows),
                    st.last_error.as_deref().map(t).unwrap_or(Value::Null),
                    lag,
                    i(st.rows_deleted),
                    i(st.rows_unchanged),
                    i(st.plans_made),
                ]);
            }
            table(
                &[
                    ("flow_name", Text),
                    ("mode", Text),
                    ("reason", Text),
                    ("checkpoints", Text),
                    ("evaluations", Int8),
                    ("incremental_evaluations", Int8),
                    ("full_evaluations", Int8),
                    ("incremental_hit_rate", Float8),
                    ("fallbacks", Text),
                    ("fallback_windows", Int8),
                    ("extreme_recomputes", Int8),
                    ("rows_read", Int8),
                    ("rows_written", Int8),
                    ("state_windows", Int8),
                    ("last_error", Text),
                    ("lag_ms", Int8),
                    ("rows_deleted", Int8),
                    ("rows_unchanged", Int8),
                    ("plans_made", Int8),
                ],
                rows,
            )
        }
        ("information_schema", "flow_operators") => {
            // Streaming mode (issue 11): one row per operator of each
            // running streaming flow of this database, root first.
            let mut rows = Vec::new();
            let mut flows: Vec<_> = p.catalog.flows().into_iter().filter(|f| f.database == db).map(|f| f.name).collect();
            flows.sort();
            let board = p.catalog.flow_operators.read().clone();
            for f in flows {
                for (n, o) in board.get(&f).into_iter().flatten().enumerate() {
                    let i = |v: u64| Value::Int(v as i64);
                    rows.push(vec![
                        t(&f),
                        Value::Int(n as i64),
                        t(&o.operator),
                        i(o.rows_in),
                        i(o.rows_out),
                        i(o.state_rows),
                        i(o.state_bytes),
                        i(o.cache_hits),
                        i(o.cache_misses),
                        i(o.cache_bytes),
                        i(o.epoch),
                        Value::Float(o.epoch_ms),
                        Value::Float(o.barrier_ms),
                    ]);
                }
            }
            table(
                &[
                    ("flow_name", Text),
                    ("operator_id", Int8),
                    ("operator", Text),
                    ("rows_in", Int8),
                    ("rows_out", Int8),
                    ("state_rows", Int8),
                    ("state_bytes", Int8),
                    ("cache_hits", Int8),
                    ("cache_misses", Int8),
                    ("cache_bytes", Int8),
                    ("epoch", Int8),
                    ("epoch_ms", Float8),
                    ("barrier_ms", Float8),
                ],
                rows,
            )
        }
        ("information_schema", "region_statistics") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                for (n, r) in p.regions(&tdef)?.iter().enumerate() {
                    let st = r.stats();
                    let i = |v: u64| Value::Int(v as i64);
                    rows.push(vec![
                        t(&tdef.name),
                        i(r.id),
                        i(n as u64),
                        i(st.memtable_rows as u64),
                        i(st.memtable_bytes as u64),
                        i(st.sst_count as u64),
                        i(st.sst_bytes),
                        i(st.sst_rows),
                        i(st.wal_bytes),
                        i(st.wal_syncs),
                        i(st.last_seq),
                        i(st.flushed_seq),
                        i(st.history_seq),
                        i(st.generation),
                        i(st.flushes),
                        i(st.compactions),
                        i(st.ssts_read),
                        i(st.ssts_pruned),
                        i(st.row_groups_read),
                        i(st.row_groups_pruned),
                        i(st.background_panics),
                        i(st.decoded_cache_hits),
                        i(st.decoded_cache_fills),
                        i(st.decoded_cache_bytes),
                        i(st.last_row_hits),
                        i(st.last_row_scans),
                    ]);
                }
            }
            table(
                &[
                    ("table_name", Text),
                    ("region_id", Int8),
                    ("region_number", Int4),
                    ("memtable_rows", Int8),
                    ("memtable_bytes", Int8),
                    ("sst_count", Int8),
                    ("sst_bytes", Int8),
                    ("sst_rows", Int8),
                    ("wal_bytes", Int8),
                    ("wal_syncs", Int8),
                    ("latest_sequence", Int8),
                    ("flushed_sequence", Int8),
                    ("history_sequence", Int8),
                    ("generation", Int8),
                    ("flushes", Int8),
                    ("compactions", Int8),
                    ("ssts_read", Int8),
                    ("ssts_pruned", Int8),
                    ("row_groups_read", Int8),
                    ("row_groups_pruned", Int8),
                    ("background_panics", Int8),
                    ("decoded_cache_hits", Int8),
                    ("decoded_cache_fills", Int8),
                    ("decoded_cache_bytes", Int8),
                    ("last_row_hits", Int8),
                    ("last_row_scans", Int8),
                ],
                rows,
            )
        }
        // ALTER DEFAULT PRIVILEGES entries (psql's \ddp); namespace 0: every database.
        ("pg_catalog", "pg_default_acl") => {
            let dbs = p.catalog.database_slots();
            let rows = p
                .catalog
                .default_acls()
                .into_iter()
                .enumerate()
                // An entry whose role is gone this instant (another session
                // renaming or dropping it) is not shown: role_oid would
                // answer the superuser's OID for it.
                .filter(|(_, (role, _, _))| p.catalog.role(role).is_some())
                .map(|(i, (role, schema, items))| {
                    let ns = match schema {
                        None => 0,
                        Some(d) if d == db => 2200,
                        Some(d) => dbs.iter().find(|x| x.0 == d).map(|x| database_namespace_oid(x.1)).unwrap_or(0),
                    };
                    vec![Value::Int(90000 + i as i64), Value::Int(role_oid(p, &role)), Value::Int(ns), t("r"), t(&acl_text(&items))]
                })
                .collect();
            table(&[("oid", Oid), ("defaclrole", Oid), ("defaclnamespace", Oid), ("defaclobjtype", Text), ("defaclacl", Text)], rows)
        }
        ("pg_catalog", "pg_namespace") => {
            // psql's \dn lists these: `public` (the connection's database)
            // and every database by its name.
            let mut rows = vec![
                vec![Value::Int(11), t("pg_catalog"), Value::Int(10), Value::Null],
                vec![Value::Int(2200), t("public"), Value::Int(10), Value::Null],
                vec![Value::Int(13000), t("information_schema"), Value::Int(10), Value::Null],
            ];
            // The session's temporary schema, once it has made a temporary relation.
            if let Some((_, stored)) = p.temp_names.first() {
                let schema: String = stored.splitn(4, '_').take(3).collect::<Vec<_>>().join("_");
                rows.push(vec![Value::Int(TEMP_NAMESPACE_OID), t(&schema), Value::Int(10), Value::Null]);
            }
            for (d, n) in p.catalog.database_slots().iter().filter(|(d, _)| !is_reserved_schema(d)) {
                let owner = role_oid(p, &p.catalog.owner_of(&AclObject::Database(d.clone())));
                rows.push(vec![Value::Int(database_namespace_oid(*n)), t(d), Value::Int(owner), Value::Null]);
            }
            table(&[("oid", Oid), ("nspname", Text), ("nspowner", Oid), ("nspacl", Text)], rows)
        }
        ("pg_catalog", "pg_database") => {
            let rows = p
                .catalog
                .database_slots()
                .iter()
                .map(|(d, n)| {
                    let obj = AclObject::Database(d.clone());
                    vec![
                        Value::Int(database_oid(*n)),
                        t(d),
                        Value::Int(role_oid(p, &p.catalog.owner_of(&obj))),
                        Value::Int(6),
                        t("C"),
                        t("C"),
                        Value::Null,
                        t("c"),
                        Value::Bool(false),
                        Value::Bool(true),
                        Value::Int(-1),
                        p.catalog.acl_column(&obj).map(Value::Text).unwrap_or(Value::Null),
                    ]
                })
                .collect();
            table(
                &[
                    ("oid", Int8),
                    ("datname", Text),
                    ("datdba", Int8),
                    ("encoding", Int4),
                    ("datcollate", Text),
                    ("datctype", Text),
                    ("daticulocale", Text),
                    ("datlocprovider", Text),
                    ("datistemplate", Bool),
                    ("datallowconn", Bool),
                    ("datconnlimit", Int4),
                    ("datacl", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_class") => {
            let mut rows = Vec::new();
            // The relations of the schemas on search_path: the connection's
            // database is `public`, the session's temporary relations are in its
            // pg_temp schema under the names it wrote (other sessions' keep
            // their private names). Other databases stay out: weir's databases are its
            // schemas, and a client of one database should not meet the
            // relations of every other.
            let path = p.search_databases();
            let mut schemas = vec![(db.to_string(), 2200)];
            for (d, n) in p.catalog.database_slots() {
                if d != db && !is_reserved_schema(&d) && path.contains(&d) {
                    schemas.push((d.clone(), database_namespace_oid(n)));
                }
            }
            let placed = |d: &str, nsp: i64, name: &str| -> Option<(i64, String)> {
                if d != db {
                    return Some((nsp, name.to_string()));
                }
                match p.temp_names.iter().find(|(_, stored)| stored == name) {
                    Some((user, _)) => Some((TEMP_NAMESPACE_OID, user.clone())),
                    None => Some((nsp, name.to_string())),
                }
            };
            for (d, nsp) in &schemas {
                let db = d.as_str();
                let row = |oid: i64, name: &str, kind: &str, has_index: bool, rel: &str| -> Option<Vec<Value>> {
                    // An index has its table's owner and no ACL of its own.
                    let obj = AclObject::Relation(db.to_string(), rel.to_string());
                    let acl = if kind == "i" { None } else { p.catalog.acl_column(&obj) };
                    let (nsp, name) = placed(db, *nsp, name)?;
                    Some(vec![
                        Value::Int(oid),
                        t(&name),
                        Value::Int(nsp),
                        t(kind),
                        Value::Int(role_oid(p, &p.catalog.owner_of(&obj))),
                        Value::Int(if kind == "r" { 2 } else { 0 }),
                        Value::Int(0),
                        Value::Bool(has_index),
                        Value::Bool(false),
                        Value::Bool(false),
                        Value::Bool(false),
                        Value::Bool(false),
                        Value::Bool(false),
                        Value::Int(0),
                        Value::Int(0),
                        t("p"),
                        t("d"),
                        Value::Int(0),
                        Value::Float(-1.0),
                        Value::Null,
                        Value::Null,
                        Value::Int(0),
                        // relpages: no page estimate (as a never-analyzed relation).
                        Value::Int(0),
                        acl.map(Value::Text).unwrap_or(Value::Null),
                    ])
                };
                let indexes = p.catalog.database_indexes(db);
                for tdef in p.catalog.tables(db) {
                    let pk = pk_columns(&tdef);
                    let has_index = pk.is_some() || indexes.iter().any(|i| i.table == tdef.name);
                    rows.extend(row(table_oid(tdef.id), &tdef.name, "r", has_index, &tdef.name));
                    if pk.is_some() {
                        if let Some(mut r) = row(index_oid(tdef.id), &format!("{}_pkey", tdef.name), "i", false, &tdef.name) {
                            r[5] = Value::Int(403); // btree
                            rows.push(r);
                        }
                    }
                }
                for idx in &indexes {
                    if let Some(mut r) = row(user_index_oid(idx), &idx.name, "i", false, &idx.table) {
                        r[5] = Value::Int(403);
                        rows.push(r);
                    }
                }
                for v in &p.catalog.views(db) {
                    if let Some(mut r) = row(view_oid(v), &v.name, "v", false, &v.name) {
                        if !v.options.is_empty() {
                            r[19] = t(&format!("{{{}}}", v.options.join(",")));
                        }
                        rows.push(r);
                    }
                }
                for s in &p.catalog.sequences(db) {
                    rows.extend(row(table_oid(s.id), &s.name, "S", false, &s.name));
                }
            }
            table(
                &[
                    ("oid", Oid),
                    ("relname", Text),
                    ("relnamespace", Oid),
                    ("relkind", Text),
                    ("relowner", Oid),
                    ("relam", Oid),
                    ("relchecks", Int2),
                    ("relhasindex", Bool),
                    ("relhasrules", Bool),
                    ("relhastriggers", Bool),
                    ("relrowsecurity", Bool),
                    ("relforcerowsecurity", Bool),
                    ("relispartition", Bool),
                    ("reltablespace", Oid),
                    ("reloftype", Oid),
                    ("relpersistence", Text),
                    ("relreplident", Text),
                    ("reltoastrelid", Oid),
                    ("reltuples", Float4),
                    ("reloptions", Text),
                    ("relpartbound", Text),
                    ("reltype", Oid),
                    ("relpages", Int4),
                    ("relacl", Text),
                ],
                rows,
            )
        }
        // btree's default operator classes of the column types, with
        // PostgreSQL 15's OIDs (SQLAlchemy's get_indexes reads them).
        ("pg_catalog", "pg_opclass") => {
            let classes: [(i64, &str, i64, i64); 11] = [
                (1978, "int4_ops", 23, 1976),
                (1979, "int2_ops", 21, 1976),
                (3122, "date_ops", 1082, 434),
                (3123, "float8_ops", 701, 1970),
                (3124, "int8_ops", 20, 1976),
                (3126, "text_ops", 25, 1994),
                (3127, "timestamptz_ops", 1184, 434),
                (3128, "timestamp_ops", 1114, 434),
                (10003, "bool_ops", 16, 424),
                (10012, "float4_ops", 700, 1970),
                (10022, "interval_ops", 1186, 1982),
            ];
            let rows = classes
                .iter()
                .map(|&(oid, name, intype, family)| {
                    vec![
                        Value::Int(oid),
                        Value::Int(403),
                        t(name),
                        Value::Int(11),
                        Value::Int(10),
                        Value::Int(family),
                        Value::Int(intype),
                        Value::Bool(true),
                        Value::Int(0),
                    ]
                })
                .collect();
            table(
                &[
                    ("oid", Int8),
                    ("opcmethod", Int8),
                    ("opcname", Text),
                    ("opcnamespace", Int8),
                    ("opcowner", Int8),
                    ("opcfamily", Int8),
                    ("opcintype", Int8),
                    ("opcdefault", Bool),
                    ("opckeytype", Int8),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_am") => table(
            &[("oid", Int8), ("amname", Text), ("amtype", Text)],
            vec![vec![Value::Int(2), t("heap"), t("t")], vec![Value::Int(403), t("btree"), t("i")]],
        ),
        ("pg_catalog", "pg_attribute") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                let identities = p.catalog.owned_sequences(db, &tdef.name);
                for (i, c) in tdef.columns.iter().enumerate() {
                    // attidentity: 'a' (ALWAYS), 'd' (BY DEFAULT) or ''.
                    let identity = identities
                        .iter()
                        .filter(|s| s.owned_by.as_ref().is_some_and(|o| o.column == c.name))
                        .find_map(|s| s.identity)
                        .map(|k| if k == crate::catalog::Identity::Always { "a" } else { "d" })
                        .unwrap_or("");
                    rows.push(vec![
                        Value::Int(table_oid(tdef.id)),
                        t(&c.name),
                        Value::Int(c.ty.pg_oid() as i64),
                        Value::Int(-1),
                        Value::Int(i as i64 + 1),
                        Value::Bool(!c.nullable),
                        Value::Bool(c.default.is_some()),
                        Value::Bool(false),
                        Value::Int(0),
                        t(identity),
                        t(""),
                        Value::Int(type_len(c.ty)),
                        Value::Int(0),
                        Value::Bool(true),
                        Value::Int(0),
                        t(if type_len(c.ty) < 0 { "x" } else { "p" }),
                        t(""),
                        Value::Int(-1),
                        Value::Null,
                    ]);
                }
            }
            for v in &p.catalog.views(db) {
                if let Ok((_, cols)) = p.plan_table(None, &v.name) {
                    for (i, c) in cols.iter().enumerate() {
                        rows.push(vec![
                            Value::Int(view_oid(v)),
                            t(&c.name),
                            Value::Int(c.ty.pg_oid() as i64),
                            Value::Int(-1),
                            Value::Int(i as i64 + 1),
                            Value::Bool(false),
                            Value::Bool(false),
                            Value::Bool(false),
                            Value::Int(0),
                            t(""),
                            t(""),
                            Value::Int(type_len(c.ty)),
                            Value::Int(0),
                            Value::Bool(true),
                            Value::Int(0),
                            t(if type_len(c.ty) < 0 { "x" } else { "p" }),
                            t(""),
                            Value::Int(-1),
                            Value::Null,
                        ]);
                    }
                }
            }
            table(
                &[
                    ("attrelid", Oid),
                    ("attname", Text),
                    ("atttypid", Oid),
                    ("atttypmod", Int4),
                    ("attnum", Int2),
                    ("attnotnull", Bool),
                    ("atthasdef", Bool),
                    ("attisdropped", Bool),
                    ("attcollation", Oid),
                    ("attidentity", Text),
                    ("attgenerated", Text),
                    ("attlen", Int2),
                    ("attndims", Int4),
                    ("attislocal", Bool),
                    ("attinhcount", Int4),
                    ("attstorage", Text),
                    ("attcompression", Text),
                    ("attstattarget", Int2),
                    // No column privileges: always NULL.
                    ("attacl", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_attrdef") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                for (i, c) in tdef.columns.iter().enumerate() {
                    if let Some(d) = &c.default {
                        rows.push(vec![Value::Int(table_oid(tdef.id)), Value::Int(i as i64 + 1), t(d)]);
                    }
                }
            }
            table(&[("adrelid", Int8), ("adnum", Int2), ("adbin", Text)], rows)
        }
        ("pg_catalog", "pg_type") => {
            // (oid, typname, typlen, array oid, category, collatable)
            const TYPES: &[(i64, &str, i64, i64, &str, bool)] = &[
                (16, "bool", 1, 1000, "B", false),
                (17, "bytea", -1, 1001, "U", false),
                (18, "char", 1, 1002, "Z", false),
                (19, "name", 64, 1003, "S", true),
                (20, "int8", 8, 1016, "N", false),
                (21, "int2", 2, 1005, "N", false),
                (23, "int4", 4, 1007, "N", false),
                (25, "text", -1, 1009, "S", true),
                (26, "oid", 4, 1028, "N", false),
                (700, "float4", 4, 1021, "N", false),
                (701, "float8", 8, 1022, "N", false),
                (1043, "varchar", -1, 1015, "S", true),
                (1082, "date", 4, 1182, "D", false),
                (1114, "timestamp", 8, 1115, "D", false),
                (1184, "timestamptz", 8, 1185, "D", false),
                (1186, "interval", 16, 1187, "T", false),
                (1083, "time", 8, 1183, "D", false),
                (1266, "timetz", 12, 1270, "D", false),
                (1700, "numeric", -1, 1231, "N", false),
                (2205, "regclass", 4, 2210, "N", false),
                (2206, "regtype", 4, 2211, "N", false),
            ];
            let mut rows = Vec::new();
            let mut push = |oid: i64, name: &str, len: i64, elem: i64, array: i64, cat: &str, coll: bool| {
                let byval = (1..=8).contains(&len);
                let io = if cat == "A" { "array".to_string() } else { name.to_string() };
                rows.push(vec![
                    Value::Int(oid),
                    t(name),
                    Value::Int(11),
                    Value::Int(10),
                    Value::Int(len),
                    Value::Bool(byval),
                    t("b"),
                    t(cat),
                    Value::Bool(true),
                    t(","),
                    Value::Int(0),
                    Value::Int(elem),
                    Value::Int(array),
                    t(&format!("{io}_in")),
                    t(&format!("{io}_out")),
                    t(&format!("{io}_recv")),
                    Value::Bool(false),
                    Value::Int(0),
                    Value::Int(-1),
                    Value::Int(0),
                    Value::Int(if coll { 100 } else { 0 }),
                    Value::Null,
                ]);
            };
            for &(oid, name, len, array, cat, coll) in TYPES {
                push(oid, name, len, 0, array, cat, coll);
                push(array, &format!("_{name}"), -1, oid, 0, "A", coll);
            }
            table(
                &[
                    ("oid", Oid),
                    ("typname", Text),
                    ("typnamespace", Oid),
                    ("typowner", Oid),
                    ("typlen", Int2),
                    ("typbyval", Bool),
                    ("typtype", Text),
                    ("typcategory", Text),
                    ("typisdefined", Bool),
                    ("typdelim", Text),
                    ("typrelid", Oid),
                    ("typelem", Oid),
                    ("typarray", Oid),
                    ("typinput", Text),
                    ("typoutput", Text),
                    ("typreceive", Text),
                    ("typnotnull", Bool),
                    ("typbasetype", Oid),
                    ("typtypmod", Int4),
                    ("typndims", Int4),
                    ("typcollation", Oid),
                    ("typdefault", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_index") => {
            let mut entries = Vec::new();
            let tables = p.catalog.tables(db);
            for tdef in &tables {
                let Some(cols) = pk_columns(tdef) else { continue };
                entries.push((index_oid(tdef.id), table_oid(tdef.id), cols, true, true));
            }
            for idx in &p.catalog.database_indexes(db) {
                let Some(tdef) = tables.iter().find(|t| t.name == idx.table) else { continue };
                let cols: Vec<usize> = idx.columns.iter().filter_map(|c| tdef.column_index(c)).collect();
                entries.push((user_index_oid(idx), table_oid(tdef.id), cols, idx.unique, false));
            }
            let mut rows = Vec::new();
            for (oid, rel, cols, unique, primary) in entries {
                let key = cols.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(" ");
                let zeros = cols.iter().map(|_| "0").collect::<Vec<_>>().join(" ");
                let n = Value::Int(cols.len() as i64);
                let (yes, no) = (Value::Bool(true), Value::Bool(false));
                rows.push(vec![
                    Value::Int(oid),
                    Value::Int(rel),
                    n.clone(),
                    n,
                    Value::Bool(unique),
                    Value::Bool(primary),
                    no.clone(),
                    yes.clone(),
                    no.clone(),
                    yes.clone(),
                    no.clone(),
                    yes.clone(),
                    yes,
                    no,
                    t(&key),
                    t(&zeros),
                    t(&zeros),
                    t(&zeros),
                    Value::Null,
                    Value::Null,
                    Value::Bool(false),
                ]);
            }
            table(
                &[
                    ("indexrelid", Int8),
                    ("indrelid", Int8),
                    ("indnatts", Int2),
                    ("indnkeyatts", Int2),
                    ("indisunique", Bool),
                    ("indisprimary", Bool),
                    ("indisexclusion", Bool),
                    ("indimmediate", Bool),
                    ("indisclustered", Bool),
                    ("indisvalid", Bool),
                    ("indcheckxmin", Bool),
                    ("indisready", Bool),
                    ("indislive", Bool),
                    ("indisreplident", Bool),
                    ("indkey", Text),
                    ("indcollation", Text),
                    ("indclass", Text),
                    ("indoption", Text),
                    ("indexprs", Text),
                    ("indpred", Text),
                    ("indnullsnotdistinct", Bool),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_constraint") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                let Some(cols) = pk_columns(&tdef) else { continue };
                let key = format!("{{{}}}", cols.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(","));
                rows.push(vec![
                    Value::Int(index_oid(tdef.id)),
                    t(&format!("{}_pkey", tdef.name)),
                    Value::Int(2200),
                    t("p"),
                    Value::Bool(false),
                    Value::Bool(false),
                    Value::Bool(true),
                    Value::Int(table_oid(tdef.id)),
                    Value::Int(0),
                    Value::Int(index_oid(tdef.id)),
                    Value::Int(0),
                    Value::Int(0),
                    t(" "),
                    t(" "),
                    t(" "),
                    Value::Bool(true),
                    Value::Int(0),
                    Value::Bool(true),
                    t(&key),
                    Value::Null,
                    Value::Null,
                ]);
            }
            for tdef in p.catalog.tables(db) {
                for (i, c) in tdef.checks.iter().enumerate() {
                    let keys: Vec<String> = tdef
                        .columns
                        .iter()
                        .enumerate()
                        .filter(|(_, col)| check_reads(&c.expr, &col.name))
                        .map(|(k, _)| (k + 1).to_string())
                        .collect();
                    rows.push(vec![
                        Value::Int(check_oid(tdef.id, i)),
                        t(&c.name),
                        Value::Int(2200),
                        t("c"),
                        Value::Bool(false),
                        Value::Bool(false),
                        Value::Bool(true),
                        Value::Int(table_oid(tdef.id)),
                        Value::Int(0),
                        Value::Int(0),
                        Value::Int(0),
                        Value::Int(0),
                        t(" "),
                        t(" "),
                        t(" "),
                        Value::Bool(!c.inherited),
                        Value::Int(c.inherited as i64),
                        Value::Bool(c.no_inherit),
                        t(&format!("{{{}}}", keys.join(","))),
                        Value::Null,
                        t(&c.expr),
                    ]);
                }
            }
            table(
                &[
                    ("oid", Int8),
                    ("conname", Text),
                    ("connamespace", Int8),
                    ("contype", Text),
                    ("condeferrable", Bool),
                    ("condeferred", Bool),
                    ("convalidated", Bool),
                    ("conrelid", Int8),
                    ("contypid", Int8),
                    ("conindid", Int8),
                    ("conparentid", Int8),
                    ("confrelid", Int8),
                    ("confupdtype", Text),
                    ("confdeltype", Text),
                    ("confmatchtype", Text),
                    ("conislocal", Bool),
                    ("coninhcount", Int4),
                    ("connoinherit", Bool),
                    ("conkey", Text),
                    ("confkey", Text),
                    ("conbin", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_roles") | ("pg_catalog", "pg_authid") => {
            // pg_authid holds the verifiers: superusers only, as PostgreSQL.
            let authid = name == "pg_authid";
            if authid && !p.catalog.is_superuser(&p.ctx.user) {
                bail!(InsufficientPrivilege, "permission denied for table pg_authid");
            }
            let b = Value::Bool;
            let rows = p
                .catalog
                .roles()
                .into_iter()
                .map(|r| {
                    let password = if authid { r.password.clone().map(Value::Text).unwrap_or(Value::Null) } else { t("********") };
                    vec![
                        Value::Int(r.oid as i64),
                        t(&r.name),
                        b(r.superuser),
                        b(r.inherit),
                        b(r.createrole),
                        b(r.createdb),
                        b(r.login),
                        b(false),
                        b(r.superuser),
                        Value::Int(-1),
                        password,
                        Value::Null,
                    ]
                })
                .collect();
            table(
                &[
                    ("oid", Int8),
                    ("rolname", Text),
                    ("rolsuper", Bool),
                    ("rolinherit", Bool),
                    ("rolcreaterole", Bool),
                    ("rolcreatedb", Bool),
                    ("rolcanlogin", Bool),
                    ("rolreplication", Bool),
                    ("rolbypassrls", Bool),
                    ("rolconnlimit", Int4),
                    ("rolpassword", Text),
                    ("rolvaliduntil", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_user") => {
            let rows = p
                .catalog
                .roles()
                .into_iter()
                .filter(|r| r.login)
                .map(|r| {
                    vec![
                        t(&r.name),
                        Value::Int(r.oid as i64),
                        Value::Bool(r.createdb),
                        Value::Bool(r.superuser),
                        Value::Bool(false),
                        Value::Bool(r.superuser),
                        t("********"),
                        Value::Null,
                    ]
                })
                .collect();
            table(
                &[
                    ("usename", Text),
                    ("usesysid", Int8),
                    ("usecreatedb", Bool),
                    ("usesuper", Bool),
                    ("userepl", Bool),
                    ("usebypassrls", Bool),
                    ("passwd", Text),
                    ("valuntil", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_auth_members") => {
            let roles = p.catalog.roles();
            let oid = |n: &str| roles.iter().find(|r| r.name == n).map(|r| r.oid as i64).unwrap_or(0);
            let mut rows = vec![];
            for r in &roles {
                for m in &r.member_of {
                    rows.push(vec![Value::Int(oid(m)), Value::Int(r.oid as i64), Value::Int(10), Value::Bool(false)]);
                }
            }
            table(&[("roleid", Int8), ("member", Int8), ("grantor", Int8), ("admin_option", Bool)], rows)
        }
        ("pg_catalog", "pg_sequence") => table(
            &[
                ("seqrelid", Int8),
                ("seqtypid", Int8),
                ("seqstart", Int8),
                ("seqincrement", Int8),
                ("seqmax", Int8),
                ("seqmin", Int8),
                ("seqcache", Int8),
                ("seqcycle", Bool),
            ],
            p.catalog
                .sequences(db)
                .iter()
                .map(|s| {
                    vec![
                        Value::Int(table_oid(s.id)),
                        Value::Int(s.ty.pg_oid() as i64),
                        Value::Int(s.start),
                        Value::Int(s.increment),
                        Value::Int(s.max),
                        Value::Int(s.min),
                        Value::Int(s.cache),
                        Value::Bool(s.cycle),
                    ]
                })
                .collect(),
        ),
        ("pg_catalog", "pg_sequences") => {
            let rows = p
                .catalog
                .sequences(db)
                .iter()
                .filter(|s| visible(p, db, &s.name))
                .map(|s| {
                    let v = p.catalog.sequence_value(s);
                    let owner = p.catalog.owner_of(&AclObject::Relation(db.to_string(), s.name.clone()));
                    vec![
                        t("public"),
                        t(&s.name),
                        t(&owner),
                        t(crate::catalog::sequence::integer_type_name(s.ty)),
                        Value::Int(s.start),
                        Value::Int(s.min),
                        Value::Int(s.max),
                        Value::Int(s.increment),
                        Value::Bool(s.cycle),
                        Value::Int(s.cache),
                        if v.is_called { Value::Int(v.last_value) } else { Value::Null },
                    ]
                })
                .collect();
            table(
                &[
                    ("schemaname", Text),
                    ("sequencename", Text),
                    ("sequenceowner", Text),
                    ("data_type", Text),
                    ("start_value", Int8),
                    ("min_value", Int8),
                    ("max_value", Int8),
                    ("increment_by", Int8),
                    ("cycle", Bool),
                    ("cache_size", Int8),
                    ("last_value", Int8),
                ],
                rows,
            )
        }
        ("information_schema", "sequences") => {
            let rows = p
                .catalog
                .sequences(db)
                .iter()
                .filter(|s| visible(p, db, &s.name))
                .map(|s| {
                    let bits = match s.ty {
                        SqlType::Int2 => 16,
                        SqlType::Int4 => 32,
                        _ => 64,
                    };
                    vec![
                        t(db),
                        t("public"),
                        t(&s.name),
                        t(crate::catalog::sequence::integer_type_name(s.ty)),
                        Value::Int(bits),
                        Value::Int(2),
                        Value::Int(0),
                        t(&s.start.to_string()),
                        t(&s.min.to_string()),
                        t(&s.max.to_string()),
                        t(&s.increment.to_string()),
                        t(if s.cycle { "YES" } else { "NO" }),
                    ]
                })
                .collect();
            table(
                &[
                    ("sequence_catalog", Text),
                    ("sequence_schema", Text),
                    ("sequence_name", Text),
                    ("data_type", Text),
                    ("numeric_precision", Int4),
                    ("numeric_precision_radix", Int4),
                    ("numeric_scale", Int4),
                    ("start_value", Text),
                    ("minimum_value", Text),
                    ("maximum_value", Text),
                    ("increment", Text),
                    ("cycle_option", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_collation") => {
            table(&[("oid", Int8), ("collname", Text), ("collnamespace", Int8)], vec![vec![Value::Int(100), t("default"), Value::Int(11)]])
        }
        // No range types: asyncpg's type introspection joins it.
        ("pg_catalog", "pg_range") => table(
            &[
                ("rngtypid", Oid),
                ("rngsubtype", Oid),
                ("rngmultitypid", Oid),
                ("rngcollation", Oid),
                ("rngsubopc", Oid),
                ("rngcanonical", Text),
                ("rngsubdiff", Text),
            ],
            vec![],
        ),
        ("pg_catalog", "pg_extension") => table(&[("oid", Int8), ("extname", Text), ("extversion", Text)], vec![]),
        ("pg_catalog", "pg_proc") => {
            // User-defined functions only: weir's built-ins are not numbered.
            let rows = p
                .catalog
                .database_functions(db)
                .iter()
                .map(|f| {
                    let ret = if f.returns.columns.len() > 1 || f.returns.trigger {
                        if f.returns.trigger {
                            2279
                        } else {
                            2249
                        }
                    } else {
                        f.returns.ty.map_or(2278, |t| t.pg_oid() as i64)
                    };
                    let argtypes: Vec<String> = f.args.iter().map(|a| a.ty.pg_oid().to_string()).collect();
                    let names: Vec<Option<String>> = f.args.iter().map(|a| Some(a.name.clone().unwrap_or_default())).collect();
                    vec![
                        Value::Int(table_oid(f.id)),
                        t(&f.name),
                        Value::Int(2200),
                        Value::Int(10),
                        Value::Int(if f.language == "sql" { 14 } else { 13576 }),
                        t("f"),
                        Value::Bool(false),
                        Value::Bool(f.strict),
                        Value::Bool(f.returns.set),
                        t(&f.volatility.to_string()),
                        Value::Int(f.args.len() as i64),
                        Value::Int(f.args.iter().filter(|a| a.default.is_some()).count() as i64),
                        Value::Int(ret),
                        t(&argtypes.join(" ")),
                        if f.args.iter().any(|a| a.name.is_some()) {
                            Value::Text(crate::types::array::format_array(&names))
                        } else {
                            Value::Null
                        },
                        t(&f.source),
                    ]
                })
                .collect();
            table(
                &[
                    ("oid", Oid),
                    ("proname", Text),
                    ("pronamespace", Oid),
                    ("proowner", Oid),
                    ("prolang", Oid),
                    ("prokind", Text),
                    ("prosecdef", Bool),
                    ("proisstrict", Bool),
                    ("proretset", Bool),
                    ("provolatile", Text),
                    ("pronargs", Int2),
                    ("pronargdefaults", Int2),
                    ("prorettype", Oid),
                    ("proargtypes", Text),
                    ("proargnames", Array(crate::types::Elem::Text)),
                    ("prosrc", Text),
                ],
                rows,
            )
        }
        ("information_schema", "routines") => {
            let rows = p
                .catalog
                .database_functions(db)
                .iter()
                .map(|f| {
                    let data_type = if f.returns.columns.len() > 1 {
                        "record"
                    } else if f.returns.trigger {
                        "trigger"
                    } else {
                        f.returns.ty.map_or("void", |t| t.pg_name())
                    };
                    let specific = format!("{}_{}", f.name, table_oid(f.id));
                    vec![
                        t(db),
                        t("public"),
                        t(&specific),
                        t(db),
                        t("public"),
                        t(&f.name),
                        t("FUNCTION"),
                        t(data_type),
                        t(if f.language == "sql" { "SQL" } else { "EXTERNAL" }),
                        if f.language == "sql" { t(&f.body) } else { t(&f.source) },
                        t(&f.language.to_uppercase()),
                        t(if f.volatility == 'i' { "YES" } else { "NO" }),
                    ]
                })
                .collect();
            table(
                &[
                    ("specific_catalog", Text),
                    ("specific_schema", Text),
                    ("specific_name", Text),
                    ("routine_catalog", Text),
                    ("routine_schema", Text),
                    ("routine_name", Text),
                    ("routine_type", Text),
                    ("data_type", Text),
                    ("routine_body", Text),
                    ("routine_definition", Text),
                    ("external_language", Text),
                    ("is_deterministic", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_inherits") => {
            // Parents by INHERITS and partitions' parents, as PostgreSQL lists both.
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                let parents = tdef.inherits.iter().chain(tdef.partition.of.as_ref().map(|o| &o.parent));
                for (i, parent) in parents.enumerate() {
                    if let Some(pdef) = p.catalog.table(db, parent) {
                        rows.push(vec![
                            Value::Int(table_oid(tdef.id)),
                            Value::Int(table_oid(pdef.id)),
                            Value::Int(i as i64 + 1),
                            Value::Bool(false),
                        ]);
                    }
                }
            }
            table(&[("inhrelid", Int8), ("inhparent", Int8), ("inhseqno", Int4), ("inhdetachpending", Bool)], rows)
        }
        ("pg_catalog", "pg_views") => {
            let mut rows = Vec::new();
            // The views of the schemas on search_path, as pg_class lists them.
            let path = p.search_databases();
            let mut schemas = vec![(db.to_string(), "public")];
            for d in p.catalog.databases() {
                if d != db && !is_reserved_schema(&d) && path.contains(&d) {
                    schemas.push((d, ""));
                }
            }
            for (d, label) in &schemas {
                for v in p.catalog.views(d) {
                    // The session's temporary views under the names it wrote; other sessions' are not listed.
                    let (schema, name) = match p.temp_names.iter().find(|(_, stored)| *stored == v.name) {
                        Some((user, _)) if d == db => ("pg_temp", user.as_str()),
                        _ if v.name.starts_with("pg_temp_") => continue,
                        _ if label.is_empty() => (d.as_str(), v.name.as_str()),
                        _ => (*label, v.name.as_str()),
                    };
                    let owner = p.catalog.owner_of(&AclObject::Relation(d.to_string(), v.name.clone()));
                    let def = super::viewdef::view_definition(&v, false);
                    rows.push(vec![t(schema), t(name), t(&owner), t(&def)]);
                }
            }
            table(&[("schemaname", Text), ("viewname", Text), ("viewowner", Text), ("definition", Text)], rows)
        }
        ("pg_catalog", "pg_rules") | ("pg_catalog", "pg_rewrite") => {
            let mut rules = Vec::new();
            let mut rewrite = Vec::new();
            for r in p.catalog.database_rules(db) {
                let (ev, ev_type) = match r.event {
                    crate::catalog::RuleEvent::Update => ("UPDATE", "2"),
                    crate::catalog::RuleEvent::Insert => ("INSERT", "3"),
                    crate::catalog::RuleEvent::Delete => ("DELETE", "4"),
                };
                let actions = match r.actions.as_slice() {
                    [] => "NOTHING".to_string(),
                    [a] => a.clone(),
                    many => format!("({})", many.join("; ")),
                };
                let cond = r.condition.as_ref().map(|c| format!(" WHERE {c}")).unwrap_or_default();
                let def = format!(
                    "CREATE RULE {} AS ON {ev} TO {}{cond} DO {}{actions};",
                    quote_ident(&r.name),
                    quote_ident(&r.table),
                    if r.instead { "INSTEAD " } else { "" }
                );
                let ev_class = p.catalog.table(db, &r.table).map(|d| table_oid(d.id)).unwrap_or(0);
                rules.push(vec![t("public"), t(&r.table), t(&r.name), t(&def)]);
                rewrite.push(vec![
                    Value::Int(table_oid(r.id)),
                    t(&r.name),
                    Value::Int(ev_class),
                    t(ev_type),
                    t("O"),
                    Value::Bool(r.instead),
                    r.condition.as_deref().map(t).unwrap_or(Value::Null),
                    t(&r.actions.join("; ")),
                ]);
            }
            if name == "pg_rules" {
                table(&[("schemaname", Text), ("tablename", Text), ("rulename", Text), ("definition", Text)], rules)
            } else {
                table(
                    &[
                        ("oid", Oid),
                        ("rulename", Text),
                        ("ev_class", Oid),
                        ("ev_type", Text),
                        ("ev_enabled", Text),
                        ("is_instead", Bool),
                        ("ev_qual", Text),
                        ("ev_action", Text),
                    ],
                    rewrite,
                )
            }
        }
        ("pg_catalog", "pg_description") => {
            table(&[("objoid", Int8), ("classoid", Int8), ("objsubid", Int4), ("description", Text)], vec![])
        }
        ("pg_catalog", "pg_policy") => table(
            &[
                ("oid", Int8),
                ("polname", Text),
                ("polrelid", Int8),
                ("polcmd", Text),
                ("polpermissive", Bool),
                ("polroles", Text),
                ("polqual", Text),
                ("polwithcheck", Text),
            ],
            vec![],
        ),
        ("pg_catalog", "pg_statistic_ext") => table(
            &[("oid", Int8), ("stxrelid", Int8), ("stxname", Text), ("stxnamespace", Int8), ("stxkind", Text), ("stxstattarget", Int4)],
            vec![],
        ),
        ("pg_catalog", "pg_publication") => table(&[("oid", Int8), ("pubname", Text), ("puballtables", Bool)], vec![]),
        ("pg_catalog", "pg_publication_namespace") => table(&[("oid", Int8), ("pnpubid", Int8), ("pnnspid", Int8)], vec![]),
        ("pg_catalog", "pg_publication_rel") => {
            table(&[("oid", Int8), ("prpubid", Int8), ("prrelid", Int8), ("prqual", Text), ("prattrs", Text)], vec![])
        }
        ("pg_catalog", "pg_stat_ssl") => {
            // One row per session, joined with pg_stat_activity by pid.
            let rows = p
                .ctx
                .activity
                .rows()
                .into_iter()
                .map(|r| {
                    let (ssl, version, cipher, bits) = match &r.ssl {
                        Some(s) => (true, t(&s.version), t(&s.cipher), Value::Int(s.bits as i64)),
                        None => (false, Value::Null, Value::Null, Value::Null),
                    };
                    vec![Value::Int(r.pid as i64), Value::Bool(ssl), version, cipher, bits, Value::Null, Value::Null, Value::Null]
                })
                .collect();
            table(
                &[
                    ("pid", Int4),
                    ("ssl", Bool),
                    ("version", Text),
                    ("cipher", Text),
                    ("bits", Int4),
                    ("client_dn", Text),
                    ("client_serial", Text),
                    ("issuer_dn", Text),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_stat_activity") | ("information_schema", "processlist") => {
            let ts = |t: i64| Value::Timestamp(t);
            let rows = p
                .ctx
                .activity
                .rows()
                .into_iter()
                .map(|r| {
                    vec![
                        Value::Int(r.pid as i64),
                        t(&r.database),
                        t(&r.user),
                        t(&r.application_name),
                        t(&r.state),
                        t(&r.query),
                        ts(r.backend_start),
                        r.query_start.map(ts).unwrap_or(Value::Null),
                        r.query_start
                            .filter(|_| r.state == "active")
                            .map(|q| Value::Interval(crate::types::Interval::from_micros(p.ctx.statement_ts.max(q) - q)))
                            .unwrap_or(Value::Null),
                    ]
                })
                .collect();
            table(
                &[
                    ("pid", Int4),
                    ("datname", Text),
                    ("usename", Text),
                    ("application_name", Text),
                    ("state", Text),
                    ("query", Text),
                    ("backend_start", TimestampTz),
                    ("query_start", TimestampTz),
                    ("running_for", Interval),
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_settings") => {
            let mut rows: Vec<Vec<Value>> = p.ctx.settings.iter().map(|(k, v)| vec![t(k), t(v)]).collect();
            // Compile-time limits drivers read (pgjdbc's getMaxIndexKeys), PostgreSQL's values.
            for (k, v) in [("max_index_keys", "32"), ("max_identifier_length", "63"), ("max_function_args", "100")] {
                if !p.ctx.settings.contains_key(k) {
                    rows.push(vec![t(k), t(v)]);
                }
            }
            table(&[("name", Text), ("setting", Text)], rows)
        }
        // TDengine's tables (engineer tdengine).
        ("information_schema", n) if super::tdengine::is_system_table(n) => super::tdengine::system_table(p, n),
        _ => bail!(UndefinedTable, "relation \"{schema}.{name}\" does not exist"),
    }
}
