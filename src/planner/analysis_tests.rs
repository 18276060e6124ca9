//! Analysis helpers over plans made by planning real SQL against a catalog
//! and regions in a temp dir; decompositions checked by running partial,
//! merge and final steps through the executor against the direct answer.

use arrow::array::RecordBatch;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::*;
use crate::catalog::{Catalog, ColumnDef, TableDef};
use crate::exec::mock::{self, batch, columns};
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::planner::logical::LogicalPlan;
use crate::planner::{Params, Planner};
use crate::storage::{region_id, RegionDescriptor, StorageConfig, StorageEngine, StorageTuning};
use crate::types::format_value;

struct Fixture {
    _dir: tempfile::TempDir,
    catalog: Catalog,
    storage: StorageEngine,
}

/// cpu(host text, region text, ts timestamp TIME INDEX, usage float8,
/// n int8, ok bool, seen timestamp, PRIMARY KEY (host, region)) and
/// t2(host text, v int8), one region each.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(&dir.path().join("catalog")).unwrap();
    let tuning = StorageTuning { background_interval_ms: 0, ..Default::default() };
    let storage =
        StorageEngine::open_tuned(&dir.path().join("regions"), StorageConfig { wal_fsync: false, ..Default::default() }, tuning).unwrap();
    let c = |name: &str, ty: SqlType| ColumnDef {
        name: name.into(),
        ty,
        nullable: true,
        default: None,
        precision: None,
        typmod: None,
        user_type: None,
    };
    let tables = [
        (
            "cpu",
            vec![
                c("host", SqlType::Text),
                c("region", SqlType::Text),
                c("ts", SqlType::Timestamp),
                c("usage", SqlType::Float8),
                c("n", SqlType::Int8),
                c("ok", SqlType::Bool),
                c("seen", SqlType::Timestamp),
            ],
            Some(2),
            vec![0, 1],
        ),
        ("t2", vec![c("host", SqlType::Text), c("v", SqlType::Int8)], None, vec![]),
    ];
    for (name, cols, time_index, primary_key) in tables {
        let def = TableDef {
            id: catalog.next_table_id().unwrap(),
            database: "public".into(),
            name: name.into(),
            columns: cols,
            time_index,
            primary_key,
            append_mode: false,
            ttl_ms: None,
            ttl_text: None,
            regions: 1,
            partition: Default::default(),
            inherits: vec![],
            checks: vec![],
            triggers: Vec::new(),
            row_security: Default::default(),
        };
        let fields: Vec<PlanColumn> = def.columns.iter().map(|c| PlanColumn::new(&c.name, c.ty)).collect();
        let desc = RegionDescriptor {
            table_name: def.name.clone(),
            schema: arrow_schema(&fields),
            primary_key: def.primary_key.clone(),
            time_index: def.time_index,
            append_mode: false,
            ttl_ms: None,
        };
        storage.open_region(region_id(def.id, 0), desc).unwrap();
        catalog.create_table(def).unwrap();
    }
    Fixture { _dir: dir, catalog, storage }
}

impl Fixture {
    /// The logical plan of one query as a session rewrites it (bind, push
    /// filters down, prune columns), but without constant folding: analysis
    /// must see `now()` as written, not the value it folds to.
    fn logical(&self, sql: &str) -> LogicalPlan {
        let stmt = Parser::new(&PostgreSqlDialect {}).try_with_sql(sql).unwrap().parse_statement().unwrap();
        let sqlparser::ast::Statement::Query(q) = stmt else { panic!("not a query: {sql}") };
        let planner = self.planner();
        let logical = planner.plan_query(&q, None).unwrap();
        crate::planner::rewrite::prune::prune_columns(crate::planner::rewrite::pushdown::push_down_filters(logical))
    }

