//! `ProjectSetExecutor`: set-returning functions of a select list
//! (PostgreSQL's ProjectSet). For each input row the calls' sets are
//! produced in lockstep: the row is repeated until the longest set ends and
//! shorter sets give NULL; a row whose sets are all empty yields nothing.
//! Output: the input's columns, then each call's columns (a record-returning
//! call such as `_pg_expandarray` adds one column per field).
//!
//! Arrays are text values in weir (`{1,2}`, or int2vector's `1 2`);
//! `array_elements` reads them. Output is produced in batches of at most
//! `max_rows` rows, however large one row's sets are.

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::datatypes::SchemaRef;

use super::expr::cast_array;
use super::plan::{arrow_schema, PlanColumn, SrfCall, SrfKind};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;
use crate::types::numeric::Numeric;
use crate::types::{value_at, values_to_array, Interval, SqlType, Value};
use crate::{bail, err};

/// The rest of one call's set for the current row.
enum SetIter {
    Ints {
        next: Option<i64>,
        stop: i64,
        step: i64,
    },
    Times {
        next: Option<i64>,
        stop: i64,
        step: Interval,
        tz: bool,
    },
    /// generate_series over numerics: each value is the previous plus the
    /// step (display scale the larger of the two).
    Numerics {
        next: Option<Numeric>,
        stop: Numeric,
        step: Numeric,
    },
    /// Rows of values (one per output column of the call), in order.
    Rows(std::vec::IntoIter<Vec<Value>>),
    Empty,
}

impl SetIter {
    fn next(&mut self) -> Result<Option<Vec<Value>>> {
        Ok(match self {
            SetIter::Ints { next, stop, step } => match *next {
                Some(v) if (*step > 0 && v <= *stop) || (*step < 0 && v >= *stop) => {
                    *next = v.checked_add(*step);
                    Some(vec![Value::Int(v)])
                }
                _ => None,
            },
            SetIter::Times { next, stop, step, tz } => match *next {
                Some(v) if (step_sign(step) > 0 && v <= *stop) || (step_sign(step) < 0 && v >= *stop) => {
                    *next = add_interval(v, *step, *tz)?;
                    Some(vec![Value::Timestamp(v)])
                }
                _ => None,
            },
            SetIter::Numerics { next, stop, step } => match next.take() {
                Some(v) if (step.signum() > 0 && v.cmp_value(stop).is_le()) || (step.signum() < 0 && v.cmp_value(stop).is_ge()) => {
                    *next = Some(v.add(step)?);
                    Some(vec![Value::Text(v.to_string())])
                }
                _ => None,
            },
            SetIter::Rows(it) => it.next(),
            SetIter::Empty => None,
        })
    }
}

/// generate_series(start, stop[, step]) over numerics, with PostgreSQL's
/// refusals of NaN and infinite bounds and of a zero step.
fn numeric_series(args: &[Value]) -> Result<SetIter> {
    let num = |v: Option<&Value>| match v {
        Some(Value::Text(s)) => Numeric::parse(s).map(Some),
        _ => Ok(None),
    };
    let (Some(start), Some(stop)) = (num(args.first())?, num(args.get(1))?) else { return Ok(SetIter::Empty) };
    let step = match args.get(2) {
        None => Numeric::from_i64(1),
        Some(_) => match num(args.get(2))? {
            Some(s) => s,
            None => return Ok(SetIter::Empty),
        },
    };
    for (what, v) in [("start value", &start), ("stop value", &stop), ("step size", &step)] {
        if v.is_nan() {
            bail!(InvalidParameterValue, "{what} cannot be NaN");
        }
        if v.is_special() {
            bail!(InvalidParameterValue, "{what} cannot be infinity");
        }
    }
    if step.signum() == 0 {
        bail!(InvalidParameterValue, "step size cannot equal zero");
    }
    Ok(SetIter::Numerics { next: Some(start), stop, step })
}

/// An interval's direction, comparing with 30-day months as PostgreSQL does.
fn step_sign(i: &Interval) -> i128 {
    let total = (i.months as i128) * 30 * 86_400_000_000 + (i.days as i128) * 86_400_000_000 + i.micros as i128;
    total.signum()
}

