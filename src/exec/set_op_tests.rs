//! `SetOpExecutor` over two mock children: UNION, INTERSECT and EXCEPT with
//! and without ALL, NULLs equal to each other as PostgreSQL's set
//! operations treat them.

use super::SetOpExecutor;
use crate::exec::mock::*;
use crate::exec::plan::SetOpKind;
use crate::types::SqlType::*;
use crate::types::Value;

fn left() -> Vec<Vec<Value>> {
    vec![vec![int(1)], vec![int(1)], vec![int(1)], vec![int(2)], vec![null()], vec![null()], vec![int(5)]]
}

fn right() -> Vec<Vec<Value>> {
    vec![vec![int(1)], vec![null()], vec![int(3)], vec![int(1)], vec![int(3)]]
}

fn expect(vals: &[&str]) -> Vec<Vec<String>> {
    sorted(vals.iter().map(|v| vec![v.to_string()]).collect())
}

#[test]
fn every_kind_in_every_shape() {
    let cases: &[(SetOpKind, bool, &[&str])] = &[
        (SetOpKind::Union, false, &["1", "2", "3", "5", "NULL"]),
        (SetOpKind::Union, true, &["1", "1", "1", "1", "1", "2", "3", "3", "5", "NULL", "NULL", "NULL"]),
        (SetOpKind::Intersect, false, &["1", "NULL"]),
        (SetOpKind::Intersect, true, &["1", "1", "NULL"]),
        (SetOpKind::Except, false, &["2", "5"]),
        (SetOpKind::Except, true, &["1", "2", "5", "NULL"]),
    ];
    // Different output and input names: the executor relabels input batches.
    let lcols = columns(&[("a", Int8)]);
    let rcols = columns(&[("b", Int8)]);
    let out = columns(&[("x", Int8)]);
    for (kind, all, want) in cases {
        for l in shapes(&left(), &[int(3)]) {
            for r in shapes(&right(), &[int(5)]) {
                let mut s = SetOpExecutor::new(
                    MockExecutor::new(&lcols, l.clone()).boxed(),
                    MockExecutor::new(&rcols, r.clone()).boxed(),
                    *kind,
                    *all,
                    &out,
                    ctx(),
                );
                assert_eq!(sorted(run(&mut s, 1024).unwrap()), expect(want), "{kind:?} all={all}\n{l:?}\n{r:?}");
            }
        }
    }
}

#[test]
fn union_keeps_first_occurrence_order_and_multi_column_rows() {
    let cols = columns(&[("a", Int8), ("b", Text)]);
    let l = vec![vec![int(2), txt("x")], vec![int(1), null()], vec![int(2), txt("x")]];
    let r = vec![vec![int(1), null()], vec![int(1), txt("y")]];
    let mut s = SetOpExecutor::new(
        MockExecutor::new(&cols, vec![Step::dense(l)]).boxed(),
        MockExecutor::new(&cols, vec![Step::dense(r)]).boxed(),
        SetOpKind::Union,
        false,
        &cols,
        ctx(),
    );
    assert_eq!(run(&mut s, 1).unwrap(), rows(&[&["2", "x"], &["1", "NULL"], &["1", "y"]]));
}

#[test]
fn float_rows_compare_zero_with_minus_zero_and_nan_with_nan() {
    let cols = columns(&[("x", Float8)]);
    let f = |v: f64| vec![Value::Float(v)];
    for (kind, want) in [(SetOpKind::Union, 2), (SetOpKind::Intersect, 2), (SetOpKind::Except, 0)] {
        let mut s = SetOpExecutor::new(
            MockExecutor::new(&cols, vec![Step::dense(vec![f(-0.0), f(f64::NAN)])]).boxed(),
            MockExecutor::new(&cols, vec![Step::dense(vec![f(0.0), f(-f64::NAN)])]).boxed(),
            kind,
            false,
            &cols,
            ctx(),
        );
        assert_eq!(run(&mut s, 1024).unwrap().len(), want, "{kind:?}");
    }
}
