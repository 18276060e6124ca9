//! `HashJoinExecutor` over two mock children: every join kind, with NULL
//! keys on both sides, duplicate keys, a residual condition, the nested
//! loop (no keys) and empty sides; both inputs in every shape.

use super::HashJoinExecutor;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::mock::*;
use crate::exec::plan::{JoinKind, PlanColumn};
use crate::types::SqlType::*;
use crate::types::Value;

const KINDS: [JoinKind; 6] = [JoinKind::Inner, JoinKind::Left, JoinKind::Right, JoinKind::Full, JoinKind::Semi, JoinKind::Anti];

fn left_cols() -> Vec<PlanColumn> {
    columns(&[("lk", Int8), ("lv", Text)])
}

fn right_cols() -> Vec<PlanColumn> {
    columns(&[("rk", Int8), ("rv", Text)])
}

fn left_rows() -> Vec<Vec<Value>> {
    vec![vec![int(1), txt("l1")], vec![int(2), txt("l2")], vec![int(2), txt("l2b")], vec![null(), txt("lnull")], vec![int(4), txt("l4")]]
}

fn right_rows() -> Vec<Vec<Value>> {
    vec![vec![int(2), txt("r2")], vec![int(2), txt("r2b")], vec![int(3), txt("r3")], vec![null(), txt("rnull")], vec![int(1), txt("r1")]]
}

/// How the join finds its matches.
#[derive(Clone, Copy, Debug)]
enum Method {
    /// Hash table on `lk = rk`.
    Hash,
    /// Nested loop with `lk = rk` as the condition.
    Loop,
}

fn join(kind: JoinKind, method: Method, left: Vec<Step>, right: Vec<Step>, extra: Option<Expr>) -> Vec<Vec<String>> {
    let mut out = left_cols();
    if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
        out.extend(right_cols());
    }
    let eq = bin(BinOp::Eq, col(0, Int8), col(2, Int8));
    let (lk, rk, cond) = match method {
        Method::Hash => (vec![col(0, Int8)], vec![col(0, Int8)], extra),
        Method::Loop => (vec![], vec![], Some(extra.map(|x| bin(BinOp::And, eq.clone(), x)).unwrap_or(eq))),
    };
    let mut j = HashJoinExecutor::new(
        MockExecutor::new(&left_cols(), left).boxed(),
        MockExecutor::new(&right_cols(), right).boxed(),
        kind,
        lk,
        rk,
        cond,
        &out,
        ctx(),
    );
    sorted(run(&mut j, 1024).unwrap())
}

const INNER: &[&[&str]] =
    &[&["1", "l1", "1", "r1"], &["2", "l2", "2", "r2"], &["2", "l2", "2", "r2b"], &["2", "l2b", "2", "r2"], &["2", "l2b", "2", "r2b"]];
const LEFT_ONLY: &[&[&str]] = &[&["4", "l4", "NULL", "NULL"], &["NULL", "lnull", "NULL", "NULL"]];
const RIGHT_ONLY: &[&[&str]] = &[&["NULL", "NULL", "3", "r3"], &["NULL", "NULL", "NULL", "rnull"]];

fn expected(kind: JoinKind) -> Vec<Vec<String>> {
    let mut e = rows(INNER);
    if matches!(kind, JoinKind::Left | JoinKind::Full) {
        e.extend(rows(LEFT_ONLY));
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        e.extend(rows(RIGHT_ONLY));
    }
    match kind {
        JoinKind::Semi => rows(&[&["1", "l1"], &["2", "l2"], &["2", "l2b"]]),
        JoinKind::Anti => rows(&[&["4", "l4"], &["NULL", "lnull"]]),
        _ => sorted(e),
    }
}

#[test]
fn every_kind_with_null_and_duplicate_keys_in_every_shape() {
    // Junk rows match real keys on the other side: they show up if live rows are ignored.
    let lshapes = shapes(&left_rows(), &[int(2), txt("LJUNK")]);
    let rshapes = shapes(&right_rows(), &[int(4), txt("RJUNK")]);
    for kind in KINDS {
        for method in [Method::Hash, Method::Loop] {
            for l in &lshapes {
                for r in &rshapes {
                    assert_eq!(join(kind, method, l.clone(), r.clone(), None), expected(kind), "{kind:?} {method:?}\n{l:?}\n{r:?}");
                }
            }
        }
    }
}