/// `t + step` with PostgreSQL's timestamp arithmetic; None past the range.
fn add_interval(t: i64, step: Interval, tz: bool) -> Result<Option<i64>> {
    let ty = if tz { SqlType::TimestampTz } else { SqlType::Timestamp };
    let l = values_to_array(&[Value::Timestamp(t)], ty)?;
    let r = values_to_array(&[Value::Interval(step)], SqlType::Interval)?;
    match super::functions::temporal::arith('+', l.as_ref(), r.as_ref()) {
        Ok(a) => Ok(match value_at(a.as_ref(), 0) {
            Value::Timestamp(v) => Some(v),
            _ => None,
        }),
        // Stepping past the timestamp range ends the series.
        Err(_) => Ok(None),
    }
}

/// The elements of an array value in its text form: `{a,"b c",NULL}`
/// (one dimension; nested braces are flattened) or a vector type's
/// space-separated `1 2 3`. `None` elements are NULLs.
pub fn array_elements(s: &str) -> Result<Vec<Option<String>>> {
    let t = s.trim();
    // An explicit lower bound (`[0:1]={a,b}`) is dropped.
    let t = match (t.starts_with('['), t.find('=')) {
        (true, Some(p)) => t[p + 1..].trim(),
        _ => t,
    };
    if !t.starts_with('{') {
        return Ok(t.split_whitespace().map(|x| Some(x.to_string())).collect());
    }
    let malformed = || err!(InvalidText, "malformed array literal: \"{s}\"");
    let mut out = Vec::new();
    let mut chars = t.chars().peekable();
    let mut depth = 0usize;
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                depth += 1;
            }
            '}' | ',' => {
                if depth == 0 {
                    return Err(malformed());
                }
                if any || quoted || !cur.trim().is_empty() {
                    let v = if quoted { cur.clone() } else { cur.trim().to_string() };
                    out.push(if !quoted && v.eq_ignore_ascii_case("NULL") { None } else { Some(v) });
                }
                cur.clear();
                quoted = false;
                any = c == ',';
                if c == '}' {
                    depth -= 1;
                    any = false;
                }
            }
            '"' => {
                quoted = true;
                while let Some(q) = chars.next() {
                    match q {
                        '\\' => cur.push(chars.next().ok_or_else(malformed)?),
                        '"' => break,
                        other => cur.push(other),
                    }
                }
            }
            '\\' => cur.push(chars.next().ok_or_else(malformed)?),
            other => cur.push(other),
        }
    }
    if depth != 0 {
        return Err(malformed());
    }
    Ok(out)
}

/// Text → a value of `ty` through the executor's text cast.
fn text_value(s: Option<String>, ty: SqlType) -> Result<Value> {
    let Some(s) = s else { return Ok(Value::Null) };
    if ty.is_text() {
        return Ok(Value::Text(s));
    }
    let a = values_to_array(&[Value::Text(s)], SqlType::Text)?;
    Ok(value_at(cast_array(&a, SqlType::Text, ty)?.as_ref(), 0))
}

