//! Operators over prepared changes (a replaying input) and the real sled
//! state store: aggregation with retractions, left-join padding, distinct,
//! and state surviving a reopen.

use std::collections::HashMap;
use std::sync::Arc;

use super::state_table::{SledStateKv, StateKv, StateStore, StateTable};
use super::*;
use crate::exec::expr::Expr;
use crate::exec::plan::{AggCall, AggFunc, SortKey};
use crate::types::SqlType;

/// Replays one prepared batch of changes per step.
struct Replay {
    steps: Vec<Changes>,
}

impl Operator for Replay {
    fn step(&mut self, _inputs: &Inputs, _ctx: &ExecCtx) -> Result<Changes> {
        Ok(self.steps.remove(0))
    }
    fn tables<'a>(&'a mut self, _out: &mut Vec<&'a mut StateTable>) {}
    fn stats(&self, _out: &mut Vec<OpStats>) {}
}

fn col(name: &str, ty: SqlType) -> PlanColumn {
    PlanColumn { name: name.into(), qualifier: None, ty }
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

fn changes(cols: &[PlanColumn], rows: Vec<(Row, i64)>) -> Changes {
    Changes::from_rows(cols, rows).unwrap()
}

fn out(ch: Changes) -> Vec<(Row, i64)> {
    consolidate(ch.rows().into_iter().zip(ch.diff))
}

fn kv(dir: &std::path::Path) -> Arc<dyn StateKv> {
    Arc::new(SledStateKv::open(&dir.join("s")).unwrap())
}

fn renderer<'a>(store: &'a StateStore, ctx: &'a ExecCtx, instant: &'a dyn Fn(u32) -> bool) -> Renderer<'a> {
    Renderer { store, next_table: 0, instant, ctx, first_epoch: true, watermark: Default::default() }
}

/// min / max / count / sum per group under retractions: deleting the
/// extreme reads the next one from the extreme state; a group whose rows
/// all go is retracted; state survives a reopen of the store.
#[test]
fn aggregation_with_retractions() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let input = vec![col("g", SqlType::Text), col("v", SqlType::Int8)];
    let v = Expr::Column { index: 1, ty: SqlType::Int8 };
    let call = |func, ty| AggCall { func, args: vec![v.clone()], distinct: false, filter: None, ty };
    let aggs = vec![call(AggFunc::Min, SqlType::Int8), call(AggFunc::Max, SqlType::Int8), call(AggFunc::Sum, SqlType::Int8)];
    let out_cols = vec![col("g", SqlType::Text), col("lo", SqlType::Int8), col("hi", SqlType::Int8), col("s", SqlType::Int8)];
    let row = |g: &str, a: i64, b: i64, c: i64| vec![t(g), Value::Int(a), Value::Int(b), Value::Int(c)];
    let mut store = StateStore::open(kv(dir.path()), "agg").unwrap();
    let no = |_: u32| false;
    let steps = vec![
        changes(
            &input,
            vec![
                (vec![t("a"), Value::Int(5)], 1),
                (vec![t("a"), Value::Int(3)], 1),
                (vec![t("a"), Value::Int(9)], 1),
                (vec![t("b"), Value::Int(1)], 1),
            ],
        ),
        changes(&input, vec![(vec![t("a"), Value::Int(3)], -1), (vec![t("a"), Value::Int(9)], -1)]),
    ];
    let mut agg = {
        let mut r = renderer(&store, &ctx, &no);
        hash_agg::HashAgg::new(
            Box::new(Replay { steps }),
            vec![Expr::Column { index: 0, ty: SqlType::Text }],
            aggs.clone(),
            out_cols.clone(),
            false,
            None,
            &mut r,
        )
    };
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    assert_eq!(out(agg.step(&e, &ctx).unwrap()), vec![(row("a", 3, 9, 17), 1), (row("b", 1, 1, 1), 1)]);
    let mut tables = Vec::new();
    agg.tables(&mut tables);
    store.commit(1, &mut tables, vec![]).unwrap();
    assert_eq!(out(agg.step(&e, &ctx).unwrap()), vec![(row("a", 3, 9, 17), -1), (row("a", 5, 5, 5), 1)]);
    let mut tables = Vec::new();
    agg.tables(&mut tables);
    store.commit(2, &mut tables, vec![]).unwrap();
    drop(agg);
    drop(store);
    // Reopened: the last of group a goes, b gets a smaller minimum.
    let store = StateStore::open(kv(dir.path()), "agg").unwrap();
    assert_eq!(store.epoch(), 2);
    let steps = vec![changes(&input, vec![(vec![t("a"), Value::Int(5)], -1), (vec![t("b"), Value::Int(-4)], 1)])];
    let mut r = renderer(&store, &ctx, &no);
    let mut agg = hash_agg::HashAgg::new(
        Box::new(Replay { steps }),
        vec![Expr::Column { index: 0, ty: SqlType::Text }],
        aggs,
        out_cols,
        false,
        None,
        &mut r,
    );
    assert_eq!(out(agg.step(&e, &ctx).unwrap()), vec![(row("a", 5, 5, 5), -1), (row("b", -4, 1, -3), 1), (row("b", 1, 1, 1), -1)]);
}

