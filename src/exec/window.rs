//! `WindowExecutor`: window functions over the whole input. The calls run in
//! the order the planner gives them (PostgreSQL's order of its WindowAgg nodes);
//! before each, the rows are sorted by its (partition keys, order keys) with
//! PostgreSQL's quicksort, starting from the previous call's order, and the
//! output comes in the last order, as PostgreSQL's chain of sorts and windows
//! leaves it: peers then sit where PostgreSQL puts them. Each call walks the
//! ordered rows once (moving frames look back at most n rows).

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::SortOptions;
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::plan::{
    arrow_schema, AggFunc, FrameBound, FrameExclude, FrameUnits, GeneralFrame, PlanColumn, WindowCall, WindowFrame, WindowFunc,
};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::err;
use crate::error::Result;
use crate::types::numeric::Numeric;
use crate::types::{value_at, values_to_array, Value};

pub struct WindowExecutor {
    child: Box<dyn BatchExecutor>,
    calls: Vec<WindowCall>,
    schema: SchemaRef,
    ctx: ExecCtx,
    output: Option<RecordBatch>,
    pos: usize,
}

impl WindowExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, calls: Vec<WindowCall>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        WindowExecutor { child, calls, schema: arrow_schema(columns), ctx, output: None, pos: 0 }
    }

    fn compute(&mut self) -> Result<RecordBatch> {
        let in_schema = self.child.schema();
        let batches = super::drain(&mut self.child, &self.ctx)?;
        let input = super::concat(&self.ctx, &in_schema, &batches)?;
        let mut order: Vec<usize> = (0..input.num_rows()).collect();
        let mut cols: Vec<ArrayRef> = input.columns().to_vec();
        for call in &self.calls {
            cols.push(self.eval_call(call, &input, &mut order)?);
        }
        // The rows in the last call's order.
        if order.iter().enumerate().any(|(i, &r)| i != r) {
            let idx = UInt32Array::from_iter_values(order.iter().map(|&i| i as u32));
            cols = cols.iter().map(|c| arrow::compute::take(c.as_ref(), &idx, None)).collect::<std::result::Result<_, _>>()?;
        }
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(input.num_rows())))?)
    }

    /// One call's column (indexed by input row); `order` comes in as the previous call's
    /// order of the rows and goes out sorted by this call's partition and order keys.
    fn eval_call(&self, call: &WindowCall, input: &RecordBatch, order: &mut [usize]) -> Result<ArrayRef> {
        let n = input.num_rows();
        if n == 0 {
            return Ok(arrow::array::new_empty_array(&call.ty.to_arrow()));
        }
        // The sort order, a boxed value per row and the output column.
        self.ctx.charge(n * (8 + 2 * std::mem::size_of::<Value>()), "a window partition")?;
        // Numerics partition and sort by value, intervals by their comparison value.
        let key = |e: &super::expr::Expr| -> Result<ArrayRef> {
            let a = super::expr::comparable_form(e.eval(input, &self.ctx)?, e.ty())?;
            Ok(super::keys::normalize_key(&a))
        };
        let part: Vec<ArrayRef> = call.partition_by.iter().map(key).collect::<Result<_>>()?;
        let ord: Vec<ArrayRef> = call.order_by.iter().map(|k| key(&k.expr)).collect::<Result<_>>()?;
        // A partition key that is also an order key sorts in that key's direction (PostgreSQL
        // takes the ORDER BY item's operator for it); others ASC NULLS LAST.
        let mut options: Vec<SortOptions> = call
            .partition_by
            .iter()
            .map(|e| {
                let k = call.order_by.iter().find(|k| k.expr == *e);
                SortOptions { descending: k.is_some_and(|k| k.desc), nulls_first: k.is_some_and(|k| k.nulls_first) }
            })
            .collect();
        options.extend(call.order_by.iter().map(|k| SortOptions { descending: k.desc, nulls_first: k.nulls_first }));
        let sort_cols: Vec<ArrayRef> = part.iter().chain(&ord).cloned().collect();
        super::sort::pg_sort_positions(&sort_cols, &options, order)?;
        let order: &[usize] = order;
        let part_rows = encode(&part)?;
        let ord_rows = encode(&ord)?;
        let same_part = |a: usize, b: usize| part_rows.as_ref().is_none_or(|r| r.row(a) == r.row(b));
        let peers = |a: usize, b: usize| ord_rows.as_ref().is_none_or(|r| r.row(a) == r.row(b));
        let args: Vec<ArrayRef> = call.args.iter().map(|e| e.eval(input, &self.ctx)).collect::<Result<_>>()?;
        let arg = |i: usize, k: usize| -> Value { args.get(k).map(|a| value_at(a.as_ref(), i)).unwrap_or(Value::Null) };
        let mut out = vec![Value::Null; n];
        let frame = Frame::new(&call.frame, input, &self.ctx, call.order_by.first().map(|k| (k.desc, k.nulls_first)))?;
        // Partition boundaries in the sorted order.
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && same_part(order[start], order[end]) {
                end += 1;
            }
            let rows = &order[start..end];
            self.ctx.check()?;
            match call.func {
                WindowFunc::RowNumber => {
                    for (k, &r) in rows.iter().enumerate() {
                        out[r] = Value::Int(k as i64 + 1);
                    }
                }
                WindowFunc::Rank | WindowFunc::DenseRank => {
                    let (mut rank, mut dense) = (1i64, 1i64);
                    for k in 0..rows.len() {
                        if k > 0 && !peers(rows[k - 1], rows[k]) {
                            rank = k as i64 + 1;
                            dense += 1;
                        }
                        out[rows[k]] = Value::Int(if call.func == WindowFunc::Rank { rank } else { dense });
                    }
                }
                WindowFunc::Lag | WindowFunc::Lead => {
                    for (k, &r) in rows.iter().enumerate() {
                        let off = match arg(r, 1) {
                            Value::Int(o) => o,
                            Value::Null if args.len() > 1 => {
                                out[r] = Value::Null;
                                continue;
                            }
                            _ => 1,
                        };
                        let j = if call.func == WindowFunc::Lag { k as i64 - off } else { k as i64 + off };
                        out[r] = if j >= 0 && (j as usize) < rows.len() { arg(rows[j as usize], 0) } else { arg(r, 2) };
                    }
                }
                WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue if frame.is_some() => {
                    let f = frame.as_ref().expect("checked");
                    let groups = Groups::new(rows, &peers);
                    for k in 0..rows.len() {
                        let parts = f.parts(k, rows, &groups);
                        let mut positions = parts.iter().flat_map(|&(a, b)| a..b);
                        let at = match call.func {
                            WindowFunc::FirstValue => positions.next(),
                            WindowFunc::LastValue => positions.next_back(),
                            _ => match arg(rows[k], 1) {
                                Value::Int(i) if i > 0 => positions.nth(i as usize - 1),
                                Value::Int(_) => {
                                    return Err(err!(InvalidParameterValue, "argument of nth_value must be greater than zero"))
                                }
                                _ => None,
                            },
                        };
                        out[rows[k]] = match at {
                            Some(j) => arg(rows[j], 0),
                            None => Value::Null,
                        };
                    }
                }
                WindowFunc::NthValue => {
                    // Default frame: from the partition start through the last peer.
                    let groups = Groups::new(rows, &peers);
                    for k in 0..rows.len() {
                        let hi = groups.end[groups.of[k]];
                        out[rows[k]] = match arg(rows[k], 1) {
                            Value::Int(i) if i > 0 && (i as usize) <= hi => arg(rows[i as usize - 1], 0),
                            Value::Int(i) if i <= 0 => {
                                return Err(err!(InvalidParameterValue, "argument of nth_value must be greater than zero"))
                            }
                            _ => Value::Null,
                        };
                    }
                }
                WindowFunc::Ntile => {
                    let m = rows.len() as i64;
                    for (k, &r) in rows.iter().enumerate() {
                        out[r] = match arg(r, 0) {
                            Value::Int(b) if b > 0 => {
                                // PostgreSQL: the first m % b buckets get one row more.
                                let (q, rem) = (m / b, m % b);
                                let k = k as i64;
                                let big = rem * (q + 1);
                                Value::Int(if k < big { k / (q + 1) + 1 } else { rem + (k - big) / q.max(1) + 1 })
                            }
                            Value::Int(_) => return Err(err!(InvalidParameterValue, "argument of ntile must be greater than zero")),
                            _ => Value::Null,
                        };
                    }
                }
                WindowFunc::PercentRank | WindowFunc::CumeDist => {
                    let groups = Groups::new(rows, &peers);
                    let m = rows.len();
                    for k in 0..m {
                        let g = groups.of[k];
                        out[rows[k]] = Value::Float(if call.func == WindowFunc::CumeDist {
                            groups.end[g] as f64 / m as f64
                        } else if m > 1 {
                            groups.start[g] as f64 / (m - 1) as f64
                        } else {
                            0.0
                        });
                    }
                }
                WindowFunc::FirstValue => {
                    for &r in rows {
                        out[r] = arg(rows[0], 0);
                    }
                }
                WindowFunc::LastValue => {
                    // Default frame: through the last peer of the current row.
                    let mut k = 0;
                    while k < rows.len() {
                        let mut e = k + 1;
                        while e < rows.len() && peers(rows[k], rows[e]) {
                            e += 1;
                        }
                        let last = if call.order_by.is_empty() { arg(rows[rows.len() - 1], 0) } else { arg(rows[e - 1], 0) };
                        for &r in &rows[k..e] {
                            out[r] = last.clone();
                        }
                        k = e;
                    }
                }
                WindowFunc::Agg(AggFunc::User(id)) => {
                    let agg = super::user_agg::get(id)?;
                    let nargs = agg.arg_types.len();
                    let groups = Groups::new(rows, &peers);
                    let m = rows.len();
                    let frame_of = |k: usize| -> [(usize, usize); 3] {
                        match frame.as_ref() {
                            Some(f) => f.parts(k, rows, &groups),
                            None if call.order_by.is_empty() => [(0, m), (m, m), (m, m)],
                            None => {
                                let e = groups.end[groups.of[k]];
                                [(0, e), (e, e), (e, e)]
                            }
                        }
                    };
                    // A FILTER condition rides after the arguments.
                    let row_args = |p: usize| -> (Vec<Value>, bool) {
                        let r = rows[p];
                        let pass = call.args.len() <= nargs || matches!(arg(r, nargs), Value::Bool(true));
                        ((0..nargs).map(|j| arg(r, j)).collect(), pass)
                    };
                    let shape = match &call.frame {
                        WindowFrame::General(g) => super::user_agg::FrameShape {
                            end_current_or_unbounded: matches!(g.end, FrameBound::CurrentRow | FrameBound::UnboundedFollowing),
                            exclusion: g.exclude != FrameExclude::NoOthers,
                        },
                        _ => super::user_agg::FrameShape { end_current_or_unbounded: true, exclusion: false },
                    };
                    let vals = super::user_agg::window_values(&agg, m, &row_args, &frame_of, shape, &self.ctx)?;
                    for (k, v) in vals.into_iter().enumerate() {
                        out[rows[k]] = v;
                    }
                }
                WindowFunc::Agg(f) => {
                    let numeric = call.ty == crate::types::SqlType::Numeric;
                    let elem = call.args.first().map(|a| a.ty()).unwrap_or(crate::types::SqlType::Text);
                    let vals: Vec<Value> = rows.iter().map(|&r| if f == AggFunc::CountStar { Value::Int(1) } else { arg(r, 0) }).collect();
                    match &call.frame {
                        WindowFrame::General(_) => {
                            let (agg, f) = (f, frame.as_ref().expect("a general frame"));
                            let groups = Groups::new(rows, &peers);
                            for k in 0..rows.len() {
                                self.ctx.check()?;
                                let parts = f.parts(k, rows, &groups);
                                out[rows[k]] = fold(agg, numeric, elem, parts.iter().flat_map(|&(a, b)| &vals[a..b]))?;
                            }
                        }
                        WindowFrame::Default if call.order_by.is_empty() => {
                            let v = fold(f, numeric, elem, vals.iter())?;
                            for &r in rows {
                                out[r] = v.clone();
                            }
                        }
                        WindowFrame::Default => {
                            // Running value through each peer group.
                            let mut k = 0;
                            while k < rows.len() {
                                let mut e = k + 1;
                                while e < rows.len() && peers(rows[k], rows[e]) {
                                    e += 1;
                                }
                                // Each peer group folds the prefix again
                                // (quadratic): honour timeouts and cancels.
                                self.ctx.check()?;
                                let v = fold(f, numeric, elem, vals[..e].iter())?;
                                for &r in &rows[k..e] {
                                    out[r] = v.clone();
                                }
                                k = e;
                            }
                        }
                        WindowFrame::RowsPreceding(p) => {
                            for k in 0..rows.len() {
                                self.ctx.check()?;
                                let from = p.map(|p| k.saturating_sub(p)).unwrap_or(0);
                                out[rows[k]] = fold(f, numeric, elem, vals[from..=k].iter())?;
                            }
                        }
                    }
                }
            }
            start = end;
        }
        values_to_array(&out, call.ty)
    }
}