/// Start one call's set from its argument values.
fn start(call: &SrfCall, args: &[Value], ctx: &ExecCtx) -> Result<SetIter> {
    let int = |v: &Value| match v {
        Value::Int(i) => Some(*i),
        _ => None,
    };
    Ok(match call.kind {
        SrfKind::GenerateSeries => {
            if call.out[0].1 == SqlType::Numeric {
                numeric_series(args)?
            } else if matches!(call.out[0].1, SqlType::Timestamp | SqlType::TimestampTz) {
                let (Some(Value::Timestamp(a)), Some(Value::Timestamp(b)), Some(Value::Interval(step))) =
                    (args.first(), args.get(1), args.get(2))
                else {
                    return Ok(SetIter::Empty);
                };
                if step_sign(step) == 0 {
                    bail!(InvalidParameterValue, "step size cannot equal zero");
                }
                SetIter::Times { next: Some(*a), stop: *b, step: *step, tz: call.out[0].1 == SqlType::TimestampTz }
            } else {
                let step = match args.get(2) {
                    None => 1,
                    Some(v) => match int(v) {
                        Some(s) => s,
                        None => return Ok(SetIter::Empty),
                    },
                };
                if step == 0 {
                    bail!(InvalidParameterValue, "step size cannot equal zero");
                }
                match (args.first().and_then(int), args.get(1).and_then(int)) {
                    (Some(a), Some(b)) => SetIter::Ints { next: Some(a), stop: b, step },
                    _ => SetIter::Empty,
                }
            }
        }
        SrfKind::Unnest => {
            let Some(Value::Text(s)) = args.first() else { return Ok(SetIter::Empty) };
            let ty = call.out[0].1;
            let rows = array_elements(s)?.into_iter().map(|e| text_value(e, ty).map(|v| vec![v])).collect::<Result<Vec<_>>>()?;
            SetIter::Rows(rows.into_iter())
        }
        SrfKind::GenerateSubscripts => {
            let (Some(Value::Text(s)), Some(dim)) = (args.first(), args.get(1).and_then(int)) else { return Ok(SetIter::Empty) };
            let n = array_elements(s)?.len() as i64;
            if dim != 1 || n == 0 {
                return Ok(SetIter::Empty);
            }
            let reverse = matches!(args.get(2), Some(Value::Bool(true)));
            let mut v: Vec<Vec<Value>> = (1..=n).map(|i| vec![Value::Int(i)]).collect();
            if reverse {
                v.reverse();
            }
            SetIter::Rows(v.into_iter())
        }
        SrfKind::ExpandArray => {
            let Some(Value::Text(s)) = args.first() else { return Ok(SetIter::Empty) };
            let ty = call.out[0].1;
            let rows = array_elements(s)?
                .into_iter()
                .enumerate()
                .map(|(i, e)| Ok(vec![text_value(e, ty)?, Value::Int(i as i64 + 1)]))
                .collect::<Result<Vec<_>>>()?;
            SetIter::Rows(rows.into_iter())
        }
        SrfKind::ListeningChannels => {
            let channels = ctx.activity.get(ctx.pid).map(|r| r.listening).unwrap_or_default();
            SetIter::Rows(channels.into_iter().map(|c| vec![Value::Text(c)]).collect::<Vec<_>>().into_iter())
        }
        SrfKind::Lateral { .. } => bail!(Internal, "a LATERAL item is started by its executor"),
    })
}

pub struct ProjectSetExecutor {
    child: Box<dyn BatchExecutor>,
    srfs: Vec<SrfCall>,
    columns: Vec<PlanColumn>,
    schema: SchemaRef,
    ctx: ExecCtx,
    /// The input batch being expanded, its argument values per call, and
    /// the next input row.
    batch: Option<RecordBatch>,
    args: Vec<Vec<ArrayRef>>,
    row: usize,
    /// The current row's sets (None: not started).
    sets: Option<Vec<SetIter>>,
    child_drained: bool,
}

impl ProjectSetExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, srfs: Vec<SrfCall>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        ProjectSetExecutor {
            child,
            srfs,
            columns: columns.to_vec(),
            schema: arrow_schema(columns),
            ctx,
            batch: None,
            args: vec![],
            row: 0,
            sets: None,
            child_drained: false,
        }
    }

    /// The next input batch with rows, or false when the input is drained.
    fn load(&mut self, max_rows: usize) -> Result<bool> {
        while !self.child_drained {
            let r = self.child.next_batch(max_rows)?;
            self.child_drained = r.is_drained;
            let b = r.into_dense()?;
            if b.num_rows() == 0 {
                continue;
            }
            self.args = self
                .srfs
                .iter()
                .map(|c| match c.kind {
                    // A LATERAL item's subquery runs per row, in `next_batch`.
                    SrfKind::Lateral { .. } => Ok(vec![]),
                    _ => c.args.iter().map(|e| e.eval(&b, &self.ctx)).collect::<Result<Vec<_>>>(),
                })
                .collect::<Result<_>>()?;
            self.batch = Some(b);
            self.row = 0;
            self.sets = None;
            return Ok(true);
        }
        Ok(false)
    }
}