/// A left join pads a left row while its key has no right rows and
/// retracts the padding when one arrives; NULL keys never match.
#[test]
fn left_join_padding() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let store = StateStore::open(kv(dir.path()), "join").unwrap();
    let no = |_: u32| false;
    let lcols = vec![col("k", SqlType::Text), col("x", SqlType::Int8)];
    let rcols = vec![col("k", SqlType::Text), col("y", SqlType::Int8)];
    let mut all = lcols.clone();
    all.extend(rcols.clone());
    let left = Replay {
        steps: vec![
            changes(&lcols, vec![(vec![t("a"), Value::Int(1)], 1), (vec![Value::Null, Value::Int(2)], 1)]),
            changes(&lcols, vec![]),
            changes(&lcols, vec![]),
        ],
    };
    let right = Replay {
        steps: vec![
            changes(&rcols, vec![(vec![Value::Null, Value::Int(0)], 1)]),
            changes(&rcols, vec![(vec![t("a"), Value::Int(10)], 1), (vec![t("a"), Value::Int(11)], 1)]),
            changes(&rcols, vec![(vec![t("a"), Value::Int(10)], -1), (vec![t("a"), Value::Int(11)], -1)]),
        ],
    };
    let on = vec![(Expr::Column { index: 0, ty: SqlType::Text }, Expr::Column { index: 0, ty: SqlType::Text })];
    let mut r = renderer(&store, &ctx, &no);
    let mut j = join::Join::new(Box::new(left), Box::new(right), JoinKind::Left, on, None, lcols, rcols, all, None, (None, None), &mut r);
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    let n = Value::Null;
    assert_eq!(
        out(j.step(&e, &ctx).unwrap()),
        vec![(vec![t("a"), Value::Int(1), n.clone(), n.clone()], 1), (vec![n.clone(), Value::Int(2), n.clone(), n.clone()], 1)]
    );
    assert_eq!(
        out(j.step(&e, &ctx).unwrap()),
        vec![
            (vec![t("a"), Value::Int(1), t("a"), Value::Int(10)], 1),
            (vec![t("a"), Value::Int(1), t("a"), Value::Int(11)], 1),
            (vec![t("a"), Value::Int(1), n.clone(), n.clone()], -1),
        ]
    );
    assert_eq!(
        out(j.step(&e, &ctx).unwrap()),
        vec![
            (vec![t("a"), Value::Int(1), t("a"), Value::Int(10)], -1),
            (vec![t("a"), Value::Int(1), t("a"), Value::Int(11)], -1),
            (vec![t("a"), Value::Int(1), n.clone(), n], 1),
        ]
    );
}