/// Peer groups of a partition (rows in sorted order): each row's group and each group's
/// start and end (exclusive) positions.
struct Groups {
    of: Vec<usize>,
    start: Vec<usize>,
    end: Vec<usize>,
}

impl Groups {
    fn new(rows: &[usize], peers: &dyn Fn(usize, usize) -> bool) -> Groups {
        let mut g = Groups { of: Vec::with_capacity(rows.len()), start: vec![], end: vec![] };
        for k in 0..rows.len() {
            if k == 0 || !peers(rows[k - 1], rows[k]) {
                if k > 0 {
                    g.end.push(k);
                }
                g.start.push(k);
            }
            g.of.push(g.start.len() - 1);
        }
        g.end.push(rows.len());
        g
    }
}

/// A general frame with its offsets evaluated: counts for ROWS / GROUPS, per-row bound
/// values and the key for RANGE.
struct Frame {
    units: FrameUnits,
    start: Bound,
    end: Bound,
    key: Option<ArrayRef>,
    /// The key as numbers, for `Bound::Offset`.
    num_keys: Option<NumKeys>,
    desc: bool,
    nulls_first: bool,
    exclude: FrameExclude,
}

enum Bound {
    UnboundedPreceding,
    Preceding(usize),
    CurrentRow,
    Following(usize),
    UnboundedFollowing,
    /// RANGE: the bound's value for each input row.
    Value(ArrayRef),
    /// RANGE on a number key: the offset, applied by PostgreSQL's in_range rules.
    Offset {
        offset: NumOffset,
        preceding: bool,
    },
}

