//! Region manifests in a versioned key-value store ([`MetaKv`]).
//!
//! Owns the manifest format and the `MetaKv` seam (sled standalone; a shared
//! metadata service later). Imports only `crate::error`. A manifest value is
//! `crc32 u32 | json`; every edit bumps `version` and is committed with a
//! compare-and-set on the previous bytes, so two writers can never both win.

use serde::{Deserialize, Serialize};

use super::{RegionId, SeqNo};
use crate::error::Result;

/// A versioned key-value store for metadata (get, range, put, compare-and-set).
pub trait MetaKv: Send + Sync {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// All pairs whose key starts with `prefix`, in key order.
    fn range(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Unconditional durable write.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Durably replace `expected` (None = absent) by `new` (None = delete);
    /// false when the current value is not `expected`.
    fn compare_and_set(&self, key: &[u8], expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<bool>;
}

/// [`MetaKv`] on a sled database.
pub struct SledKv {
    db: sled::Db,
}

impl SledKv {
    pub fn open(path: &std::path::Path) -> Result<SledKv> {
        let db = crate::sled_open::open(&sled::Config::new().path(path))
            .map_err(|e| crate::err!(Storage, "cannot open the storage metadata store {}", path.display()).with_detail(e.to_string()))?;
        Ok(SledKv { db })
    }
}

impl MetaKv for SledKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }
    fn range(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        for kv in self.db.scan_prefix(prefix) {
            let (k, v) = kv?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.insert(key, value)?;
        self.db.flush()?;
        Ok(())
    }
    fn compare_and_set(&self, key: &[u8], expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<bool> {
        let ok = self.db.compare_and_swap(key, expected, new)?.is_ok();
        if ok {
            self.db.flush()?;
        }
        Ok(ok)
    }
}

/// One SST as the manifest knows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileMeta {
    /// Object path relative to the storage root.
    pub path: String,
    /// Inclusive time-index range of the rows (absent without a time index).
    pub time_range: Option<(i64, i64)>,
    /// Inclusive sequence range of the rows.
    pub seq_range: (SeqNo, SeqNo),
    pub rows: u64,
    pub bytes: u64,
    /// crc32 of the whole file.
    pub crc: u32,
    /// No two rows share an identity (no older versions, no tombstone pairs).
    pub distinct: bool,
    /// Every row is a put (no tombstones): scans of a distinct file need
    /// no `__op`. False for files written before this was recorded.
    #[serde(default)]
    pub puts_only: bool,
    /// Bytes of the rows as Arrow arrays when written: what reading the
    /// whole file takes (compaction's budget). 0 for files written before
    /// this was recorded.
    #[serde(default)]
    pub mem_bytes: u64,
}

impl FileMeta {
    /// [`FileMeta::mem_bytes`], or a guess from the file size for files
    /// that do not record it.
    pub fn decoded_bytes(&self) -> u64 {
        if self.mem_bytes > 0 {
            self.mem_bytes
        } else {
            self.bytes.saturating_mul(8)
        }
    }
}

/// The durable state of one region besides its WAL.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Manifest {
    /// Bumped by every edit.
    pub version: u64,
    pub region_id: RegionId,
    /// Bumped at every open: the lease seam for moving regions between nodes.
    pub generation: u64,
    /// Every write up to this sequence is in `files`; the WAL keeps the rest.
    pub flushed_seq: SeqNo,
    /// Row ids below this were handed out by flushed writes.
    pub next_rowid: u64,
    pub next_file_id: u64,
    /// Versions replaced at or before this sequence may have been discarded:
    /// exact reads need snapshots at or above it.
    pub history_seq: SeqNo,
    pub files: Vec<FileMeta>,
    /// SSTs of bulk loads prepared for commit but not yet in `files`: a
    /// load whose transaction has a commit record is installed at open,
    /// any other one deleted (see `BulkWrite`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<StagedLoad>,
}

/// The SSTs one bulk load wrote to a region, named before its commit point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct StagedLoad {
    /// The load's transaction id (its commit record makes it count).
    pub txn: u64,
    /// Row ids below this were handed out to the files' rows.
    pub next_rowid: u64,
    pub files: Vec<FileMeta>,
}

/// The metadata key of a region's manifest.
pub fn manifest_key(id: RegionId) -> Vec<u8> {
    format!("region/{id:016x}/manifest").into_bytes()
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).expect("manifest serializes");
        let mut out = Vec::with_capacity(json.len() + 4);
        out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        out.extend_from_slice(&json);
        out
    }

    pub fn decode(id: RegionId, bytes: &[u8]) -> Result<Manifest> {
        let key = String::from_utf8_lossy(&manifest_key(id)).into_owned();
        let corrupt = |why: String| {
            crate::err!(Corrupt, "manifest {key} is corrupt")
                .with_detail(why)
                .with_hint("restore the storage metadata directory from a backup")
        };
        if bytes.len() < 4 {
            return Err(corrupt("value shorter than its checksum".into()));
        }
        let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        if crc32fast::hash(&bytes[4..]) != crc {
            return Err(corrupt("checksum mismatch".into()));
        }
        let m: Manifest = serde_json::from_slice(&bytes[4..]).map_err(|e| corrupt(e.to_string()))?;
        if m.region_id != id {
            return Err(corrupt(format!("it belongs to region {}", m.region_id)));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip_and_cas() {
        let dir = tempfile::tempdir().unwrap();
        let kv = SledKv::open(&dir.path().join("meta")).unwrap();
        let mut m = Manifest { region_id: 7, flushed_seq: 3, ..Default::default() };
        m.files.push(FileMeta {
            path: "a".into(),
            time_range: Some((-1, 5)),
            seq_range: (1, 3),
            rows: 9,
            bytes: 100,
            crc: 42,
            distinct: true,
            puts_only: true,
            mem_bytes: 0,
        });
        let key = manifest_key(7);
        assert!(kv.compare_and_set(&key, None, Some(&m.encode())).unwrap());
        assert!(!kv.compare_and_set(&key, None, Some(&m.encode())).unwrap());
        let got = kv.get(&key).unwrap().unwrap();
        assert_eq!(Manifest::decode(7, &got).unwrap(), m);
        assert_eq!(kv.range(b"region/").unwrap().len(), 1);
        let mut bad = got.clone();
        bad[10] ^= 1;
        assert_eq!(Manifest::decode(7, &bad).unwrap_err().kind, crate::error::ErrorKind::Corrupt);
        assert!(Manifest::decode(8, &got).is_err());
    }
}
