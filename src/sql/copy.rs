//! COPY ... FROM STDIN: the bulk load path. Data is buffered (bounded by
//! `copy_buffer_bytes_max`), parsed completely, then written: a bad row
//! anywhere means nothing is written.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use sqlparser::ast::{self, CopyOption, CopySource, CopyTarget};

use super::{QueryResult, Session};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::parse_text_as;
use crate::planner::ident;
use crate::storage::region_id;
use crate::types::Value;
use crate::{bail, err};

/// A COPY FROM STDIN in progress on a session.
#[derive(Debug)]
pub struct CopyIn {
    pub table: TableDef,
    pub columns: Vec<usize>,
    pub csv: bool,
    pub delimiter: char,
    pub null: String,
    pub header: bool,
    pub quote: char,
    pub buffer: Vec<u8>,
    pub buffer_bytes_max: usize,
}

pub fn start(s: &mut Session, stmt: &ast::Statement) -> Result<QueryResult> {
    let ast::Statement::Copy { source, to, target, options, legacy_options, .. } = stmt else { unreachable!() };
    if *to {
        return copy_out(s, source, target, options, legacy_options);
    }
    if !matches!(target, CopyTarget::Stdin) {
        bail!(FeatureNotSupported, "COPY FROM a file is not supported; use COPY FROM STDIN");
    }
    let CopySource::Table { table_name, columns } = source else { bail!(FeatureNotSupported, "COPY of a query is not supported") };
    let def = s.planner(crate::planner::Params::default()).table_named(table_name)?;
    let name = def.name.clone();
    let cols: Vec<usize> = if columns.is_empty() {
        (0..def.columns.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                def.column_index(&ident(c))
                    .ok_or_else(|| err!(UndefinedColumn, "column \"{}\" of relation \"{name}\" does not exist", ident(c)))
            })
            .collect::<Result<_>>()?
    };
    let mut c = CopyIn {
        table: def,
        columns: cols,
        csv: false,
        delimiter: '\t',
        null: "\\N".into(),
        header: false,
        quote: '"',
        buffer: Vec::new(),
        buffer_bytes_max: s.engine.config.storage.copy_buffer_bytes_max,
    };
    let mut null_set = false;
    let mut delim_set = false;
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_lowercase().as_str() {
                "csv" => c.csv = true,
                "text" => c.csv = false,
                other => bail!(FeatureNotSupported, "COPY format \"{other}\" is not supported"),
            },
            CopyOption::Delimiter(d) => {
                c.delimiter = *d;
                delim_set = true;
            }
            CopyOption::Null(n) => {
                c.null = n.clone();
                null_set = true;
            }
            CopyOption::Header(h) => c.header = *h,
            CopyOption::Quote(q) => c.quote = *q,
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    for o in legacy_options {
        match o {
            ast::CopyLegacyOption::Csv(_) => c.csv = true,
            ast::CopyLegacyOption::Delimiter(d) => {
                c.delimiter = *d;
                delim_set = true;
            }
            ast::CopyLegacyOption::Null(n) => {
                c.null = n.clone();
                null_set = true;
            }
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    if c.csv {
        if !delim_set {
            c.delimiter = ',';
        }
        if !null_set {
            c.null = String::new();
        }
    }
    let n = c.columns.len();
    s.copy = Some(c);
    Ok(QueryResult::CopyIn { columns: n })
}

impl CopyIn {
    pub fn push(&mut self, data: &[u8]) -> Result<()> {
        if self.buffer.len() + data.len() > self.buffer_bytes_max {
            bail!(ProgramLimitExceeded, "COPY data exceeds copy_buffer_bytes_max ({} bytes)", self.buffer_bytes_max);
        }
        self.buffer.extend_from_slice(data);
        Ok(())
    }

    /// Parse everything, then write. Returns the row count.
    pub fn finish(self, s: &Session) -> Result<usize> {
        let text = String::from_utf8(self.buffer.clone()).map_err(|_| err!(InvalidText, "invalid byte sequence for encoding \"UTF8\""))?;
        let ncols = self.columns.len();
        // Values go straight into arrow builders: no Value kept per cell.
        let mut per_col: Vec<ColumnBuilder> = self.columns.iter().map(|&c| ColumnBuilder::new(self.table.columns[c].ty)).collect();
        let mut line_no = 0usize;
        let records =
            if self.csv { csv_records(&text, self.delimiter, self.quote) } else { text_records(&text, self.delimiter, &self.null) };
        for rec in records {
            line_no += 1;
            if self.header && line_no == 1 {
                continue;
            }
            if rec.len() == 1 && rec[0].0 == "\\." {
                break;
            }
            if rec.len() == 1 && rec[0].0.is_empty() && ncols > 1 {
                continue;
            }
            if rec.len() != ncols {
                bail!(BadCopyFileFormat, "{} data for column at line {line_no}", if rec.len() < ncols { "missing" } else { "extra" });
            }
            for (k, (field, quoted)) in rec.into_iter().enumerate() {
                let col = &self.table.columns[self.columns[k]];
                let v = if !quoted && field == self.null {
                    Value::Null
                } else {
                    parse_text_as(&field, col.ty)
                        .map_err(|e| e.with_detail(format!("COPY {}, line {line_no}, column {}", self.table.name, col.name)))?
                };
                per_col[k].push(v);
            }
        }
        let nrows = per_col.first().map(|c| c.len).unwrap_or(0);
        let mut per_col: Vec<Option<arrow::array::ArrayRef>> = per_col.into_iter().map(|b| Some(b.finish())).collect();
        if nrows == 0 {
            return Ok(0);
        }
        let def = &self.table;
        let mut arrays = Vec::with_capacity(def.columns.len());
        for (i, c) in def.columns.iter().enumerate() {
            let a = match self.columns.iter().position(|&x| x == i) {
                Some(k) => per_col[k].take().expect("each column once"),
                None => arrow::array::new_null_array(&c.ty.to_arrow(), nrows),
            };
            if !c.nullable && arrow::array::Array::null_count(&a) > 0 {
                bail!(NotNullViolation, "null value in column \"{}\" of relation \"{}\" violates not-null constraint", c.name, def.name);
            }
            arrays.push(a);
        }
        let schema = crate::planner::region_descriptor(def).schema;
        let batch = RecordBatch::try_new_with_options(schema, arrays, &RecordBatchOptions::new().with_row_count(Some(nrows)))?;
        let batch = super::dml::round_timestamps(def, batch)?;
        let regions: Vec<Arc<crate::storage::Region>> =
            (0..def.regions.max(1)).filter_map(|n| s.engine.storage.region(region_id(def.id, n))).collect();
        // Inside a block the rows join it; outside, COPY is its own
        // transaction: every region's rows or none, also across a crash.
        super::txn::write_unit(s, def, &regions, &batch)?;
        Ok(nrows)
    }
}

/// Text format: tab-separated, backslash escapes. A field whose raw text
/// is the NULL marker is NULL (returned as the marker, unflagged); any
/// other field is flagged not-NULL, so an escaped `\\N` stays text.
fn text_records(text: &str, delim: char, null: &str) -> Vec<Vec<(String, bool)>> {
    let mut out = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if line == "\\." {
            out.push(vec![("\\.".to_string(), false)]);
            break;
        }
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut raw = String::new();
        let mut chars = line.chars();
        let finish = |cur: &mut String, raw: &mut String, fields: &mut Vec<(String, bool)>| {
            if raw == null {
                fields.push((null.to_string(), false));
            } else {
                fields.push((std::mem::take(cur), true));
            }
            cur.clear();
            raw.clear();
        };
        while let Some(c) = chars.next() {
            if c == '\\' {
                raw.push(c);
                let Some(n) = chars.next() else { break };
                raw.push(n);
                match n {
                    't' => cur.push('\t'),
                    'n' => cur.push('\n'),
                    'r' => cur.push('\r'),
                    other => cur.push(other),
                }
            } else if c == delim {
                finish(&mut cur, &mut raw, &mut fields);
            } else {
                cur.push(c);
                raw.push(c);
            }
        }
        finish(&mut cur, &mut raw, &mut fields);
        out.push(fields);
    }
    out
}