/// Full, semi and anti joins over the same changes: a right row waits
/// padded until its key's left side fills; the left side then empties
/// again; a semi row follows its key's right rows, an anti row their
/// absence; NULL keys never match (padded / anti rows stay).
#[test]
fn full_semi_anti_joins() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let store = StateStore::open(kv(dir.path()), "join").unwrap();
    let no = |_: u32| false;
    let lcols = vec![col("k", SqlType::Text), col("x", SqlType::Int8)];
    let rcols = vec![col("k", SqlType::Text), col("y", SqlType::Int8)];
    let n = Value::Null;
    let l = |k: Value, x: i64| vec![k, Value::Int(x)];
    let steps = |cols: &[PlanColumn], s: Vec<Vec<(Row, i64)>>| Replay { steps: s.into_iter().map(|rows| changes(cols, rows)).collect() };
    // Epoch 1: right (a, 10) and (NULL, 0); left (NULL, 2).
    // Epoch 2: left (a, 1) arrives. Epoch 3: left (a, 1) goes.
    let left = |_: ()| steps(&lcols, vec![vec![(l(n.clone(), 2), 1)], vec![(l(t("a"), 1), 1)], vec![(l(t("a"), 1), -1)]]);
    let right = |_: ()| steps(&rcols, vec![vec![(l(t("a"), 10), 1), (l(n.clone(), 0), 1)], vec![], vec![]]);
    let on = || vec![(Expr::Column { index: 0, ty: SqlType::Text }, Expr::Column { index: 0, ty: SqlType::Text })];
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    let mut r = renderer(&store, &ctx, &no);
    let mut all = lcols.clone();
    all.extend(rcols.clone());
    let mut full = join::Join::new(
        Box::new(left(())),
        Box::new(right(())),
        JoinKind::Full,
        on(),
        None,
        lcols.clone(),
        rcols.clone(),
        all,
        None,
        (None, None),
        &mut r,
    );
    let mut semi = join::Join::new(
        Box::new(left(())),
        Box::new(right(())),
        JoinKind::Semi,
        on(),
        None,
        lcols.clone(),
        rcols.clone(),
        lcols.clone(),
        None,
        (None, None),
        &mut r,
    );
    let mut anti = join::Join::new(
        Box::new(left(())),
        Box::new(right(())),
        JoinKind::Anti,
        on(),
        None,
        lcols.clone(),
        rcols.clone(),
        lcols.clone(),
        None,
        (None, None),
        &mut r,
    );
    let row = |a: Value, b: Value, c: Value, d: Value| vec![a, b, c, d];
    // Epoch 1: every row padded (no key has rows on both sides).
    assert_eq!(
        out(full.step(&e, &ctx).unwrap()),
        consolidate(vec![
            (row(n.clone(), n.clone(), t("a"), Value::Int(10)), 1),
            (row(n.clone(), n.clone(), n.clone(), Value::Int(0)), 1),
            (row(n.clone(), Value::Int(2), n.clone(), n.clone()), 1),
        ])
    );
    assert_eq!(out(semi.step(&e, &ctx).unwrap()), vec![]);
    assert_eq!(out(anti.step(&e, &ctx).unwrap()), vec![(l(n.clone(), 2), 1)]);
    // Epoch 2: (a, 1) meets (a, 10): the padded right row goes.
    assert_eq!(
        out(full.step(&e, &ctx).unwrap()),
        consolidate(vec![(row(t("a"), Value::Int(1), t("a"), Value::Int(10)), 1), (row(n.clone(), n.clone(), t("a"), Value::Int(10)), -1)])
    );
    assert_eq!(out(semi.step(&e, &ctx).unwrap()), vec![(l(t("a"), 1), 1)]);
    assert_eq!(out(anti.step(&e, &ctx).unwrap()), vec![]);
    // Epoch 3: it leaves again: the padded right row comes back.
    assert_eq!(
        out(full.step(&e, &ctx).unwrap()),
        consolidate(vec![(row(t("a"), Value::Int(1), t("a"), Value::Int(10)), -1), (row(n.clone(), n.clone(), t("a"), Value::Int(10)), 1)])
    );
    assert_eq!(out(semi.step(&e, &ctx).unwrap()), vec![(l(t("a"), 1), -1)]);
    assert_eq!(out(anti.step(&e, &ctx).unwrap()), vec![]);
}

