//! COPY FROM STDIN's binary format (`FORMAT binary`, `BINARY`): PostgreSQL's
//! `PGCOPY\n\377\r\n\0` signature, flags and header extension, then per row
//! a 16-bit field count and each field as a 32-bit length (-1: NULL) and its
//! binary (`*_send`) form; a count of -1 ends the data. pgx's `CopyFrom`
//! and psycopg's binary copy send this.
//!
//! This splits the bytes into records as they arrive (holding at most one
//! incomplete record); `copy.rs` decodes the fields (`sql::wire`) into its
//! column builders. Part of `sql`: imports `error` only.

use crate::bail;
use crate::error::Result;

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The record splitter of a binary COPY.
#[derive(Default)]
pub(crate) struct BinaryReader {
    buf: Vec<u8>,
    header_done: bool,
    ended: bool,
    ncols: usize,
    /// Records read (PostgreSQL's "line" in error contexts).
    pub(crate) records: usize,
}

fn i32_at(b: &[u8], pos: usize) -> Option<i32> {
    b.get(pos..pos + 4).map(|x| i32::from_be_bytes(x.try_into().unwrap()))
}

impl BinaryReader {
    pub(crate) fn new(ncols: usize) -> BinaryReader {
        BinaryReader { ncols, ..Default::default() }
    }

    /// Bytes held for an incomplete record.
    pub(crate) fn held_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Take `data`; `record` gets each complete record's fields.
    pub(crate) fn push(&mut self, data: &[u8], record: &mut dyn FnMut(&[Option<&[u8]>], usize) -> Result<()>) -> Result<()> {
        self.buf.extend_from_slice(data);
        let mut pos = 0;
        if !self.header_done {
            if self.buf.len() < SIGNATURE.len() + 8 {
                if !SIGNATURE.starts_with(&self.buf[..self.buf.len().min(SIGNATURE.len())]) {
                    bail!(BadCopyFileFormat, "COPY file signature not recognized");
                }
                return Ok(());
            }
            if &self.buf[..SIGNATURE.len()] != SIGNATURE {
                bail!(BadCopyFileFormat, "COPY file signature not recognized");
            }
            let flags = i32_at(&self.buf, 11).unwrap_or(0) as u32;
            if flags & (1 << 16) != 0 {
                bail!(BadCopyFileFormat, "invalid COPY file header (WITH OIDS)");
            }
            if flags >> 17 != 0 {
                bail!(BadCopyFileFormat, "unrecognized critical flags in COPY file header");
            }
            let ext = i32_at(&self.buf, 15).unwrap_or(0);
            if ext < 0 {
                bail!(BadCopyFileFormat, "invalid COPY file header (missing length)");
            }
            let end = 19 + ext as usize;
            if self.buf.len() < end {
                return Ok(());
            }
            pos = end;
            self.header_done = true;
        }
        let mut fields: Vec<Option<std::ops::Range<usize>>> = Vec::with_capacity(self.ncols);
        loop {
            if self.ended {
                if pos < self.buf.len() {
                    bail!(BadCopyFileFormat, "received copy data after EOF marker");
                }
                break;
            }
            let Some(count) = self.buf.get(pos..pos + 2).map(|x| i16::from_be_bytes([x[0], x[1]])) else { break };
            if count == -1 {
                self.ended = true;
                pos += 2;
                continue;
            }
            if count < 0 || count as usize != self.ncols {
                bail!(BadCopyFileFormat, "row field count is {count}, expected {}", self.ncols);
            }
            let mut p = pos + 2;
            fields.clear();
            let mut complete = true;
            for _ in 0..self.ncols {
                let Some(len) = i32_at(&self.buf, p) else {
                    complete = false;
                    break;
                };
                p += 4;
                if len == -1 {
                    fields.push(None);
                    continue;
                }
                if len < 0 {
                    bail!(BadCopyFileFormat, "invalid field size");
                }
                if self.buf.len() < p + len as usize {
                    complete = false;
                    break;
                }
                fields.push(Some(p..p + len as usize));
                p += len as usize;
            }
            if !complete {
                break;
            }
            self.records += 1;
            let slices: Vec<Option<&[u8]>> = fields.iter().map(|f| f.clone().map(|r| &self.buf[r])).collect();
            record(&slices, self.records)?;
            pos = p;
        }
        self.buf.drain(..pos);
        Ok(())
    }

    /// End of data: a partial record (or header) left over is an error; a
    /// missing end marker is not (PostgreSQL accepts that too).
    pub(crate) fn finish(&self) -> Result<()> {
        if !self.buf.is_empty() {
            bail!(BadCopyFileFormat, "unexpected EOF in COPY data");
        }
        if !self.header_done {
            bail!(BadCopyFileFormat, "COPY file signature not recognized");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(rows: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut v = SIGNATURE.to_vec();
        v.extend(0i32.to_be_bytes());
        v.extend(4i32.to_be_bytes());
        v.extend(b"skip");
        for r in rows {
            v.extend((r.len() as i16).to_be_bytes());
            for f in *r {
                match f {
                    None => v.extend((-1i32).to_be_bytes()),
                    Some(b) => {
                        v.extend((b.len() as i32).to_be_bytes());
                        v.extend(*b);
                    }
                }
            }
        }
        v.extend((-1i16).to_be_bytes());
        v
    }

    /// Records come out whole however the bytes are split.
    #[test]
    fn records_in_any_split() {
        let bytes = data(&[&[Some(b"ab"), None], &[Some(b""), Some(b"xyz")]]);
        for split in 1..bytes.len() {
            let mut r = BinaryReader::new(2);
            let mut got = Vec::new();
            for piece in bytes.chunks(split) {
                r.push(piece, &mut |f, _| {
                    got.push(f.iter().map(|x| x.map(|b| b.to_vec())).collect::<Vec<_>>());
                    Ok(())
                })
                .unwrap();
            }
            r.finish().unwrap();
            assert_eq!(got, vec![vec![Some(b"ab".to_vec()), None], vec![Some(vec![]), Some(b"xyz".to_vec())]], "split {split}");
        }
    }

    #[test]
    fn bad_signature_count_and_truncation() {
        let mut r = BinaryReader::new(2);
        let e = r.push(b"1,2\n", &mut |_, _| Ok(())).unwrap_err();
        assert_eq!(e.to_string(), "COPY file signature not recognized");
        let bytes = data(&[&[Some(b"a")]]);
        let e = BinaryReader::new(2).push(&bytes, &mut |_, _| Ok(())).unwrap_err();
        assert_eq!(e.to_string(), "row field count is 1, expected 2");
        let mut r = BinaryReader::new(1);
        r.push(&bytes[..bytes.len() - 3], &mut |_, _| Ok(())).unwrap();
        assert_eq!(r.finish().unwrap_err().to_string(), "unexpected EOF in COPY data");
    }
}