impl BatchExecutor for ProjectSetExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        self.ctx.check()?;
        let max_rows = max_rows.max(1);
        let width: usize = self.srfs.iter().map(|c| c.out.len()).sum();
        let mut take: Vec<u32> = Vec::new();
        let mut out: Vec<Vec<Value>> = vec![Vec::new(); width];
        let mut from: Option<RecordBatch> = None;
        loop {
            if self.batch.is_none() && (!take.is_empty() || !self.load(max_rows)?) {
                break;
            }
            // Rows of one output batch come from one input batch: a new
            // batch is loaded only when nothing is pending.
            let batch = self.batch.clone().unwrap();
            if self.row >= batch.num_rows() {
                self.batch = None;
                if !take.is_empty() {
                    break;
                }
                continue;
            }
            if self.sets.is_none() {
                let mut sets = Vec::with_capacity(self.srfs.len());
                for (k, c) in self.srfs.iter().enumerate() {
                    if let SrfKind::Lateral { left } = c.kind {
                        let rows = super::expr::subquery_rows(&c.args[0], &batch, self.row, &self.ctx)?;
                        let rows: Vec<Vec<Value>> =
                            if rows.is_empty() && left { vec![vec![Value::Null; c.out.len()]] } else { rows.as_ref().clone() };
                        sets.push(SetIter::Rows(rows.into_iter()));
                        continue;
                    }
                    let vals: Vec<Value> = self.args[k].iter().map(|a| value_at(a.as_ref(), self.row)).collect();
                    sets.push(start(c, &vals, &self.ctx)?);
                }
                self.sets = Some(sets);
            }
            let sets = self.sets.as_mut().unwrap();
            let mut any = false;
            let mut vals: Vec<Value> = Vec::with_capacity(width);
            for (k, s) in sets.iter_mut().enumerate() {
                match s.next()? {
                    Some(v) => {
                        any = true;
                        vals.extend(v);
                    }
                    None => {
                        *s = SetIter::Empty;
                        vals.extend(std::iter::repeat_n(Value::Null, self.srfs[k].out.len()));
                    }
                }
            }
            if !any {
                self.sets = None;
                self.row += 1;
                continue;
            }
            if from.is_none() {
                from = Some(batch.clone());
            }
            take.push(self.row as u32);
            for (o, v) in out.iter_mut().zip(vals) {
                o.push(v);
            }
            if take.len() >= max_rows {
                break;
            }
        }
        let drained = self.batch.is_none() && self.child_drained;
        let n = take.len();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        if let Some(b) = &from {
            let idx = UInt32Array::from(take);
            for c in b.columns() {
                cols.push(arrow::compute::take(c.as_ref(), &idx, None)?);
            }
        } else {
            let in_width = self.columns.len() - width;
            for c in &self.columns[..in_width] {
                cols.push(arrow::array::new_empty_array(&c.ty.to_arrow()));
            }
        }
        let in_width = cols.len();
        for (k, vals) in out.iter().enumerate() {
            cols.push(values_to_array(vals, self.columns[in_width + k].ty)?);
        }
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?;
        Ok(BatchResult { batch, logical_rows: None, is_drained: drained })
    }
}

/// PostgreSQL's text form of a record: `(a,b)`, fields quoted when they
/// hold separators, quotes or spaces, NULL fields empty.
pub fn record_out(fields: &[Option<String>]) -> String {
    let mut s = String::from("(");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let Some(f) = f else { continue };
        let quote = f.is_empty() || f.chars().any(|c| matches!(c, '(' | ')' | ',' | '"' | '\\') || c.is_whitespace());
        if quote {
            s.push('"');
            for c in f.chars() {
                if c == '"' || c == '\\' {
                    s.push(c);
                }
                s.push(c);
            }
            s.push('"');
        } else {
            s.push_str(f);
        }
    }
    s.push(')');
    s
}

/// The fields of a record's text form (`record_out`'s inverse).
pub fn record_in(s: &str) -> Result<Vec<Option<String>>> {
    let malformed = || err!(InvalidText, "malformed record literal: \"{s}\"");
    let inner = s.trim().strip_prefix('(').and_then(|x| x.strip_suffix(')')).ok_or_else(malformed)?;
    let field = |cur: &mut String, quoted: bool| if cur.is_empty() && !quoted { None } else { Some(std::mem::take(cur)) };
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ',' => {
                out.push(field(&mut cur, quoted));
                quoted = false;
            }
            '"' => {
                quoted = true;
                loop {
                    match chars.next() {
                        None => return Err(malformed()),
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            cur.push('"');
                        }
                        Some('"') => break,
                        Some('\\') => cur.push(chars.next().ok_or_else(malformed)?),
                        Some(c) => cur.push(c),
                    }
                }
            }
            '\\' => cur.push(chars.next().ok_or_else(malformed)?),
            c => cur.push(c),
        }
    }
    out.push(field(&mut cur, quoted));
    Ok(out)
}

#[cfg(test)]
#[path = "project_set_tests.rs"]
mod tests;
