//! `GroupTable`: the key columns of each batch to dense group ids, for
//! hash aggregation, specialised by key shape as seed 004 says (fast hash
//! on fixed-width keys, slow hash for the rest).
//!
//! Up to four key columns of integers, timestamps, dates, booleans, floats
//! (normalized as PostgreSQL compares them, see `keys.rs`) or strings
//! (interned to a code per column) pack into a `[u64; K]` plus a null mask
//! and are found in one hash map with a cheap multiply-xorshift hash; no
//! per-row allocation, no per-row `Value`. Anything else (intervals, more
//! columns) goes through arrow's row format. A row whose key equals the
//! previous row's reuses its group without a lookup: time buckets over
//! time-ordered rows and runs of one series come out of scans that way.
//!
//! Imports only arrow, `keys` and `error`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::row::{OwnedRow, RowConverter, SortField};

use crate::error::Result;

/// Multiply-rotate mixing per word (FxHash) and murmur3's finalizer, so
/// keys with many equal low bits (hour buckets in microseconds) still
/// spread over the table's buckets.
#[derive(Default, Clone, Copy)]
pub(crate) struct MixHasher(u64);

impl Hasher for MixHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.write_u64(x as u64)
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64)
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64)
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// Strings of one key column, each given a code in order of first sight.
#[derive(Default)]
struct Interner {
    map: FastMap<Box<str>, u32>,
    values: Vec<Box<str>>,
    bytes: usize,
}

impl Interner {
    fn code(&mut self, s: &str) -> u32 {
        if let Some(&c) = self.map.get(s) {
            return c;
        }
        let c = self.values.len() as u32;
        self.bytes += 2 * s.len() + 48;
        self.values.push(s.into());
        self.map.insert(s.into(), c);
        c
    }
}

/// String equality without a `memcmp` call for short strings (tag values:
/// a series' rows compare equal to the previous row's, once per row).
#[inline]
fn same_str(a: &str, b: &str) -> bool {
    same_str_bytes(a.as_bytes(), b.as_bytes())
}

#[inline]
fn same_str_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    let mut diff = 0u8;
    for i in 0..a.len() {
        diff |= a[i] ^ b[i];
    }
    diff == 0
}

/// How one key column becomes a 64-bit code.
enum KeyCol {
    /// Integers, timestamps, dates: the value itself.
    Int(DataType),
    Float64,
    Float32,
    Bool,
    Str(Interner),
}

impl KeyCol {
    fn of(dt: &DataType) -> Option<KeyCol> {
        Some(match dt {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Date32
            | DataType::Timestamp(TimeUnit::Microsecond, _) => KeyCol::Int(dt.clone()),
            DataType::Float64 => KeyCol::Float64,
            DataType::Float32 => KeyCol::Float32,
            DataType::Boolean => KeyCol::Bool,
            DataType::Utf8 => KeyCol::Str(Interner::default()),
            _ => return None,
        })
    }

