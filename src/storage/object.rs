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
    /// A streaming reader from `start` to the end. The default reads the
    /// whole tail; a store that can seek should stream instead, since
    /// parquet asks for a reader per column chunk.
    fn open_read(&self, path: &str, start: u64, len: u64) -> Result<Box<dyn std::io::Read + Send>> {
        Ok(Box::new(std::io::Cursor::new(self.get_range(path, start..len)?)))
    }
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

    fn open_read(&self, path: &str, start: u64, _len: u64) -> Result<Box<dyn std::io::Read + Send>> {
        use std::io::{Seek, SeekFrom};
        let full = self.full(path);
        let mut f = File::open(&full).map_err(|e| io_err("open", &full, e))?;
        f.seek(SeekFrom::Start(start)).map_err(|e| io_err("seek", &full, e))?;
        // Buffered: page headers are read a few bytes at a time.
        Ok(Box::new(std::io::BufReader::with_capacity(1 << 16, f)))
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
    type T = Box<dyn std::io::Read + Send>;

    // Parquet reads each column chunk through its own reader from `start`:
    // stream it rather than copy the rest of the file every time (that copy
    // was most of a full scan's time).
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.store.open_read(&self.path, start, self.len).map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.store
            .get_range(&self.path, start..start + length as u64)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
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