    fn planner(&self) -> Planner<'_> {
        Planner::new(&self.catalog, &self.storage, "public", mock::ctx(), Params::default())
    }

    /// The physical plan of [`Fixture::logical`].
    fn plan(&self, sql: &str) -> Plan {
        crate::planner::physical::physical_plan(&self.logical(sql), &self.planner().ctx).unwrap()
    }

    /// The aggregation of a query, read from its logical plan; the physical
    /// plan must read the same.
    fn shape(&self, sql: &str) -> AggregateShape {
        let logical = analyze_aggregate(&self.logical(sql)).unwrap_or_else(|| panic!("no aggregate in {sql}"));
        let physical = analyze_aggregate(&self.plan(sql)).unwrap_or_else(|| panic!("no physical aggregate in {sql}"));
        assert_eq!(
            logical.group_keys.iter().map(|k| (&k.expr, &k.kind)).collect::<Vec<_>>(),
            physical.group_keys.iter().map(|k| (&k.expr, &k.kind)).collect::<Vec<_>>(),
            "{sql}"
        );
        assert_eq!(logical.input_columns, physical.input_columns, "{sql}");
        assert_eq!(
            logical.aggregates.iter().map(|(a, d)| (a, d.as_ref().err())).collect::<Vec<_>>(),
            physical.aggregates.iter().map(|(a, d)| (a, d.as_ref().err())).collect::<Vec<_>>(),
            "{sql}"
        );
        logical
    }

    /// The kind of the single GROUP BY key of `SELECT <key>, count(*) FROM cpu GROUP BY 1`.
    fn key(&self, key: &str) -> GroupKeyKind {
        let s = self.shape(&format!("SELECT {key}, count(*) FROM cpu GROUP BY 1"));
        assert_eq!(s.group_keys.len(), 1);
        s.group_keys[0].kind.clone()
    }

    fn window(&self, key: &str) -> TimeWindow {
        match self.key(key) {
            GroupKeyKind::TimeWindow(w) => w,
            other => panic!("{key} is not a time window: {other:?}"),
        }
    }
}

fn ts(s: &str) -> i64 {
    crate::types::parse_timestamp(s).unwrap()
}

const MINUTE: i64 = 60_000_000;

#[test]
fn source_columns_follow_scans_projections_and_joins() {
    let f = fixture();
    let sql = "SELECT host AS h, ts, usage + 1, seen, n FROM cpu WHERE usage > 0";
    assert_eq!(source_columns(&f.logical(sql)), source_columns(&f.plan(sql)));
    let cols = source_columns(&f.plan(sql));
    let role = |c: &Option<SourceColumn>| c.as_ref().map(|c| (c.column.clone(), c.role));
    assert_eq!(
        cols.iter().map(role).collect::<Vec<_>>(),
        vec![
            Some(("host".into(), ColumnRole::Tag)),
            Some(("ts".into(), ColumnRole::TimeIndex)),
            None,
            Some(("seen".into(), ColumnRole::Field)),
            Some(("n".into(), ColumnRole::Field)),
        ]
    );
    let cols = source_columns(&f.plan("SELECT t2.v, cpu.region FROM cpu JOIN t2 ON cpu.host = t2.host"));
    assert_eq!(
        cols.iter().map(role).collect::<Vec<_>>(),
        vec![Some(("v".into(), ColumnRole::Field)), Some(("region".into(), ColumnRole::Tag))]
    );
    assert_eq!(cols[0].as_ref().unwrap().table, "t2");
    assert!(source_columns(&f.plan("SELECT 1 UNION SELECT 2")).iter().all(|c| c.is_none()));
}

#[test]
fn recognises_time_buckets_over_the_time_index() {
    let f = fixture();
    let micros = |w: &TimeWindow| match w.width {
        WindowWidth::Micros(us) => us,
        WindowWidth::Months(_) => panic!("months"),
    };
    let w = f.window("date_bin(INTERVAL '5 minutes', ts, TIMESTAMP '2024-01-01 00:02:00')");
    assert_eq!((w.kind, micros(&w), w.origin), (WindowKind::DateBin, 5 * MINUTE, ts("2024-01-01 00:02:00")));
    let w = f.window("date_bin('15 seconds', ts)");
    assert_eq!((w.kind, micros(&w), w.origin), (WindowKind::DateBin, 15_000_000, 0));
    let w = f.window("time_bucket('1 hour', ts)");
    assert_eq!((w.kind, micros(&w)), (WindowKind::TimeBucket, 60 * MINUTE));
    let w = f.window("date_trunc('minute', ts)");
    assert_eq!((w.kind, micros(&w)), (WindowKind::DateTrunc, MINUTE));
    let w = f.window("date_trunc('week', ts)");
    assert_eq!((micros(&w), w.origin), (7 * 1440 * MINUTE, ts("1970-01-05 00:00:00")));
    assert_eq!(f.window("date_trunc('quarter', ts)").width, WindowWidth::Months(3));
    assert_eq!(f.window("date_trunc('MONTH', ts)").width, WindowWidth::Months(1));
    let w = f.window("floor(extract(epoch from ts) / 60) * 60");
    assert_eq!((w.kind, micros(&w), w.origin), (WindowKind::EpochMath, MINUTE, 0));
    assert_eq!(micros(&f.window("floor(extract(epoch from ts) / 300)")), 5 * MINUTE);
    let w = f.window("extract(epoch from ts)::bigint / 60 * 60");
    assert_eq!((micros(&w), w.origin), (MINUTE, -500_000));
    let w = f.window("(extract(epoch from ts) * 1000)::bigint / 60000 * 60000");
    assert_eq!((micros(&w), w.origin), (MINUTE, -500));
    let w = f.window("tumble(ts, '1 minute')");
    assert_eq!((w.kind, micros(&w), w.origin), (WindowKind::Tumble, MINUTE, 0));
    let w = f.window("tumble_end(ts, INTERVAL '5 minutes', TIMESTAMP '2024-01-01 00:02:00')");
    assert_eq!((w.kind, micros(&w), w.origin), (WindowKind::Tumble, 5 * MINUTE, ts("2024-01-01 00:02:00")));
    assert_eq!(f.window("tumble_start(ts, '1 hour')").kind, WindowKind::Tumble);
    // A window of a window's cast is still the window.
    assert_eq!(micros(&f.window("date_trunc('hour', ts)::timestamptz")), 60 * MINUTE);
}