impl Frame {
    fn new(frame: &WindowFrame, input: &RecordBatch, ctx: &ExecCtx, key_order: Option<(bool, bool)>) -> Result<Option<Frame>> {
        let rows_from = |p: Option<usize>| Frame {
            units: FrameUnits::Rows,
            start: p.map_or(Bound::UnboundedPreceding, Bound::Preceding),
            end: Bound::CurrentRow,
            key: None,
            num_keys: None,
            desc: false,
            nulls_first: false,
            exclude: FrameExclude::NoOthers,
        };
        let g = match frame {
            WindowFrame::Default => return Ok(None),
            WindowFrame::RowsPreceding(p) => return Ok(Some(rows_from(*p))),
            WindowFrame::General(g) => g,
        };
        let GeneralFrame { units, start, end, range_key, range_offsets, exclude } = g.as_ref();
        let bound = |b: &FrameBound| -> Result<Bound> {
            Ok(match b {
                FrameBound::UnboundedPreceding => Bound::UnboundedPreceding,
                FrameBound::UnboundedFollowing => Bound::UnboundedFollowing,
                FrameBound::CurrentRow => Bound::CurrentRow,
                FrameBound::Preceding(e) | FrameBound::Following(e) => {
                    let a = e.eval(input, ctx)?;
                    let preceding = matches!(b, FrameBound::Preceding(_));
                    if *range_offsets {
                        let offset = NumOffset::new(value_at(a.as_ref(), 0), preceding)?;
                        Bound::Offset { offset, preceding }
                    } else if *units == FrameUnits::Range {
                        Bound::Value(a)
                    } else {
                        let n = match value_at(a.as_ref(), 0) {
                            Value::Int(i) => i.max(0) as usize,
                            _ => 0,
                        };
                        if matches!(b, FrameBound::Preceding(_)) {
                            Bound::Preceding(n)
                        } else {
                            Bound::Following(n)
                        }
                    }
                }
            })
        };
        let key = range_key.as_ref().map(|k| k.eval(input, ctx)).transpose()?;
        let num_keys = match (&key, range_offsets) {
            (Some(k), true) => Some(NumKeys::new(k)?),
            _ => None,
        };
        let (desc, nulls_first) = key_order.unwrap_or((false, false));
        Ok(Some(Frame { units: *units, start: bound(start)?, end: bound(end)?, key, num_keys, desc, nulls_first, exclude: *exclude }))
    }