    /// The codes of a column's rows into `out` (nulls: anything; the null
    /// mask tells them apart).
    fn codes(&mut self, a: &dyn Array, out: &mut Vec<u64>) {
        out.clear();
        macro_rules! ints {
            ($t:ty) => {
                out.extend(a.as_primitive::<$t>().values().iter().map(|&v| v as i64 as u64))
            };
        }
        match self {
            KeyCol::Int(dt) => match dt {
                DataType::Int8 => ints!(Int8Type),
                DataType::Int16 => ints!(Int16Type),
                DataType::Int32 => ints!(Int32Type),
                DataType::Int64 => ints!(Int64Type),
                DataType::UInt32 => ints!(UInt32Type),
                DataType::UInt64 => ints!(UInt64Type),
                DataType::Date32 => ints!(Date32Type),
                _ => ints!(TimestampMicrosecondType),
            },
            KeyCol::Float64 => out.extend(a.as_primitive::<Float64Type>().values().iter().map(|&x| {
                if x == 0.0 {
                    0u64
                } else if x.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    x.to_bits()
                }
            })),
            KeyCol::Float32 => out.extend(a.as_primitive::<Float32Type>().values().iter().map(|&x| {
                if x == 0.0 {
                    0u64
                } else if x.is_nan() {
                    f32::NAN.to_bits() as u64
                } else {
                    x.to_bits() as u64
                }
            })),
            KeyCol::Bool => {
                let b = a.as_boolean();
                out.extend((0..b.len()).map(|i| b.value(i) as u64))
            }
            KeyCol::Str(interner) => {
                let s = a.as_string::<i32>();
                // Runs of one string (a series' rows) are coded once.
                let mut prev: Option<(&str, u64)> = None;
                for i in 0..s.len() {
                    if s.is_null(i) {
                        out.push(0);
                        continue;
                    }
                    let v = s.value(i);
                    let c = match prev {
                        Some((p, c)) if same_str(p, v) => c,
                        _ => {
                            let c = interner.code(v) as u64;
                            prev = Some((v, c));
                            c
                        }
                    };
                    out.push(c);
                }
            }
        }
    }

    /// The output column of the groups' codes.
    fn array(&self, codes: impl Iterator<Item = Option<u64>>) -> Result<ArrayRef> {
        macro_rules! ints {
            ($t:ty, $n:ty) => {
                Arc::new(codes.map(|c| c.map(|c| c as i64 as $n)).collect::<PrimitiveArray<$t>>()) as ArrayRef
            };
        }
        Ok(match self {
            KeyCol::Int(dt) => match dt {
                DataType::Int8 => ints!(Int8Type, i8),
                DataType::Int16 => ints!(Int16Type, i16),
                DataType::Int32 => ints!(Int32Type, i32),
                DataType::Int64 => ints!(Int64Type, i64),
                DataType::UInt32 => ints!(UInt32Type, u32),
                DataType::UInt64 => ints!(UInt64Type, u64),
                DataType::Date32 => ints!(Date32Type, i32),
                DataType::Timestamp(_, tz) => {
                    let a: TimestampMicrosecondArray = codes.map(|c| c.map(|c| c as i64)).collect();
                    Arc::new(a.with_timezone_opt(tz.clone()))
                }
                other => unreachable!("not a fixed-width key type: {other}"),
            },
            KeyCol::Float64 => Arc::new(codes.map(|c| c.map(f64::from_bits)).collect::<Float64Array>()),
            KeyCol::Float32 => Arc::new(codes.map(|c| c.map(|c| f32::from_bits(c as u32))).collect::<Float32Array>()),
            KeyCol::Bool => Arc::new(codes.map(|c| c.map(|c| c != 0)).collect::<BooleanArray>()),
            KeyCol::Str(i) => Arc::new(codes.map(|c| c.map(|c| &*i.values[c as usize])).collect::<StringArray>()),
        })
    }
}

/// A packed key: the columns' codes and a mask of the null ones.
type Packed<const K: usize> = ([u64; K], u8);

enum Lookup {
    K1(FastMap<Packed<1>, u32>),
    K2(FastMap<Packed<2>, u32>),
    K3(FastMap<Packed<3>, u32>),
    K4(FastMap<Packed<4>, u32>),
    /// The slow hash: arrow's row format.
    Rows {
        converter: RowConverter,
        map: HashMap<Box<[u8]>, u32>,
        rows: Vec<OwnedRow>,
    },
}

/// Groups found so far and their keys.
pub(crate) struct GroupTable {
    cols: Vec<KeyCol>,
    lookup: Lookup,
    /// Per group, its K codes (packed shapes).
    group_codes: Vec<u64>,
    group_nulls: Vec<u8>,
    len: usize,
    /// Scratch: per key column, this batch's codes; per row, its null mask.
    codes: Vec<Vec<u64>>,
    nulls: Vec<u8>,
}

impl GroupTable {
    /// A table for keys of these arrow types (at least one).
    pub fn new(types: &[DataType]) -> Result<GroupTable> {
        let cols: Option<Vec<KeyCol>> = if types.len() <= 4 { types.iter().map(KeyCol::of).collect() } else { None };
        let (cols, lookup) = match cols {
            Some(cols) => {
                let lookup = match cols.len() {
                    1 => Lookup::K1(FastMap::default()),
                    2 => Lookup::K2(FastMap::default()),
                    3 => Lookup::K3(FastMap::default()),
                    _ => Lookup::K4(FastMap::default()),
                };
                (cols, lookup)
            }
            None => {
                let converter = RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())?;
                (vec![], Lookup::Rows { converter, map: HashMap::new(), rows: vec![] })
            }
        };
        let codes = cols.iter().map(|_| Vec::new()).collect();
        Ok(GroupTable { cols, lookup, group_codes: vec![], group_nulls: vec![], len: 0, codes, nulls: vec![] })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Which shape serves these keys (tests and EXPLAIN ANALYZE-style checks).
    #[cfg(test)]
    pub fn is_packed(&self) -> bool {
        !matches!(self.lookup, Lookup::Rows { .. })
    }