/// DISTINCT emits a row at its first copy and retracts it at its last.
#[test]
fn distinct_counts_copies() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let store = StateStore::open(kv(dir.path()), "d").unwrap();
    let no = |_: u32| false;
    let cols = vec![col("k", SqlType::Text)];
    let steps = vec![
        changes(&cols, vec![(vec![t("a")], 1), (vec![t("a")], 1), (vec![t("b")], 1)]),
        changes(&cols, vec![(vec![t("a")], -1)]),
        changes(&cols, vec![(vec![t("a")], -1), (vec![t("b")], -1), (vec![t("b")], 1)]),
    ];
    let mut r = renderer(&store, &ctx, &no);
    let mut d = distinct::Distinct::new(Box::new(Replay { steps }), cols, &mut r);
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    assert_eq!(out(d.step(&e, &ctx).unwrap()), vec![(vec![t("a")], 1), (vec![t("b")], 1)]);
    assert_eq!(out(d.step(&e, &ctx).unwrap()), vec![]);
    assert_eq!(out(d.step(&e, &ctx).unwrap()), vec![(vec![t("a")], -1)]);
}

/// Top 2 per partition by v DESC, numbered: a retraction of a top row
/// brings the next row up (read from the head of the state), across a
/// commit and a reopen of the store.
#[test]
fn top_n_per_partition_under_retractions() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let no = |_: u32| false;
    let cols = vec![col("g", SqlType::Text), col("v", SqlType::Int8)];
    let r2 = |g: &str, v: i64| vec![t(g), Value::Int(v)];
    let n3 = |g: &str, v: i64, n: i64| vec![t(g), Value::Int(v), Value::Int(n)];
    let key = SortKey { expr: Expr::Column { index: 1, ty: SqlType::Int8 }, desc: true, nulls_first: true };
    let part = vec![Expr::Column { index: 0, ty: SqlType::Text }];
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    {
        let mut store = StateStore::open(kv(dir.path()), "tn").unwrap();
        let steps = vec![
            changes(&cols, vec![(r2("a", 1), 1), (r2("a", 5), 1), (r2("a", 3), 1), (r2("b", 2), 1)]),
            // The top row of a goes; a new row lands in second place.
            changes(&cols, vec![(r2("a", 5), -1), (r2("a", 2), 1)]),
        ];
        let mut r = renderer(&store, &ctx, &no);
        let mut tn = top_n::TopN::new(Box::new(Replay { steps }), &cols, part.clone(), vec![key.clone()], 0, 2, true, false, &mut r);
        assert_eq!(out(tn.step(&e, &ctx).unwrap()), consolidate(vec![(n3("a", 5, 1), 1), (n3("a", 3, 2), 1), (n3("b", 2, 1), 1)]));
        let mut tables = Vec::new();
        tn.tables(&mut tables);
        store.commit(1, &mut tables, vec![]).unwrap();
        assert_eq!(
            out(tn.step(&e, &ctx).unwrap()),
            consolidate(vec![(n3("a", 5, 1), -1), (n3("a", 3, 2), -1), (n3("a", 3, 1), 1), (n3("a", 2, 2), 1)])
        );
        let mut tables = Vec::new();
        tn.tables(&mut tables);
        store.commit(2, &mut tables, vec![]).unwrap();
    }
    // Reopened: the state is the committed one (a: 3, 2, 1).
    let store = StateStore::open(kv(dir.path()), "tn").unwrap();
    let steps = vec![changes(&cols, vec![(r2("a", 3), -1), (r2("a", 2), -1)])];
    let mut r = renderer(&store, &ctx, &no);
    let mut tn = top_n::TopN::new(Box::new(Replay { steps }), &cols, part, vec![key], 0, 2, true, false, &mut r);
    assert_eq!(out(tn.step(&e, &ctx).unwrap()), consolidate(vec![(n3("a", 3, 1), -1), (n3("a", 2, 2), -1), (n3("a", 1, 1), 1)]));
}