#[test]
fn other_group_keys_are_tags_columns_or_expressions() {
    let f = fixture();
    assert!(matches!(f.key("host"), GroupKeyKind::Tag(SourceColumn { ref column, .. }) if column == "host"));
    assert!(matches!(f.key("n"), GroupKeyKind::Column(SourceColumn { role: ColumnRole::Field, .. })));
    assert!(matches!(f.key("ts"), GroupKeyKind::Column(SourceColumn { role: ColumnRole::TimeIndex, .. })));
    // Not over the time index, not a fixed window, or not constant.
    for e in [
        "date_trunc('hour', seen)",
        "date_part('hour', ts)",
        "floor(extract(epoch from ts) / 60) * 30",
        "date_bin(INTERVAL '1 minute', ts, seen)",
        "extract(epoch from ts) / 60",
        "upper(host)",
    ] {
        assert_eq!(f.key(e), GroupKeyKind::Expr, "{e}");
    }
    let s = f.shape("SELECT host, date_bin(INTERVAL '1 minute', ts) AS w, region, max(usage) FROM cpu GROUP BY host, w, region");
    let kinds: Vec<&str> = s
        .group_keys
        .iter()
        .map(|k| match k.kind {
            GroupKeyKind::TimeWindow(_) => "window",
            GroupKeyKind::HopWindow(_) => "hop",
            GroupKeyKind::Tag(_) => "tag",
            GroupKeyKind::Column(_) => "column",
            GroupKeyKind::Expr => "expr",
        })
        .collect();
    assert_eq!(kinds, vec!["tag", "window", "tag"]);
    // hop() as a key: the binder expands the rows; the key is recognised
    // with its slide, size and origin.
    let hs = f.shape("SELECT host, hop(ts, INTERVAL '1 minute', INTERVAL '5 minutes') AS w, count(*) FROM cpu GROUP BY host, w");
    let hop = hs.group_keys.iter().find_map(|k| match &k.kind {
        GroupKeyKind::HopWindow(h) => Some(h.clone()),
        _ => None,
    });
    let hop = hop.expect("hop key recognised");
    assert_eq!((hop.slide, hop.size, hop.origin), (60_000_000, 300_000_000, 0));
    let ws: Vec<(i64, i64)> = hop.windows(90_000_000).collect();
    assert_eq!(ws.len(), 5);
    assert_eq!(ws[0], (60_000_000, 360_000_000));
    assert_eq!(ws[4], (-180_000_000, 120_000_000));
    assert_eq!(s.time_window().unwrap().kind, WindowKind::DateBin);
    assert!(s.decomposable());
    // The aggregate is found under HAVING, ORDER BY and LIMIT.
    let s = f.shape("SELECT host, count(*) FROM cpu GROUP BY host HAVING count(*) > 1 ORDER BY 2 DESC LIMIT 3");
    assert_eq!(s.group_keys.len(), 1);
    assert!(analyze_aggregate(&f.plan("SELECT host FROM cpu")).is_none());
}