    /// The frame of the k-th row of a partition less its EXCLUDE clause: up to three runs of
    /// positions, in order (the rows before the excluded peers, the current row for
    /// EXCLUDE TIES, the rows after them); empty runs are `(x, x)`.
    fn parts(&self, k: usize, rows: &[usize], groups: &Groups) -> [(usize, usize); 3] {
        let (lo, hi) = self.bounds(k, rows, groups);
        if hi <= lo {
            return [(lo, lo); 3];
        }
        let g = groups.of[k];
        let (cut_lo, cut_hi) = match self.exclude {
            FrameExclude::NoOthers => return [(lo, hi), (hi, hi), (hi, hi)],
            FrameExclude::CurrentRow => (k, k + 1),
            FrameExclude::Group | FrameExclude::Ties => (groups.start[g], groups.end[g]),
        };
        let (cut_lo, cut_hi) = (cut_lo.clamp(lo, hi), cut_hi.clamp(lo, hi));
        let middle = if self.exclude == FrameExclude::Ties && lo <= k && k < hi { (k, k + 1) } else { (cut_hi, cut_hi) };
        [(lo, cut_lo), middle, (cut_hi, hi)]
    }

    /// The frame of the k-th row of a partition: positions [lo, hi).
    fn bounds(&self, k: usize, rows: &[usize], groups: &Groups) -> (usize, usize) {
        let m = rows.len();
        let g = groups.of[k];
        let ng = groups.start.len();
        let lo = match (&self.start, self.units) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::CurrentRow, FrameUnits::Rows) => k,
            (Bound::CurrentRow, _) => groups.start[g],
            (Bound::Preceding(n), FrameUnits::Rows) => k.saturating_sub(*n),
            (Bound::Following(n), FrameUnits::Rows) => (k + n).min(m),
            (Bound::Preceding(n), _) => g.checked_sub(*n).map_or(0, |h| groups.start[h]),
            (Bound::Following(n), _) => groups.start.get(g + n).copied().unwrap_or(m),
            (Bound::Value(b), _) => self.range_edge(k, rows, groups, b, true),
            (Bound::Offset { offset, preceding }, _) => self.offset_edge(k, rows, groups, offset, *preceding, true),
            (Bound::UnboundedFollowing, _) => m,
        };
        let hi = match (&self.end, self.units) {
            (Bound::UnboundedFollowing, _) => m,
            (Bound::CurrentRow, FrameUnits::Rows) => k + 1,
            (Bound::CurrentRow, _) => groups.end[g],
            (Bound::Preceding(n), FrameUnits::Rows) => (k + 1).saturating_sub(*n),
            (Bound::Following(n), FrameUnits::Rows) => (k + 1 + n).min(m),
            (Bound::Preceding(n), _) => g.checked_sub(*n).map_or(0, |h| groups.end[h]),
            (Bound::Following(n), _) => {
                if g + n < ng {
                    groups.end[g + n]
                } else {
                    m
                }
            }
            (Bound::Value(b), _) => self.range_edge(k, rows, groups, b, false),
            (Bound::Offset { offset, preceding }, _) => self.offset_edge(k, rows, groups, offset, *preceding, false),
            (Bound::UnboundedPreceding, _) => 0,
        };
        (lo, hi)
    }

    /// RANGE with an offset on a number key, as PostgreSQL's nodeWindowAgg runs in_range: a
    /// start is the first row in range of the current one, an end the first row past it.
    /// A NULL key's frame is its peer group; NULL rows are before or after all others.
    fn offset_edge(&self, k: usize, rows: &[usize], groups: &Groups, offset: &NumOffset, preceding: bool, start: bool) -> usize {
        let keys = self.num_keys.as_ref().expect("an offset frame has number keys");
        let base = rows[k];
        if keys.is_null(base) {
            let g = groups.of[k];
            return if start { groups.start[g] } else { groups.end[g] };
        }
        // Subtract for PRECEDING, compare with >= for a start; both flip when descending.
        let sub = preceding != self.desc;
        let less = if start { self.desc } else { !self.desc };
        let m = rows.len();
        if start {
            // NULLs first are skipped; NULLs last end the search.
            (0..m)
                .find(|&j| if keys.is_null(rows[j]) { !self.nulls_first } else { keys.in_range(rows[j], base, offset, sub, less) })
                .unwrap_or(m)
        } else {
            (0..m)
                .find(|&j| if keys.is_null(rows[j]) { !self.nulls_first } else { !keys.in_range(rows[j], base, offset, sub, less) })
                .unwrap_or(m)
        }
    }

    /// RANGE: the first position not before the bound (a start), or the first after it
    /// (an end), in the sort order of the key. A NULL key's frame is its peer group.
    fn range_edge(&self, k: usize, rows: &[usize], groups: &Groups, bound: &ArrayRef, start: bool) -> usize {
        let key = self.key.as_ref().expect("RANGE frames have a key");
        let at = |a: &ArrayRef, i: usize| value_at(a.as_ref(), if a.len() == 1 { 0 } else { i });
        let b = at(bound, rows[k]);
        if b.is_null() || at(key, rows[k]).is_null() {
            let g = groups.of[k];
            return if start { groups.start[g] } else { groups.end[g] };
        }
        // <0: the row sorts before the bound, >0: after.
        let side = |j: usize| -> std::cmp::Ordering {
            let v = at(key, rows[j]);
            if v.is_null() {
                return if self.nulls_first { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater };
            }
            let o = v.total_cmp(&b);
            if self.desc {
                o.reverse()
            } else {
                o
            }
        };
        let m = rows.len();
        if start {
            (0..m).find(|&j| side(j) != std::cmp::Ordering::Less).unwrap_or(m)
        } else {
            (0..m).find(|&j| side(j) == std::cmp::Ordering::Greater).unwrap_or(m)
        }
    }
}

