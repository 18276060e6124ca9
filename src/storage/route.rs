//! Splitting rows of a multi-region table by primary-key hash.
//!
//! Owns the row → region mapping: crc32 of the primary-key values' text,
//! modulo the region count. Stable across restarts and versions as long as
//! arrow's text form of the values is. Imports only `crate::error` and arrow.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{cast, take_record_batch};
use arrow::datatypes::DataType;

use crate::error::Result;

/// Split `batch` into per-region batches by the primary-key columns
/// (indices into the batch); regions without rows are left out.
pub fn route_rows(batch: &RecordBatch, primary_key: &[usize], regions: u32) -> Result<Vec<(u32, RecordBatch)>> {
    if regions <= 1 || primary_key.is_empty() || batch.num_rows() == 0 {
        return Ok(vec![(0, batch.clone())]);
    }
    let texts: Vec<ArrayRef> =
        primary_key.iter().map(|&c| cast(batch.column(c), &DataType::Utf8)).collect::<std::result::Result<_, _>>()?;
    let texts: Vec<_> = texts.iter().map(|t| t.as_string::<i32>()).collect();
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); regions as usize];
    for i in 0..batch.num_rows() {
        let mut h = crc32fast::Hasher::new();
        for t in &texts {
            if t.is_null(i) {
                h.update(&[0xff]);
            } else {
                h.update(t.value(i).as_bytes());
            }
            // Unit separator, so ("ab","c") and ("a","bc") differ.
            h.update(&[0x1f]);
        }
        buckets[(h.finalize() % regions) as usize].push(i as u32);
    }
    let mut out = Vec::new();
    for (r, idx) in buckets.into_iter().enumerate() {
        if idx.is_empty() {
            continue;
        }
        out.push((r as u32, take_record_batch(batch, &UInt32Array::from(idx))?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    #[test]
    fn routes_stably_and_completely() {
        let schema = Arc::new(Schema::new(vec![Field::new("h", DataType::Utf8, true), Field::new("v", DataType::Int64, false)]));
        let hosts: Vec<Option<String>> = (0..100).map(|i| (i % 7 != 0).then(|| format!("h{}", i % 13))).collect();
        let b =
            RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(hosts)), Arc::new(Int64Array::from_iter_values(0..100))]).unwrap();
        let parts = route_rows(&b, &[0], 4).unwrap();
        assert_eq!(parts.iter().map(|p| p.1.num_rows()).sum::<usize>(), 100);
        assert!(parts.len() > 1);
        // The same key always lands in the same region.
        let again = route_rows(&b.slice(10, 30), &[0], 4).unwrap();
        for (r, part) in &again {
            let full = &parts.iter().find(|p| p.0 == *r).unwrap().1;
            let keys: std::collections::HashSet<Option<&str>> = full.column(0).as_string::<i32>().iter().collect();
            assert!(part.column(0).as_string::<i32>().iter().all(|k| keys.contains(&k)));
        }
        // crc32("h1" + 0x1f) is fixed forever: pin one routing.
        let mut h = crc32fast::Hasher::new();
        h.update(b"h1\x1f");
        let expect = h.finalize() % 4;
        let one = route_rows(&b.slice(1, 1), &[0], 4).unwrap();
        assert_eq!(one[0].0, expect);
        assert_eq!(route_rows(&b, &[0], 1).unwrap().len(), 1);
    }
}