/// A left join whose condition has more than equalities: a left row is
/// padded while no right row of its key satisfies the rest.
#[test]
fn left_join_with_residual_condition() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let store = StateStore::open(kv(dir.path()), "res").unwrap();
    let no = |_: u32| false;
    let lcols = vec![col("k", SqlType::Text), col("x", SqlType::Int8)];
    let rcols = vec![col("k", SqlType::Text), col("y", SqlType::Int8)];
    let l = |k: &str, x: i64| vec![t(k), Value::Int(x)];
    let n = Value::Null;
    let row = |a: Value, b: Value, c: Value, d: Value| vec![a, b, c, d];
    let i = Value::Int;
    let lsteps = vec![changes(&lcols, vec![(l("a", 1), 1), (l("a", 9), 1)]), changes(&lcols, vec![]), changes(&lcols, vec![])];
    let rsteps = vec![changes(&rcols, vec![]), changes(&rcols, vec![(l("a", 5), 1)]), changes(&rcols, vec![(l("a", 5), -1)])];
    let on = vec![(Expr::Column { index: 0, ty: SqlType::Text }, Expr::Column { index: 0, ty: SqlType::Text })];
    // ON l.k = r.k AND l.x < r.y
    let filter = Expr::Binary {
        op: crate::exec::expr::BinOp::Lt,
        left: Box::new(Expr::Column { index: 1, ty: SqlType::Int8 }),
        right: Box::new(Expr::Column { index: 3, ty: SqlType::Int8 }),
        ty: SqlType::Bool,
    };
    let mut all = lcols.clone();
    all.extend(rcols.clone());
    let mut r = renderer(&store, &ctx, &no);
    let mut j = join::Join::new(
        Box::new(Replay { steps: lsteps }),
        Box::new(Replay { steps: rsteps }),
        JoinKind::Left,
        on,
        Some(filter),
        lcols,
        rcols,
        all,
        None,
        (None, None),
        &mut r,
    );
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    assert_eq!(
        out(j.step(&e, &ctx).unwrap()),
        consolidate(vec![(row(t("a"), i(1), n.clone(), n.clone()), 1), (row(t("a"), i(9), n.clone(), n.clone()), 1)])
    );
    // (a, 5) arrives: (a, 1) matches it (1 < 5), (a, 9) stays padded.
    assert_eq!(
        out(j.step(&e, &ctx).unwrap()),
        consolidate(vec![(row(t("a"), i(1), n.clone(), n.clone()), -1), (row(t("a"), i(1), t("a"), i(5)), 1)])
    );
    assert_eq!(
        out(j.step(&e, &ctx).unwrap()),
        consolidate(vec![(row(t("a"), i(1), n.clone(), n.clone()), 1), (row(t("a"), i(1), t("a"), i(5)), -1)])
    );
}