    /// Bytes held by the table (keys, map slots, interned strings).
    pub fn bytes(&self) -> usize {
        let per_group = match &self.lookup {
            Lookup::Rows { rows, .. } => rows.first().map(|r| r.row().as_ref().len() * 2).unwrap_or(0) + 64,
            _ => self.cols.len() * 16 + 24,
        };
        let strings: usize = self.cols.iter().map(|c| if let KeyCol::Str(i) = c { i.bytes } else { 0 }).sum();
        self.len * per_group + strings
    }

    /// The group of each row of `keys` (columns of the table's types, all
    /// of one length) into `out`, new keys becoming new groups.
    pub fn assign(&mut self, keys: &[ArrayRef], out: &mut Vec<usize>) -> Result<()> {
        out.clear();
        let n = keys.first().map(|k| k.len()).unwrap_or(0);
        if let Lookup::Rows { converter, map, rows } = &mut self.lookup {
            let r = converter.convert_columns(&super::keys::normalize_keys(keys))?;
            for i in 0..n {
                let row = r.row(i);
                let g = match map.get(row.as_ref()) {
                    Some(&g) => g,
                    None => {
                        let g = rows.len() as u32;
                        map.insert(row.as_ref().into(), g);
                        rows.push(row.owned());
                        g
                    }
                };
                out.push(g as usize);
            }
            self.len = rows.len();
            return Ok(());
        }
        for (j, (c, a)) in self.cols.iter_mut().zip(keys).enumerate() {
            c.codes(a.as_ref(), &mut self.codes[j]);
        }
        self.nulls.clear();
        self.nulls.resize(n, 0);
        for (j, a) in keys.iter().enumerate() {
            if let Some(nb) = a.logical_nulls() {
                if nb.null_count() > 0 {
                    for (i, m) in self.nulls.iter_mut().enumerate() {
                        if nb.is_null(i) {
                            *m |= 1 << j;
                        }
                    }
                }
            }
        }
        let (codes, nulls) = (&self.codes, &self.nulls);
        let (gc, gn) = (&mut self.group_codes, &mut self.group_nulls);
        match &mut self.lookup {
            Lookup::K1(m) => assign_packed::<1>(m, codes, nulls, n, gc, gn, out),
            Lookup::K2(m) => assign_packed::<2>(m, codes, nulls, n, gc, gn, out),
            Lookup::K3(m) => assign_packed::<3>(m, codes, nulls, n, gc, gn, out),
            Lookup::K4(m) => assign_packed::<4>(m, codes, nulls, n, gc, gn, out),
            Lookup::Rows { .. } => unreachable!(),
        }
        self.len = gn.len();
        Ok(())
    }

    /// `assign`, and the batch's runs of one group, `(start, end, group)`
    /// in row order, into `runs` when they are long (at most a quarter as
    /// many runs as rows): then each run's key is looked up once, found
    /// from where a key column's value changes (strings compared with the
    /// previous row's, no interning per row). `runs` is left empty for
    /// short runs, NULL keys and the row format (`out` is filled anyway).
    pub fn assign_runs(&mut self, keys: &[ArrayRef], out: &mut Vec<usize>, runs: &mut Vec<(usize, usize, usize)>) -> Result<()> {
        runs.clear();
        let n = keys.first().map(|k| k.len()).unwrap_or(0);
        let packed = !matches!(self.lookup, Lookup::Rows { .. });
        if !packed || n < 8 || keys.iter().any(|k| k.logical_nulls().is_some_and(|nb| nb.null_count() > 0)) {
            return self.assign(keys, out);
        }
        // Where any key column's value differs from the previous row's.
        let mut change: Option<arrow::buffer::BooleanBuffer> = None;
        for (j, (c, a)) in self.cols.iter_mut().zip(keys).enumerate() {
            let b = match c {
                KeyCol::Str(_) => {
                    let s = a.as_string::<i32>();
                    let (o, v) = (s.value_offsets(), s.value_data());
                    arrow::buffer::BooleanBuffer::collect_bool(n, |i| {
                        i > 0 && {
                            let (a0, a1, b1) = (o[i - 1] as usize, o[i] as usize, o[i + 1] as usize);
                            !same_str_bytes(&v[a0..a1], &v[a1..b1])
                        }
                    })
                }
                _ => {
                    c.codes(a.as_ref(), &mut self.codes[j]);
                    let k = &self.codes[j];
                    arrow::buffer::BooleanBuffer::collect_bool(n, |i| i > 0 && k[i] != k[i - 1])
                }
            };
            change = Some(match change {
                None => b,
                Some(c) => &c | &b,
            });
        }
        let change = change.expect("at least one key column");
        if (change.count_set_bits() + 1) * 4 > n {
            return self.assign(keys, out);
        }
        out.clear();
        let mut starts: Vec<usize> = change.set_indices().collect();
        starts.push(n);
        let mut start = 0;
        for end in starts {
            let g = self.find_packed(keys, start);
            out.resize(end, g);
            runs.push((start, end, g));
            start = end;
        }
        self.len = self.group_nulls.len();
        Ok(())
    }

