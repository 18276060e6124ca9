//! The write-ahead log of one region, behind the small [`LogStore`] trait.
//!
//! Owns the files under `<region>/wal/`. Imports only `crate::error`. A
//! log is a list of segments named by the first sequence they may hold
//! (`00000000000000000042.log`); each record is framed as
//! `len u32 | crc32 u32 | seq u64 | payload`, the CRC covering `seq` and the
//! payload. At open every segment is checked: a torn or corrupt tail of the
//! last segment is cut (a crash while appending); damage in an older segment
//! is a `Corrupt` error, because acknowledged writes would be lost.
//!
//! Group commit: [`LogStore::append_unsynced`] only writes (under the
//! caller's lock); [`LogStore::sync_handle`] hands out the open segment so
//! one caller can fsync every record appended so far without holding that
//! lock. Rotation fsyncs the segment it closes, so a handle to the newest
//! segment covers every record appended before it was taken.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::SeqNo;
use crate::error::Result;

/// Bytes of framing before the payload: len, crc, seq.
const HEADER_BYTES: usize = 16;
/// A record larger than this is treated as a torn length field.
const RECORD_BYTES_MAX: usize = 1 << 31;

/// An append-only log of sequenced records (a local file list today, a
/// shared log service later).
pub trait LogStore: Send {
    /// Append one record; it is durable on return when the log syncs.
    fn append(&mut self, seq: SeqNo, payload: &[u8]) -> Result<()> {
        self.append_unsynced(seq, payload)?;
        match self.sync_handle() {
            Some(h) => h.sync(),
            None => Ok(()),
        }
    }
    /// Append one record without waiting for it to be durable; sync with
    /// [`LogStore::sync_handle`].
    fn append_unsynced(&mut self, seq: SeqNo, payload: &[u8]) -> Result<()>;
    /// When the log syncs: a handle that makes every record appended so far
    /// durable, usable without `&mut self` (for group commit). None when the
    /// log does not sync.
    fn sync_handle(&self) -> Option<Arc<dyn LogSync>>;
    /// Call `f` for every record with a sequence `>= from`, in order.
    fn read_from(&mut self, from: SeqNo, f: &mut dyn FnMut(SeqNo, &[u8]) -> Result<()>) -> Result<()>;
    /// Start a new segment so that records after `next_seq - 1` can be kept
    /// while older ones are discarded.
    fn rotate(&mut self, next_seq: SeqNo) -> Result<()>;
    /// Records up to and including `upto` are no longer needed.
    fn obsolete(&mut self, upto: SeqNo) -> Result<()>;
    /// Highest sequence in the log.
    fn last_seq(&self) -> Option<SeqNo>;
    /// Bytes held by the log.
    fn bytes(&self) -> u64;
}

/// Makes the records appended before it was taken durable.
pub trait LogSync: Send + Sync {
    fn sync(&self) -> Result<()>;
}

impl LogSync for File {
    fn sync(&self) -> Result<()> {
        self.sync_data()?;
        Ok(())
    }
}

struct Segment {
    first_seq: SeqNo,
    path: PathBuf,
    bytes: u64,
}

/// [`LogStore`] on local files, one directory per region.
pub struct LocalLog {
    dir: PathBuf,
    fsync: bool,
    /// Oldest first; the last one is open for appends.
    segments: Vec<Segment>,
    /// Shared with sync handles, which may outlive a rotation.
    file: Arc<File>,
    last_seq: Option<SeqNo>,
    frame: Vec<u8>,
}

fn segment_name(first_seq: SeqNo) -> String {
    format!("{first_seq:020}.log")
}

/// Scan one segment; returns (valid length, last seq, whether a bad tail was found).
fn scan_segment(path: &Path, mut f: Option<&mut dyn FnMut(SeqNo, &[u8]) -> Result<()>>, from: SeqNo) -> Result<(u64, Option<SeqNo>, bool)> {
    let mut data = Vec::new();
    File::open(path)?.read_to_end(&mut data)?;
    let mut pos = 0usize;
    let mut last = None;
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < HEADER_BYTES {
            return Ok((pos as u64, last, true));
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().unwrap());
        if len < 8 || len >= RECORD_BYTES_MAX || rest.len() < 8 + len {
            return Ok((pos as u64, last, true));
        }
        let body = &rest[8..8 + len];
        if crc32fast::hash(body) != crc {
            return Ok((pos as u64, last, true));
        }
        let seq = u64::from_le_bytes(body[0..8].try_into().unwrap());
        if last.is_some_and(|l| seq <= l) {
            return Ok((pos as u64, last, true));
        }
        if let Some(f) = f.as_mut() {
            if seq >= from {
                f(seq, &body[8..])?;
            }
        }
        last = Some(seq);
        pos += 8 + len;
    }
    Ok((pos as u64, last, false))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