/// NOT IN: all rows pass while the subquery is empty (even a NULL x);
/// a value blocks its rows; a NULL in the subquery blocks every row.
#[test]
fn not_in_is_null_aware() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let store = StateStore::open(kv(dir.path()), "notin").unwrap();
    let no = |_: u32| false;
    let lcols = vec![col("x", SqlType::Int8)];
    let rcols = vec![col("v", SqlType::Int8)];
    let v = |x: Value| vec![x];
    let (i, n) = (Value::Int, Value::Null);
    let lsteps = vec![
        changes(&lcols, vec![(v(i(1)), 1), (v(i(2)), 1), (v(n.clone()), 1)]),
        changes(&lcols, vec![]),
        changes(&lcols, vec![(v(i(3)), 1)]),
        changes(&lcols, vec![]),
    ];
    let rsteps = vec![
        changes(&rcols, vec![]),
        changes(&rcols, vec![(v(i(1)), 1)]),
        changes(&rcols, vec![(v(n.clone()), 1)]),
        changes(&rcols, vec![(v(n.clone()), -1), (v(i(1)), -1)]),
    ];
    let mut r = renderer(&store, &ctx, &no);
    let mut op = not_in::NotIn::new(
        Box::new(Replay { steps: lsteps }),
        Box::new(Replay { steps: rsteps }),
        Expr::Column { index: 0, ty: SqlType::Int8 },
        lcols,
        &mut r,
    );
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    assert_eq!(out(op.step(&e, &ctx).unwrap()), consolidate(vec![(v(i(1)), 1), (v(i(2)), 1), (v(n.clone()), 1)]));
    // {1}: 1 is blocked, NULL is unknown.
    assert_eq!(out(op.step(&e, &ctx).unwrap()), consolidate(vec![(v(i(1)), -1), (v(n.clone()), -1)]));
    // {1, NULL}: nothing passes; 3 arrives blocked.
    assert_eq!(out(op.step(&e, &ctx).unwrap()), consolidate(vec![(v(i(2)), -1)]));
    // Empty again: every row passes.
    assert_eq!(out(op.step(&e, &ctx).unwrap()), consolidate(vec![(v(i(1)), 1), (v(i(2)), 1), (v(i(3)), 1), (v(n.clone()), 1)]));
}

/// A join with a static side (hop()'s window numbers) keeps only that
/// side: the streaming side's rows pass through without state.
#[test]
fn static_side_keeps_no_streaming_rows() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let mut store = StateStore::open(kv(dir.path()), "static").unwrap();
    let no = |_: u32| false;
    let lcols = vec![col("x", SqlType::Int8)];
    let rcols = vec![col("k", SqlType::Int8)];
    let (i, v) = (Value::Int, |x: i64| vec![Value::Int(x)]);
    let lsteps = vec![changes(&lcols, vec![(v(1), 1)]), changes(&lcols, vec![(v(2), 1), (v(3), 1)])];
    let rsteps = vec![changes(&rcols, vec![(v(0), 1), (v(1), 1)]), changes(&rcols, vec![])];
    let mut all = lcols.clone();
    all.extend(rcols.clone());
    let mut r = renderer(&store, &ctx, &no);
    let mut j = join::Join::new(
        Box::new(Replay { steps: lsteps }),
        Box::new(Replay { steps: rsteps }),
        JoinKind::Inner,
        vec![],
        None,
        lcols,
        rcols,
        all,
        Some(join::Side::Right),
        (None, None),
        &mut r,
    );
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    assert_eq!(out(j.step(&e, &ctx).unwrap()), consolidate(vec![(vec![i(1), i(0)], 1), (vec![i(1), i(1)], 1)]));
    assert_eq!(out(j.step(&e, &ctx).unwrap()).len(), 4);
    let mut tables = Vec::new();
    j.tables(&mut tables);
    store.commit(1, &mut tables, vec![]).unwrap();
    // Two arrangements; the left one (the streaming side) is empty.
    let mut tables = Vec::new();
    j.tables(&mut tables);
    assert_eq!(tables[0].stats().unwrap().0, 0);
    assert_eq!(tables[1].stats().unwrap().0, 2);
}