/// Evaluate a group key over the time index for each timestamp.
fn eval_key(f: &Fixture, key: &str, stamps: &[i64]) -> Vec<String> {
    let plan = f.plan(&format!("SELECT {key}, count(*) FROM cpu GROUP BY 1"));
    let Some(Plan::Aggregate { input, group_by, .. }) = find_aggregate(&plan) else { panic!("no aggregate") };
    let cols = input.columns().to_vec();
    let ti = source_columns(input.as_ref()).iter().position(|c| c.as_ref().is_some_and(|c| c.role == ColumnRole::TimeIndex)).unwrap();
    let rows: Vec<Vec<Value>> =
        stamps.iter().map(|t| (0..cols.len()).map(|i| if i == ti { Value::Timestamp(*t) } else { Value::Null }).collect()).collect();
    let b: RecordBatch = batch(&cols, &rows);
    let out = group_by[0].eval(&b, &mock::ctx()).unwrap();
    (0..stamps.len()).map(|i| format_value(&value_at(out.as_ref(), i))).collect()
}

fn find_aggregate(plan: &Plan) -> Option<&Plan> {
    match plan {
        Plan::Aggregate { .. } => Some(plan),
        Plan::Project { input, .. } | Plan::Filter { input, .. } | Plan::Sort { input, .. } | Plan::Limit { input, .. } => {
            find_aggregate(input)
        }
        _ => None,
    }
}

#[test]
fn window_bounds_agree_with_the_executor() {
    let f = fixture();
    // Timestamps around boundaries, before 1970 and in leap years, each
    // with its neighbours one microsecond away.
    let mut stamps = Vec::new();
    for s in [
        "2024-02-29 23:59:59.999999",
        "2024-03-01 00:00:00",
        "2026-01-31 12:34:56.789",
        "2023-12-31 23:59:59",
        "1999-12-31 23:59:59.5",
        "2000-01-03 00:00:00",
        "2026-12-01 17:13:27.123456",
        "1969-12-31 23:59:59.75",
        "1901-01-01 00:00:00",
        "1970-01-01 00:00:00",
    ] {
        let t = ts(s);
        stamps.extend([t - 1, t, t + 1]);
    }
    for key in [
        "date_bin(INTERVAL '5 minutes', ts, TIMESTAMP '2024-01-01 00:02:00')",
        "date_bin(INTERVAL '7 seconds', ts)",
        "time_bucket('90 minutes', ts)",
        "tumble(ts, '13 minutes', '2024-02-29 23:59:00')",
        "tumble_end(ts, INTERVAL '1 day')",
        "date_trunc('second', ts)",
        "date_trunc('hour', ts)",
        "date_trunc('day', ts)",
        "date_trunc('week', ts)",
        "date_trunc('month', ts)",
        "date_trunc('quarter', ts)",
        "date_trunc('year', ts)",
        "date_trunc('decade', ts)",
        "date_trunc('century', ts)",
        "floor(extract(epoch from ts) / 60) * 60",
        "floor(extract(epoch from ts) / 3600)",
        "extract(epoch from ts)::bigint / 60 * 60",
    ] {
        let w = f.window(key);
        let before_1970 = w.kind == WindowKind::EpochMath && key.contains("::bigint");
        for &t in &stamps {
            let (s, e) = (w.start(t), w.end(t));
            // Integer division truncates toward zero: not these windows before 1970.
            if before_1970 && s <= 0 {
                continue;
            }
            assert!(s <= t && t < e, "{key}: {t} not in [{s}, {e})");
            let v = eval_key(&f, key, &[t, s, e - 1, s - 1, e]);
            assert_eq!(v[0], v[1], "{key}: window start {s} of {t}");
            assert_eq!(v[0], v[2], "{key}: window end {e} of {t}");
            assert_ne!(v[0], v[3], "{key}: {s} is not the first instant of the window of {t}");
            assert_ne!(v[0], v[4], "{key}: {e} is not past the window of {t}");
        }
    }
}

// ---------------------------------------------------------------------------
// Decomposition

fn agg_plan(input: Vec<RecordBatch>, cols: &[PlanColumn], group_by: Vec<Expr>, aggs: Vec<AggCall>) -> Plan {
    let mut out: Vec<PlanColumn> = group_by.iter().enumerate().map(|(i, g)| PlanColumn::new(format!("g{i}"), g.ty())).collect();
    out.extend(aggs.iter().enumerate().map(|(i, a)| PlanColumn::new(format!("a{i}"), a.ty)));
    Plan::Aggregate { input: Box::new(Plan::Memory { batches: input, columns: cols.to_vec() }), group_by, aggs, columns: out }
}

fn text_rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            rows.push(b.columns().iter().map(|c| format_value(&value_at(c.as_ref(), i))).collect());
        }
    }
    rows.sort();
    rows
}

