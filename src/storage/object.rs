//! The object-store seam for SST files ([`ObjectStore`], local files today).
//!
//! Owns the SST bytes on disk. Imports only `crate::error`. The trait is the
//! subset of `object_store::ObjectStore` that storage needs, kept
//! synchronous; an S3 implementation (or an adapter over the `object_store`
//! crate) fits behind it. Paths are `/`-separated and relative to the root.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;

/// Immutable objects: written whole, read by range, deleted.
pub trait ObjectStore: Send + Sync {
    /// Durably write the whole object (atomic: readers see all or nothing).
    fn put(&self, path: &str, data: Bytes) -> Result<()>;
    fn get_range(&self, path: &str, range: Range<u64>) -> Result<Bytes>;
    /// Size in bytes, or None when absent.
    fn head(&self, path: &str) -> Result<Option<u64>>;
    fn delete(&self, path: &str) -> Result<()>;
    /// Object paths under `prefix` (a directory-like prefix ending in `/`).
    fn list(&self, prefix: &str) -> Result<Vec<String>>;
}

/// [`ObjectStore`] on a local directory: write to a temp file, fsync,
/// rename, fsync the directory.
pub struct LocalStore {
    root: PathBuf,
}

impl LocalStore {
    pub fn new(root: &Path) -> LocalStore {
        LocalStore { root: root.to_path_buf() }
    }
    fn full(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> crate::error::WeirError {
    crate::err!(Storage, "cannot {what} {}", path.display()).with_detail(e.to_string())
}

impl ObjectStore for LocalStore {
    fn put(&self, path: &str, data: Bytes) -> Result<()> {
        let full = self.full(path);
        let dir = full.parent().expect("object paths have a directory");
        std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
        let tmp = full.with_extension("tmp");
        {
            let f = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
            f.write_all_at(&data, 0).map_err(|e| io_err("write", &tmp, e))?;
            f.sync_all().map_err(|e| io_err("sync", &tmp, e))?;
        }
        std::fs::rename(&tmp, &full).map_err(|e| io_err("rename", &tmp, e))?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_err("sync", dir, e))?;
        Ok(())
    }

    fn get_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let full = self.full(path);
        let f = File::open(&full).map_err(|e| io_err("open", &full, e))?;
        let mut buf = vec![0u8; (range.end - range.start) as usize];
        f.read_exact_at(&mut buf, range.start).map_err(|e| io_err("read", &full, e))?;
        Ok(Bytes::from(buf))
    }

    fn head(&self, path: &str) -> Result<Option<u64>> {
        match std::fs::metadata(self.full(path)) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err("stat", &self.full(path), e)),
        }
    }

    fn delete(&self, path: &str) -> Result<()> {
        match std::fs::remove_file(self.full(path)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err("delete", &self.full(path), e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let dir = self.full(prefix);
        let mut out = Vec::new();
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io_err("list", &dir, e)),
        };
        for entry in rd {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                out.push(format!("{prefix}{}", entry.file_name().to_string_lossy()));
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Bytes `ChunkReader::get_read` fetches when nothing is prefetched: page
/// headers (with their statistics) fit easily.
const READ_AHEAD: u64 = 1 << 20;

/// One object as a parquet `ChunkReader`, reading ranges through the store.
#[derive(Clone)]
pub struct ObjectReader {
    pub store: Arc<dyn ObjectStore>,
    pub path: String,
    pub len: u64,
}

impl parquet::file::reader::Length for ObjectReader {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for ObjectReader {
    type T = std::io::Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        // Page headers are read through this; reading to the end of the
        // object for each would copy the file once per page.
        let n = (self.len.saturating_sub(start)).min(READ_AHEAD) as usize;
        Ok(std::io::Cursor::new(self.get_bytes(start, n)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.store.get_range(&self.path, start..start + length as u64).map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

/// An [`ObjectReader`] with some byte ranges (the column chunks a read
/// needs) fetched up front, coalesced, one store read each.
#[derive(Clone)]
pub struct PrefetchReader {
    base: ObjectReader,
    /// (start, bytes), sorted and disjoint.
    parts: Arc<Vec<(u64, Bytes)>>,
}

impl PrefetchReader {
    pub fn new(base: ObjectReader, mut ranges: Vec<(u64, u64)>) -> Result<PrefetchReader> {
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (s, e) in ranges {
            let e = e.min(base.len);
            if s >= e {
                continue;
            }
            match merged.last_mut() {
                // Coalesce touching or nearly touching ranges.
                Some(l) if s <= l.1 + 64 * 1024 => l.1 = l.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let mut parts = Vec::with_capacity(merged.len());
        for (s, e) in merged {
            parts.push((s, base.store.get_range(&base.path, s..e)?));
        }
        Ok(PrefetchReader { base, parts: Arc::new(parts) })
    }

    /// The prefetched part holding byte `start`.
    fn part(&self, start: u64) -> Option<&(u64, Bytes)> {
        let i = self.parts.partition_point(|(s, _)| *s <= start);
        let p = self.parts.get(i.checked_sub(1)?)?;
        (start < p.0 + p.1.len() as u64).then_some(p)
    }
}

impl parquet::file::reader::Length for PrefetchReader {
    fn len(&self) -> u64 {
        self.base.len
    }
}

impl parquet::file::reader::ChunkReader for PrefetchReader {
    type T = std::io::Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        match self.part(start) {
            Some((s, b)) => Ok(std::io::Cursor::new(b.slice((start - s) as usize..))),
            None => self.base.get_read(start),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        if let Some((s, b)) = self.part(start) {
            let off = (start - s) as usize;
            if off + length <= b.len() {
                return Ok(b.slice(off..off + length));
            }
        }
        self.base.get_bytes(start, length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_list_delete() {
        let dir = tempfile::tempdir().unwrap();
        let s = LocalStore::new(dir.path());
        s.put("r/sst/1.parquet", Bytes::from_static(b"hello world")).unwrap();
        assert_eq!(s.head("r/sst/1.parquet").unwrap(), Some(11));
        assert_eq!(&s.get_range("r/sst/1.parquet", 6..11).unwrap()[..], b"world");
        assert_eq!(s.list("r/sst/").unwrap(), vec!["r/sst/1.parquet".to_string()]);
        s.delete("r/sst/1.parquet").unwrap();
        s.delete("r/sst/1.parquet").unwrap();
        assert_eq!(s.head("r/sst/1.parquet").unwrap(), None);
        assert!(s.list("nothing/").unwrap().is_empty());
    }
}