#[test]
fn residual_condition_decides_matches() {
    // ON lk = rk AND rv <> 'r2b': r2b now matches nothing.
    let cond = bin(BinOp::NotEq, col(3, Text), Expr::lit(txt("r2b"), Text));
    let inner = rows(&[&["1", "l1", "1", "r1"], &["2", "l2", "2", "r2"], &["2", "l2b", "2", "r2"]]);
    for method in [Method::Hash, Method::Loop] {
        for kind in KINDS {
            let got = join(kind, method, vec![Step::dense(left_rows())], vec![Step::dense(right_rows())], Some(cond.clone()));
            let mut want = inner.clone();
            if matches!(kind, JoinKind::Left | JoinKind::Full) {
                want.extend(rows(LEFT_ONLY));
            }
            if matches!(kind, JoinKind::Right | JoinKind::Full) {
                want.extend(rows(RIGHT_ONLY));
                want.push(vec!["NULL".into(), "NULL".into(), "2".into(), "r2b".into()]);
            }
            let want = match kind {
                JoinKind::Semi | JoinKind::Anti => expected(kind),
                _ => sorted(want),
            };
            assert_eq!(got, want, "{kind:?} {method:?}");
        }
    }
}

#[test]
fn empty_sides() {
    let none = || vec![Step::dense(vec![])];
    let dead_left = || vec![Step::live(left_rows(), vec![])];
    for method in [Method::Hash, Method::Loop] {
        for kind in KINDS {
            // Nothing to build: outer rows of the left side only.
            let got = join(kind, method, vec![Step::dense(left_rows())], none(), None);
            let want = match kind {
                JoinKind::Left | JoinKind::Full => sorted(rows(&[
                    &["1", "l1", "NULL", "NULL"],
                    &["2", "l2", "NULL", "NULL"],
                    &["2", "l2b", "NULL", "NULL"],
                    &["NULL", "lnull", "NULL", "NULL"],
                    &["4", "l4", "NULL", "NULL"],
                ])),
                JoinKind::Anti => sorted(rows(&[&["1", "l1"], &["2", "l2"], &["2", "l2b"], &["NULL", "lnull"], &["4", "l4"]])),
                _ => vec![],
            };
            assert_eq!(got, want, "empty right {kind:?} {method:?}");
            // Nothing to probe with: outer rows of the right side only.
            for left in [none(), dead_left()] {
                let got = join(kind, method, left, vec![Step::dense(right_rows())], None);
                let want = match kind {
                    JoinKind::Right | JoinKind::Full => sorted(rows(&[
                        &["NULL", "NULL", "2", "r2"],
                        &["NULL", "NULL", "2", "r2b"],
                        &["NULL", "NULL", "3", "r3"],
                        &["NULL", "NULL", "NULL", "rnull"],
                        &["NULL", "NULL", "1", "r1"],
                    ])),
                    _ => vec![],
                };
                assert_eq!(got, want, "empty left {kind:?} {method:?}");
            }
        }
    }
}

#[test]
fn multi_column_keys_need_every_column_equal_and_non_null() {
    let l = columns(&[("a", Int8), ("b", Text)]);
    let r = columns(&[("c", Int8), ("d", Text)]);
    let lrows = vec![vec![int(1), txt("x")], vec![int(1), txt("y")], vec![int(1), null()]];
    let rrows = vec![vec![int(1), txt("x")], vec![int(2), txt("y")], vec![int(1), null()]];
    let mut out = l.clone();
    out.extend(r.clone());
    let mut j = HashJoinExecutor::new(
        MockExecutor::new(&l, vec![Step::dense(lrows)]).boxed(),
        MockExecutor::new(&r, vec![Step::dense(rrows)]).boxed(),
        JoinKind::Full,
        vec![col(0, Int8), col(1, Text)],
        vec![col(0, Int8), col(1, Text)],
        None,
        &out,
        ctx(),
    );
    assert_eq!(
        sorted(run(&mut j, 1024).unwrap()),
        rows(&[
            &["1", "NULL", "NULL", "NULL"],
            &["1", "x", "1", "x"],
            &["1", "y", "NULL", "NULL"],
            &["NULL", "NULL", "1", "NULL"],
            &["NULL", "NULL", "2", "y"],
        ])
    );
}

#[test]
fn float_keys_match_zero_with_minus_zero_and_nan_with_nan() {
    let l = columns(&[("x", Float8)]);
    let r = columns(&[("y", Float8)]);
    let mut out = l.clone();
    out.extend(r.clone());
    let mut j = HashJoinExecutor::new(
        MockExecutor::new(&l, vec![Step::dense(vec![vec![Value::Float(-0.0)], vec![Value::Float(f64::NAN)]])]).boxed(),
        MockExecutor::new(&r, vec![Step::dense(vec![vec![Value::Float(0.0)], vec![Value::Float(-f64::NAN)]])]).boxed(),
        JoinKind::Inner,
        vec![col(0, Float8)],
        vec![col(0, Float8)],
        None,
        &out,
        ctx(),
    );
    assert_eq!(run(&mut j, 1024).unwrap().len(), 2);
}
