//! Key columns as PostgreSQL compares them. Grouping, DISTINCT, joins,
//! set operations, partitions and sorts compare values through arrow's
//! row format or sort kernels, which order floats totally: -0 before 0 and
//! NaNs by sign and payload. PostgreSQL finds -0 = 0 and every NaN equal
//! (and greater than any number), so float key columns are normalized
//! first: -0 becomes 0 and every NaN the positive quiet NaN. Only the keys
//! are normalized; the rows themselves keep their values (a group's key
//! value is the normalized one).
//!
//! Imports only arrow.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};

/// A key column with -0 as 0 and every NaN as NaN; other types unchanged.
pub(crate) fn normalize_key(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Float64 => {
            let f = a.as_primitive::<Float64Type>();
            if !f.values().iter().any(|x| *x == 0.0 || x.is_nan()) {
                return a.clone();
            }
            Arc::new(f.unary::<_, Float64Type>(|x| {
                if x == 0.0 {
                    0.0
                } else if x.is_nan() {
                    f64::NAN
                } else {
                    x
                }
            }))
        }
        DataType::Float32 => {
            let f = a.as_primitive::<Float32Type>();
            if !f.values().iter().any(|x| *x == 0.0 || x.is_nan()) {
                return a.clone();
            }
            Arc::new(f.unary::<_, Float32Type>(|x| {
                if x == 0.0 {
                    0.0
                } else if x.is_nan() {
                    f32::NAN
                } else {
                    x
                }
            }))
        }
        _ => a.clone(),
    }
}

/// [`normalize_key`] over several columns.
pub(crate) fn normalize_keys(cols: &[ArrayRef]) -> Vec<ArrayRef> {
    cols.iter().map(normalize_key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Float64Array};

    #[test]
    fn zero_and_nan_are_canonical() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![Some(-0.0), Some(f64::NAN), Some(-f64::NAN), None, Some(1.5)]));
        let n = normalize_key(&a);
        let n = n.as_primitive::<Float64Type>();
        assert_eq!(n.value(0).to_bits(), 0.0f64.to_bits());
        assert_eq!(n.value(1).to_bits(), f64::NAN.to_bits());
        assert_eq!(n.value(2).to_bits(), f64::NAN.to_bits());
        assert!(n.is_null(3));
        assert_eq!(n.value(4), 1.5);
    }
}