    /// The group of row `i`'s key (no NULLs; the non-string columns' codes
    /// already in `self.codes`), new keys becoming new groups.
    fn find_packed(&mut self, keys: &[ArrayRef], i: usize) -> usize {
        let k = self.cols.len();
        let mut key = [0u64; 4];
        for (j, c) in self.cols.iter_mut().enumerate() {
            key[j] = match c {
                KeyCol::Str(interner) => interner.code(keys[j].as_string::<i32>().value(i)) as u64,
                _ => self.codes[j][i],
            };
        }
        let next = self.group_nulls.len() as u32;
        macro_rules! find {
            ($m:expr, $k:literal) => {{
                let mut p = [0u64; $k];
                p.copy_from_slice(&key[..$k]);
                *$m.entry((p, 0u8)).or_insert(next)
            }};
        }
        let g = match &mut self.lookup {
            Lookup::K1(m) => find!(m, 1),
            Lookup::K2(m) => find!(m, 2),
            Lookup::K3(m) => find!(m, 3),
            Lookup::K4(m) => find!(m, 4),
            Lookup::Rows { .. } => unreachable!("packed keys only"),
        };
        if g == next {
            self.group_codes.extend_from_slice(&key[..k]);
            self.group_nulls.push(0);
        }
        g as usize
    }

    /// The key columns of every group, in group order.
    pub fn keys(&self) -> Result<Vec<ArrayRef>> {
        if let Lookup::Rows { converter, rows, .. } = &self.lookup {
            return Ok(converter.convert_rows(rows.iter().map(|r| r.row()))?);
        }
        let k = self.cols.len();
        self.cols
            .iter()
            .enumerate()
            .map(|(j, c)| {
                c.array((0..self.len).map(|g| if self.group_nulls[g] & (1 << j) != 0 { None } else { Some(self.group_codes[g * k + j]) }))
            })
            .collect()
    }
}

