//! COPY FROM STDIN and COPY TO STDOUT. COPY FROM parses the data as it
//! arrives, a byte at a time through a text/CSV state machine, straight
//! into arrow column builders (no per-cell `Value` for the common types);
//! every `COPY_CHUNK_ROWS` rows (or `COPY_CHUNK_BYTES` of field text) the
//! chunk is written, so memory held for parsing is one record plus one
//! chunk, not the payload. Outside a transaction block the chunks go to one
//! storage bulk write ([`crate::storage::BulkWrite`]: held records, then
//! SSTs staged during the load, so storage too holds a bounded amount):
//! committed at the end (all rows visible at once, durable with one commit
//! record), published empty on any error, and not replayed or installed
//! after a crash without the commit record. Inside a block the chunks join
//! the block.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use sqlparser::ast::{self, CopyOption, CopySource, CopyTarget};

use super::{QueryResult, Session};
use crate::catalog::TableDef;
use crate::error::{Result, WeirError};
use crate::exec::expr::parse_text_as;
use crate::planner::ident;
use crate::storage::{region_id, BulkWrite, Region, TEMP_ROWID_BASE};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// Rows parsed before a chunk is written.
pub const COPY_CHUNK_ROWS: usize = 65_536;
/// Bytes of field text parsed before a chunk is written.
pub const COPY_CHUNK_BYTES: usize = 32 << 20;

/// A COPY FROM STDIN in progress on a session.
pub struct CopyIn {
    pub table: TableDef,
    pub columns: Vec<usize>,
    parser: CopyParser,
    regions: Vec<Arc<Region>>,
    /// Outside a block: the load's held records.
    bulk: Option<BulkWrite>,
    rows: usize,
}