/// Floats compare to 12 significant digits (the split sums squares where
/// the direct path runs Welford's update).
fn close(a: &[Vec<String>], b: &[Vec<String>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.iter().zip(y).all(|(p, q)| {
                p == q
                    || match (p.parse::<f64>(), q.parse::<f64>()) {
                        (Ok(p), Ok(q)) => (p - q).abs() <= 1e-12 * p.abs().max(q.abs()).max(1.0),
                        _ => false,
                    }
            })
        })
}

/// Direct aggregation vs partial per chunk, merge over all partial rows,
/// then finish.
fn check_split(chunks: &[Vec<Vec<Value>>], cols: &[PlanColumn], group_by: Vec<Expr>, call: AggCall) {
    let ctx = mock::ctx();
    let batches: Vec<RecordBatch> = chunks.iter().map(|c| batch(cols, c)).collect();
    let direct = crate::exec::collect(&agg_plan(batches.clone(), cols, group_by.clone(), vec![call.clone()]), &ctx).unwrap();
    let d = decompose(&call).unwrap_or_else(|e| panic!("{:?}: {}", call.func, e.reason));
    let k = group_by.len();
    let mut partials = Vec::new();
    for b in &batches {
        partials.extend(crate::exec::collect(&agg_plan(vec![b.clone()], cols, group_by.clone(), d.partial.clone()), &ctx).unwrap());
    }
    let pcols: Vec<PlanColumn> = agg_plan(vec![], cols, group_by.clone(), d.partial.clone()).columns().to_vec();
    let keys: Vec<Expr> = (0..k).map(|i| Expr::Column { index: i, ty: pcols[i].ty }).collect();
    let merged = agg_plan(partials, &pcols, keys.clone(), d.merge_calls(k));
    let mut exprs = keys;
    exprs.push(d.finish_at(k));
    let mut out = merged.columns()[..k].to_vec();
    out.push(PlanColumn::new("value", call.ty));
    let split = Plan::Project { input: Box::new(merged), exprs, columns: out };
    let split = crate::exec::collect(&split, &ctx).unwrap();
    let (a, b) = (text_rows(&direct), text_rows(&split));
    assert!(close(&a, &b), "{:?} distinct={} filter={}\ndirect {a:?}\nsplit  {b:?}", call.func, call.distinct, call.filter.is_some());
}

fn call(func: AggFunc, arg: Option<Expr>, ty: SqlType) -> AggCall {
    AggCall { func, args: arg.into_iter().collect(), distinct: false, filter: None, ty }
}

#[test]
fn split_aggregates_match_direct_aggregation() {
    let cols = columns(&[("g", SqlType::Text), ("i", SqlType::Int4), ("x", SqlType::Float8), ("b", SqlType::Bool)]);
    let r = |g: &str, i: Option<i64>, x: Option<f64>, b: Option<bool>| {
        vec![
            Value::Text(g.into()),
            i.map(Value::Int).unwrap_or(Value::Null),
            x.map(Value::Float).unwrap_or(Value::Null),
            b.map(Value::Bool).unwrap_or(Value::Null),
        ]
    };
    // Group "n" has only NULL values; group "c" only appears in the last chunk;
    // the middle chunk is empty.
    let chunks = vec![
        vec![r("a", Some(1), Some(1.5), Some(true)), r("b", Some(10), Some(-2.0), Some(false)), r("n", None, None, None)],
        vec![],
        vec![
            r("a", Some(4), Some(2.25), Some(false)),
            r("a", Some(4), None, Some(true)),
            r("b", Some(7), Some(1e3), None),
            r("c", Some(-3), Some(0.1), Some(true)),
            r("n", None, None, None),
        ],
    ];
    let (i, x, b) = (
        Expr::Column { index: 1, ty: SqlType::Int4 },
        Expr::Column { index: 2, ty: SqlType::Float8 },
        Expr::Column { index: 3, ty: SqlType::Bool },
    );
    use AggFunc::*;
    let f8 = SqlType::Float8;
    let mut calls = vec![
        call(CountStar, None, SqlType::Int8),
        call(Count, Some(x.clone()), SqlType::Int8),
        call(Sum, Some(i.clone()), SqlType::Int8),
        call(Sum, Some(x.clone()), f8),
        call(Avg, Some(i.clone()), f8),
        call(Avg, Some(x.clone()), f8),
        call(Min, Some(x.clone()), f8),
        call(Max, Some(i.clone()), SqlType::Int4),
        call(BoolAnd, Some(b.clone()), SqlType::Bool),
        call(BoolOr, Some(b.clone()), SqlType::Bool),
        call(VarPop, Some(x.clone()), f8),
        call(VarSamp, Some(i.clone()), f8),
        call(StddevPop, Some(i.clone()), f8),
        call(StddevSamp, Some(x.clone()), f8),
    ];
    let mut filtered = call(Avg, Some(i.clone()), f8);
    filtered.filter = Some(Expr::Binary {
        op: BinOp::Gt,
        left: Box::new(i.clone()),
        right: Box::new(Expr::Literal { value: Value::Int(1), ty: SqlType::Int4 }),
        ty: SqlType::Bool,
    });
    calls.push(filtered);
    let mut min_distinct = call(Min, Some(i.clone()), SqlType::Int4);
    min_distinct.distinct = true;
    calls.push(min_distinct);
    for c in calls {
        check_split(&chunks, &cols, vec![Expr::Column { index: 0, ty: SqlType::Text }], c.clone());
        // Without GROUP BY, and over no rows at all (count is 0, the rest NULL).
        check_split(&chunks, &cols, vec![], c.clone());
        check_split(&[vec![]], &cols, vec![], c);
    }
}