impl LocalLog {
    /// Open (or create) the log in `dir`, cutting a torn tail.
    pub fn open(dir: &Path, fsync: bool) -> Result<LocalLog> {
        std::fs::create_dir_all(dir)?;
        let mut segments = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".log") {
                let first_seq: SeqNo = stem.parse().map_err(|_| crate::err!(Corrupt, "unexpected wal file {}", entry.path().display()))?;
                segments.push(Segment { first_seq, path: entry.path(), bytes: 0 });
            }
        }
        segments.sort_by_key(|s| s.first_seq);
        let mut last_seq = None;
        let count = segments.len();
        for (i, seg) in segments.iter_mut().enumerate() {
            let (valid, last, bad_tail) = scan_segment(&seg.path, None, 0)?;
            if let (Some(prev), Some(first)) = (last_seq, last) {
                if first <= prev {
                    return Err(crate::err!(Corrupt, "wal segment {} goes back in sequence", seg.path.display())
                        .with_detail(format!("sequence {first} after {prev}")));
                }
            }
            if bad_tail {
                if i + 1 != count {
                    return Err(crate::err!(Corrupt, "wal segment {} is damaged at byte {valid}", seg.path.display())
                        .with_detail("only the tail of the newest segment may be torn by a crash")
                        .with_hint("restore the region from a backup, or move the damaged segment away to accept data loss"));
                }
                tracing::warn!(path = %seg.path.display(), valid_bytes = valid, "cutting torn wal tail");
                let f = OpenOptions::new().write(true).open(&seg.path)?;
                f.set_len(valid)?;
                f.sync_all()?;
            }
            seg.bytes = valid;
            if last.is_some() {
                last_seq = last;
            }
        }
        if segments.is_empty() {
            let path = dir.join(segment_name(1));
            File::create(&path)?;
            sync_dir(dir)?;
            segments.push(Segment { first_seq: 1, path, bytes: 0 });
        }
        let file = Arc::new(OpenOptions::new().append(true).open(&segments.last().unwrap().path)?);
        Ok(LocalLog { dir: dir.to_path_buf(), fsync, segments, file, last_seq, frame: Vec::new() })
    }
}

impl LogStore for LocalLog {
    fn append_unsynced(&mut self, seq: SeqNo, payload: &[u8]) -> Result<()> {
        assert!(self.last_seq.is_none_or(|l| seq > l), "wal sequence must increase");
        let len = 8 + payload.len();
        if len >= RECORD_BYTES_MAX {
            crate::bail!(Storage, "write batch too large for one wal record ({len} bytes)");
        }
        self.frame.clear();
        self.frame.extend_from_slice(&(len as u32).to_le_bytes());
        self.frame.extend_from_slice(&[0; 4]);
        self.frame.extend_from_slice(&seq.to_le_bytes());
        self.frame.extend_from_slice(payload);
        let crc = crc32fast::hash(&self.frame[8..]);
        self.frame[4..8].copy_from_slice(&crc.to_le_bytes());
        if let Err(e) = (&*self.file).write_all(&self.frame) {
            // Leave no half record behind for the next append to follow.
            let seg = self.segments.last().unwrap();
            let _ = self.file.set_len(seg.bytes);
            return Err(e.into());
        }
        self.segments.last_mut().unwrap().bytes += self.frame.len() as u64;
        self.last_seq = Some(seq);
        Ok(())
    }

    fn sync_handle(&self) -> Option<Arc<dyn LogSync>> {
        self.fsync.then(|| self.file.clone() as Arc<dyn LogSync>)
    }

    fn read_from(&mut self, from: SeqNo, f: &mut dyn FnMut(SeqNo, &[u8]) -> Result<()>) -> Result<()> {
        for (i, seg) in self.segments.iter().enumerate() {
            let next_first = self.segments.get(i + 1).map(|s| s.first_seq);
            if next_first.is_some_and(|n| n <= from) {
                continue;
            }
            scan_segment(&seg.path, Some(f), from)?;
        }
        Ok(())
    }