pub fn start(s: &mut Session, stmt: &ast::Statement) -> Result<QueryResult> {
    let ast::Statement::Copy { source, to, target, options, legacy_options, .. } = stmt else { unreachable!() };
    if *to {
        return copy_out(s, source, target, options, legacy_options);
    }
    // PostgreSQL's grammar takes STDOUT after FROM as the client's stream too.
    if !matches!(target, CopyTarget::Stdin | CopyTarget::Stdout) {
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
    let mut f = Format { csv: false, delimiter: '\t', null: "\\N".into(), header: false, quote: '"' };
    let mut null_set = false;
    let mut delim_set = false;
    let mut binary = false;
    for o in options {
        match o {
            CopyOption::Format(fm) => match fm.value.to_lowercase().as_str() {
                "csv" => f.csv = true,
                "text" => f.csv = false,
                "binary" => binary = true,
                other => bail!(FeatureNotSupported, "COPY format \"{other}\" is not supported"),
            },
            CopyOption::Delimiter(d) => {
                f.delimiter = *d;
                delim_set = true;
            }
            CopyOption::Null(n) => {
                f.null = n.clone();
                null_set = true;
            }
            CopyOption::Header(h) => f.header = *h,
            CopyOption::Quote(q) => f.quote = *q,
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    for o in legacy_options {
        match o {
            ast::CopyLegacyOption::Csv(_) => f.csv = true,
            ast::CopyLegacyOption::Binary => binary = true,
            ast::CopyLegacyOption::Delimiter(d) => {
                f.delimiter = *d;
                delim_set = true;
            }
            ast::CopyLegacyOption::Null(n) => {
                f.null = n.clone();
                null_set = true;
            }
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    if f.csv {
        if !delim_set {
            f.delimiter = ',';
        }
        if !null_set {
            f.null = String::new();
        }
    }
    if !f.delimiter.is_ascii() {
        bail!(FeatureNotSupported, "COPY delimiter must be a single one-byte character");
    }
    if !f.quote.is_ascii() {
        bail!(FeatureNotSupported, "COPY quote must be a single one-byte character");
    }
    let types: Vec<SqlType> = cols.iter().map(|&c| def.columns[c].ty).collect();
    let names: Vec<String> = cols.iter().map(|&c| def.columns[c].name.clone()).collect();
    if binary && (f.csv || delim_set || null_set || f.header) {
        bail!(Syntax, "cannot specify DELIMITER, NULL, HEADER or CSV in BINARY mode");
    }
    let ncols = types.len();
    let mut parser = CopyParser::new(f, types, names, def.name.clone());
    parser.record_bytes_max = s.engine.config.storage.copy_buffer_bytes_max;
    if binary {
        parser.binary = Some(super::copy_binary::BinaryReader::new(ncols));
    }
    let regions: Vec<Arc<Region>> = (0..def.regions.max(1)).filter_map(|n| s.engine.storage.region(region_id(def.id, n))).collect();
    if regions.is_empty() {
        bail!(Internal, "table \"{}\" has no open region", def.name);
    }
    let n = cols.len();
    s.copy = Some(CopyIn { table: def, columns: cols, parser, regions, bulk: None, rows: 0 });
    Ok(QueryResult::CopyIn { columns: n, binary })
}

impl std::fmt::Debug for CopyIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyIn").field("table", &self.table.name).field("rows", &self.rows).field("bulk", &self.bulk).finish()
    }
}

impl CopyIn {
    /// Parse `data`, writing every full chunk.
    pub fn push(&mut self, data: &[u8], s: &Session) -> Result<()> {
        let mut chunks = Vec::new();
        self.parser.push(data, &mut |cols, n| {
            chunks.push((cols, n));
            Ok(())
        })?;
        for (cols, n) in chunks {
            self.write_chunk(s, cols, n)?;
        }
        Ok(())
    }

    /// End of data: write the last chunk and commit. Returns the row count.
    pub fn finish(mut self, s: &Session) -> Result<usize> {
        let mut chunks = Vec::new();
        self.parser.finish(&mut |cols, n| {
            chunks.push((cols, n));
            Ok(())
        })?;
        for (cols, n) in chunks {
            self.write_chunk(s, cols, n)?;
        }
        if let Some(b) = self.bulk.take() {
            b.commit()?;
        }
        Ok(self.rows)
    }

    /// The parser's bounds (for tests and statistics).
    pub fn stats(&self) -> CopyStats {
        self.parser.stats
    }

    fn write_chunk(&mut self, s: &Session, per_col: Vec<ArrayRef>, nrows: usize) -> Result<()> {
        if nrows == 0 {
            return Ok(());
        }
        let def = &self.table;
        let mut per_col: Vec<Option<ArrayRef>> = per_col.into_iter().map(Some).collect();
        let mut arrays = Vec::with_capacity(def.columns.len());
        for (i, c) in def.columns.iter().enumerate() {
            let a = match self.columns.iter().position(|&x| x == i) {
                Some(k) => per_col[k].take().expect("each column once"),
                // Columns the COPY leaves out take their defaults (SERIAL's nextval).
                None if c.default.is_some() => super::dml::default_column(&s.planner(crate::planner::Params::default()), def, i, nrows)?,
                None => arrow::array::new_null_array(&c.ty.to_arrow(), nrows),
            };
            if !c.nullable && arrow::array::Array::null_count(&a) > 0 {
                bail!(NotNullViolation, "null value in column \"{}\" of relation \"{}\" violates not-null constraint", c.name, def.name);
            }
            arrays.push(a);
        }
        let schema = crate::planner::region_descriptor(def).schema;
        let batch = RecordBatch::try_new_with_options(schema, arrays, &RecordBatchOptions::new().with_row_count(Some(nrows)))?;
        let batch = super::dml::apply_typmods(def, batch)?;
        if !def.partition.is_none() || !def.triggers.is_empty() {
            // A partitioned table's rows go to their partitions, a
            // partition's are checked (row by row through the write path),
            // and row triggers fire there.
            let planner = s.planner(crate::planner::Params::default());
            let written = super::partition::write(s, &planner, def, &self.regions, &batch, super::partition::Cause::Insert)?;
            self.rows += written.map_or(nrows, |b| b.num_rows());
            return Ok(());
        }
        if s.block.is_some() {
            // Inside a block the rows join it (and leave with it).
            super::txn::write_unit(s, def, &self.regions, &batch)?;
        } else {
            let routed: Vec<(usize, RecordBatch)> = if self.regions.len() <= 1 {
                vec![(0, batch)]
            } else {
                crate::storage::route_rows(&batch, &def.primary_key, self.regions.len() as u32)?
                    .into_iter()
                    .map(|(r, p)| (r as usize, p))
                    .collect()
            };
            if self.bulk.is_none() {
                self.bulk = Some(s.engine.storage.begin_bulk()?);
            }
            let bulk = self.bulk.as_mut().expect("just set");
            for (r, rows) in routed {
                let n = rows.num_rows() as u64;
                if n == 0 {
                    continue;
                }
                let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
                cols.push(Arc::new(UInt64Array::from_iter_values(TEMP_ROWID_BASE..TEMP_ROWID_BASE + n)));
                let stored = RecordBatch::try_new_with_options(
                    self.regions[r].stored_schema(),
                    cols,
                    &RecordBatchOptions::new().with_row_count(Some(n as usize)),
                )?;
                bulk.append(&self.regions[r], stored)?;
            }
        }
        self.rows += nrows;
        Ok(())
    }
}

/// COPY FROM's format options.
#[derive(Debug, Clone)]
pub struct Format {
    pub csv: bool,
    pub delimiter: char,
    pub null: String,
    pub header: bool,
    pub quote: char,
}

/// High-water marks of COPY FROM's parse state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Largest record (field bytes) held while parsing, across messages.
    pub max_record_bytes: usize,
    /// Most rows in one chunk.
    pub max_chunk_rows: usize,
    /// Most field bytes in one chunk.
    pub max_chunk_bytes: usize,
    pub chunks: usize,
}

/// The streaming COPY FROM parser: bytes in, chunks of column arrays out.
pub(crate) struct CopyParser {
    /// FORMAT binary: its record splitter (the text/CSV state is unused).
    pub(crate) binary: Option<super::copy_binary::BinaryReader>,
    csv: bool,
    delim: u8,
    quote: u8,
    null: Vec<u8>,
    header: bool,
    table: String,
    names: Vec<String>,
    builders: Vec<ColumnBuilder>,
    /// CSV: the bytes that end a run of field text (quote, delimiter,
    /// CR, LF).
    special: [bool; 256],
    pub(crate) chunk_rows_max: usize,
    pub(crate) chunk_bytes_max: usize,
    pub(crate) record_bytes_max: usize,
    pub(crate) stats: CopyStats,
    // The record being parsed: decoded field bytes and, per field, its end
    // in `buf` and whether it is NULL.
    buf: Vec<u8>,
    fields: Vec<(usize, bool)>,
    /// CSV fast path: the delimiters' positions in the record being read.
    delims: Vec<usize>,
    // The current field's raw text (before escapes), kept only as far as
    // needed to compare it with the NULL marker and `\.`.
    raw_len: usize,
    raw_head: Vec<u8>,
    last_raw_cr: bool,
    escape: bool,
    in_quotes: bool,
    quote_pending: bool,
    quoted: bool,
    skip_lf: bool,
    line_no: usize,
    ended: bool,
    chunk_rows: usize,
    chunk_bytes: usize,
}

type Emit<'a> = dyn FnMut(Vec<ArrayRef>, usize) -> Result<()> + 'a;

impl CopyParser {
    pub(crate) fn new(f: Format, types: Vec<SqlType>, names: Vec<String>, table: String) -> CopyParser {
        let mut special = [false; 256];
        for b in [f.quote as u8, f.delimiter as u8, b'\n', b'\r'] {
            special[b as usize] = true;
        }
        CopyParser {
            binary: None,
            csv: f.csv,
            delim: f.delimiter as u8,
            quote: f.quote as u8,
            null: f.null.into_bytes(),
            header: f.header,
            table,
            names,
            builders: types.into_iter().map(ColumnBuilder::new).collect(),
            special,
            chunk_rows_max: COPY_CHUNK_ROWS,
            chunk_bytes_max: COPY_CHUNK_BYTES,
            record_bytes_max: usize::MAX,
            stats: CopyStats::default(),
            buf: Vec::new(),
            fields: Vec::new(),
            delims: Vec::new(),
            raw_len: 0,
            raw_head: Vec::new(),
            last_raw_cr: false,
            escape: false,
            in_quotes: false,
            quote_pending: false,
            quoted: false,
            skip_lf: false,
            line_no: 0,
            ended: false,
            chunk_rows: 0,
            chunk_bytes: 0,
        }
    }

    #[inline]
    fn raw_push(&mut self, b: u8) {
        if self.raw_head.len() <= self.null.len().max(2) {
            self.raw_head.push(b);
        }
        self.raw_len += 1;
        self.last_raw_cr = b == b'\r';
    }

    fn raw_is(&self, pat: &[u8]) -> bool {
        self.raw_len == pat.len() && self.raw_head == pat
    }

    fn end_field(&mut self) {
        let start = self.fields.last().map(|f| f.0).unwrap_or(0);
        let is_null = if self.csv { !self.quoted && self.buf[start..] == self.null[..] } else { self.raw_is(&self.null) };
        self.fields.push((self.buf.len(), is_null));
        self.quoted = false;
    }

    fn reset_raw(&mut self) {
        self.raw_len = 0;
        self.raw_head.clear();
        self.last_raw_cr = false;
    }

    /// Parse `data`; `emit` gets every full chunk.
    pub(crate) fn push(&mut self, data: &[u8], emit: &mut Emit) -> Result<()> {
        if self.binary.is_some() {
            return self.push_binary(data, emit);
        }
        let r = if self.csv { self.push_csv(data, emit) } else { self.push_text(data, emit) };
        self.note_record_size()?;
        r
    }

    fn note_record_size(&mut self) -> Result<()> {
        self.stats.max_record_bytes = self.stats.max_record_bytes.max(self.buf.len());
        if self.buf.len() > self.record_bytes_max {
            bail!(ProgramLimitExceeded, "COPY row is longer than copy_buffer_bytes_max ({} bytes)", self.record_bytes_max);
        }
        Ok(())
    }

    fn push_text(&mut self, data: &[u8], emit: &mut Emit) -> Result<()> {
        for &b in data {
            if self.ended {
                break;
            }
            if self.escape {
                self.escape = false;
                self.raw_push(b);
                self.buf.push(match b {
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'r' => b'\r',
                    other => other,
                });
                self.last_raw_cr = false;
                continue;
            }
            if b == b'\\' {
                self.escape = true;
                self.raw_push(b);
            } else if b == b'\n' {
                if self.last_raw_cr {
                    self.buf.pop();
                    self.raw_len -= 1;
                    if self.raw_head.len() > self.raw_len {
                        self.raw_head.truncate(self.raw_len);
                    }
                }
                let empty_line = self.fields.is_empty() && self.raw_len == 0;
                self.end_field();
                let dot = self.fields.len() == 1 && self.raw_is(b"\\.");
                self.reset_raw();
                if empty_line {
                    self.fields.clear();
                    self.buf.clear();
                    continue;
                }
                if dot {
                    self.ended = true;
                    self.fields.clear();
                    self.buf.clear();
                    break;
                }
                self.end_record(emit)?;
            } else if b == self.delim {
                self.end_field();
                self.reset_raw();
            } else {
                self.buf.push(b);
                self.raw_push(b);
            }
            if self.buf.len() > self.record_bytes_max {
                self.note_record_size()?;
            }
        }
        Ok(())
    }

    fn push_csv(&mut self, data: &[u8], emit: &mut Emit) -> Result<()> {
        let n = data.len();
        let mut i = self.csv_whole_records(data, 0, emit)?;
        while i < n && !self.ended {
            if self.quote_pending {
                self.quote_pending = false;
                if data[i] == self.quote {
                    self.buf.push(self.quote);
                    i += 1;
                    continue;
                }
                self.in_quotes = false;
            } else if self.in_quotes {
                // Everything up to the next quote is the field's.
                let quote = self.quote;
                let room = self.record_room();
                let end = data[i..].iter().take(room).position(|&b| b == quote).map(|k| i + k);
                let stop = end.unwrap_or(i + room.min(n - i));
                self.buf.extend_from_slice(&data[i..stop]);
                i = stop;
                if end.is_some() {
                    i += 1;
                    self.quote_pending = true;
                }
                self.check_record_size()?;
                continue;
            }
            if self.skip_lf {
                self.skip_lf = false;
                if data[i] == b'\n' {
                    i = self.csv_whole_records(data, i + 1, emit)?;
                    continue;
                }
            }
            // Unquoted: a run of ordinary bytes, copied at once, then one
            // quote, delimiter or line end.
            let special = &self.special;
            let run = data[i..].iter().take(self.record_room()).position(|&b| special[b as usize]);
            let run = run.unwrap_or(self.record_room().min(n - i));
            if run > 0 {
                self.buf.extend_from_slice(&data[i..i + run]);
                i += run;
                self.check_record_size()?;
                continue;
            }
            let b = data[i];
            i += 1;
            if b == self.quote {
                self.in_quotes = true;
                self.quoted = true;
            } else if b == self.delim {
                self.end_field();
            } else {
                self.skip_lf = b == b'\r';
                self.csv_record_end(emit)?;
                if !self.skip_lf {
                    i = self.csv_whole_records(data, i, emit)?;
                }
            }
        }
        Ok(())
    }

    /// CSV's fast path: the records that lie whole in `data` from `i` on
    /// and are plain (no quote, no lone CR, the right number of fields,
    /// within `record_bytes_max`, valid UTF-8, not the header or `\.`) go
    /// from `data` straight into the builders, without the byte-by-byte
    /// state machine or the record buffer. Stops at the first record that
    /// is not, and returns where it starts: the general path reads it (and
    /// reports its errors) exactly as before.
    fn csv_whole_records(&mut self, data: &[u8], mut i: usize, emit: &mut Emit) -> Result<usize> {
        let ncols = self.builders.len();
        let (n, delim, special) = (data.len(), self.delim, self.special);
        let between_records =
            self.buf.is_empty() && self.fields.is_empty() && !self.quoted && !self.in_quotes && !self.quote_pending && !self.skip_lf;
        if !between_records || (self.header && self.line_no == 0) {
            return Ok(i);
        }
        while i < n && !self.ended {
            let start = i;
            self.delims.clear();
            let mut j = i;
            // The record's end: a newline, or CR LF.
            let (end, next) = loop {
                let Some(&b) = data.get(j) else { return Ok(start) };
                if special[b as usize] {
                    if b == delim {
                        self.delims.push(j);
                    } else if b == b'\n' {
                        break (j, j + 1);
                    } else if b == b'\r' && data.get(j + 1) == Some(&b'\n') {
                        break (j, j + 2);
                    } else {
                        return Ok(start);
                    }
                }
                j += 1;
            };
            let record = &data[start..end];
            let field_bytes = record.len() - self.delims.len();
            if self.delims.len() + 1 != ncols || record.is_empty() || field_bytes > self.record_bytes_max || record == b"\\." {
                return Ok(start);
            }
            let Ok(text) = std::str::from_utf8(record) else { return Ok(start) };
            self.line_no += 1;
            let line_no = self.line_no;
            let mut from = 0;
            for k in 0..ncols {
                let to = self.delims.get(k).map_or(record.len(), |&d| d - start);
                let field = &text[from..to];
                from = to + 1;
                let r = if field.as_bytes() == &self.null[..] {
                    self.builders[k].push_null();
                    Ok(())
                } else {
                    self.builders[k].push_text(field)
                };
                if let Err(e) = r {
                    return Err(self.in_field(e, line_no, k));
                }
            }
            i = next;
            self.row_done(field_bytes, emit)?;
        }
        Ok(i)
    }

    /// An error of field `k` on line `line_no`, with where it is.
    fn in_field(&self, e: WeirError, line_no: impl std::fmt::Display, k: usize) -> WeirError {
        let column = self.names.get(k).map_or("?", String::as_str);
        e.with_detail(format!("COPY {}, line {line_no}, column {column}", self.table))
    }

    /// A record of `bytes` bytes is in the builders: count it, and hand
    /// the chunk on once it is full.
    fn row_done(&mut self, bytes: usize, emit: &mut Emit) -> Result<()> {
        self.chunk_rows += 1;
        self.chunk_bytes += bytes;
        self.stats.max_record_bytes = self.stats.max_record_bytes.max(bytes);
        if self.chunk_rows >= self.chunk_rows_max || self.chunk_bytes >= self.chunk_bytes_max {
            self.emit_chunk(emit)?;
        }
        Ok(())
    }

    /// Bytes the record may still take before it passes
    /// `record_bytes_max` (plus the one that passes it).
    #[inline]
    fn record_room(&self) -> usize {
        self.record_bytes_max.saturating_sub(self.buf.len()).saturating_add(1)
    }

    #[inline]
    fn check_record_size(&mut self) -> Result<()> {
        if self.buf.len() > self.record_bytes_max {
            self.note_record_size()?;
        }
        Ok(())
    }

    fn csv_record_end(&mut self, emit: &mut Emit) -> Result<()> {
        let empty = self.fields.is_empty() && self.buf.is_empty() && !self.quoted;
        self.end_field();
        if empty {
            self.fields.clear();
            return Ok(());
        }
        if self.fields.len() == 1 && !self.quoted && &self.buf[..] == b"\\." {
            self.ended = true;
            self.fields.clear();
            self.buf.clear();
            return Ok(());
        }
        self.end_record(emit)
    }

    /// End of data: the last record (without a newline) and the last chunk.
    pub(crate) fn finish(&mut self, emit: &mut Emit) -> Result<()> {
        if let Some(b) = &self.binary {
            b.finish()?;
            return self.emit_chunk(emit);
        }
        if !self.ended {
            if self.csv {
                if self.in_quotes && !self.quote_pending {
                    bail!(BadCopyFileFormat, "unterminated CSV quoted field");
                }
                self.in_quotes = false;
                self.quote_pending = false;
                if !self.buf.is_empty() || !self.fields.is_empty() || self.quoted {
                    self.csv_record_end(emit)?;
                }
            } else if !self.buf.is_empty() || !self.fields.is_empty() || self.raw_len > 0 {
                self.push_text(b"\n", emit)?;
            }
        }
        self.emit_chunk(emit)
    }

    fn end_record(&mut self, emit: &mut Emit) -> Result<()> {
        self.line_no += 1;
        let line_no = self.line_no;
        if self.header && line_no == 1 {
            self.fields.clear();
            self.buf.clear();
            return Ok(());
        }
        let ncols = self.builders.len();
        if self.fields.len() != ncols {
            let what = if self.fields.len() < ncols { "missing" } else { "extra" };
            bail!(BadCopyFileFormat, "{what} data for column at line {line_no}");
        }
        // One UTF-8 check for the record; a field that is not whole
        // characters of it (bytes of one character around a delimiter)
        // is checked alone, and fails.
        let record = std::str::from_utf8(&self.buf).ok();
        let mut start = 0;
        for (k, &(end, is_null)) in self.fields.iter().enumerate() {
            let bytes = &self.buf[start..end];
            let text = record.and_then(|r| r.get(start..end));
            start = end;
            let r = if is_null {
                self.builders[k].push_null();
                Ok(())
            } else {
                match text.map(Ok).unwrap_or_else(|| std::str::from_utf8(bytes)) {
                    Ok(text) => self.builders[k].push_text(text),
                    Err(_) => Err(err!(InvalidText, "invalid byte sequence for encoding \"UTF8\"")),
                }
            };
            if let Err(e) = r {
                // Columns before k got this row's value: the chunk is
                // dropped with the whole COPY, so no rollback is needed.
                return Err(self.in_field(e, line_no, k));
            }
        }
        let bytes = self.buf.len();
        self.fields.clear();
        self.buf.clear();
        self.row_done(bytes, emit)
    }

    /// Binary data: each complete record's fields decoded by their column
    /// types (PostgreSQL's `*_recv`) into the builders.
    fn push_binary(&mut self, data: &[u8], emit: &mut Emit) -> Result<()> {
        let mut reader = self.binary.take().expect("binary COPY");
        let r = reader.push(data, &mut |fields, record| {
            let mut bytes = 0;
            for (k, raw) in fields.iter().enumerate() {
                bytes += raw.map_or(0, |b| b.len());
                let ty = self.builders[k].ty();
                let v = super::wire::decode_param(*raw, ty, true).map_err(|e| self.in_field(e, record, k))?;
                self.builders[k].push_value(v);
            }
            self.chunk_rows += 1;
            self.chunk_bytes += bytes;
            if self.chunk_rows >= self.chunk_rows_max || self.chunk_bytes >= self.chunk_bytes_max {
                self.emit_chunk(emit)?;
            }
            Ok(())
        });
        let reader_held = reader.held_bytes();
        self.stats.max_record_bytes = self.stats.max_record_bytes.max(reader_held);
        self.binary = Some(reader);
        r?;
        if reader_held > self.record_bytes_max {
            bail!(ProgramLimitExceeded, "COPY row is longer than copy_buffer_bytes_max ({} bytes)", self.record_bytes_max);
        }
        Ok(())
    }

    fn emit_chunk(&mut self, emit: &mut Emit) -> Result<()> {
        if self.chunk_rows == 0 {
            return Ok(());
        }
        self.stats.max_chunk_rows = self.stats.max_chunk_rows.max(self.chunk_rows);
        self.stats.max_chunk_bytes = self.stats.max_chunk_bytes.max(self.chunk_bytes);
        self.stats.chunks += 1;
        let n = self.chunk_rows;
        self.chunk_rows = 0;
        self.chunk_bytes = 0;
        let cols = self.builders.iter_mut().map(|b| b.finish()).collect();
        emit(cols, n)
    }
}

/// An arrow builder for one column of a SQL type, with parse fast paths
/// for the common types (others go through `parse_text_as`).
pub(super) enum ColumnBuilder {
    F64(arrow::array::Float64Builder),
    I64(arrow::array::Int64Builder),
    Text(arrow::array::StringBuilder),
    /// Timestamps, with the last text parsed and its value: a time-ordered
    /// load repeats one timestamp for every series of a tick.
    Ts(arrow::array::TimestampMicrosecondBuilder, Option<(Vec<u8>, i64)>),
    Other(SqlType, Box<dyn arrow::array::ArrayBuilder>),
}

impl ColumnBuilder {
    /// Whether `push_text` parses this type without a `Value`.
    pub(super) fn has_fast_path(ty: SqlType) -> bool {
        matches!(ty, SqlType::Float8 | SqlType::Int8 | SqlType::Text | SqlType::Varchar | SqlType::Timestamp)
    }

    pub(super) fn new(ty: SqlType) -> ColumnBuilder {
        use arrow::array::*;
        match ty {
            SqlType::Float8 => ColumnBuilder::F64(Float64Builder::with_capacity(1024)),
            SqlType::Int8 => ColumnBuilder::I64(Int64Builder::with_capacity(1024)),
            SqlType::Text | SqlType::Varchar => ColumnBuilder::Text(StringBuilder::new()),
            SqlType::Timestamp => ColumnBuilder::Ts(TimestampMicrosecondBuilder::with_capacity(1024), None),
            _ => ColumnBuilder::Other(ty, make_builder(&ty.to_arrow(), 1024)),
        }
    }

    /// The SQL type the builder holds.
    pub(super) fn ty(&self) -> SqlType {
        match self {
            ColumnBuilder::F64(_) => SqlType::Float8,
            ColumnBuilder::I64(_) => SqlType::Int8,
            ColumnBuilder::Text(_) => SqlType::Text,
            ColumnBuilder::Ts(..) => SqlType::Timestamp,
            ColumnBuilder::Other(ty, _) => *ty,
        }
    }

    /// A value already of the builder's type (NULL included).
    pub(super) fn push_value(&mut self, v: Value) {
        match (self, v) {
            (ColumnBuilder::F64(b), Value::Float(x)) => b.append_value(x),
            (ColumnBuilder::I64(b), Value::Int(x)) => b.append_value(x),
            (ColumnBuilder::Text(b), Value::Text(x)) => b.append_value(x),
            (ColumnBuilder::Ts(b, _), Value::Timestamp(x)) => b.append_value(x),
            (ColumnBuilder::Other(ty, b), v) => push_value(*ty, b.as_mut(), v),
            (c, _) => c.push_null(),
        }
    }

    pub(super) fn push_null(&mut self) {
        match self {
            ColumnBuilder::F64(b) => b.append_null(),
            ColumnBuilder::I64(b) => b.append_null(),
            ColumnBuilder::Text(b) => b.append_null(),
            ColumnBuilder::Ts(b, _) => b.append_null(),
            ColumnBuilder::Other(ty, b) => push_value(*ty, b.as_mut(), Value::Null),
        }
    }

    pub(super) fn push_text(&mut self, t: &str) -> Result<()> {
        match self {
            ColumnBuilder::F64(b) => {
                if let Some(v) = fast_f64(t.as_bytes()) {
                    b.append_value(v);
                    return Ok(());
                }
                let fast = !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'));
                match fast.then(|| t.parse::<f64>().ok()).flatten() {
                    // Out of range (infinite) or zero (maybe an underflow):
                    // float8in's checks in parse_text_as decide.
                    Some(v) if v.is_finite() && v != 0.0 => b.append_value(v),
                    _ => match parse_text_as(t, SqlType::Float8)? {
                        Value::Float(v) => b.append_value(v),
                        _ => b.append_null(),
                    },
                }
            }
            ColumnBuilder::I64(b) => match t.parse::<i64>() {
                Ok(v) if !t.starts_with('+') => b.append_value(v),
                _ => match parse_text_as(t, SqlType::Int8)? {
                    Value::Int(v) => b.append_value(v),
                    _ => b.append_null(),
                },
            },
            ColumnBuilder::Text(b) => b.append_value(t),
            ColumnBuilder::Ts(b, last) => match last {
                Some((text, v)) if text[..] == *t.as_bytes() => b.append_value(*v),
                _ => match fast_timestamp(t.as_bytes()) {
                    Some(v) => {
                        b.append_value(v);
                        match last {
                            Some((text, at)) => {
                                text.clear();
                                text.extend_from_slice(t.as_bytes());
                                *at = v;
                            }
                            None => *last = Some((t.as_bytes().to_vec(), v)),
                        }
                    }
                    None => match parse_text_as(t, SqlType::Timestamp)? {
                        Value::Timestamp(v) => b.append_value(v),
                        _ => b.append_null(),
                    },
                },
            },
            ColumnBuilder::Other(ty, b) => {
                let v = parse_text_as(t, *ty)?;
                push_value(*ty, b.as_mut(), v)
            }
        }
        Ok(())
    }

    /// The column so far; the builder starts again, sized like it (so the
    /// next chunk's buffers neither regrow from empty nor overshoot by the
    /// doubling of a growing buffer: the memtable keeps them as they are).
    pub(super) fn finish(&mut self) -> ArrayRef {
        use arrow::array::*;
        match self {
            ColumnBuilder::F64(b) => {
                let n = b.len();
                Arc::new(std::mem::replace(b, Float64Builder::with_capacity(n)).finish()) as ArrayRef
            }
            ColumnBuilder::I64(b) => {
                let n = b.len();
                Arc::new(std::mem::replace(b, Int64Builder::with_capacity(n)).finish()) as ArrayRef
            }
            ColumnBuilder::Text(b) => {
                let (n, bytes) = (b.len(), b.values_slice().len());
                Arc::new(std::mem::replace(b, StringBuilder::with_capacity(n, bytes + bytes / 8)).finish()) as ArrayRef
            }
            ColumnBuilder::Ts(b, _) => {
                let n = b.len();
                Arc::new(std::mem::replace(b, TimestampMicrosecondBuilder::with_capacity(n)).finish()) as ArrayRef
            }
            ColumnBuilder::Other(ty, b) => {
                let a = b.finish();
                // Builders know no time zone: relabel TIMESTAMPTZ.
                if *ty == SqlType::TimestampTz {
                    arrow::compute::cast(&a, &ty.to_arrow()).expect("timestamp relabel")
                } else {
                    a
                }
            }
        }
    }
}

fn push_value(ty: SqlType, b: &mut dyn arrow::array::ArrayBuilder, v: Value) {
    use crate::types::SqlType as T;
    use arrow::array::*;
    // A base type's values are its representation's.
    if let T::Base { repr, .. } = ty {
        return push_value(repr.ty(), b, v);
    }
    let b = b.as_any_mut();
    macro_rules! put {
        ($builder:ty, $val:expr) => {
            b.downcast_mut::<$builder>().expect("builder matches the column type").append_option($val)
        };
    }
    let int = |v: &Value| if let Value::Int(i) = v { Some(*i) } else { None };
    match ty {
        T::Base { .. } => {}
        T::Bool => put!(BooleanBuilder, if let Value::Bool(x) = v { Some(x) } else { None }),
        T::Int2 => put!(Int16Builder, int(&v).map(|i| i as i16)),
        T::Int4 => put!(Int32Builder, int(&v).map(|i| i as i32)),
        T::Int8 | T::Oid => put!(Int64Builder, int(&v)),
        T::Float4 => put!(Float32Builder, if let Value::Float(x) = v { Some(x as f32) } else { None }),
        T::Float8 => put!(Float64Builder, if let Value::Float(x) = v { Some(x) } else { None }),
        T::Text | T::Varchar | T::Unknown | T::Array(_) | T::Bytea | T::Numeric | T::Geo(_) => {
            put!(StringBuilder, if let Value::Text(x) = v { Some(x) } else { None })
        }
        T::Timestamp | T::TimestampTz => put!(TimestampMicrosecondBuilder, if let Value::Timestamp(x) = v { Some(x) } else { None }),
        T::Date => put!(Date32Builder, if let Value::Date(x) = v { Some(x) } else { None }),
        T::Interval => {
            put!(IntervalMonthDayNanoBuilder, if let Value::Interval(x) = v { Some(crate::types::interval_to_arrow(x)) } else { None })
        }
        T::Time => put!(Time64MicrosecondBuilder, if let Value::Time(x) = v { Some(x) } else { None }),
        T::TimeTz => put!(Time64NanosecondBuilder, if let Value::TimeTz(x) = v { Some(x) } else { None }),
    }
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (or `T` between), years 1000-9999, as
/// microseconds since 1970; anything else (or out of range) is None and
/// takes the general parser.
/// A plain decimal (`-12.5`, `68`: at most 15 digits, no exponent, not
/// zero) as f64 without the general parser: the digits as an integer are
/// exact in an f64, and so is the power of ten, so one division rounds
/// correctly (Clinger's fast path), as `str::parse` does. Anything else is
/// None.
pub(super) fn fast_f64(s: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut m = 0u64;
    let mut frac: Option<usize> = None;
    for (k, &c) in digits.iter().enumerate() {
        match c {
            b'0'..=b'9' => m = m * 10 + (c - b'0') as u64,
            b'.' if frac.is_none() => frac = Some(digits.len() - k - 1),
            _ => return None,
        }
    }
    let ndigits = digits.len() - usize::from(frac.is_some());
    if ndigits == 0 || ndigits > 15 || m == 0 {
        return None;
    }
    let v = m as f64 / POW10[frac.unwrap_or(0)];
    Some(if neg { -v } else { v })
}

fn fast_timestamp(s: &[u8]) -> Option<i64> {
    if s.len() < 19 || s[4] != b'-' || s[7] != b'-' || !(s[10] == b' ' || s[10] == b'T') || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut v = 0i64;
        for &c in &s[r] {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + (c - b'0') as i64;
        }
        Some(v)
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if y < 1000 || !(1..=12).contains(&mo) || d < 1 || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mdays = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][(mo - 1) as usize];
    if d > mdays {
        return None;
    }
    let mut frac = 0i64;
    if s.len() > 19 {
        if s[19] != b'.' || s.len() == 20 || s.len() > 26 {
            return None;
        }
        let digits = s.len() - 20;
        frac = num(20..s.len())? * 10i64.pow(6 - digits as u32);
    }
    // Days from civil (Howard Hinnant's algorithm).
    let (yy, m) = if mo <= 2 { (y - 1, mo + 9) } else { (y, mo - 3) };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec) * 1_000_000) + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(f: Format, types: Vec<SqlType>, pieces: &[&[u8]]) -> Result<(Vec<RecordBatch>, CopyStats)> {
        let n = types.len();
        let mut p = CopyParser::new(f, types.clone(), (0..n).map(|i| format!("c{i}")).collect(), "t".into());
        p.chunk_rows_max = 3;
        let mut out = Vec::new();
        let mut emit = |cols: Vec<ArrayRef>, _n: usize| {
            out.push(
                RecordBatch::try_new(
                    Arc::new(arrow::datatypes::Schema::new(
                        cols.iter()
                            .enumerate()
                            .map(|(i, c)| arrow::datatypes::Field::new(format!("c{i}"), c.data_type().clone(), true))
                            .collect::<Vec<_>>(),
                    )),
                    cols,
                )
                .unwrap(),
            );
            Ok(())
        };
        for piece in pieces {
            p.push(piece, &mut emit)?;
        }
        p.finish(&mut emit)?;
        Ok((out, p.stats))
    }

    fn text_fmt() -> Format {
        Format { csv: false, delimiter: '\t', null: "\\N".into(), header: false, quote: '"' }
    }

    fn csv_fmt() -> Format {
        Format { csv: true, delimiter: ',', null: String::new(), header: false, quote: '"' }
    }

    fn cells(batches: &[RecordBatch]) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for b in batches {
            for i in 0..b.num_rows() {
                out.push(
                    b.columns()
                        .iter()
                        .map(|c| match crate::types::value_at(c.as_ref(), i) {
                            Value::Null => "NULL".to_string(),
                            v => crate::types::format_value(&v),
                        })
                        .collect(),
                );
            }
        }
        out
    }

    #[test]
    fn csv_quotes_and_newlines_in_any_split() {
        let data = b"a,\"b,c\",\"\"\r\n\"x\"\"y\",,\"line\nbreak\"\n";
        let want = vec![vec!["a", "b,c", ""], vec!["x\"y", "NULL", "line\nbreak"]];
        // Every split point of the payload gives the same rows.
        for cut in 0..data.len() {
            let (b, _) = parse(csv_fmt(), vec![SqlType::Text; 3], &[&data[..cut], &data[cut..]]).unwrap();
            assert_eq!(cells(&b), want, "cut at {cut}");
        }
    }

    #[test]
    fn text_escapes_nulls_and_end_marker() {
        let data = b"1\ta\\tb\t\\N\t\\\\N\r\n\n2\t\\\\\t\t\\N\n\\.\n3\tignored\tx\ty\n";
        for cut in 0..data.len() {
            let (b, _) =
                parse(text_fmt(), vec![SqlType::Int8, SqlType::Text, SqlType::Text, SqlType::Text], &[&data[..cut], &data[cut..]]).unwrap();
            assert_eq!(cells(&b), vec![vec!["1", "a\tb", "NULL", "\\N"], vec!["2", "\\", "", "NULL"]], "cut at {cut}");
        }
    }

    #[test]
    fn fast_paths_agree_with_the_general_parser() {
        for t in ["2016-01-01 00:00:00", "2024-02-29 23:59:59.5", "1999-12-31T12:34:56.123456", "2000-03-01 00:00:00.000001"] {
            assert_eq!(
                Some(fast_timestamp(t.as_bytes()).unwrap()),
                match parse_text_as(t, SqlType::Timestamp).unwrap() {
                    Value::Timestamp(v) => Some(v),
                    _ => None,
                },
                "{t}"
            );
        }
        for t in
            ["2023-02-29 00:00:00", "2016-01-01 24:00:00", "2016-1-01 00:00:00", "2016-01-01 00:00:00+02", "2016-01-01 00:00:00.1234567"]
        {
            assert_eq!(fast_timestamp(t.as_bytes()), None, "{t}");
        }
        let (b, _) = parse(text_fmt(), vec![SqlType::Float8, SqlType::Int8], &[b"1.5\t-3\n Infinity \t +4\n-1e3\t0\n"]).unwrap();
        assert_eq!(cells(&b), vec![vec!["1.5", "-3"], vec!["Infinity", "4"], vec!["-1000", "0"]]);
        let e = parse(text_fmt(), vec![SqlType::Float8, SqlType::Int8], &[b"1.5\t-3\n2\tx\n"]).unwrap_err();
        assert!(e.detail.clone().unwrap_or_default().contains("line 2, column c1"), "{e:?}");
    }

    /// The parse state never holds more than one record, and chunks are
    /// bounded, however large the payload and however it is split.
    #[test]
    fn memory_is_bounded_by_record_and_chunk() {
        let line = b"host_1\t2016-01-01 00:00:00\t12.5\n";
        let rows = 10_000;
        let payload: Vec<u8> = line.iter().copied().cycle().take(line.len() * rows).collect();
        for piece in [1usize, 7, 4096, payload.len()] {
            let pieces: Vec<&[u8]> = payload.chunks(piece).collect();
            let (b, st) = parse(text_fmt(), vec![SqlType::Text, SqlType::Timestamp, SqlType::Float8], &pieces).unwrap();
            assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), rows);
            assert!(st.max_record_bytes <= line.len(), "{st:?}");
            assert_eq!(st.max_chunk_rows, 3, "{st:?}");
            assert_eq!(st.chunks, rows.div_ceil(3));
        }
        // The byte bound cuts chunks too.
        let mut p = CopyParser::new(text_fmt(), vec![SqlType::Text], vec!["c0".into()], "t".into());
        p.chunk_bytes_max = 100;
        let mut n = 0;
        p.push(&b"abcdefghij\n".repeat(1000), &mut |_c, k| {
            n += k;
            Ok(())
        })
        .unwrap();
        p.finish(&mut |_c, k| {
            n += k;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1000);
        assert!(p.stats.max_chunk_bytes <= 100 && p.stats.max_chunk_rows == 10, "{:?}", p.stats);
        // A record over the limit is an error, not a buffer that grows.
        let mut p = CopyParser::new(text_fmt(), vec![SqlType::Text], vec!["c0".into()], "t".into());
        p.record_bytes_max = 64;
        let e = p.push(&[b'x'; 1000], &mut |_c, _k| Ok(())).unwrap_err();
        assert_eq!(e.sqlstate(), "54000");
        assert!(p.stats.max_record_bytes <= 65, "{:?}", p.stats);
    }

    #[test]
    fn unterminated_csv_quote_and_column_counts() {
        let e = parse(csv_fmt(), vec![SqlType::Text], &[b"\"abc\n"]).unwrap_err();
        assert_eq!(e.sqlstate(), "22P04");
        let e = parse(csv_fmt(), vec![SqlType::Text, SqlType::Text], &[b"a,b\nc\n"]).unwrap_err();
        assert!(e.to_string().contains("missing data for column at line 2"), "{e}");
    }

    /// The CSV fast path (plain records whole in one message) gives the
    /// same rows, errors and bounds as the byte-at-a-time path, which is
    /// all that one-byte messages ever meet.
    #[test]
    fn csv_fast_path_agrees_with_the_general_path() {
        let types = vec![SqlType::Timestamp, SqlType::Text, SqlType::Float8, SqlType::Int8];
        let cases: &[&[u8]] = &[
            b"2016-01-01 00:00:00,host_0,68,1\n2016-01-01 00:00:00,host_1,-0.5,2\r\n2016-01-01 00:00:10,,12.25,\n",
            b"2016-01-01 00:00:00,\"q,uoted\",1,1\n2016-01-01 00:00:00,plain,2,2\n\n2016-01-01 00:00:00,x,3,3",
            b"2016-01-01 00:00:00,a,1,1\r2016-01-01 00:00:00,b,2,2\n2016-01-01 00:00:00,c,3,3\r\n",
            b"2016-01-01 00:00:00,a,1,1\n2016-01-01 00:00:00,a,1\n",
            b"2016-01-01 00:00:00,a,1,1,5\n",
            b"2016-01-01 00:00:00,a,1,1\n2016-01-01 00:00:00,a,x,1\n",
            b"2016-01-01 00:00:00,a,1,1\n2016-01-01 00:00:00,\xc3,1,1\n",
            b"2016-01-01 00:00:00,a,1,1\n\\.\n2016-01-01 00:00:00,b,2,2\n",
            b"2016-01-01 00:00:00,a,1e3,007\n2016-01-01 00:00:00,a,-0,-0\n2016-01-01 00:00:00,a,.5,1\n2016-01-01 00:00:00,a,5.,1\n",
            b"2016-01-01 00:00:00,a,0.1,1\n2016-01-01 00:00:00.5,a,123456789012345,1\n2016-01-01 00:00:00.5,a,1234567890123456,1\n",
            b"2016-02-30 00:00:00,a,1,1\n",
            b"2016-01-01 00:00:00,a,1,1\n2016-01-01 00:00:00,a,1,1\n2016-01-01 00:00:00,a,1,1\n2016-01-01 00:00:00,a,1,1\n",
        ];
        for data in cases {
            for header in [false, true] {
                let f = Format { header, ..csv_fmt() };
                let whole = parse(f.clone(), types.clone(), &[data]);
                let bytes: Vec<&[u8]> = data.chunks(1).collect();
                let general = parse(f, types.clone(), &bytes);
                let shown = String::from_utf8_lossy(data);
                match (whole, general) {
                    (Ok((a, sa)), Ok((b, sb))) => {
                        assert_eq!(cells(&a), cells(&b), "{shown}");
                        // Chunks alike; the general path also counts a
                        // record's bytes while it spans messages.
                        assert_eq!((sa.chunks, sa.max_chunk_rows, sa.max_chunk_bytes), (sb.chunks, sb.max_chunk_rows, sb.max_chunk_bytes));
                        assert!(sa.max_record_bytes <= sb.max_record_bytes, "{shown}");
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!((a.to_string(), a.sqlstate(), &a.detail), (b.to_string(), b.sqlstate(), &b.detail), "{shown}")
                    }
                    (a, b) => panic!("{shown}: {:?} vs {:?}", a.map(|x| cells(&x.0)), b.map(|x| cells(&x.0))),
                }
            }
        }
    }

    #[test]
    fn fast_f64_is_str_parse() {
        for t in ["68", "-0.5", "0.1", "12.25", "123456789012345", "99999999999999.9", ".5", "5.", "-7", "0.00000000000003", "3.14159"] {
            assert_eq!(fast_f64(t.as_bytes()), Some(t.parse::<f64>().unwrap()), "{t}");
        }
        for t in ["", "-", ".", "0", "-0", "0.0", "1e3", "+1", "1234567890123456", "1.2.3", "1 ", "NaN", "0.0000000000000001"] {
            assert_eq!(fast_f64(t.as_bytes()), None, "{t}");
        }
    }

    /// CSV copies runs of field text at once: a character's bytes split by
    /// a delimiter are still invalid (though the record's bytes without
    /// the delimiter are valid UTF-8), and a record over the limit stops at
    /// the limit, quoted or not.
    #[test]
    fn csv_runs_check_encoding_and_record_size() {
        let e = parse(csv_fmt(), vec![SqlType::Text, SqlType::Text], &[b"ok,\xc3\n\xa9,x\n"]).unwrap_err();
        assert_eq!(e.sqlstate(), "22P02", "{e:?}");
        let e = parse(csv_fmt(), vec![SqlType::Text, SqlType::Text], &[b"a\xc3,\xa9b\n"]).unwrap_err();
        assert_eq!(e.sqlstate(), "22P02", "{e:?}");
        assert!(e.detail.clone().unwrap_or_default().contains("line 1, column c0"), "{e:?}");
        let (b, _) = parse(csv_fmt(), vec![SqlType::Text, SqlType::Text], &["\u{e9}t\u{e9},\"\u{e0},\"\n".as_bytes()]).unwrap();
        assert_eq!(cells(&b), vec![vec!["\u{e9}t\u{e9}", "\u{e0},"]]);
        for data in [&[b'x'; 1000][..], &[b"\"".as_slice(), &[b'x'; 1000]].concat()] {
            let mut p = CopyParser::new(csv_fmt(), vec![SqlType::Text], vec!["c0".into()], "t".into());
            p.record_bytes_max = 64;
            let e = p.push(&data, &mut |_c, _k| Ok(())).unwrap_err();
            assert_eq!(e.sqlstate(), "54000");
            assert!(p.stats.max_record_bytes <= 65, "{:?}", p.stats);
        }
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

/// COPY table|query TO STDOUT, text or CSV: the rows as lines; binary: the
/// batches (the server encodes them).
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
    let mut binary = false;
    let mut header = false;
    let mut delim: Option<char> = None;
    let mut null: Option<String> = None;
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_lowercase().as_str() {
                "csv" => (csv, binary) = (true, false),
                "text" => (csv, binary) = (false, false),
                "binary" => (csv, binary) = (false, true),
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
            ast::CopyLegacyOption::Binary => binary = true,
            ast::CopyLegacyOption::Delimiter(d) => delim = Some(*d),
            ast::CopyLegacyOption::Null(n) => null = Some(n.clone()),
            other => bail!(FeatureNotSupported, "COPY option {other} is not supported"),
        }
    }
    if binary && (csv || delim.is_some() || null.is_some() || header) {
        bail!(Syntax, "cannot specify DELIMITER, NULL, HEADER or CSV in BINARY mode");
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
    if binary {
        return Ok(QueryResult::CopyOutBinary { batches: CopyBatches { columns, rows } });
    }
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

/// COPY TO … (FORMAT binary)'s rows as batches, for the server to write
/// in PostgreSQL's binary COPY format with its binary (`*_send`) encoders.
pub struct CopyBatches {
    pub columns: Vec<crate::exec::plan::PlanColumn>,
    rows: std::result::Result<super::stream::RowStream, Vec<RecordBatch>>,
}

impl CopyBatches {
    /// Computed while the client reads it (a RowStream)?
    pub(super) fn is_streamed(&self) -> bool {
        self.rows.is_ok()
    }

    /// The next batch, or None at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match &mut self.rows {
            Ok(stream) => stream.next_batch(),
            Err(batches) => Ok((!batches.is_empty()).then(|| batches.remove(0))),
        }
    }
}

impl std::fmt::Debug for CopyBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CopyBatches")
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