#[test]
fn avg_partial_state_is_sum_and_count() {
    let x = Expr::Column { index: 0, ty: SqlType::Int4 };
    let d = decompose(&call(AggFunc::Avg, Some(x), SqlType::Float8)).unwrap();
    assert_eq!(
        d.partial.iter().map(|p| (p.func, p.ty)).collect::<Vec<_>>(),
        vec![(AggFunc::Sum, SqlType::Float8), (AggFunc::Count, SqlType::Int8)]
    );
    assert_eq!(d.merge, vec![AggFunc::Sum, AggFunc::Sum]);
    assert_eq!(d.finish.ty(), SqlType::Float8);
    let v = decompose(&call(AggFunc::StddevSamp, Some(Expr::Column { index: 0, ty: SqlType::Float8 }), SqlType::Float8)).unwrap();
    assert_eq!(v.partial.iter().map(|p| p.func).collect::<Vec<_>>(), vec![AggFunc::Count, AggFunc::Sum, AggFunc::Sum]);
}

#[test]
fn some_aggregates_cannot_be_split() {
    let t = Expr::Column { index: 0, ty: SqlType::Text };
    let sep = Expr::Literal { value: Value::Text(",".into()), ty: SqlType::Text };
    let s = AggCall { func: AggFunc::StringAgg, args: vec![t.clone(), sep], distinct: false, filter: None, ty: SqlType::Text };
    assert!(decompose(&s).unwrap_err().reason.contains("order"));
    for f in [AggFunc::Count, AggFunc::Sum, AggFunc::Avg] {
        let mut c = call(f, Some(Expr::Column { index: 1, ty: SqlType::Int8 }), SqlType::Int8);
        c.distinct = true;
        assert!(decompose(&c).unwrap_err().reason.contains("DISTINCT"), "{f:?}");
    }
    let f = fixture();
    let s = f.shape("SELECT host, count(DISTINCT n), string_agg(region, ','), sum(n) FROM cpu GROUP BY host");
    assert!(!s.decomposable());
    assert_eq!(s.aggregates.iter().map(|(_, d)| d.is_ok()).collect::<Vec<_>>(), vec![false, false, true]);
}

// ---------------------------------------------------------------------------
// Append-only and volatility

#[test]
fn append_only_plans() {
    let f = fixture();
    for sql in [
        "SELECT host, usage * 2 FROM cpu WHERE usage > 1",
        "SELECT cpu.host, t2.v FROM cpu JOIN t2 ON cpu.host = t2.host",
        "SELECT host FROM cpu UNION ALL SELECT host FROM t2",
        "SELECT host, ts FROM cpu ORDER BY ts",
        "SELECT date_bin(INTERVAL '1 minute', ts) FROM cpu",
    ] {
        let p = f.plan(sql);
        assert_eq!(not_append_only(&p), None, "{sql}");
        assert!(is_append_only(&p));
        assert_eq!(not_append_only(&f.logical(sql)), None, "logical {sql}");
    }
    for (sql, why) in [
        ("SELECT host, count(*) FROM cpu GROUP BY host", "aggregate"),
        ("SELECT count(*) FROM cpu", "aggregate"),
        ("SELECT DISTINCT host FROM cpu", "DISTINCT"),
        ("SELECT DISTINCT ON (host) host, ts FROM cpu ORDER BY host, ts", "DISTINCT"),
        ("SELECT host, row_number() OVER (ORDER BY ts) FROM cpu", "window"),
        ("SELECT host FROM cpu ORDER BY ts LIMIT 5", "LIMIT"),
        ("SELECT host FROM cpu LIMIT 5", "LIMIT"),
        ("SELECT cpu.host, t2.v FROM cpu LEFT JOIN t2 ON cpu.host = t2.host", "outer join"),
        ("SELECT host FROM cpu UNION SELECT host FROM t2", "UNION"),
        ("SELECT host FROM cpu EXCEPT SELECT host FROM t2", "EXCEPT"),
        ("SELECT host, (SELECT max(v) FROM t2) FROM cpu", ""),
        ("SELECT host FROM cpu WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.host = cpu.host)", ""),
    ] {
        let r = not_append_only(&f.plan(sql)).unwrap_or_else(|| panic!("{sql} is not append-only"));
        assert!(r.contains(why), "{sql}: {r}");
        let r = not_append_only(&f.logical(sql)).unwrap_or_else(|| panic!("logical {sql} is not append-only"));
        assert!(r.contains(why), "logical {sql}: {r}");
    }
}