/// A RANGE frame's number key, per input row, in the type its in_range function takes.
enum NumKeys {
    Int(Vec<Option<i128>>),
    Float(Vec<Option<f64>>),
    Numeric(Vec<Option<Numeric>>),
}

/// A RANGE offset (never negative nor NaN).
#[derive(Debug)]
enum NumOffset {
    Int(i128),
    Float(f64),
    Numeric(Numeric),
}

impl NumOffset {
    fn new(v: Value, preceding: bool) -> Result<NumOffset> {
        let bad = || err!(InvalidPrecedingOrFollowingSize, "invalid preceding or following size in window function");
        let o = match v {
            Value::Null => {
                return Err(err!(NullValueNotAllowed, "frame {} offset must not be null", if preceding { "starting" } else { "ending" }))
            }
            Value::Int(i) => NumOffset::Int(i as i128),
            Value::Float(f) => NumOffset::Float(f),
            Value::Text(t) => NumOffset::Numeric(Numeric::parse(&t)?),
            other => return Err(err!(InvalidPrecedingOrFollowingSize, "invalid RANGE offset {other:?}")),
        };
        let negative = match &o {
            NumOffset::Int(i) => *i < 0,
            NumOffset::Float(f) => f.is_nan() || *f < 0.0,
            NumOffset::Numeric(n) => n.is_nan() || n.signum() < 0,
        };
        if negative {
            return Err(bad());
        }
        Ok(o)
    }
}