/// A windowed aggregate with a watermark: rows of ended windows are late
/// (dropped) and the ended windows' state leaves at the barrier, so the
/// state holds only the open windows however long the stream runs.
#[test]
fn window_state_expires_with_the_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let mut store = StateStore::open(kv(dir.path()), "wm").unwrap();
    let no = |_: u32| false;
    let input = vec![col("w", SqlType::Timestamp), col("v", SqlType::Int8)];
    let out_cols = vec![col("w", SqlType::Timestamp), col("n", SqlType::Int8)];
    let count = AggCall { func: AggFunc::CountStar, args: vec![], distinct: false, filter: None, ty: SqlType::Int8 };
    let ts = |s: i64| Value::Timestamp(s * 1_000_000);
    let min = 60;
    // One row per minute window for 100 windows, each epoch one window.
    let steps: Vec<Changes> = (0..100)
        .map(|k| changes(&input, vec![(vec![ts(k * min), Value::Int(k)], 1)]))
        .chain([
            // A late row of window 0 (ended long ago): dropped.
            changes(&input, vec![(vec![ts(0), Value::Int(0)], 1)]),
        ])
        .collect();
    let mut r = renderer(&store, &ctx, &no);
    let wm = r.watermark.clone();
    let mut agg = hash_agg::HashAgg::new(
        Box::new(Replay { steps }),
        vec![Expr::Column { index: 0, ty: SqlType::Timestamp }],
        vec![count],
        out_cols,
        false,
        Some((0, min * 1_000_000)),
        &mut r,
    );
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    for k in 0..100i64 {
        // The watermark trails the newest window by 5 minutes.
        wm.store((k - 5) * min * 1_000_000, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(out(agg.step(&e, &ctx).unwrap()), vec![(vec![ts(k * min), Value::Int(1)], 1)]);
        let mut tables = Vec::new();
        agg.tables(&mut tables);
        for t in tables.iter_mut() {
            t.expire((k - 5) * min * 1_000_000).unwrap();
        }
        store.commit(k as u64 + 1, &mut tables, vec![]).unwrap();
        let mut tables = Vec::new();
        agg.tables(&mut tables);
        assert!(tables[0].stats().unwrap().0 <= 6, "state bounded by the open windows");
    }
    assert_eq!(out(agg.step(&e, &ctx).unwrap()), vec![]);
}

/// Over an append-only input the top-n keeps only the top rows: a row
/// pushed out can never come back.
#[test]
fn top_n_over_append_only_input_keeps_the_top_only() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::exec::mock::ctx();
    let mut store = StateStore::open(kv(dir.path()), "tna").unwrap();
    let no = |_: u32| false;
    let cols = vec![col("v", SqlType::Int8)];
    let steps: Vec<Changes> = (0..50).map(|k| changes(&cols, vec![(vec![Value::Int(k)], 1), (vec![Value::Int(100 - k)], 1)])).collect();
    let key = SortKey { expr: Expr::Column { index: 0, ty: SqlType::Int8 }, desc: false, nulls_first: false };
    let mut r = renderer(&store, &ctx, &no);
    let mut tn = top_n::TopN::new(Box::new(Replay { steps }), &cols, vec![], vec![key], 1, 2, false, true, &mut r);
    let e: HashMap<u32, Vec<Changes>> = HashMap::new();
    for k in 0..50u64 {
        tn.step(&e, &ctx).unwrap();
        let mut tables = Vec::new();
        tn.tables(&mut tables);
        store.commit(k + 1, &mut tables, vec![]).unwrap();
        let mut tables = Vec::new();
        tn.tables(&mut tables);
        assert!(tables[0].stats().unwrap().0 <= 3, "offset + limit rows kept");
    }
    // The smallest values 0..=49 and 51..=100 arrived: positions 2 and 3.
    let mut tables = Vec::new();
    tn.tables(&mut tables);
    let rows = tables[0].scan(&[], (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded), None).unwrap();
    assert_eq!(rows.iter().map(|r| r[2].clone()).collect::<Vec<_>>(), vec![Value::Int(0), Value::Int(1), Value::Int(2)]);
}