#[test]
fn volatility_of_plans() {
    let f = fixture();
    for (sql, v) in [
        ("SELECT abs(n), upper(host) FROM cpu WHERE usage > 1", Volatility::Immutable),
        ("SELECT host FROM cpu WHERE ts > now() - INTERVAL '1 hour'", Volatility::Stable),
        ("SELECT current_database()", Volatility::Stable),
        ("SELECT random()", Volatility::Volatile),
        ("SELECT host, random() FROM cpu ORDER BY 2", Volatility::Volatile),
        ("SELECT host FROM cpu WHERE usage > (SELECT random())", Volatility::Volatile),
        ("SELECT host, clock_timestamp() FROM cpu", Volatility::Volatile),
        ("SELECT count(*) FILTER (WHERE random() < 0.5) FROM cpu", Volatility::Volatile),
    ] {
        let p = f.plan(sql);
        assert_eq!(volatility(&p), v, "{sql}");
        assert_eq!(volatility(&f.logical(sql)), v, "logical {sql}");
        assert_eq!(has_volatile(&p), v == Volatility::Volatile);
    }
    assert!(Volatility::Immutable < Volatility::Stable && Volatility::Stable < Volatility::Volatile);
}

#[test]
fn windows_survive_every_rewrite_pass() {
    // After constant folding, decorrelation, pushdown, pruning and the
    // rest, the time window and tags are still found.
    let f = fixture();
    let sql = "SELECT tumble(ts, INTERVAL '1 minute' * 5, TIMESTAMP '2024-01-01' + INTERVAL '2 minutes') AS w, host, avg(usage) \
               FROM cpu WHERE ts >= TIMESTAMP '2024-01-01' AND host = 'a' AND usage > (SELECT 1) GROUP BY 1, 2 HAVING count(*) > 1";
    let stmt = Parser::new(&PostgreSqlDialect {}).try_with_sql(sql).unwrap().parse_statement().unwrap();
    let sqlparser::ast::Statement::Query(q) = stmt else { panic!() };
    let planner = f.planner();
    let optimized = crate::planner::rewrite::optimize(planner.plan_query(&q, None).unwrap(), &planner.ctx);
    for s in [
        analyze_aggregate(&optimized).unwrap(),
        analyze_aggregate(&planner.physical(planner.plan_query(&q, None).unwrap()).unwrap()).unwrap(),
    ] {
        let w = s.time_window().expect("a window");
        assert_eq!((w.width, w.origin, w.kind), (WindowWidth::Micros(5 * MINUTE), ts("2024-01-01 00:02:00"), WindowKind::Tumble));
        assert!(matches!(s.group_keys[1].kind, GroupKeyKind::Tag(_)));
        assert!(s.decomposable());
    }
}