fn assign_packed<const K: usize>(
    map: &mut FastMap<Packed<K>, u32>,
    codes: &[Vec<u64>],
    nulls: &[u8],
    n: usize,
    group_codes: &mut Vec<u64>,
    group_nulls: &mut Vec<u8>,
    out: &mut Vec<usize>,
) {
    let mut prev: Option<(Packed<K>, usize)> = None;
    for i in 0..n {
        let mut key = [0u64; K];
        let m = nulls[i];
        for j in 0..K {
            // A null's code is not part of its key.
            key[j] = if m & (1 << j) != 0 { 0 } else { codes[j][i] };
        }
        let packed = (key, m);
        let g = match prev {
            Some((p, g)) if p == packed => g,
            _ => {
                let next = group_nulls.len() as u32;
                let g = *map.entry(packed).or_insert(next) as usize;
                if g == next as usize {
                    group_codes.extend_from_slice(&key);
                    group_nulls.push(m);
                }
                prev = Some((packed, g));
                g
            }
        };
        out.push(g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(v.to_vec()))
    }

    #[test]
    fn packed_keys_number_groups_by_first_sight_with_a_null_group() {
        let mut t = GroupTable::new(&[DataType::Utf8, DataType::Int64]).unwrap();
        assert!(t.is_packed());
        let mut out = vec![];
        let k: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(1), None, Some(1), None]));
        t.assign(&[strs(&[Some("a"), Some("a"), Some("a"), None, None]), k], &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1, 2, 3]);
        let k: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        t.assign(&[strs(&[None, Some("b")]), k], &mut out).unwrap();
        assert_eq!(out, vec![2, 4]);
        let keys = t.keys().unwrap();
        assert_eq!(keys[0].as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("a"), Some("a"), None, None, Some("b")]);
        assert_eq!(keys[1].as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), vec![Some(1), None, Some(1), None, None]);
    }

    #[test]
    fn timestamp_keys_keep_their_zone_and_hour_buckets_spread() {
        let ty = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let mut t = GroupTable::new(std::slice::from_ref(&ty)).unwrap();
        let hour = 3_600_000_000i64;
        let a: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from((0..5000).map(|i| (i % 1000) * hour).collect::<Vec<_>>()).with_timezone("+00:00"));
        let mut out = vec![];
        t.assign(&[a], &mut out).unwrap();
        assert_eq!(t.len(), 1000);
        assert_eq!(out[1003], 3);
        let keys = t.keys().unwrap();
        assert_eq!(keys[0].data_type(), &ty);
        assert_eq!(keys[0].as_primitive::<TimestampMicrosecondType>().value(7), 7 * hour);
    }

    /// `assign_runs` numbers groups as `assign` does, row by row, and its
    /// runs cover the rows in order, each of one group.
    #[test]
    fn runs_number_groups_as_rows_do() {
        let types = [DataType::Timestamp(TimeUnit::Microsecond, None), DataType::Utf8, DataType::Float64];
        let long = "a_tag_value_longer_than_sixteen_bytes";
        let mut by_rows = GroupTable::new(&types).unwrap();
        let mut by_runs = GroupTable::new(&types).unwrap();
        let (mut want, mut got, mut runs) = (vec![], vec![], vec![]);
        let mut found_runs = 0;
        for batch in 0..6u64 {
            // Series of 40..100 rows, hour buckets of 30 rows; one batch of
            // short runs (every row its own key), which takes the row path.
            let n = 500;
            let short = batch == 3;
            let mut ts = vec![];
            let mut host = vec![];
            let mut f = vec![];
            for i in 0..n as u64 {
                let series = if short { i } else { (i + batch * 7) / (40 + batch * 10) };
                ts.push(if short { i as i64 } else { ((i % 90) / 30) as i64 * 3_600_000_000 });
                host.push(if series % 3 == 0 { format!("{long}{series}") } else { format!("h{series}") });
                f.push(if i % 50 < 25 { 0.0 } else { -0.0 });
            }
            let keys: Vec<ArrayRef> =
                vec![Arc::new(TimestampMicrosecondArray::from(ts)), Arc::new(StringArray::from(host)), Arc::new(Float64Array::from(f))];
            by_rows.assign(&keys, &mut want).unwrap();
            by_runs.assign_runs(&keys, &mut got, &mut runs).unwrap();
            assert_eq!(got, want, "batch {batch}");
            assert_eq!(by_runs.len(), by_rows.len());
            if short {
                assert!(runs.is_empty(), "short runs take the row path");
                continue;
            }
            assert!(!runs.is_empty() && runs.len() * 4 <= n);
            found_runs += runs.len();
            let mut at = 0;
            for &(s, e, g) in &runs {
                assert_eq!(s, at);
                assert!(e > s && want[s..e].iter().all(|&x| x == g));
                // Maximal: the next run is another group.
                assert!(e == n || want[e] != g);
                at = e;
            }
            assert_eq!(at, n);
        }
        assert!(found_runs > 0);
        let (a, b) = (by_rows.keys().unwrap(), by_runs.keys().unwrap());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.as_ref(), y.as_ref());
        }
        // NULL keys take the row path.
        let mut t = GroupTable::new(&[DataType::Utf8]).unwrap();
        t.assign_runs(&[strs(&[Some("a"); 9].iter().copied().chain([None]).collect::<Vec<_>>())], &mut got, &mut runs).unwrap();
        assert!(runs.is_empty());
        assert_eq!(got, [vec![0; 9], vec![1]].concat());
    }

    #[test]
    fn floats_group_minus_zero_with_zero_and_nans_together() {
        let mut t = GroupTable::new(&[DataType::Float64]).unwrap();
        let a: ArrayRef = Arc::new(Float64Array::from(vec![0.0, -0.0, f64::NAN, -f64::NAN, 1.5]));
        let mut out = vec![];
        t.assign(&[a], &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1, 1, 2]);
    }

    #[test]
    fn intervals_and_wide_keys_take_the_row_format() {
        let mut t = GroupTable::new(&[DataType::Interval(IntervalUnit::MonthDayNano)]).unwrap();
        assert!(!t.is_packed());
        let a: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![
            IntervalMonthDayNano::new(1, 0, 0),
            IntervalMonthDayNano::new(1, 0, 0),
            IntervalMonthDayNano::new(0, 1, 0),
        ]));
        let mut out = vec![];
        t.assign(&[a], &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1]);
        assert_eq!(t.keys().unwrap()[0].len(), 2);
        let five: Vec<DataType> = vec![DataType::Int64; 5];
        assert!(!GroupTable::new(&five).unwrap().is_packed());
    }
}
