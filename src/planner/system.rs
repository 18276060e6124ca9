//! System tables: `information_schema.*` and the parts of `pg_catalog`
//! that psql, drivers and Grafana read. Built at plan time from the catalog.

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};

use super::Planner;
use crate::error::Result;
use crate::exec::plan::{arrow_schema, Plan, PlanColumn};
use crate::types::{values_to_array, SqlType, Value};
use crate::bail;

fn table(cols: &[(&str, SqlType)], rows: Vec<Vec<Value>>) -> Result<(Plan, Vec<PlanColumn>)> {
    let columns: Vec<PlanColumn> = cols.iter().map(|(n, t)| PlanColumn::new(*n, *t)).collect();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, (_, t)) in cols.iter().enumerate() {
        let vals: Vec<Value> = rows.iter().map(|r| r[i].clone()).collect();
        arrays.push(values_to_array(&vals, *t)?);
    }
    let batch = RecordBatch::try_new_with_options(arrow_schema(&columns), arrays, &RecordBatchOptions::new().with_row_count(Some(rows.len())))?;
    Ok((Plan::Memory { batches: vec![batch], columns: columns.clone() }, columns))
}

fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// OID of a table: its id offset past PostgreSQL's built-in range.
pub fn table_oid(id: u32) -> i64 {
    16384 + id as i64
}

pub fn system_table(p: &Planner, schema: &str, name: &str) -> Result<(Plan, Vec<PlanColumn>)> {
    use SqlType::*;
    let db = p.database.as_str();
    match (schema, name) {
        ("information_schema", "tables") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                rows.push(vec![t(db), t("public"), t(&tdef.name), t("BASE TABLE")]);
            }
            for v in p.catalog.views(db) {
                rows.push(vec![t(db), t("public"), t(&v.name), t("VIEW")]);
            }
            table(&[("table_catalog", Text), ("table_schema", Text), ("table_name", Text), ("table_type", Text)], rows)
        }
        ("information_schema", "columns") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                for (i, c) in tdef.columns.iter().enumerate() {
                    let role = if tdef.time_index == Some(i) { "TIMESTAMP" } else if tdef.primary_key.contains(&i) { "TAG" } else { "FIELD" };
                    rows.push(vec![
                        t(db),
                        t("public"),
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
                &[("table_catalog", Text), ("table_schema", Text), ("table_name", Text), ("column_name", Text), ("ordinal_position", Int4), ("data_type", Text), ("is_nullable", Text), ("column_default", Text), ("semantic_type", Text)],
                rows,
            )
        }
        ("information_schema", "schemata") => table(&[("catalog_name", Text), ("schema_name", Text)], vec![vec![t(db), t("public")], vec![t(db), t("information_schema")], vec![t(db), t("pg_catalog")]]),
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
                ],
                rows,
            )
        }
        ("pg_catalog", "pg_namespace") => table(&[("oid", Int8), ("nspname", Text)], vec![vec![Value::Int(11), t("pg_catalog")], vec![Value::Int(2200), t("public")], vec![Value::Int(13000), t("information_schema")]]),
        ("pg_catalog", "pg_database") => {
            let rows = p.catalog.databases().iter().enumerate().map(|(i, d)| vec![Value::Int(16000 + i as i64), t(d), Value::Int(6), t("C"), t("C"), Value::Bool(false), Value::Bool(true), Value::Int(-1)]).collect();
            table(&[("oid", Int8), ("datname", Text), ("encoding", Int4), ("datcollate", Text), ("datctype", Text), ("datistemplate", Bool), ("datallowconn", Bool), ("datconnlimit", Int4)], rows)
        }
        ("pg_catalog", "pg_class") => {
            let mut rows = Vec::new();
            for tdef in p.catalog.tables(db) {
                rows.push(vec![Value::Int(table_oid(tdef.id)), t(&tdef.name), Value::Int(2200), t("r"), t("p"), Value::Float(0.0), Value::Bool(false)]);
            }
            table(&[("oid", Int8), ("relname", Text), ("relnamespace", Int8), ("relkind", Text), ("relpersistence", Text), ("reltuples", Float4), ("relhasindex", Bool)], rows)
        }
        ("pg_catalog", "pg_type") => {
            let types = [Bool, Int2, Int4, Int8, Float4, Float8, Text, Varchar, Timestamp, TimestampTz, Date, Interval];
            let rows = types.iter().map(|ty| vec![Value::Int(ty.pg_oid() as i64), t(&ty.pg_name().replace(' ', "_")), Value::Int(11), t("b"), Value::Int(0)]).collect();
            table(&[("oid", Int8), ("typname", Text), ("typnamespace", Int8), ("typtype", Text), ("typelem", Int8)], rows)
        }
        ("pg_catalog", "pg_settings") => {
            let rows = p.ctx.settings.iter().map(|(k, v)| vec![t(k), t(v)]).collect();
            table(&[("name", Text), ("setting", Text)], rows)
        }
        _ => bail!(UndefinedTable, "relation \"{schema}.{name}\" does not exist"),
    }
}
