//! `DistinctOnExecutor` over a mock child: the first live row of each key,
//! in input order, remembered across batches.

use super::DistinctOnExecutor;
use crate::exec::mock::*;
use crate::types::SqlType::*;

#[test]
fn first_row_per_key_in_every_shape() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let input = vec![
        vec![txt("a"), int(1)],
        vec![null(), int(2)],
        vec![txt("a"), int(3)],
        vec![txt("b"), int(4)],
        vec![null(), int(5)],
        vec![txt("b"), int(6)],
    ];
    // A junk "c" row would be a new key; a junk "b" first would win the key.
    for junk in [[txt("c"), int(0)], [txt("b"), int(0)]] {
        for steps in shapes(&input, &junk) {
            let mut d = DistinctOnExecutor::new(MockExecutor::new(&cols, steps.clone()).boxed(), vec![col(0, Text)], ctx());
            assert_eq!(run(&mut d, 1024).unwrap(), rows(&[&["a", "1"], &["NULL", "2"], &["b", "4"]]), "{steps:?}");
        }
    }
}

#[test]
fn float_keys_treat_minus_zero_as_zero() {
    let cols = columns(&[("x", Float8)]);
    let input = vec![vec![crate::types::Value::Float(0.0)], vec![crate::types::Value::Float(-0.0)]];
    let mut d = DistinctOnExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(), vec![col(0, Float8)], ctx());
    assert_eq!(run(&mut d, 1024).unwrap().len(), 1);
}