#[test]
fn dirty_windows_and_their_filter() {
    let f = fixture();
    let w = f.window("date_bin(INTERVAL '10 minutes', ts, TIMESTAMP '2024-01-01 00:05:00')");
    let (lo, hi) = (ts("2024-01-01 00:14:59"), ts("2024-01-01 00:35:00"));
    let starts: Vec<i64> = w.starts_between(lo, hi).collect();
    assert_eq!(starts, ["00:05", "00:15", "00:25", "00:35"].map(|m| ts(&format!("2024-01-01 {m}:00"))));
    assert_eq!(w.starts_between(hi, lo).count(), 0);
    assert_eq!(w.starts_between(lo, lo).collect::<Vec<_>>(), vec![ts("2024-01-01 00:05:00")]);
    let m = f.window("date_trunc('month', ts)");
    assert_eq!(m.starts_between(ts("2024-01-31 23:00:00"), ts("2024-03-01 00:00:00")).count(), 3);
    // The filter keeps exactly the rows of those windows.
    let pred = w.filter(lo, hi, SqlType::Timestamp);
    let cols: Vec<PlanColumn> = (0..=w.column).map(|i| PlanColumn::new(format!("c{i}"), SqlType::Timestamp)).collect();
    let stamps: Vec<i64> = (-10..60).map(|m| ts("2024-01-01 00:00:00") + m * MINUTE - 1).collect();
    let rows: Vec<Vec<Value>> = stamps.iter().map(|t| (0..=w.column).map(|_| Value::Timestamp(*t)).collect()).collect();
    let keep = pred.eval(&batch(&cols, &rows), &mock::ctx()).unwrap();
    for (i, t) in stamps.iter().enumerate() {
        let want = starts.contains(&w.start(*t));
        assert_eq!(value_at(keep.as_ref(), i), Value::Bool(want), "{t}");
    }
}

#[test]
fn delta_plans_say_which_flow_queries_merge() {
    use crate::planner::incremental::{delta_plan, Keep};
    let f = fixture();
    let w = "date_bin(INTERVAL '1 minute', ts)";
    let dp = delta_plan(&f.logical(&format!(
        "SELECT host, {w} AS m, count(*), sum(n), avg(n), min(usage), max(ts), bool_and(ok), bool_or(ok) FROM cpu WHERE n > 0 GROUP BY host, m HAVING count(*) > 1"
    )))
    .unwrap();
    assert_eq!((dp.group_count, dp.window_key), (2, 1));
    let keeps: Vec<Keep> = dp.aggs.iter().map(|a| a.keep).collect();
    // HAVING's count(*) is the select list's.
    assert_eq!(keeps, [Keep::Count, Keep::Sum, Keep::Avg, Keep::Min, Keep::Max, Keep::Min, Keep::Max]);
    // count; sum and avg: (sum, n); min / max / bool_and / bool_or: (extreme, copies); rows.
    assert_eq!(dp.partial.len(), 1 + 2 + 2 + 2 + 2 + 2 + 2 + 1, "states, then rows per group");
    assert_eq!(dp.partial[6].func, crate::exec::plan::AggFunc::MinCount);
    let dp = delta_plan(&f.logical(&format!("SELECT {w} AS m, first(usage), last(n) FROM cpu GROUP BY m"))).unwrap();
    let keeps: Vec<Keep> = dp.aggs.iter().map(|a| a.keep).collect();
    assert_eq!(keeps, [Keep::First, Keep::Last]);
    // first: (x, min(t) over non-NULL x); last: (x, max(t)).
    assert_eq!(dp.partial[1].func, crate::exec::plan::AggFunc::Min);
    assert!(dp.partial[1].filter.is_some(), "the time of a non-NULL x");
    // Float sums keep an exact sum (text form), so they merge by default.
    let dp = delta_plan(&f.logical(&format!("SELECT {w} AS m, avg(usage), sum(usage) FROM cpu GROUP BY m"))).unwrap();
    assert_eq!(dp.partial[0].func, crate::exec::plan::AggFunc::SumExact);
    assert_eq!(dp.partial[2].func, crate::exec::plan::AggFunc::SumExact);
    for (sql, why) in [
        (format!("SELECT {w} AS m, count(DISTINCT host) FROM cpu GROUP BY m"), "DISTINCT"),
        (format!("SELECT {w} AS m, string_agg(host, ',') FROM cpu GROUP BY m"), "string_agg"),
        (format!("SELECT {w} AS m, stddev(n) FROM cpu GROUP BY m"), "not kept incrementally"),
        (format!("SELECT {w} AS m, count(*) FROM cpu WHERE ts > now() - INTERVAL '1 hour' GROUP BY m"), "stable function"),
        (format!("SELECT {w} AS m, count(*) FILTER (WHERE random() < 0.5) FROM cpu GROUP BY m"), "volatile"),
        ("SELECT host, count(*) FROM cpu GROUP BY host".to_string(), "time window"),
        (format!("SELECT {w} AS m, count(*) FROM cpu GROUP BY m ORDER BY m LIMIT 3"), "LIMIT"),
        (format!("SELECT {w} AS m, count(*) FROM cpu JOIN t2 USING (host) GROUP BY m"), "one table"),
    ] {
        let r = delta_plan(&f.logical(&sql)).expect_err(&sql);
        assert!(r.contains(why), "{sql}: {r}");
    }
}