    fn rotate(&mut self, next_seq: SeqNo) -> Result<()> {
        let cur = self.segments.last().unwrap();
        if cur.bytes == 0 {
            if cur.first_seq == next_seq {
                return Ok(());
            }
            // An empty segment holds nothing: rename it instead of stacking empties.
            let path = self.dir.join(segment_name(next_seq));
            std::fs::rename(&cur.path, &path)?;
            sync_dir(&self.dir)?;
            let cur = self.segments.last_mut().unwrap();
            cur.first_seq = next_seq;
            cur.path = path;
            return Ok(());
        }
        assert!(next_seq > cur.first_seq, "wal rotation must move forward");
        if self.fsync {
            self.file.sync_data()?;
        }
        let path = self.dir.join(segment_name(next_seq));
        let file = Arc::new(OpenOptions::new().create(true).append(true).open(&path)?);
        sync_dir(&self.dir)?;
        self.file = file;
        self.segments.push(Segment { first_seq: next_seq, path, bytes: 0 });
        Ok(())
    }

    fn obsolete(&mut self, upto: SeqNo) -> Result<()> {
        let mut removed = false;
        while self.segments.len() > 1 && self.segments[1].first_seq <= upto + 1 {
            let seg = self.segments.remove(0);
            std::fs::remove_file(&seg.path)?;
            removed = true;
        }
        if removed {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    fn last_seq(&self) -> Option<SeqNo> {
        self.last_seq
    }

    fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(log: &mut LocalLog, from: SeqNo) -> Vec<(SeqNo, Vec<u8>)> {
        let mut out = Vec::new();
        log.read_from(from, &mut |s, p| {
            out.push((s, p.to_vec()));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn append_reopen_read() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut log = LocalLog::open(dir.path(), true).unwrap();
            for s in 1..=5u64 {
                log.append(s, &vec![s as u8; s as usize * 10]).unwrap();
            }
        }
        let mut log = LocalLog::open(dir.path(), true).unwrap();
        assert_eq!(log.last_seq(), Some(5));
        let recs = collect(&mut log, 3);
        assert_eq!(recs.iter().map(|r| r.0).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(recs[0].1, vec![3u8; 30]);
    }

    #[test]
    fn torn_and_corrupt_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join(segment_name(1));
        {
            let mut log = LocalLog::open(dir.path(), false).unwrap();
            for s in 1..=3u64 {
                log.append(s, b"hello").unwrap();
            }
        }
        let full = std::fs::metadata(&seg).unwrap().len();
        // A half-written record.
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(full - 3).unwrap();
        let mut log = LocalLog::open(dir.path(), false).unwrap();
        assert_eq!(log.last_seq(), Some(2));
        assert_eq!(std::fs::metadata(&seg).unwrap().len(), full / 3 * 2);
        log.append(3, b"again").unwrap();
        drop(log);
        // A flipped byte in the last record's payload.
        let mut data = std::fs::read(&seg).unwrap();
        let n = data.len();
        data[n - 1] ^= 0xff;
        std::fs::write(&seg, &data).unwrap();
        let mut log = LocalLog::open(dir.path(), false).unwrap();
        assert_eq!(collect(&mut log, 0).len(), 2);
        // Garbage appended after valid records.
        drop(log);
        let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(&[0xff; 40]).unwrap();
        let log = LocalLog::open(dir.path(), false).unwrap();
        assert_eq!(log.last_seq(), Some(2));
    }

    #[test]
    fn damage_in_an_old_segment_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut log = LocalLog::open(dir.path(), false).unwrap();
            log.append(1, b"one").unwrap();
            log.rotate(2).unwrap();
            log.append(2, b"two").unwrap();
        }
        let seg = dir.path().join(segment_name(1));
        let mut data = std::fs::read(&seg).unwrap();
        data[10] ^= 1;
        std::fs::write(&seg, &data).unwrap();
        let e = LocalLog::open(dir.path(), false).err().unwrap();
        assert_eq!(e.kind, crate::error::ErrorKind::Corrupt);
        assert!(e.message.contains("00000000000000000001.log"), "{}", e.message);
    }

    #[test]
    fn rotate_and_obsolete() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LocalLog::open(dir.path(), false).unwrap();
        log.append(1, b"a").unwrap();
        log.append(2, b"b").unwrap();
        log.rotate(3).unwrap();
        log.append(3, b"c").unwrap();
        log.obsolete(2).unwrap();
        assert_eq!(collect(&mut log, 0).iter().map(|r| r.0).collect::<Vec<_>>(), vec![3]);
        drop(log);
        let mut log = LocalLog::open(dir.path(), false).unwrap();
        assert_eq!(collect(&mut log, 0).len(), 1);
        // Rotating an empty segment renames it.
        log.rotate(4).unwrap();
        log.obsolete(3).unwrap();
        log.rotate(9).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(log.last_seq(), Some(3));
    }
}