impl NumKeys {
    fn new(a: &ArrayRef) -> Result<NumKeys> {
        let n = a.len();
        let vals = (0..n).map(|i| value_at(a.as_ref(), i));
        Ok(match a.data_type() {
            arrow::datatypes::DataType::Float32 | arrow::datatypes::DataType::Float64 => NumKeys::Float(
                vals.map(|v| match v {
                    Value::Float(f) => Some(f),
                    _ => None,
                })
                .collect(),
            ),
            arrow::datatypes::DataType::Utf8 => NumKeys::Numeric(
                vals.map(|v| match v {
                    Value::Text(t) => Numeric::parse(&t).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?,
            ),
            _ => NumKeys::Int(
                vals.map(|v| match v {
                    Value::Int(i) => Some(i as i128),
                    _ => None,
                })
                .collect(),
            ),
        })
    }

    fn is_null(&self, i: usize) -> bool {
        match self {
            NumKeys::Int(v) => v[i].is_none(),
            NumKeys::Float(v) => v[i].is_none(),
            NumKeys::Numeric(v) => v[i].is_none(),
        }
    }

    /// PostgreSQL's in_range(val, base, offset, sub, less): is row `val` on the right side
    /// of `base ± offset` (`<=` when `less`, else `>=`)? NaN sorts above everything; a
    /// bound that would be inf - inf is past every row; integers cannot overflow here.
    fn in_range(&self, val: usize, base: usize, offset: &NumOffset, sub: bool, less: bool) -> bool {
        use std::cmp::Ordering;
        let side = |o: Ordering| if less { o.is_le() } else { o.is_ge() };
        match (self, offset) {
            (NumKeys::Int(v), NumOffset::Int(off)) => {
                let (Some(x), Some(b)) = (v[val], v[base]) else { return false };
                side(x.cmp(&if sub { b - off } else { b + off }))
            }
            (NumKeys::Float(v), off) => {
                let (Some(x), Some(b)) = (v[val], v[base]) else { return false };
                let off = match off {
                    NumOffset::Float(f) => *f,
                    NumOffset::Int(i) => *i as f64,
                    NumOffset::Numeric(_) => return false,
                };
                if x.is_nan() {
                    return b.is_nan() || !less;
                }
                if b.is_nan() {
                    return less;
                }
                if off.is_infinite() && b.is_infinite() && (if sub { b > 0.0 } else { b < 0.0 }) {
                    return true;
                }
                let sum = if sub { b - off } else { b + off };
                if less {
                    x <= sum
                } else {
                    x >= sum
                }
            }
            (NumKeys::Numeric(v), off) => {
                let (Some(x), Some(b)) = (v[val].as_ref(), v[base].as_ref()) else { return false };
                let off = match off {
                    NumOffset::Numeric(n) => n.clone(),
                    NumOffset::Int(i) => Numeric::from_i128(*i),
                    NumOffset::Float(_) => return false,
                };
                if x.is_nan() {
                    return b.is_nan() || !less;
                }
                if b.is_nan() {
                    return less;
                }
                let inf = |n: &Numeric, positive: bool| n.is_special() && n.signum() == if positive { 1 } else { -1 };
                if off.is_special() && inf(b, sub) {
                    return true;
                }
                match if sub { b.sub(&off) } else { b.add(&off) } {
                    Ok(sum) => side(x.cmp_value(&sum)),
                    Err(_) => false,
                }
            }
            (NumKeys::Int(_), _) => false,
        }
    }
}

fn encode(cols: &[ArrayRef]) -> Result<Option<arrow::row::Rows>> {
    if cols.is_empty() {
        return Ok(None);
    }
    let conv = RowConverter::new(cols.iter().map(|c| SortField::new(c.data_type().clone())).collect())?;
    Ok(Some(conv.convert_columns(cols)?))
}

/// One aggregate over a frame's values (NULLs ignored, as aggregates do).
fn fold<'a>(f: AggFunc, numeric: bool, elem: crate::types::SqlType, vals: impl Iterator<Item = &'a Value>) -> Result<Value> {
    if f == AggFunc::ArrayAgg {
        // array_agg keeps NULLs; no rows at all is NULL.
        let items: Vec<Option<String>> = vals.map(|v| crate::types::array::elem_text(v, elem)).collect();
        return Ok(if items.is_empty() { Value::Null } else { Value::Text(crate::types::array::format_array(&items)) });
    }
    let mut live = vals.filter(|v| !v.is_null()).peekable();
    if matches!(f, AggFunc::Sum | AggFunc::Avg) && matches!(live.peek(), Some(Value::Interval(_))) {
        // interval_accum / interval_avg: the sum, divided by the count for avg.
        let (mut sum, mut count) = (crate::types::Interval::ZERO, 0u64);
        for v in live {
            if let Value::Interval(iv) = v {
                sum = sum.checked_add(*iv)?;
                count += 1;
            }
        }
        return Ok(Value::Interval(if f == AggFunc::Avg { sum.div_f64(count as f64)? } else { sum }));
    }
    if numeric && !matches!(f, AggFunc::Count | AggFunc::CountStar) {
        return super::aggregate::fold_numeric(f, live);
    }
    Ok(match f {
        AggFunc::CountStar | AggFunc::Count => Value::Int(live.count() as i64),
        AggFunc::Sum => {
            let mut int: Option<i64> = None;
            let mut flt: Option<f64> = None;
            for v in live {
                match v {
                    Value::Int(i) => {
                        int = Some(int.unwrap_or(0).checked_add(*i).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?)
                    }
                    Value::Float(x) => flt = Some(flt.unwrap_or(0.0) + x),
                    _ => {}
                }
            }
            match (int, flt) {
                (Some(i), None) => Value::Int(i),
                (None, Some(x)) => Value::Float(x),
                (Some(i), Some(x)) => Value::Float(i as f64 + x),
                (None, None) => Value::Null,
            }
        }
        AggFunc::Avg => {
            let (mut s, mut c) = (0.0, 0);
            for v in live {
                match v {
                    Value::Int(i) => s += *i as f64,
                    Value::Float(x) => s += x,
                    _ => {}
                }
                c += 1;
            }
            if c == 0 {
                Value::Null
            } else {
                Value::Float(s / c as f64)
            }
        }
        AggFunc::Min | AggFunc::Max => {
            let mut best: Option<&Value> = None;
            for v in live {
                let better = match best {
                    None => true,
                    Some(b) => {
                        let o = v.total_cmp(b);
                        if f == AggFunc::Min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    }
                };
                if better {
                    best = Some(v);
                }
            }
            best.cloned().unwrap_or(Value::Null)
        }
        AggFunc::StddevPop | AggFunc::StddevSamp | AggFunc::VarPop | AggFunc::VarSamp => {
            // PostgreSQL's float8_accum (Youngs-Cramer), so float8 answers match to the bit.
            let (mut n, mut sx, mut m2) = (0f64, 0f64, 0f64);
            for v in live {
                let x = match v {
                    Value::Int(i) => *i as f64,
                    Value::Float(x) => *x,
                    _ => continue,
                };
                n += 1.0;
                sx += x;
                if n > 1.0 {
                    let t = x * n - sx;
                    m2 += t * t / (n * (n - 1.0));
                }
            }
            let samp = matches!(f, AggFunc::StddevSamp | AggFunc::VarSamp);
            if n < 1.0 || (samp && n < 2.0) {
                return Ok(Value::Null);
            }
            let var = if samp { m2 / (n - 1.0) } else { m2 / n };
            Value::Float(if matches!(f, AggFunc::StddevPop | AggFunc::StddevSamp) { var.sqrt() } else { var })
        }
        AggFunc::BoolAnd | AggFunc::BoolOr => {
            let mut acc: Option<bool> = None;
            for v in live {
                if let Value::Bool(b) = v {
                    acc = Some(match acc {
                        None => *b,
                        Some(a) if f == AggFunc::BoolAnd => a && *b,
                        Some(a) => a || *b,
                    });
                }
            }
            acc.map_or(Value::Null, Value::Bool)
        }
        other => return Err(err!(FeatureNotSupported, "{other:?} is not supported as a window function")),
    })
}

impl BatchExecutor for WindowExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.output.is_none() {
            self.output = Some(self.compute()?);
        }
        Ok(super::next_slice(self.output.as_ref().unwrap(), &mut self.pos, max_rows))
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
