//! `LimitExecutor` over a mock child: OFFSET and LIMIT count live rows
//! across batches, and the child is not pulled once the limit is reached.

use std::sync::atomic::Ordering;

use super::LimitExecutor;
use crate::exec::mock::*;
use crate::types::SqlType::*;
use crate::types::Value;

fn input(n: i64) -> Vec<Vec<Value>> {
    (1..=n).map(|i| vec![int(i)]).collect()
}

fn expect(range: std::ops::RangeInclusive<i64>) -> Vec<Vec<String>> {
    range.map(|i| vec![i.to_string()]).collect()
}

#[test]
fn offset_and_limit_in_every_shape() {
    let cols = columns(&[("v", Int8)]);
    let cases: &[(Option<usize>, usize, std::ops::RangeInclusive<i64>)] =
        &[(Some(2), 0, 1..=2), (Some(2), 3, 4..=5), (None, 4, 5..=6), (Some(10), 1, 2..=6), (None, 0, 1..=6), (Some(3), 6, 1..=0)];
    for (limit, offset, want) in cases {
        for steps in shapes(&input(6), &[int(-1)]) {
            let mut l = LimitExecutor::new(MockExecutor::new(&cols, steps.clone()).boxed(), *limit, *offset);
            assert_eq!(run(&mut l, 1024).unwrap(), expect(want.clone()), "limit {limit:?} offset {offset} {steps:?}");
        }
    }
}

#[test]
fn limit_zero_never_pulls() {
    let cols = columns(&[("v", Int8)]);
    let mock = MockExecutor::new(&cols, vec![Step::dense(input(3))]);
    let pulls = mock.pulls();
    let mut l = LimitExecutor::new(mock.boxed(), Some(0), 0);
    assert!(run(&mut l, 1024).unwrap().is_empty());
    assert_eq!(pulls.load(Ordering::Relaxed), 0);
}

#[test]
fn stops_pulling_once_satisfied() {
    let cols = columns(&[("v", Int8)]);
    let steps: Vec<Step> = input(10).into_iter().map(|r| Step::dense(vec![r])).collect();
    let mock = MockExecutor::new(&cols, steps);
    let pulls = mock.pulls();
    let mut l = LimitExecutor::new(mock.boxed(), Some(2), 1);
    assert_eq!(run(&mut l, 1024).unwrap(), expect(2..=3));
    assert_eq!(pulls.load(Ordering::Relaxed), 3);
}