/// CSV: quoted fields may hold delimiters, quotes ("") and newlines. A
/// quoted empty string is not NULL.
fn csv_records(text: &str, delim: char, quote: char) -> Vec<Vec<(String, bool)>> {
    let mut out = Vec::new();
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == quote {
                if chars.peek() == Some(&quote) {
                    cur.push(quote);
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == quote {
            in_quotes = true;
            quoted = true;
        } else if c == delim {
            fields.push((std::mem::take(&mut cur), quoted));
            quoted = false;
        } else if c == '\n' || c == '\r' {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            fields.push((std::mem::take(&mut cur), quoted));
            quoted = false;
            let rec = std::mem::take(&mut fields);
            if !(rec.len() == 1 && rec[0].0.is_empty() && !rec[0].1) {
                out.push(rec);
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() || !fields.is_empty() || quoted {
        fields.push((cur, quoted));
        out.push(fields);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_newlines() {
        let r = csv_records("a,\"b,c\",\"\"\n\"x\"\"y\",,\"line\nbreak\"\n", ',', '"');
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], vec![("a".into(), false), ("b,c".into(), true), ("".into(), true)]);
        assert_eq!(r[1], vec![("x\"y".into(), true), ("".into(), false), ("line\nbreak".into(), true)]);
    }

    #[test]
    fn text_escapes() {
        let r = text_records("1\ta\\tb\t\\N\t\\\\N\n\\.\n", '\t', "\\N");
        assert_eq!(r[0], vec![("1".into(), true), ("a\tb".into(), true), ("\\N".into(), false), ("\\N".into(), true)]);
    }
}

/// The rows of `COPY table [(columns)] TO`: the table's plan (`db.t` names
/// another database's), projected to the columns.
fn copy_table_rows(s: &mut Session, table_name: &ast::ObjectName, columns: &[ast::Ident]) -> Result<QueryResult> {
    use crate::exec::expr::Expr;
    use crate::planner::logical::LogicalPlan;
    let planner = s.planner(Default::default());
    let rel = crate::planner::relation(planner.catalog, &planner.database, table_name)?;
    let (plan, cols) = planner.plan_relation(&rel)?;
    let picked: Vec<usize> = if columns.is_empty() {
        (0..cols.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                let n = ident(c);
                cols.iter()
                    .position(|x| x.name == n)
                    .ok_or_else(|| err!(UndefinedColumn, "column \"{n}\" of relation \"{}\" does not exist", rel.name))
            })
            .collect::<Result<_>>()?
    };
    let out_cols: Vec<_> = picked.iter().map(|&i| cols[i].clone()).collect();
    let plan = LogicalPlan::Project {
        input: Box::new(plan),
        exprs: picked.iter().map(|&i| Expr::Column { index: i, ty: cols[i].ty }).collect(),
        columns: out_cols.clone(),
    };
    let columns = crate::planner::output_columns(&plan);
    let plan = planner.physical(plan)?;
    let rows = super::stream::RowStream::new(crate::exec::build(&plan, &planner.ctx)?, planner.ctx.clone());
    if s.may_stream() {
        return Ok(QueryResult::Stream { columns, rows });
    }
    Ok(QueryResult::Rows { columns, batches: rows.collect()? })
}

/// COPY table|query TO STDOUT, text or CSV: the rows as lines.
fn copy_out(
    s: &mut Session,
    source: &CopySource,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[ast::CopyLegacyOption],
) -> Result<QueryResult> {
    if !matches!(target, CopyTarget::Stdout) {
        bail!(FeatureNotSupported, "COPY TO a file is not supported; use COPY TO STDOUT");
    }
    let mut csv = false;
    let mut header = false;
    let mut delim: Option<char> = None;
    let mut null: Option<String> = None;
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_lowercase().as_str() {
                "csv" => csv = true,
                "text" => csv = false,
                other => bail!(FeatureNotSupported, "COPY format \"{other}\" is not supported"),
            },
            CopyOption::Delimiter(d) => delim = Some(*d),
            CopyOption::Null(n) => null = Some(n.clone()),
            CopyOption::Header(h) => header = *h,
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    for o in legacy {
        match o {
            ast::CopyLegacyOption::Csv(_) => csv = true,
            ast::CopyLegacyOption::Delimiter(d) => delim = Some(*d),
            ast::CopyLegacyOption::Null(n) => null = Some(n.clone()),
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    let delim = delim.unwrap_or(if csv { ',' } else { '\t' });
    let null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    let r = match source {
        CopySource::Table { table_name, columns } => copy_table_rows(s, table_name, columns)?,
        CopySource::Query(q) => s.execute_sql_statement(&ast::Statement::Query(q.clone()), Default::default())?,
    };
    let (columns, rows) = match r {
        QueryResult::Rows { columns, batches } => (columns, Err(batches)),
        QueryResult::Stream { columns, rows } => (columns, Ok(rows)),
        _ => bail!(Internal, "COPY query returned no rows"),
    };
    let header = (header && csv).then(|| columns.iter().map(|c| csv_field(&c.name, delim)).collect::<Vec<_>>().join(&delim.to_string()));
    let format = LineFormat { columns, csv, delim, null };
    match rows {
        Ok(rows) => Ok(QueryResult::CopyOutStream { columns: format.columns.len(), lines: CopyLines { header, rows, format } }),
        Err(batches) => {
            let mut lines: Vec<String> = header.into_iter().collect();
            for b in &batches {
                format.lines(b, &mut lines);
            }
            Ok(QueryResult::CopyOut { columns: format.columns.len(), lines })
        }
    }
}

/// How COPY TO writes a row as a line.
struct LineFormat {
    columns: Vec<crate::exec::plan::PlanColumn>,
    csv: bool,
    delim: char,
    null: String,
}

impl LineFormat {
    /// The lines of a batch's rows (without newlines).
    fn lines(&self, b: &RecordBatch, out: &mut Vec<String>) {
        let (csv, delim, null) = (self.csv, self.delim, &self.null);
        for i in 0..b.num_rows() {
            let mut fields = Vec::with_capacity(self.columns.len());
            for (c, col) in self.columns.iter().zip(b.columns()) {
                let v = crate::types::value_at(col.as_ref(), i);
                let text = match &v {
                    Value::Null => {
                        fields.push(null.clone());
                        continue;
                    }
                    Value::Timestamp(t) if c.ty == crate::types::SqlType::TimestampTz => {
                        format!("{}+00", crate::types::format_timestamp(*t))
                    }
                    other => crate::types::format_value(other),
                };
                fields.push(if csv { csv_field(&text, delim) } else { text_field(&text, delim) });
            }
            out.push(fields.join(&delim.to_string()));
        }
    }
}

/// COPY TO's lines computed batch by batch while the client reads them.
pub struct CopyLines {
    header: Option<String>,
    rows: super::stream::RowStream,
    format: LineFormat,
}

impl CopyLines {
    /// The next lines (the header first), or None at the end.
    pub fn next_lines(&mut self) -> Result<Option<Vec<String>>> {
        if let Some(h) = self.header.take() {
            return Ok(Some(vec![h]));
        }
        let Some(b) = self.rows.next_batch()? else { return Ok(None) };
        let mut out = Vec::with_capacity(b.num_rows());
        self.format.lines(&b, &mut out);
        Ok(Some(out))
    }
}

impl std::fmt::Debug for CopyLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CopyLines")
    }
}

fn csv_field(s: &str, delim: char) -> String {
    if s.is_empty() || s.contains(delim) || s.contains('"') || s.contains('\n') || s.contains('\r') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn text_field(s: &str, delim: char) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delim == '\t' => out.push_str("\\t"),
            c if c == delim => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// An arrow builder for one column of a SQL type.
struct ColumnBuilder {
    ty: crate::types::SqlType,
    inner: Box<dyn arrow::array::ArrayBuilder>,
    len: usize,
}

impl ColumnBuilder {
    fn new(ty: crate::types::SqlType) -> ColumnBuilder {
        ColumnBuilder { ty, inner: arrow::array::make_builder(&ty.to_arrow(), 1024), len: 0 }
    }

    fn push(&mut self, v: Value) {
        use crate::types::SqlType as T;
        use arrow::array::*;
        self.len += 1;
        let b = self.inner.as_any_mut();
        macro_rules! put {
            ($builder:ty, $val:expr) => {
                b.downcast_mut::<$builder>().expect("builder matches the column type").append_option($val)
            };
        }
        let int = |v: &Value| if let Value::Int(i) = v { Some(*i) } else { None };
        match self.ty {
            T::Bool => put!(BooleanBuilder, if let Value::Bool(x) = v { Some(x) } else { None }),
            T::Int2 => put!(Int16Builder, int(&v).map(|i| i as i16)),
            T::Int4 => put!(Int32Builder, int(&v).map(|i| i as i32)),
            T::Int8 => put!(Int64Builder, int(&v)),
            T::Float4 => put!(Float32Builder, if let Value::Float(x) = v { Some(x as f32) } else { None }),
            T::Float8 => put!(Float64Builder, if let Value::Float(x) = v { Some(x) } else { None }),
            T::Text | T::Varchar | T::Unknown => put!(StringBuilder, if let Value::Text(x) = v { Some(x) } else { None }),
            T::Timestamp | T::TimestampTz => put!(TimestampMicrosecondBuilder, if let Value::Timestamp(x) = v { Some(x) } else { None }),
            T::Date => put!(Date32Builder, if let Value::Date(x) = v { Some(x) } else { None }),
            T::Interval => {
                put!(IntervalMonthDayNanoBuilder, if let Value::Interval(x) = v { Some(crate::types::interval_to_arrow(x)) } else { None })
            }
        }
    }

    fn finish(mut self) -> arrow::array::ArrayRef {
        let a = self.inner.finish();
        // Builders know no time zone: relabel TIMESTAMPTZ.
        if self.ty == crate::types::SqlType::TimestampTz {
            arrow::compute::cast(&a, &self.ty.to_arrow()).expect("timestamp relabel")
        } else {
            a
        }
    }
}
